/**
 * KillSwitch's props parsed once (issue 42): `parseKillSwitch` turns props into the spec the policy, the host table,
 * the VXLAN endpoint and the fence are made from, with the defaults applied, or returns the problems.
 */
import * as fc from 'fast-check';
import { KillSwitchProps, Plan, planKillSwitch } from '../../src';
import { KillSwitchSpec, parseKillSwitch } from '../../src/model/kill-switch-spec';
import { killSwitchFence, killSwitchVxlan, renderKillSwitch } from '../../src/render/kill-switch';
import { qbittorrentKillSwitch } from '../helpers/fixtures';

const spec = (p: KillSwitchProps): KillSwitchSpec => {
  const parsed = parseKillSwitch(p);
  expect(parsed.problems).toEqual([]);
  return parsed.spec!;
};

describe('parseKillSwitch: the spec, defaults applied', () => {
  it.each<[string, KillSwitchProps, Partial<Record<keyof KillSwitchSpec, unknown>>]>([
    ['the defaults: the name from the selector, DNS allowed, a NetworkPolicy, VXLAN on 4789', qbittorrentKillSwitch(), {
      cluster: 'default', name: 'qbittorrent-kill-switch', allowDns: true, flavor: 'kubernetes', duplicateAcknowledged: false,
      gateway: { podLabels: { 'app.kubernetes.io/name': 'vpn-gateway' }, namespace: 'vpn-gateway', vxlanPort: 4789 },
    }],
    ['the gateway in the kill switch\'s own namespace unless given', { ...qbittorrentKillSwitch(), gatewayNamespace: undefined }, {
      gateway: { podLabels: { 'app.kubernetes.io/name': 'vpn-gateway' }, namespace: 'media', vxlanPort: 4789 },
    }],
    ['no gateway, no DNS, a name and acknowledgement of one\'s own', { ...qbittorrentKillSwitch(), gatewayPodLabels: undefined, gatewayNamespace: undefined, allowDns: false, name: 'qb', acknowledge: ['duplicate-kill-switch'] }, {
      allowDns: false, name: 'qb', duplicateAcknowledged: true,
    }],
  ])('%s', (_name, props, expected) => {
    expect(spec(props)).toMatchObject(expected);
  });

  it('has no gateway without gatewayPodLabels', () => {
    expect(spec({ ...qbittorrentKillSwitch(), gatewayPodLabels: undefined, gatewayNamespace: undefined })).not.toHaveProperty('gateway');
  });

  it('returns the problems and no spec for props that do not parse', () => {
    const parsed = parseKillSwitch({ ...qbittorrentKillSwitch(), allowCidrs: ['0.0.0.0/0'] });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => p.path)).toEqual(['allowCidrs[0]']);
  });

  it.each<[string, KillSwitchProps]>([
    ['with a gateway and a host', qbittorrentKillSwitch()],
    ['Cilium, the gateway in the kill switch\'s namespace', { ...qbittorrentKillSwitch(), flavor: 'cilium', gatewayNamespace: undefined }],
  ])('property (%s): writing a default out changes no object, host file, VXLAN endpoint or fence', (_name, implicit) => {
    const defaults: Record<string, unknown> = {
      cluster: 'default', name: 'qbittorrent-kill-switch', allowDns: true, vxlanPort: 4789, flavor: implicit.flavor ?? 'kubernetes', ipv6: false,
      gatewayNamespace: implicit.gatewayNamespace ?? implicit.namespace, acknowledge: [],
    };
    const seen = (p: KillSwitchProps) => {
      const s = spec(p);
      const plan = planKillSwitch(p);
      return { objects: plan.objects, hosts: plan.hosts, vxlan: killSwitchVxlan(s, 'ks'), fence: killSwitchFence(s, 'ks') };
    };
    const plain = seen(implicit);
    fc.assert(fc.property(fc.subarray(Object.keys(defaults), { minLength: 1 }), (keys) => {
      expect(seen({ ...implicit, ...Object.fromEntries(keys.map((k) => [k, defaults[k]])) } as KillSwitchProps)).toEqual(plain);
    }));
  });
});

describe('the render functions take the spec, not props', () => {
  it('renderKillSwitch, killSwitchVxlan and killSwitchFence are typed on KillSwitchSpec', () => {
    const plan: (s: KillSwitchSpec) => Plan = renderKillSwitch;
    const vxlan: (s: KillSwitchSpec, construct: string) => unknown = killSwitchVxlan;
    const fence: (s: KillSwitchSpec, construct: string) => unknown = killSwitchFence;
    // @ts-expect-error: props are parsed first (parseKillSwitch); the VXLAN endpoint is read from the spec.
    expect(killSwitchVxlan(qbittorrentKillSwitch(), 'ks')).toBeUndefined();
    expect(plan(spec(qbittorrentKillSwitch())).objects).toEqual(planKillSwitch(qbittorrentKillSwitch()).objects);
    expect(vxlan(spec(qbittorrentKillSwitch()), 'ks')).toMatchObject({ port: 4789, namespace: 'vpn-gateway' });
    expect(fence(spec(qbittorrentKillSwitch()), 'ks')).toMatchObject({ cluster: 'default', acknowledged: false });
  });

});
