import { egressSteeringClaims, planEgressSteering, renderHostArtefacts } from '../../src';
import { checkKubeObjects } from '../../src/testing';
import { prodSteering, wireguardSteering } from '../helpers/fixtures';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';

describe('planEgressSteering', () => {
  it('selects vpn-class pods and one gateway node by hostname, by interface, never egressGateways', () => {
    const [policy] = planEgressSteering(prodSteering()).objects;
    expect(policy).toEqual({
      apiVersion: 'cilium.io/v2',
      kind: 'CiliumEgressGatewayPolicy',
      metadata: { name: 'vpn-egress', labels: { 'app.kubernetes.io/managed-by': 'tunnelwright' } },
      spec: {
        selectors: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'media' } }, podSelector: { matchLabels: { 'tunnelwright.dev/egress-class': 'vpn' } } }],
        destinationCIDRs: ['0.0.0.0/0'],
        excludedCIDRs: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
        egressGateway: { nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'prod-gw' } }, interface: 'tun0' },
      },
    });
    expect(JSON.stringify(policy)).not.toContain('egressGateways');
  });

  it('uses egressIP instead of the interface when given, and excludes only what lies inside the destinations', () => {
    const [policy] = planEgressSteering({ ...wireguardSteering(), egressIp: '10.2.0.2', destinationCidrs: ['100.64.0.0/10', '203.0.113.0/24'], lanCidrs: ['100.64.5.0/24'] }).objects;
    expect((policy.spec as Record<string, unknown>).egressGateway).toEqual({ nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'gw-1' } }, egressIP: '10.2.0.2' });
    expect((policy.spec as Record<string, unknown>).excludedCIDRs).toEqual(['100.64.5.0/24']);
  });

  it('emits the objects in order: policy, Kyverno, PrometheusRule, then the hook\'s RBAC', () => {
    expect(planEgressSteering(prodSteering()).objects.map((o) => `${o.kind} ${o.metadata.namespace ?? '-'}/${o.metadata.name}`)).toEqual([
      'CiliumEgressGatewayPolicy -/vpn-egress',
      'ClusterPolicy -/vpn-egress-require-egress-class',
      'PrometheusRule monitoring/vpn-egress-egress',
      'ServiceAccount kube-system/vpn-egress-resteer',
      'Secret kube-system/vpn-egress-resteer-token',
      'ClusterRole -/vpn-egress-resteer',
      'ClusterRoleBinding -/vpn-egress-resteer',
    ]);
  });

  it('lets the hook patch only the gateway node and its CiliumNode', () => {
    const role = planEgressSteering(prodSteering()).objects.find((o) => o.kind === 'ClusterRole')!;
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['nodes'], resourceNames: ['prod-gw'], verbs: ['get', 'patch'] },
      { apiGroups: ['cilium.io'], resources: ['ciliumnodes'], resourceNames: ['prod-gw'], verbs: ['get', 'patch'] },
    ]);
  });

  it('puts the rule labels the Prometheus ruleSelector needs on the PrometheusRule', () => {
    const rule = planEgressSteering(prodSteering()).objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.metadata.labels).toEqual({ 'app.kubernetes.io/managed-by': 'tunnelwright', release: 'kube-prometheus-stack' });
    const alerts = (rule.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups[0].rules;
    expect(alerts.map((r) => r.alert)).toEqual(['VPNTunnelDown', 'VPNEgressSteeringStale', 'VPNEgressUplinkLabelMissing']);
    expect(alerts.every((r) => r.expr.endsWith('and on() (count(kube_node_info{node="prod-gw"}) > 0)'))).toBe(true);
  });

  it('gives the Helm values Cilium and kube-state-metrics need', () => {
    expect(planEgressSteering(prodSteering()).values).toEqual({
      cilium: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['tun0'] },
      kubeStateMetrics: { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink]'] },
    });
  });

  it('renders a WireGuard split tunnel: no routes of wg-quick\'s, policy routing for its own address, the hook on connect', () => {
    const host = planEgressSteering(wireguardSteering()).hosts[0];
    const conf = host.files.find((f) => f.path === '/etc/wireguard/tun0.conf')!.content;
    expect(conf).toContain('\nTable = off\n');
    expect(conf).toContain('\nPostUp = ip -4 rule add from 10.2.0.2 lookup 51821 priority 5210\nPostUp = ip -4 route replace default dev %i table 51821\nPostUp = /opt/tunnelwright/bin/egress-resteer || true\n');
    expect(conf).not.toMatch(/PrivateKey/);
    expect(host.files.find((f) => f.path === '/etc/tunnelwright/killswitch.nft')!.content).toContain('elements = { 10.2.0.2/32 }');
  });

  it('renders an OpenVPN split tunnel with route-noexec, pinned to its remote', () => {
    const host = planEgressSteering(prodSteering()).hosts[0];
    const unit = host.units.find((u) => u.name === 'tunnelwright-openvpn.service')!.content!;
    expect(unit).toContain(' --route-noexec ');
    expect(unit).toContain(' --remote nl-amsterdam.privacy.network 1198\n');
    expect(host.files.find((f) => f.path === '/opt/tunnelwright/bin/egress-openvpn-up')!.content).toContain('nft add element inet tunnelwright_killswitch tunnel_v4 "{ $ifconfig_local }"');
  });

  it('installs the hook and its convergence timer even without a tunnel', () => {
    const { tunnel: _t, ...noTunnel } = wireguardSteering();
    const host = planEgressSteering(noTunnel).hosts[0];
    expect(host.files.map((f) => f.path)).toEqual(['/opt/tunnelwright/bin/egress-resteer']);
    expect(host.units.map((u) => `${u.name} ${u.enabled ?? false}`)).toEqual(['tunnelwright-egress-resteer.service false', 'tunnelwright-egress-resteer.timer true']);
    expect(renderHostArtefacts(host).secret).toBe(false);
  });

  it('claims its pods per namespace or for the whole cluster, and a pinned server with its credential', () => {
    expect(egressSteeringClaims(prodSteering())).toEqual([
      { key: 'cluster/prod/egress-class/tunnelwright.dev/egress-class=vpn/ns/media', path: 'namespaces[0]', what: 'pods with tunnelwright.dev/egress-class=vpn in namespace media of cluster "prod"' },
      { key: 'vpn-server/openvpn/nl-amsterdam.privacy.network:1198//etc/openvpn/pia/credentials', path: 'tunnel.remote', what: "VPN server nl-amsterdam.privacy.network:1198 with the credential /etc/openvpn/pia/credentials (two gateways on one server and account steal each other's session)" },
    ]);
  });
});

describeWithSchemas('EgressSteering objects against their schemas', () => {
  it.each([['prod', prodSteering()], ['wireguard', wireguardSteering()]])('%s', (_n, props) => {
    expect(checkKubeObjects(planEgressSteering(props).objects, SCHEMA_DIR)).toEqual([]);
  });
});
