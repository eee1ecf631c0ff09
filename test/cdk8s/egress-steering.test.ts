import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { ValidationError } from '../../src';
import { App, EgressSteering } from '../../src/cdk8s';
import { failoverSteering, prodSteering } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';
import { expectWarnings } from '../helpers/stderr-guard';

const app = () => new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'tw-steer-')) });

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'cdk8s EgressSteering invariants refuses two policies claiming the same pods in one cluster (one for all namespaces, one for media)': ['prod/media: clusterCidrs', 'prod/media: vpnClass', 'prod/media: tunnel', 'prod/everything: clusterCidrs', 'prod/everything: vpnClass'],
  'cdk8s EgressSteering invariants refuses two EgressSteering with the same object names in one cluster, naming both and each object; distinct names pass': ['prod/nl: clusterCidrs', 'prod/nl: vpnClass', 'prod/us: clusterCidrs', 'prod/us: vpnClass', 'prod/nl: clusterCidrs', 'prod/nl: vpnClass', 'prod/us: clusterCidrs', 'prod/us: vpnClass'],
  'cdk8s EgressSteering invariants refuses a dev and a prod gateway pinned to one VPN server with one account, across clusters': ['prod/steer: clusterCidrs', 'prod/steer: vpnClass', 'prod/steer: tunnel', 'dev/steer: clusterCidrs', 'dev/steer: vpnClass', 'dev/steer: tunnel'],
  'cdk8s EgressSteering invariants accepts dev and prod on different servers': ['prod/steer: clusterCidrs', 'prod/steer: vpnClass', 'prod/steer: tunnel', 'dev/steer: clusterCidrs', 'dev/steer: vpnClass', 'dev/steer: tunnel'],
  'cdk8s EgressSteering invariants never gives the cluster-scoped policy the chart namespace': ['prod/steer: clusterCidrs', 'prod/steer: vpnClass', 'prod/steer: tunnel'],
  "cdk8s EgressSteering invariants with resteerAdmission 'kyverno' emits the re-steer scope as a cluster-scoped ClusterPolicy, and no ValidatingAdmissionPolicy": ['prod/steer: clusterCidrs', 'prod/steer: vpnClass', 'prod/steer: tunnel'],
});

describe('cdk8s EgressSteering invariants', () => {
  it('refuses two policies claiming the same pods in one cluster (one for all namespaces, one for media)', () => {
    const a = app();
    const chart = new Chart(a, 'prod');
    const { tunnel: _t, namespaces: _n, ...allNamespaces } = prodSteering();
    new EgressSteering(chart, 'media', { ...prodSteering(), name: 'media-egress' });
    new EgressSteering(chart, 'everything', { ...allNamespaces, name: 'all-egress', gatewayNode: 'prod-gw-2' });
    const error = thrown(() => a.synth());
    expect((error as ValidationError).problems).toEqual([
      { path: 'prod/everything:vpnClass', code: 'claimed-twice', message: 'pods with tunnelwright.dev/egress-class=vpn in cluster "prod" is already claimed by prod/media:namespaces[0]' },
    ]);
  });

  // Two classes through two gateways, both with the default name: every object of the second would replace the first's.
  const twoGateways = () => {
    const { tunnel: _t, enforceLabels: _e, ...base } = prodSteering();
    return [{ ...base, acknowledge: ['kube-state-metrics' as const] }, { ...base, vpnClass: 'vpn-us', gatewayNode: 'prod-gw-us', acknowledge: ['kube-state-metrics' as const] }];
  };
  it('refuses two EgressSteering with the same object names in one cluster, naming both and each object; distinct names pass', () => {
    const a = app();
    const chart = new Chart(a, 'prod');
    const [nl, us] = twoGateways();
    new EgressSteering(chart, 'nl', nl);
    new EgressSteering(chart, 'us', us);
    const problems = (thrown(() => a.synth()) as ValidationError).problems;
    expect(problems.map((p) => p.message.split(' in cluster')[0])).toEqual([
      'CiliumEgressGatewayPolicy vpn-egress', 'PrometheusRule monitoring/vpn-egress-egress', 'ServiceAccount kube-system/vpn-egress-resteer',
      'Secret kube-system/vpn-egress-resteer-token', 'ClusterRole vpn-egress-resteer', 'ClusterRoleBinding vpn-egress-resteer',
      'ValidatingAdmissionPolicy vpn-egress-resteer-scope', 'ValidatingAdmissionPolicyBinding vpn-egress-resteer-scope',
    ]);
    expect(problems[0]).toEqual({ path: 'prod/us:name', code: 'claimed-twice', message: 'CiliumEgressGatewayPolicy vpn-egress in cluster "prod" (one object: the second to apply replaces the first; set a distinct name on one of them) is already claimed by prod/nl:name' });
    // Control: the same two with a name each.
    const b = app();
    const c2 = new Chart(b, 'prod');
    new EgressSteering(c2, 'nl', { ...nl, name: 'vpn-egress-nl' });
    new EgressSteering(c2, 'us', { ...us, name: 'vpn-egress-us' });
    expect(b.checkHosts().problems).toEqual([]);
  });

  it('refuses a dev and a prod gateway pinned to one VPN server with one account, across clusters', () => {
    const a = app();
    new EgressSteering(new Chart(a, 'prod'), 'steer', prodSteering());
    new EgressSteering(new Chart(a, 'dev'), 'steer', { ...prodSteering(), cluster: 'dev', gatewayNode: 'dev-gw' });
    expect(a.checkHosts().problems.map((p) => `${p.path} ${p.code}`)).toEqual(['dev/steer:tunnel.remote claimed-twice']);
  });

  it('accepts dev and prod on different servers', () => {
    const a = app();
    new EgressSteering(new Chart(a, 'prod'), 'steer', prodSteering());
    const dev = prodSteering();
    new EgressSteering(new Chart(a, 'dev'), 'steer', { ...dev, cluster: 'dev', gatewayNode: 'dev-gw', tunnel: { ...(dev.tunnel as Extract<typeof dev.tunnel, { type: 'openvpn' }>), remote: 'swiss.privacy.network:1198' } });
    expect(a.checkHosts().problems).toEqual([]);
  });

  it('never gives the cluster-scoped policy the chart namespace', () => {
    const chart = new Chart(app(), 'prod', { namespace: 'media' });
    new EgressSteering(chart, 'steer', prodSteering());
    const scoped = (chart.toJson() as { kind: string; metadata: { namespace?: string } }[]).map((o) => `${o.kind} ${o.metadata.namespace ?? '-'}`);
    expect(scoped).toEqual(['CiliumEgressGatewayPolicy -', 'ClusterPolicy -', 'PrometheusRule monitoring', 'ServiceAccount kube-system', 'Secret kube-system', 'ClusterRole -', 'ClusterRoleBinding -', 'ValidatingAdmissionPolicy -', 'ValidatingAdmissionPolicyBinding -']);
  });

  it("with resteerAdmission 'kyverno' emits the re-steer scope as a cluster-scoped ClusterPolicy, and no ValidatingAdmissionPolicy", () => {
    const chart = new Chart(app(), 'prod', { namespace: 'media' });
    new EgressSteering(chart, 'steer', { ...prodSteering(), resteerAdmission: 'kyverno' });
    const objs = (chart.toJson() as { kind: string; metadata: { name: string; namespace?: string } }[]).map((o) => `${o.kind} ${o.metadata.name} ${o.metadata.namespace ?? '-'}`);
    expect(objs).toContain('ClusterPolicy vpn-egress-resteer-scope -');
    expect(objs.filter((o) => o.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
  });
});

describe('cdk8s EgressSteering failover', () => {
  it('writes every candidate node\'s host files, each with its own tunnel and the agent, and the Lease with the policy', () => {
    const a = app();
    const steering = new EgressSteering(new Chart(a, 'egress'), 'egress', { ...failoverSteering(), acknowledge: ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages', 'default-kubeconfig'] });
    expect(Object.keys(steering.nodes)).toEqual(['gw-1', 'gw-2']);
    a.synth();
    for (const node of ['gw-1', 'gw-2']) {
      expect(fs.readFileSync(path.join(a.outdir, 'hosts', node, 'user-data'), 'utf8')).toContain('/opt/tunnelwright/bin/egress-failover-agent');
    }
    const manifest = fs.readdirSync(a.outdir).filter((f) => f.endsWith('.yaml')).map((f) => fs.readFileSync(path.join(a.outdir, f), 'utf8')).join('\n');
    expect(manifest).toContain('kind: Lease');
    expect(manifest).toContain('egress-active.tunnelwright.dev/vpn-egress: "true"');
  });
});
