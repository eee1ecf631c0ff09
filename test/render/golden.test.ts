import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { stringify } from 'yaml';
import {
  applyRoute, planEgressProbe, planEgressSteering, planKillSwitch, Plan, planRoute, planVpnGateway, planWireguardMesh, planWireguardOverlayNode,
  EgressSteeringProps, renderHostArtefacts, VpnGatewayProps, WireguardOverlayNodeProps,
} from '../../src';
import { failoverSteering, gatewayFor, gatewayProbe, KEYS, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';
import { expectGolden } from '../helpers/golden';

/**
 * Every construct's whole output for the fixtures, as a reviewer reads it: the Kubernetes objects as the manifests
 * carry them, the values to hand to Helm charts, the warnings, and each node's user-data. A change to any of it is a
 * diff in test/golden/ for a person to review (`UPDATE_GOLDEN=1 npm test`).
 */
const yaml = (v: unknown) => stringify(v, { aliasDuplicateObjects: false, lineWidth: 0 });

function document(plan: Plan, extra: Record<string, unknown> = {}): string {
  const parts = [
    `# warnings\n${yaml(plan.warnings.map((w) => `${w.path} ${w.code}: ${w.message}`))}`,
    `# values\n${yaml(plan.values)}`,
    ...Object.entries(extra).map(([k, v]) => `# ${k}\n${yaml(v)}`),
    ...plan.objects.map((o) => `# object ${o.kind}/${(o.metadata as { name?: string } | undefined)?.name ?? ''}\n${yaml(o)}`),
    ...plan.hosts.map((h) => `# host ${h.node}: user-data\n${renderHostArtefacts(h).cloudConfig}`),
  ];
  return parts.join('---\n');
}

const WORKLOAD_SPEC: IPodSpec = { containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] };

/**
 * The three-site controller on another distribution, dual-stack (IPv6 written first), its private key and one peer's
 * preshared key inline: what kubeadm or k3s read, and a config with no PostUp to apply a key.
 */
function dualStackInline(distribution: 'kubeadm' | 'k3s', kubernetesVersion?: string): WireguardOverlayNodeProps {
  const props = siteA();
  const { privateKeyFrom: _from, peers, ...iface } = props.wireguard[0];
  return {
    ...props,
    distribution,
    ...(kubernetesVersion ? { kubernetesVersion } : {}),
    wireguard: [{ ...iface, address: ['fd10::1/64', '10.10.0.1/24'], privateKey: KEYS.a.privateKey, peers: [{ ...peers[0], presharedKey: KEYS.psk }, peers[1]] }],
  };
}

function gatewayWithRoute(props: VpnGatewayProps, spec: IPodSpec = WORKLOAD_SPEC): string {
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent', kind: 'StatefulSet' }); // forwarded in openvpn-calico
  return document(planVpnGateway(props), { 'route objects': route.objects, 'routed pod spec': applyRoute(spec, route) });
}

/** A workload with init containers and volumes of its own, routed twice (a second applyRoute changes nothing). */
function routedTwice(props: VpnGatewayProps): string {
  const spec: IPodSpec = { ...WORKLOAD_SPEC, initContainers: [{ name: 'chown', image: 'busybox:1.37' }], volumes: [{ name: 'config', emptyDir: {} }] };
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent', kind: 'StatefulSet' }); // forwarded in openvpn-calico
  return gatewayWithRoute(props, applyRoute(spec, route));
}

describe('golden output', () => {
  it.each<[string, () => string]>([
    ['vpn-gateway.nordvpn.yaml', () => gatewayWithRoute(nordvpnGateway())],
    ['vpn-gateway.standby.yaml', () => gatewayWithRoute({ ...nordvpnGateway(), standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-standby' } } })],
    ['vpn-gateway.standby-servers.yaml', () => gatewayWithRoute({ ...(({ serverCountries: _c, ...p }) => p)(nordvpnGateway()), serverCities: ['Zurich'], standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-standby' }, servers: { serverCities: ['Geneva'] } } })],
    ['vpn-gateway.standby-openvpn.yaml', () => gatewayWithRoute({ ...(({ wireguardPrivateKeySecret: _k, ...p }) => p)(nordvpnGateway()), vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'nordvpn-openvpn' }, standby: { openvpnCredentialsSecret: { name: 'nordvpn-openvpn-standby' } } })],
    ['vpn-gateway.pia-openvpn.yaml', () => gatewayWithRoute(gatewayFor('private internet access'))],
    ['vpn-gateway.custom.yaml', () => gatewayWithRoute(gatewayFor('custom'))],
    ['vpn-gateway.every-option.yaml', () => gatewayWithRoute({
      ...gatewayFor('mullvad'), wireguardPrivateKeySecret: { name: 'mullvad-wg', key: 'wg.key' }, wireguardPresharedKeySecret: { name: 'mullvad-psk', key: 'psk' }, cluster: 'prod', name: 'egress-gw', namespace: 'vpn', clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], clusterDnsIp: '10.43.0.53',
      clusterDomain: 'prod.internal', serverCities: ['Zurich'], vxlanId: 77, vxlanNetwork: '172.30.7.0/24', dnsAddress: '9.9.9.9', dnssec: false,
      cni: 'cilium', podMtu: 1400, mesh: 'istio-ambient', createNamespace: false, tunDevice: { resource: 'squat.ai/tun' },
      images: { gluetun: 'registry.example.test/gluetun:v3.41.1', podGateway: 'registry.example.test/pod-gateway:v1.13.0' },
    })],
    ['vpn-gateway.openvpn-calico.yaml', () => routedTwice({
      ...gatewayFor('private internet access'), cni: 'calico', tunDevice: 'privileged', openvpnCredentialsSecret: { name: 'pia', userKey: 'user', passwordKey: 'pass' },
      portForwarding: { toPort: 6881, workload: 'qbittorrent', workloadNamespace: 'media' },
    })],
    ['egress-steering.prod.yaml', () => document(planEgressSteering(prodSteering()))],
    ['egress-steering.wireguard.yaml', () => document(planEgressSteering(wireguardSteering()))],
    ['egress-steering.failover.yaml', () => document(planEgressSteering({ ...failoverSteering(), monitoring: {}, acknowledge: ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages', 'kube-state-metrics'] }))],
    ['kill-switch.qbittorrent.yaml', () => document(planKillSwitch(qbittorrentKillSwitch()))],
    ['kill-switch.cilium-dual-stack.yaml', () => document(planKillSwitch({
      ...qbittorrentKillSwitch(), cluster: 'prod', name: 'qb-egress', flavor: 'cilium', ipv6: true, allowDns: false, vxlanPort: 8472,
      allowCidrs: ['10.42.0.0/16', '10.43.0.0/16', 'fd00:42::/56', 'fd00:43::/112'],
      host: { node: 'gw-1', wanInterface: 'enp1s0', tunnelInterface: 'wg0', tunnelCidrs: ['10.2.0.2/32', 'fd00:2::2/128'], podCidrs: ['10.42.0.0/16', 'fd00:42::/56'] },
    }))],
    ['egress-probe.yaml', () => document(planEgressProbe(gatewayProbe()))],
    ['egress-probe.dns-leak.yaml', () => document(planEgressProbe({ ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'], tunnelCidrs: ['10.2.0.0/24'] } }))],
    ['egress-probe.minimal.yaml', () => document(planEgressProbe({ namespace: 'media', via: { vpnGateway: nordvpnGateway() }, targets: ['https://ifconfig.example.test/ip'], wanIps: ['203.0.113.7'] }))],
    ['egress-probe.every-option.yaml', () => document(planEgressProbe({
      cluster: 'prod', name: 'wan-check', namespace: 'media', via: { egressSteering: { egressClassLabel: 'example.com/egress', vpnClass: 'tunnel' } },
      targets: ['https://ifconfig.example.test/ip', 'http://ip.example.test/'], wanIps: ['203.0.113.7', '2001:db8::7'], vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'], interval: '5m', ipv6: true, image: 'registry.example.test/blackbox-exporter:v0.25.0',
      monitoring: { namespace: 'observability', ruleLabels: { release: 'prom' }, runbookUrl: 'https://wiki.example.test/runbooks' },
      dnsLeak: { queryName: 'o-o.myaddr.l.google.com', resolver: '10.43.0.10', tunnelCidrs: ['10.2.0.0/24'] },
    }))],
    ['egress-probe.steering.yaml', () => document(planEgressProbe({ ...gatewayProbe(), via: { egressSteering: {} }, dnsLeak: { resolver: '10.43.0.10', leakedCidrs: ['192.0.2.0/24'] } }))],
    ['wireguard-overlay-node.site-a.yaml', () => document(planWireguardOverlayNode(siteA()))],
    ['wireguard-mesh.three.yaml', () => document(planWireguardMesh(threeNodeMesh()))],
    ['wireguard-mesh.hub-k3s.yaml', () => document(planWireguardMesh({
      ...threeNodeMesh(), cluster: 'edge', topology: { hub: 'site-a' }, interfaceName: 'wg-mesh', underlayMtu: 1500, installPackages: false, persistentKeepalive: 15, distribution: 'k3s',
      nodes: threeNodeMesh().nodes.map((n, i) => ({ ...n, ...(i === 1 ? { listenPort: 51821, endpoint: '[2001:db8::2]' } : {}), ...(i === 2 ? { role: 'worker' as const } : {}) })),
    }))],
    ['wireguard-mesh.ipv6-hub.yaml', () => document(planWireguardMesh({
      ...threeNodeMesh(), network: 'fd10::/64', topology: { hub: 'site-b' }, mtu: 1380, k0sConfig: { network: { podCIDR: 'fd00:10:244::/108', serviceCIDR: 'fd00:10:96::/108' } },
      nodes: threeNodeMesh().nodes.map((n, i) => ({ ...n, address: `fd10::${i + 1}`, ...(i === 0 ? { endpoint: undefined } : {}) })),
    }))],
    ['wireguard-overlay-node.k0s-install-worker.yaml', () => document(planWireguardOverlayNode({ ...siteA(), node: 'site-b', role: 'worker', installK0s: { tokenFrom: { url: 'https://vault.example.test/v1/k0s/worker-token' } } }))],
    ['wireguard-overlay-node.kubeadm-dual-stack.yaml', () => document(planWireguardOverlayNode(dualStackInline('kubeadm')))],
    ['wireguard-overlay-node.kubeadm-1.30.yaml', () => document(planWireguardOverlayNode(dualStackInline('kubeadm', '1.30')))],
    ['wireguard-overlay-node.k3s-dual-stack.yaml', () => document(planWireguardOverlayNode(dualStackInline('k3s')))],
    ['egress-steering.every-option.yaml', () => document(planEgressSteering({
      ...prodSteering(), cluster: 'dev', name: 'dev-egress', interface: 'tun1', ciliumValues: { ...prodSteering().ciliumValues, devices: ['eth0', 'tun1'] }, egressClassLabel: 'example.com/egress', vpnClass: 'tunnel', namespaces: undefined,
      excludedCidrs: ['192.168.0.0/16', '10.0.0.0/8'], enforceLabels: { namespaces: ['media', 'downloads'], classes: ['tunnel', 'direct', 'lan-only'] },
      monitoring: { namespace: 'observability', ruleLabels: { release: 'prom' }, runbookUrl: 'https://wiki.example.test/runbooks' }, uplinkLabel: 'example.com/egressUplink',
      kubeconfigFrom: { url: 'https://vault.example.test/v1/kubeconfig/dev-gw', waitFor: '5m' }, acknowledge: ['dns-wan', 'policy-delay'],
      tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/dev.ovpn' } },
    }))],
    ['egress-steering.ipv6-tunnel.yaml', () => document(planEgressSteering({ ...wireguardSteering(), tunnel: { ...wireguardSteering().tunnel!, address: 'fd00:2::2/128' } as EgressSteeringProps['tunnel'], destinationCidrs: ['::/0'] }))],
    ['egress-steering.no-tunnel.yaml', () => document(planEgressSteering({ ...wireguardSteering(), tunnel: undefined, denyIpv6: true }))],
  ])('%s', (name, render) => {
    expectGolden(name, render());
  });
});
