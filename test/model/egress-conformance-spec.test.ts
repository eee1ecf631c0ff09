/**
 * EgressConformance's props parsed once (issue 42): `parseEgressConformance` turns props into the spec the check's
 * plan and script are made from (each gateway and steering as its own spec, defaults applied, the probes named), or
 * the problems.
 */
import * as fc from 'fast-check';
import { EgressConformanceProps, Plan, planEgressConformance } from '../../src';
import { EgressConformanceSpec, parseEgressConformance } from '../../src/model/egress-conformance-spec';
import { renderConformance, renderConformanceSources, renderEgressConformance } from '../../src/render/egress-conformance';
import { gatewayFor, homelabConformance, nordvpnGateway, prodSteering } from '../helpers/fixtures';

const spec = (p: EgressConformanceProps): EgressConformanceSpec => {
  const parsed = parseEgressConformance(p);
  expect(parsed.problems).toEqual([]);
  return parsed.spec!;
};

describe('parseEgressConformance: the spec, defaults applied and facts derived once', () => {
  it('the defaults, the gateway and the steering as their specs, the probes named', () => {
    const s = spec({ ...homelabConformance(), recoverySeconds: undefined });
    expect(s).toMatchObject({ cluster: 'default', name: 'egress-conformance', recoverySeconds: 180, requestTimeoutSeconds: 5, image: 'curlimages/curl:8.11.1', agentImage: 'busybox:1.37.0' });
    expect(s.vpnGateways).toEqual([{
      gateway: expect.objectContaining({ name: 'vpn-gateway', namespace: 'vpn-gateway', vxlanPrefix: '172.16.0' }), probeNamespace: 'media', directProbe: 'egress-conformance-g0-direct',
      route: { namespace: 'media', name: 'egress-conformance-g0-vpn', podLabels: { 'app.kubernetes.io/name': 'egress-conformance-g0-vpn', 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'egress-conformance' } },
    }]);
    expect(s.egressSteerings).toEqual([{
      steering: expect.objectContaining({ name: 'vpn-egress', classLabel: 'tunnelwright.dev/egress-class', vpnClass: 'vpn' }), probeNamespace: 'media', agentNamespace: 'media', directClass: 'direct',
      vpnProbe: 'egress-conformance-s0-vpn', directProbe: 'egress-conformance-s0-direct', agent: 'egress-conformance-s0-agent',
    }]);
  });

  it('the control probe carries the first class other than the vpn class that the steering enforces', () => {
    const s = spec({ ...homelabConformance(), egressSteerings: [{ steering: { ...prodSteering(), enforceLabels: { namespaces: ['media'], classes: ['vpn', 'lan'] } }, probeNamespace: 'media' }] });
    expect(s.egressSteerings[0].directClass).toBe('lan');
  });

  it('returns the problems and no spec for props that do not parse, the gateway\'s among them', () => {
    const parsed = parseEgressConformance({ ...homelabConformance(), vpnGateways: [{ gateway: { ...nordvpnGateway(), vxlanNetwork: '10.0.0.0/16' }, probeNamespace: 'media' }] });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => p.path)).toEqual(['vpnGateways[0].gateway.vxlanNetwork']);
  });

  it('refuses, in the model, a vpn-class probe named as the gateway\'s port-forwarding workload', () => {
    const forwarding = (workload: string) => ({ ...gatewayFor('protonvpn'), portForwarding: { toPort: 6881, workload, workloadNamespace: 'media' } });
    const parsed = parseEgressConformance({ ...homelabConformance(), vpnGateways: [{ gateway: forwarding('egress-conformance-g0-vpn'), probeNamespace: 'media' }] });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => `${p.path} ${p.code}`)).toEqual(['name two-pods']);
    // Control: forwarding to another workload, the check is taken.
    expect(parseEgressConformance({ ...homelabConformance(), vpnGateways: [{ gateway: forwarding('seeder'), probeNamespace: 'media' }] }).problems).toEqual([]);
  });

  it('property: writing a default out changes no object and no line of the script', () => {
    const implicit: EgressConformanceProps = { ...homelabConformance(), recoverySeconds: undefined };
    const defaults: Record<string, unknown> = {
      cluster: 'default', name: 'egress-conformance', recoverySeconds: 180, requestTimeoutSeconds: 5, image: 'curlimages/curl:8.11.1', agentImage: 'busybox:1.37.0',
      egressSteerings: [{ ...implicit.egressSteerings![0], agentNamespace: 'media' }],
    };
    const plain = planEgressConformance(implicit);
    fc.assert(fc.property(fc.subarray(Object.keys(defaults), { minLength: 1 }), (keys) => {
      const plan = planEgressConformance({ ...implicit, ...Object.fromEntries(keys.map((k) => [k, defaults[k]])) } as EgressConformanceProps);
      expect({ objects: plan.objects, values: plan.values }).toEqual({ objects: plain.objects, values: plain.values });
    }), { numRuns: 40 });
  });
});

describe('the render functions take the spec, not props', () => {
  it('renderEgressConformance, renderConformance and renderConformanceSources are typed on EgressConformanceSpec', () => {
    const plan: (s: EgressConformanceSpec) => Plan = renderEgressConformance;
    const script: (s: EgressConformanceSpec) => string = renderConformance;
    const sources: (s: EgressConformanceSpec) => unknown[] = renderConformanceSources;
    // @ts-expect-error: props are parsed first (parseEgressConformance); render takes no props.
    expect(() => renderEgressConformance(homelabConformance())).toThrow();
    const s = spec(homelabConformance());
    expect(plan(s).objects).toEqual(planEgressConformance(homelabConformance()).objects);
    expect(script(s)).toContain('SOURCES=');
    expect(sources(s)).toHaveLength(2);
  });
});
