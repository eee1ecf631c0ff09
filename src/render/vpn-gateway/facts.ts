import type { VpnGatewayProps } from '../../model/vpn-gateway';
import { parseCidr } from '../../model/net';
import * as vpnGatewayModel from '../../model/vpn-gateway';

/** Istio ambient's ztunnel address, kept local with `mesh: 'istio-ambient'`. */
export const ZTUNNEL_CIDR = '169.254.7.127/32';
export const HEALTH_PORT = 9999;
/** gluetun's WireGuard MTU, pinned (the default changes on master). */
export const WIREGUARD_MTU = 1320;
/** The VXLAN address a port-forwarding workload gets (pod-gateway's dynamic range starts at .20). */
export const FORWARDED_WORKLOAD_HOST = 5;

/** Everything the gateway and its routes derive from the props, computed once. */
export interface GatewayFacts {
  readonly name: string;
  readonly namespace: string;
  readonly cluster: string;
  readonly vxlanId: number;
  readonly vxlanPort: number;
  /** First three octets of the VXLAN /24 (`172.16.0`). */
  readonly vxlanPrefix: string;
  readonly vxlanMtu: number;
  readonly clusterDnsIp: string;
  readonly clusterDomain: string;
  readonly dnssec: boolean;
  /** Cluster, node (and ztunnel) IPv4 CIDRs: never routed through the VPN (pod-gateway is IPv4-only). */
  readonly localCidrs: string[];
  readonly podLabels: Record<string, string>;
  readonly images: { gluetun: string; podGateway: string; portSync: string };
  readonly vpnTrafficPort: number;
}

/** The VXLAN UDP port: Cilium and flannel own 8472 and Calico's VXLAN owns 4789. */
export function vxlanPortFor(cni: VpnGatewayProps['cni']): number {
  return cni === 'calico' ? 8472 : 4789;
}

export function gatewayFacts(props: VpnGatewayProps): GatewayFacts {
  const name = props.name ?? 'vpn-gateway';
  const row = vpnGatewayModel.providerRow(props.vpnProvider)!;
  const vpnType = props.vpnType ?? 'wireguard';
  const vx = parseCidr(props.vxlanNetwork ?? '172.16.0.0/24')!;
  const podMtu = props.podMtu ?? 1450;
  return {
    name,
    namespace: props.namespace ?? 'vpn-gateway',
    cluster: props.cluster ?? 'default',
    vxlanId: props.vxlanId ?? 42,
    vxlanPort: vxlanPortFor(props.cni),
    vxlanPrefix: [24n, 16n, 8n].map((s) => String((vx.start >> s) & 255n)).join('.'),
    vxlanMtu: vpnType === 'wireguard' ? Math.min(WIREGUARD_MTU, podMtu - 50) : podMtu - 50,
    clusterDnsIp: vpnGatewayModel.clusterDnsIpOf(props)!,
    clusterDomain: props.clusterDomain ?? 'cluster.local',
    dnssec: props.dnssec ?? true,
    localCidrs: [...props.clusterCidrs, ...props.nodeCidrs, ...(props.mesh === 'istio-ambient' ? [ZTUNNEL_CIDR] : [])].filter((c) => parseCidr(c)!.family === 4),
    podLabels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'vpn-gateway', 'app.kubernetes.io/managed-by': 'tunnelwright' },
    images: { gluetun: props.images?.gluetun ?? vpnGatewayModel.DEFAULT_IMAGES.gluetun, podGateway: props.images?.podGateway ?? vpnGatewayModel.DEFAULT_IMAGES.podGateway, portSync: props.images?.portSync ?? vpnGatewayModel.DEFAULT_IMAGES.portSync },
    vpnTrafficPort: props.vpnEndpointPort ?? (vpnType === 'wireguard' ? row.wireguard!.defaultPort : row.openvpn!.defaultPort),
  };
}

/** gluetun's control server port (its default, `:8000`, settings/server.go:91). */
export const CONTROL_PORT = 8000;
/** The port-sync sidecar's metrics port. */
export { PORT_SYNC_METRICS_PORT } from '../../model/values';

/** The forwarded workload's fixed VXLAN address. */
export function forwardedWorkloadAddress(props: VpnGatewayProps): string {
  return `${gatewayFacts(props).vxlanPrefix}.${FORWARDED_WORKLOAD_HOST}`;
}
