import { failoverSteering, homelabConformance } from '../helpers/fixtures';
import { recordResources, settle } from '../helpers/pulumi';

const seen = recordResources();
// Loaded after the mocks are in place, as Pulumi's own tests do.
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');
const { planEgressConformance } = require('../../src') as typeof import('../../src');

beforeEach(() => {
  tw.resetRegistry();
  seen.length = 0;
});

describe('Pulumi EgressConformance with a failover step (R5)', () => {
  const props = { ...homelabConformance(), vpnGateways: [], egressSteerings: [{ steering: { ...failoverSteering(), namespaces: ['media'] }, probeNamespace: 'media', failoverSeconds: 40 }] };

  it('registers a node agent per candidate and the Lease-reading ClusterRole, and its script runs the step with the bound given', async () => {
    const c = new tw.EgressConformance('check', props);
    const plan = planEgressConformance(props);
    expect(c.egressConformanceScript).toBe((plan.values.egressConformance as { script: string }).script);
    expect(c.egressConformanceScript).toContain('|kube-system/vpn-egress-gateway|gw-1=egress-conformance-s0-agent gw-2=egress-conformance-s0-agent1|40|9|egress-active.tunnelwright.dev/vpn-egress\'');
    await settle();
    const children = seen.filter((r) => r.type !== 'tunnelwright:index:EgressConformance');
    expect(children.map((r) => r.name).sort()).toEqual(plan.objects.map((o) => tw.childName('check', o)).sort());
    expect(children.map((r) => r.type)).toEqual(expect.arrayContaining(['kubernetes:rbac.authorization.k8s.io/v1:ClusterRole']));
  });

  it('refuses a bound below the agents\' own, at its path', () => {
    expect(() => new tw.EgressConformance('bad', { ...props, egressSteerings: [{ ...props.egressSteerings[0], failoverSeconds: 5 }] })).toThrow(/egressSteerings\[0\]\.failoverSeconds: expected at least 8 s/);
  });
});
