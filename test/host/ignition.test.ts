import { HostPlan, renderHostArtefacts } from '../../src';
import { checkIgnition } from '../../src/testing';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { hostPlan as plan } from '../helpers/fixtures';

/**
 * What Ignition applies from a host plan at its edges, as exact configs: files with their decimal mode, owner and
 * data URL; units enabled only when asked; a drop-in on a unit the plan does not write; the plan's commands as a
 * first-boot oneshot unit, each its own ExecStart. Each passes Ignition's own spec schema.
 */
const FIRSTBOOT = [
  '[Unit]', 'Description=tunnelwright first-boot commands', 'ConditionFirstBoot=yes', 'After=network-online.target', 'Wants=network-online.target', '',
  '[Service]', 'Type=oneshot', 'ExecStart=/bin/sh -c "echo \\"hi\\" > /run/x"', 'ExecStart=/bin/sh -c "systemctl restart k0s"', '',
  '[Install]', 'WantedBy=multi-user.target', '',
].join('\n');

const CASES: [string, HostPlan, Record<string, unknown>][] = [
  ['an empty plan', plan({}), { ignition: { version: '3.4.0' } }],
  ['a file: decimal mode, user and group, percent-encoded data URL', plan({ files: [{ path: '/etc/x', mode: 0o600, owner: 'root:wheel', content: 'a b\n' }] }), {
    ignition: { version: '3.4.0' },
    storage: { files: [{ path: '/etc/x', overwrite: true, mode: 384, user: { name: 'root' }, group: { name: 'wheel' }, contents: { source: 'data:,a%20b%0A' } }] },
  }],
  ['an owner without a group takes the user as group', plan({ files: [{ path: '/etc/x', mode: 0o644, owner: 'root', content: '' }] }), {
    ignition: { version: '3.4.0' },
    storage: { files: [{ path: '/etc/x', overwrite: true, mode: 420, user: { name: 'root' }, group: { name: 'root' }, contents: { source: 'data:,' } }] },
  }],
  ['units: only the enabled one enabled, a drop-in on a unit not written', plan({
    units: [{ name: 'a.service', content: '[Unit]\n', enabled: true }, { name: 'b.service', content: '[Unit]\n' }],
    dropins: [{ unit: 'kubelet.service', name: '10-x.conf', content: '[Service]\n' }, { unit: 'a.service', name: '10-y.conf', content: '[Unit]\n' }],
  }), {
    ignition: { version: '3.4.0' },
    systemd: { units: [
      { name: 'a.service', enabled: true, contents: '[Unit]\n', dropins: [{ name: '10-y.conf', contents: '[Unit]\n' }] },
      { name: 'b.service', contents: '[Unit]\n' },
      { name: 'kubelet.service', dropins: [{ name: '10-x.conf', contents: '[Service]\n' }] },
    ] },
  }],
  ['commands: a first-boot oneshot unit, each command quoted', plan({ commands: ['echo "hi" > /run/x', 'systemctl restart k0s'] }), {
    ignition: { version: '3.4.0' },
    systemd: { units: [{ name: 'tunnelwright-firstboot.service', enabled: true, contents: FIRSTBOOT }] },
  }],
];

describe('Ignition at the edges', () => {
  it.each(CASES)('%s', (_n, p, expected) => {
    const artefacts = renderHostArtefacts(p);
    expect(artefacts.ignition).toEqual(expected);
    expect(JSON.parse(artefacts.ignitionJson)).toEqual(expected);
  });
});

describeWithSchemas('Ignition at the edges, against its spec schema', () => {
  it.each(CASES)('%s passes the schema', (_n, p) => {
    expect(checkIgnition(renderHostArtefacts(p).ignition, SCHEMA_DIR)).toEqual([]);
  });
});
