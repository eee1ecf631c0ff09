/**
 * EgressProbe's props parsed once (issue 42): `parseEgressProbe` turns props into the spec the probe's plan is made
 * from (the gateway it goes through as its own spec, defaults applied, modules and resolver derived), or the problems.
 */
import * as fc from 'fast-check';
import { EgressProbeProps, Plan, planEgressProbe } from '../../src';
import { EgressProbeSpec, parseEgressProbe } from '../../src/model/egress-probe-spec';
import { renderBlackboxConfig, renderEgressProbe, renderEgressProbeAlertGroups } from '../../src/render/egress-probe';
import { gatewayFor, gatewayProbe, nordvpnGateway } from '../helpers/fixtures';

const spec = (p: EgressProbeProps): EgressProbeSpec => {
  const parsed = parseEgressProbe(p);
  expect(parsed.problems).toEqual([]);
  return parsed.spec!;
};
const steering = (p: Partial<EgressProbeProps> = {}): EgressProbeProps => ({ ...gatewayProbe(), via: { egressSteering: {} }, dnsLeak: { resolver: '10.43.0.10', leakedCidrs: ['192.0.2.0/24'] }, ...p });

describe('parseEgressProbe: the spec, defaults applied and facts derived once', () => {
  it.each<[string, EgressProbeProps, Partial<Record<keyof EgressProbeSpec, unknown>>]>([
    ['through a gateway: the gateway\'s spec, the probe Deployment as the route\'s target, the defaults', gatewayProbe(), {
      cluster: 'default', name: 'egress-probe', namespace: 'media', interval: '60s', intervalSeconds: 60, directTwin: true,
      image: 'prom/blackbox-exporter:v0.25.0', vpnCidrs: { 4: ['185.236.200.0/22'], 6: [] },
      monitoring: { namespace: 'monitoring', ruleLabels: { release: 'kube-prometheus-stack' } },
      via: expect.objectContaining({ vpnGateway: expect.objectContaining({ name: 'vpn-gateway', vxlanPrefix: '172.16.0' }), route: { namespace: 'media', name: 'egress-probe', podLabels: { 'app.kubernetes.io/name': 'egress-probe', 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'egress-probe' } } }),
      modules: [{ key: 'vpn_ipv4', job: 'egress-probe-vpn-ipv4', egressClass: 'vpn', family: 4 }, { key: 'direct_ipv4', job: 'egress-probe-direct-ipv4', egressClass: 'direct', family: 4 }],
    }],
    ['the DNS-leak resolver defaults to the gateway\'s dnsmasq (its VXLAN network\'s .1), the name to whoami.akamai.net', {
      ...gatewayProbe(), via: { vpnGateway: { ...nordvpnGateway(), vxlanNetwork: '10.99.7.0/24' } }, dnsLeak: { leakedCidrs: ['192.0.2.0/24'] },
    }, { dnsLeak: { queryName: 'whoami.akamai.net', resolver: '10.99.7.1', leakedCidrs: ['192.0.2.0/24'] } }],
    ['for a steering class: its label and class defaulted, IPv6 ranges apart, the IPv6 module', steering({ ipv6: true, directTwin: false, vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'] }), {
      via: { egressSteering: { classLabel: 'tunnelwright.dev/egress-class', vpnClass: 'vpn' } }, vpnCidrs: { 4: ['185.236.200.0/22'], 6: ['2a03:1b20::/32'] },
      modules: [{ key: 'vpn_ipv4', job: 'egress-probe-vpn-ipv4', egressClass: 'vpn', family: 4 }, { key: 'vpn_ipv6', job: 'egress-probe-vpn-ipv6', egressClass: 'vpn', family: 6 }],
      dnsLeak: { queryName: 'whoami.akamai.net', resolver: '10.43.0.10', leakedCidrs: ['192.0.2.0/24'] },
    }],
    ['an interval and a name of one\'s own', { ...gatewayProbe(), name: 'leakwatch', interval: '2m' }, { name: 'leakwatch', interval: '2m', intervalSeconds: 120 }],
  ])('%s', (_name, props, expected) => {
    expect(spec(props)).toMatchObject(expected);
  });

  it('returns the problems and no spec for props that do not parse, the gateway\'s among them', () => {
    const parsed = parseEgressProbe({ ...gatewayProbe(), via: { vpnGateway: { ...nordvpnGateway(), vxlanNetwork: '10.0.0.0/16' } } });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => p.path)).toEqual(['via.vpnGateway.vxlanNetwork']);
  });

  it('refuses, in the model, a probe named as the gateway\'s port-forwarding workload (it would be routed as that workload)', () => {
    const forwarding = { ...gatewayFor('protonvpn'), portForwarding: { toPort: 6881, workload: 'egress-probe', workloadNamespace: 'media' } };
    const parsed = parseEgressProbe({ ...gatewayProbe(), via: { vpnGateway: forwarding } });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => `${p.path} ${p.code}`)).toEqual(['name two-pods']);
    // Control: the same gateway forwarding to another workload takes the probe.
    expect(parseEgressProbe({ ...gatewayProbe(), via: { vpnGateway: { ...forwarding, portForwarding: { ...forwarding.portForwarding, workload: 'seeder' } } } }).problems).toEqual([]);
  });

  it.each<[string, EgressProbeProps, Record<string, unknown>]>([
    ['through a gateway, with a DNS-leak probe', { ...gatewayProbe(), directTwin: undefined, dnsLeak: { leakedCidrs: ['192.0.2.0/24'] } }, {
      cluster: 'default', name: 'egress-probe', interval: '60s', directTwin: false, ipv6: false, image: 'prom/blackbox-exporter:v0.25.0',
      monitoring: { namespace: 'monitoring', ruleLabels: { release: 'kube-prometheus-stack' } }, dnsLeak: { leakedCidrs: ['192.0.2.0/24'], queryName: 'whoami.akamai.net', resolver: '172.16.0.1' },
    }],
    ['for a steering class', steering({ directTwin: undefined }), {
      cluster: 'default', name: 'egress-probe', interval: '60s', directTwin: false, ipv6: false, image: 'prom/blackbox-exporter:v0.25.0',
      via: { egressSteering: { egressClassLabel: 'tunnelwright.dev/egress-class', vpnClass: 'vpn' } },
      monitoring: { namespace: 'monitoring', ruleLabels: { release: 'kube-prometheus-stack' } }, dnsLeak: { resolver: '10.43.0.10', leakedCidrs: ['192.0.2.0/24'], queryName: 'whoami.akamai.net' },
    }],
  ])('property (%s): writing a default out changes no object the probe plans', (_name, implicit, defaults) => {
    const plain = planEgressProbe(implicit).objects;
    fc.assert(fc.property(fc.subarray(Object.keys(defaults), { minLength: 1 }), (keys) => {
      const explicit = { ...implicit, ...Object.fromEntries(keys.map((k) => [k, defaults[k]])) } as EgressProbeProps;
      expect(planEgressProbe(explicit).objects).toEqual(plain);
    }));
  });
});

describe('the render functions take the spec, not props', () => {
  it('renderEgressProbe, renderBlackboxConfig and renderEgressProbeAlertGroups are typed on EgressProbeSpec', () => {
    const plan: (s: EgressProbeSpec) => Plan = renderEgressProbe;
    const config: (s: EgressProbeSpec) => string = renderBlackboxConfig;
    const alerts: (s: EgressProbeSpec) => unknown[] = renderEgressProbeAlertGroups;
    // @ts-expect-error: props are parsed first (parseEgressProbe); render takes no props.
    expect(() => renderEgressProbe(gatewayProbe())).toThrow();
    expect(plan(spec(gatewayProbe())).objects).toEqual(planEgressProbe(gatewayProbe()).objects);
    expect(config(spec(gatewayProbe()))).toContain('vpn_ipv4');
    expect(alerts(spec(gatewayProbe()))).toHaveLength(1);
  });
});
