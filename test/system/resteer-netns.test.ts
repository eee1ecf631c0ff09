import * as fs from 'node:fs';
import * as path from 'node:path';
import { planEgressSteering } from '../../src';
import { RESTEER_PATH } from '../../src/render/egress-steering';
import { isLabelValue } from '../../src/model/labels';
import { wireguardSteering } from '../helpers/fixtures';
import { describeWithTools, must, sh, tmpdir } from './tools';

/**
 * The generated re-steer script, run in a network namespace against a stub of kubectl that records its arguments:
 * it computes `<address>-<ifindex>` from the live interface and changes it when the interface is re-created.
 */
describeWithTools('the re-steer hook labels the gateway from the live tunnel interface', ['ip'], () => {
  const id = process.pid % 10000;
  const ns = `twrs${id}`;
  const iface = `twrs${id}t`;
  const dir = tmpdir('tw-resteer-');
  const log = path.join(dir, 'kubectl.log');
  const script = path.join(dir, 'egress-resteer');
  const stub = path.join(dir, 'kubectl');

  beforeAll(() => {
    const { tunnel: _t, ...props } = wireguardSteering();
    const host = planEgressSteering({ ...props, interface: iface }).hosts[0];
    fs.writeFileSync(script, host.files.find((f) => f.path === RESTEER_PATH)!.content, { mode: 0o755 });
    fs.writeFileSync(stub, `#!/bin/sh\necho "$*" >> ${log}\n`, { mode: 0o755 });
    must(sh(`ip netns add ${ns} && ip -n ${ns} link set lo up`), 'netns');
  });
  afterAll(() => sh(`ip netns del ${ns}`));

  const resteer = () => {
    fs.writeFileSync(log, '');
    must(sh(`ip netns exec ${ns} env KUBECTL=${stub} ${script}`), 'egress-resteer');
    return fs.readFileSync(log, 'utf8').trim().split('\n');
  };
  const create = (addr: string) => must(sh(`ip -n ${ns} tuntap add dev ${iface} mode tun && ip -n ${ns} addr add ${addr} dev ${iface} && ip -n ${ns} link set ${iface} up`), 'create tunnel');
  const ifindex = () => Number(must(sh(`ip netns exec ${ns} cat /sys/class/net/${iface}/ifindex`), 'ifindex').stdout.trim());
  const destroy = () => must(sh(`ip -n ${ns} link del ${iface}`), 'delete tunnel');

  it('labels the Node and the CiliumNode <address>-<ifindex>, and follows a re-created interface', () => {
    create('10.2.0.2/32');
    const first = ifindex();
    expect(resteer()).toEqual([
      `label node gw-1 --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=10.2.0.2-${first}`,
      `label ciliumnode gw-1 --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=10.2.0.2-${first}`,
    ]);
    destroy();
    // Another link takes an index in between, as on a busy host: the re-created tunnel's index differs.
    must(sh(`ip -n ${ns} tuntap add dev twrs${id}x mode tun`), 'another link');
    create('10.2.0.2/32');
    const second = ifindex();
    expect(second).not.toBe(first);
    expect(resteer()).toEqual([
      `label node gw-1 --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=10.2.0.2-${second}`,
      `label ciliumnode gw-1 --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=10.2.0.2-${second}`,
    ]);
    destroy();
  });

  it('removes the label while the interface is gone', () => {
    expect(resteer()).toEqual(['label node gw-1 --request-timeout=10s tunnelwright.dev/egress-uplink-', 'label ciliumnode gw-1 --request-timeout=10s tunnelwright.dev/egress-uplink-']);
  });

  it('uses the distribution\'s kubectl (k3s kubectl) when the node has no kubectl', () => {
    // A PATH with the tools the script uses and a k3s stub, but no kubectl.
    const bin = tmpdir('tw-k3s-');
    for (const tool of ['ip', 'awk', 'cat', 'tr', 'sed', 'sh', 'echo']) {
      const real = sh(`command -v ${tool}`).stdout.trim();
      if (real.startsWith('/')) fs.symlinkSync(fs.realpathSync(real), path.join(bin, tool));
    }
    fs.writeFileSync(path.join(bin, 'k3s'), `#!/bin/sh\necho "k3s $*" >> ${log}\n`, { mode: 0o755 });
    fs.writeFileSync(log, '');
    must(sh(`ip netns exec ${ns} env -u KUBECTL PATH=${bin} ${bin}/sh ${script}`), 'egress-resteer with k3s');
    expect(fs.readFileSync(log, 'utf8').trim().split('\n')).toEqual(['k3s kubectl label node gw-1 --request-timeout=10s tunnelwright.dev/egress-uplink-', 'k3s kubectl label ciliumnode gw-1 --request-timeout=10s tunnelwright.dev/egress-uplink-']);
  });

  it('encodes an IPv6 address into a valid label value', () => {
    create('fd00::2/128');
    const value = resteer()[0].split('=').pop()!;
    expect(value).toBe(`fd00..2-${ifindex()}`);
    expect(isLabelValue(value)).toBe(true);
    destroy();
    create('::2/128');
    const leading = resteer()[0].split('=').pop()!;
    expect(leading).toBe(`0..2-${ifindex()}`);
    expect(isLabelValue(leading)).toBe(true);
    destroy();
  });
});
