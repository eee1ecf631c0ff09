import { parse } from 'yaml';
import { HostPlan, renderHostArtefacts } from '../../src';
import { checkCloudConfig } from '../../src/testing';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { hostPlan as plan } from '../helpers/fixtures';

/**
 * What cloud-init runs from a host plan at its edges: the smallest plans (nothing to write, nothing to start) must
 * still pass cloud-init's own schema (write_files and runcmd, when present, take at least one item), and the first
 * boot's commands are exactly: a daemon-reload when any unit or drop-in was written, then the enabled units enabled
 * and started (only those), then the plan's commands.
 */
const UNIT = '[Unit]\nDescription=x\n[Service]\nType=oneshot\nExecStart=/bin/true\n';
const doc = (p: HostPlan) => parse(renderHostArtefacts(p).cloudConfig) as Record<string, unknown>;

const CASES: [string, HostPlan, Record<string, unknown>][] = [
  ['an empty plan', plan({}), {}],
  ['packages only', plan({ packages: ['wireguard-tools'] }), { packages: ['wireguard-tools'] }],
  ['commands only: no daemon-reload, no enable', plan({ commands: ['echo hi'] }), { runcmd: ['echo hi'] }],
  ['a drop-in only: daemon-reload, nothing to enable', plan({ dropins: [{ unit: 'kubelet.service', name: '10-x.conf', content: '[Service]\n' }] }), {
    write_files: [{ path: '/etc/systemd/system/kubelet.service.d/10-x.conf', owner: 'root:root', permissions: '0644', content: '[Service]\n' }],
    runcmd: [['systemctl', 'daemon-reload']],
  }],
  ['an enabled and a disabled unit: only the enabled one is started', plan({ units: [{ name: 'a.service', content: UNIT, enabled: true }, { name: 'b.service', content: UNIT }] }), {
    write_files: [
      { path: '/etc/systemd/system/a.service', owner: 'root:root', permissions: '0644', content: UNIT },
      { path: '/etc/systemd/system/b.service', owner: 'root:root', permissions: '0644', content: UNIT },
    ],
    runcmd: [['systemctl', 'daemon-reload'], ['systemctl', 'enable', '--now', 'a.service']],
  }],
  ['a file only, its mode in octal', plan({ files: [{ path: '/etc/x', mode: 0o600, owner: 'root:root', content: 'x' }] }), {
    write_files: [{ path: '/etc/x', owner: 'root:root', permissions: '0600', content: 'x' }],
  }],
];

describe('cloud-config at the edges', () => {
  it.each(CASES)('%s', (_n, p, expected) => {
    expect(doc(p) ?? {}).toEqual(expected);
  });
});

describeWithSchemas('cloud-config at the edges, against cloud-init\'s schema', () => {
  it.each(CASES)('%s passes the schema', (_n, p) => {
    expect(checkCloudConfig(renderHostArtefacts(p).cloudConfig, SCHEMA_DIR)).toEqual([]);
  });
});
