/**
 * The nft tables the library writes are templates (src/render/kill-switch.nft, kube-router-snat*.nft) filled by named
 * substitution (src/host/template.ts): nft itself checks what they become (`nft --check -f`, which parses and
 * validates the ruleset in the kernel's transaction without committing it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { renderKillSwitchTable } from '../../src';
import { fillTemplate } from '../../src/host/template';
import { kubeRouterSnat } from '../../src/render/cni';
import { describeWithTools, run, tmpdir } from '../system/tools';

describe('fillTemplate: the template and its caller agree on every name', () => {
  it('replaces a name in a line by its text, and a line that is only a name by its lines (none: the line goes)', () => {
    expect(fillTemplate('a @X@ b\n@L@\n@M@\nend\n', { X: 'x', L: ['1', '2'], M: [] })).toBe('a x b\n1\n2\nend\n');
  });
  it('takes a list line by a name of several letters, digits and underscores, as the library\'s templates name them', () => {
    expect(fillTemplate('@POD_RULES_6@\nend', { POD_RULES_6: ['a', 'b'] })).toBe('a\nb\nend');
  });
  it.each<[string, string, Record<string, string | string[]>]>([
    ['a name with no value', 'a @X@ @Y@', { X: 'x' }],
    ['a value no name takes', 'a @X@', { X: 'x', Y: 'y' }],
    ['a list where a line takes text', 'a @X@ b', { X: ['x'] }],
    // A line that starts or ends with a list's name but holds more is no list line: the rest is never dropped.
    ['a list named at the start of a line that holds more', '@X@ accept', { X: ['x'] }],
    ['a list named at the end of a line that holds more', 'ip saddr @X@', { X: ['x'] }],
  ])('throws on %s', (_n, text, values) => {
    expect(() => fillTemplate(text, values)).toThrow(/^template: /);
  });
});

const KILL_SWITCHES: [string, Parameters<typeof renderKillSwitchTable>[0]][] = [
  ['every interface but the tunnel', { node: 'gw-1', tunnelInterface: 'wg0', tunnelCidrs: ['10.2.0.2/32'] }],
  ['the WAN, pods of both families, inbound ports', { node: 'gw-1', tunnelInterface: 'tun0', wanInterface: 'eth0', tunnelCidrs: ['10.2.0.2/32', 'fc00::2/128'], podCidrs: ['10.42.0.0/16', 'fd42::/48'], tunnelInboundPorts: [51413, 80] }],
  ['a tunnel whose address is learnt at run time', { node: 'gw-1', tunnelInterface: 'tun0', wanInterface: 'eth0', tunnelCidrs: [] }],
];
const SNATS: [string, string[], number][] = [['IPv4', ['10.10.0.1/24'], 14], ['IPv6', ['fd10::1/64'], 14], ['dual-stack, masquerade bit 0', ['10.10.0.1/24', 'fd10::1/64'], 0], ['IPv4, masquerade bit 31', ['10.10.0.1/24'], 31]];

describeWithTools('the nft tables as nft reads them', ['nft'], () => {
  const dir = tmpdir('c-nft-');
  const check = (name: string, text: string) => {
    const file = path.join(dir, `${name.replace(/\W+/g, '-')}.nft`);
    // The kill switch includes what the tunnel learns at run time: a directory of its own here.
    fs.writeFileSync(file, text.replace(/include "[^"]+"/, `include "${dir}/learnt/*.nft"`));
    return run('nft', ['--check', '-f', file]);
  };
  it.each(KILL_SWITCHES)('the kill switch, %s: nft --check takes it', (name, host) => {
    const r = check(`ks-${name}`, renderKillSwitchTable(host));
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });
  it.each(SNATS)('kube-router\'s SNAT, %s: nft --check takes it', (name, addresses, bit) => {
    const r = check(`snat-${name}`, kubeRouterSnat('wg0', addresses, bit)!.nft);
    expect(r.output).toBe('');
    expect(r.status).toBe(0);
  });
  it('control: a table with a rule nft does not know is refused', () => {
    const r = check('broken', renderKillSwitchTable(KILL_SWITCHES[0][1]).replace('counter name "tunnel_inbound_dropped" drop', 'counter name "tunnel_inbound_dropped" dorp'));
    expect(r.status).not.toBe(0);
  });
}, true);
