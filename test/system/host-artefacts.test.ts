import * as fs from 'node:fs';
import * as path from 'node:path';
import { HostPlan, renderHostArtefacts } from '../../src';
import { allHostVariants } from '../helpers/variants';
import { verifyUnits } from './host-files';
import { describeWithTools, must, run, sh, tmpdir } from './tools';

const variants = allHostVariants();
const cases = variants.map((v) => [v.name, v] as const);

describeWithTools('cloud-init schema accepts every cloud-config', ['cloud-init'], () => {
  it.each(cases)('%s', (name, v) => {
    const file = path.join(tmpdir('tw-ci-'), `${name}.yaml`);
    fs.writeFileSync(file, renderHostArtefacts(v.plan, v.ignitionVersion).cloudConfig);
    const r = run('cloud-init', ['schema', '--config-file', file]);
    expect(r.output).toBe(`Valid cloud-config: ${file}\n`);
    expect(r.status).toBe(0);
  });
});

describeWithTools('ignition-validate accepts every Ignition 3.3.0 config', ['ignition-validate'], () => {
  const v33 = cases.filter(([, v]) => v.ignitionVersion === '3.3.0');
  it('has 3.3.0 cases', () => expect(v33.length).toBeGreaterThan(0));
  it.each(v33)('%s', (name, v) => {
    const file = path.join(tmpdir('tw-ig-'), `${name}.json`);
    fs.writeFileSync(file, renderHostArtefacts(v.plan, v.ignitionVersion).ignitionJson);
    const r = run('ignition-validate', [file]);
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });

  it('rejects a 3.3.0 config with a mode written as text (the check can fail)', () => {
    const file = path.join(tmpdir('tw-ig-'), 'bad.json');
    fs.writeFileSync(file, JSON.stringify({ ignition: { version: '3.3.0' }, storage: { files: [{ path: '/x', mode: '0600' }] } }));
    expect(run('ignition-validate', [file]).status).not.toBe(0);
  });
});

describeWithTools('systemd-analyze verify accepts every unit and drop-in', ['systemd-analyze'], () => {
  it.each(cases)('%s', (_name, v) => {
    const r = verifyUnits(tmpdir('tw-sd-'), v.plan);
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });

  it('fails a drop-in with an unknown key (the check can fail)', () => {
    const plan: HostPlan = { ...variants[0].plan, dropins: [...variants[0].plan.dropins, { unit: 'wg-quick@wg0.service', name: '20-typo.conf', content: '[Unit]\nAftr=network-online.target\n' }] };
    const r = verifyUnits(tmpdir('tw-sd-'), plan);
    expect(r.output).toContain("20-typo.conf:2: Unknown key 'Aftr' in section [Unit], ignoring.");
  });
});

/** Interface names are global to wireguard-go's socket folder: each config gets its own. */
let ifaceCounter = 0;

describeWithTools('wg setconf parses every WireGuard config on a wireguard-go interface', ['wg', 'wg-quick', 'wireguard-go', 'ip'], () => {
  const ns = `tw-setconf-${process.pid}`;
  const iface = `twsc${process.pid % 10000}`;
  let daemon: ReturnType<typeof sh> | undefined;
  beforeAll(() => {
    must(sh(`ip netns add ${ns}`), 'ip netns add');
    // wireguard-go in the foreground, in the background of a detached shell: it lives until the namespace is removed.
    daemon = sh(`ip netns exec ${ns} setsid sh -c 'wireguard-go -f ${iface} >/dev/null 2>&1 &'; for i in $(seq 50); do ip netns exec ${ns} wg show ${iface} >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1`);
    must(daemon, 'wireguard-go');
  });
  afterAll(() => {
    sh(`ip netns exec ${ns} ip link del ${iface}; ip netns pids ${ns} | xargs -r kill; ip netns del ${ns}`);
  });

  const confs = cases.flatMap(([name, v]) => v.plan.files.filter((f) => f.path.startsWith('/etc/wireguard/')).map((f) => [`${name} ${f.path}`, f.content] as const));

  it.each(confs)('%s', (_name, content) => {
    const dir = tmpdir('tw-wg-');
    const file = path.join(dir, `tw${ifaceCounter++}.conf`);
    fs.writeFileSync(file, content, { mode: 0o600 });
    const stripped = run('wg-quick', ['strip', file]);
    expect(stripped.stderr).toBe('');
    expect(stripped.status).toBe(0);
    fs.writeFileSync(`${file}.stripped`, stripped.stdout, { mode: 0o600 });
    const set = run('ip', ['netns', 'exec', ns, 'wg', 'setconf', iface, `${file}.stripped`]);
    expect(set.output).toBe('');
    expect(set.status).toBe(0);
  });

  it('rejects a config with a malformed key (the check can fail)', () => {
    const file = path.join(tmpdir('tw-wg-'), 'bad.conf');
    fs.writeFileSync(file, '[Peer]\nPublicKey = abc\nAllowedIPs = 10.0.0.1/32\n');
    const set = run('ip', ['netns', 'exec', ns, 'wg', 'setconf', iface, file]);
    expect(set.status).not.toBe(0);
  });
});

describeWithTools('nft -c accepts every nftables table', ['nft', 'ip'], () => {
  const ns = `tw-nft-${process.pid}`;
  beforeAll(() => must(sh(`ip netns add ${ns}`), 'ip netns add'));
  afterAll(() => sh(`ip netns del ${ns}`));
  const tables = cases.flatMap(([name, v]) => v.plan.files.filter((f) => f.path.endsWith('.nft')).map((f) => [name, f.content] as const));

  it('has tables to check', () => expect(tables.length).toBeGreaterThan(0));

  it.each(tables)('%s', (_name, content) => {
    const file = path.join(tmpdir('tw-nft-'), 'table.nft');
    fs.writeFileSync(file, content);
    const r = run('ip', ['netns', 'exec', ns, 'nft', '-c', '-f', file]);
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });

  it('rejects a rule with a counter that does not exist (the check can fail)', () => {
    const file = path.join(tmpdir('tw-nft-'), 'bad.nft');
    // The kill switch's table (the one with that counter), not whichever table comes first: the replace must change it.
    const killSwitch = tables.find(([, content]) => content.includes('counter name "tunnel_via_tunnel"'));
    expect(killSwitch).toBeDefined();
    const bad = killSwitch![1].replace('counter name "tunnel_via_tunnel"', 'counter name "no_such_counter"');
    expect(bad).not.toBe(killSwitch![1]);
    fs.writeFileSync(file, bad);
    expect(run('ip', ['netns', 'exec', ns, 'nft', '-c', '-f', file]).status).not.toBe(0);
  });
});
