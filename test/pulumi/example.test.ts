import * as pulumi from '@pulumi/pulumi';
import { recordResources, settle, valueOf } from '../helpers/pulumi';

const seen = recordResources();

describe('examples/pulumi under mocks', () => {
  it('registers the expected resource graph', async () => {
    const warn = jest.spyOn(pulumi.log, 'warn').mockImplementation(() => Promise.resolve());
    const program = require('../../examples/pulumi/index.ts') as { servers: { userData: pulumi.Output<string> }[]; gatewayNodeUserData: pulumi.Output<string> };
    await settle();
    // The program declares qBittorrent's namespace: no Pod Security warning (the steering's lesson warnings remain).
    const warned = warn.mock.calls.map((c) => String(c[0]));
    expect(warned.length).toBeGreaterThan(0);
    expect(warned.filter((w) => w.includes('Pod Security') || w.includes('not in this app'))).toEqual([]);
    warn.mockRestore();
    const byType = new Map<string, string[]>();
    for (const r of seen) byType.set(r.type, [...(byType.get(r.type) ?? []), r.name].sort());
    expect(Object.fromEntries([...byType.entries()].sort())).toEqual({
      'homelab:index:Server': ['hetzner-w1', 'home-cp1', 'office-w2'],
      'kubernetes:apps/v1:Deployment': ['protonvpn-deployment-vpn-gateway-vpn-gateway'],
      'kubernetes:apps/v1:StatefulSet': ['qbittorrent'],
      'kubernetes:cilium.io/v2:CiliumEgressGatewayPolicy': ['egress-ciliumegressgatewaypolicy-vpn-egress'],
      'kubernetes:monitoring.coreos.com/v1:PrometheusRule': ['egress-prometheusrule-monitoring-vpn-egress-egress'],
      'kubernetes:networking.k8s.io/v1:NetworkPolicy': ['protonvpn-networkpolicy-media-qbittorrent-vpn-kill-switch'],
      'kubernetes:rbac.authorization.k8s.io/v1:ClusterRole': ['egress-clusterrole-vpn-egress-resteer'],
      'kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding': ['egress-clusterrolebinding-vpn-egress-resteer'],
      'kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy': ['egress-validatingadmissionpolicy-vpn-egress-resteer-scope'],
      'kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding': ['egress-validatingadmissionpolicybinding-vpn-egress-resteer-scope'],
      // The program's own Namespace (a @pulumi/kubernetes core/v1 resource), the gateway's one (a tunnelwright object).
      'kubernetes:core/v1:Namespace': ['media'],
      'kubernetes:v1:Namespace': ['protonvpn-namespace-vpn-gateway'],
      'kubernetes:v1:ConfigMap': ['protonvpn-configmap-media-qbittorrent-vpn-route', 'protonvpn-configmap-vpn-gateway-vpn-gateway-settings'],
      'kubernetes:v1:Secret': ['egress-secret-kube-system-vpn-egress-resteer-token'],
      'kubernetes:v1:Service': ['protonvpn-service-vpn-gateway-vpn-gateway'],
      'kubernetes:v1:ServiceAccount': ['egress-serviceaccount-kube-system-vpn-egress-resteer'],
      'pulumi:providers:kubernetes': ['homelab'],
      'tunnelwright:index:EgressSteering': ['egress'],
      'tunnelwright:index:VpnGateway': ['protonvpn'],
      'tunnelwright:index:WireguardMesh': ['overlay'],
    });
    // Every Kubernetes object goes through the program's provider.
    expect(seen.filter((r) => r.type.startsWith('kubernetes:')).every((r) => /::homelab::homelab-id$/.test(r.provider ?? ''))).toBe(true);
    // The servers get the overlay's cloud-configs; qBittorrent is routed, its client init container first.
    expect((await valueOf(program.servers[0].userData)).startsWith('#cloud-config\n')).toBe(true);
    const qb = seen.find((r) => r.name === 'qbittorrent')!.inputs as { spec: { template: { spec: { initContainers: { name: string }[]; hostname?: string } } } };
    expect(qb.spec.template.spec.initContainers.map((c) => c.name)).toEqual(['vpn-route-init']);
    // The forwarded StatefulSet's pod qbittorrent-0 is hostnamed by its controller: nat.conf holds what client_init.sh cuts from it.
    expect(qb.spec.template.spec.hostname).toBeUndefined();
    const route = seen.find((r) => r.name === 'protonvpn-configmap-media-qbittorrent-vpn-route')!.inputs as { data: Record<string, string> };
    expect(route.data['nat.conf'].split('\n').filter((l) => l && !l.startsWith('#'))).toEqual(['qbittorrent 5 tcp:6881,udp:6881']);
    expect(await pulumi.isSecret(program.gatewayNodeUserData)).toBe(false);
  });
});
