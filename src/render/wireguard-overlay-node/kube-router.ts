import { nftLoaderUnit } from '../../host/host-plan';
import type { OverlayCni } from '../../model/cni';
import type { Distribution, NodeRole, RenderInterface } from '../../model/wireguard-overlay-node';
import { formatIp, parseCidr } from '../../model/net';
import { HostPlan } from '../../types';
import { kubeRouterSnat } from '../cni';
import * as cniModel from '../../model/cni';
import * as overlayNodeModel from '../../model/wireguard-overlay-node';

/** Where the nft table of kubeRouterSnat is written, per interface. */
export function kubeRouterSnatPath(iface: string): string {
  return `/etc/tunnelwright/${iface}-kube-router-snat.nft`;
}

/** The unit that loads kubeRouterSnat's table again whenever nftables.service restarts or reloads, per interface. */
export function kubeRouterSnatUnit(iface: string): string {
  return `tunnelwright-${iface}-kube-router-snat.service`;
}

/**
 * kubeRouterSnatUnit's content. Debian's nftables.service runs `nft -f /etc/nftables.conf` at start and reload, and
 * that file begins with `flush ruleset` (nftables 1.0.6-2+deb12u2; ExecStop is `nft flush ruleset`), which removes the
 * table; kube-proxy and kube-router put theirs back on their resync, nothing put this one back until wg0 restarted.
 * Ordered and bound as the kill switch's unit (src/render/kill-switch.ts): after nftables.service, restarted with it
 * (PartOf) and reloaded with it (ReloadPropagatedFrom), so both load the table again after the flush.
 */
function kubeRouterSnatUnitContent(iface: string, path: string): string {
  return nftLoaderUnit({
    description: `tunnelwright: kube-proxy's masquerade into kube-router's tunnels takes ${iface}'s address (again after nftables.service)`,
    file: path,
    tail: [`Before=wg-quick@${iface}.service`],
    wantedBy: 'multi-user.target',
  });
}

/** The unit that installs kubeRouterFailClosedRoutes, per interface. */
export function kubeRouterFailClosedUnit(iface: string): string {
  return `tunnelwright-${iface}-kube-router-fail-closed.service`;
}

/**
 * `unreachable` routes, metric 4096, for the cluster's pod CIDRs (k0s: `network.podCIDR`, default 10.244.0.0/16, and
 * with dual-stack `network.dualStack.IPv6podCIDR`; kubeadm: `podCidrs`; k3s: the library does not see them) and the overlay
 * networks of the interface. When a peer's BGP session drops, kube-router v2.1.0 runs cleanupTunnel
 * (pkg/controllers/routing/network_routes_controller.go:620-636), which deletes the routes to the peer's pod CIDR and
 * its tunnel (:739-751), and kube-router's pod-egress MASQUERADE skips pod destinations (pod_egress.go:14-17): without
 * these routes the pod's packets take the default route with their pod source, in clear. kube-router's per-node routes
 * and wg0's own are more specific (or of a lower metric) and win while they exist. From a unit of their own, not from
 * wg0's hooks, so they stay while wg0 is down.
 */
export function kubeRouterFailClosedRoutes(addresses: readonly string[], distribution: Distribution, k0sConfig: Record<string, unknown> | undefined, podCidrDefaults = true, podCidrs: readonly string[] = []): string[] {
  // kubeadm: the pod CIDRs of its podSubnet, where the props name them.
  const pods: unknown[] = distribution === 'kubeadm' ? [...podCidrs] : [];
  if (distribution === 'k0s') {
    const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
    const network = isRecord(k0sConfig?.network) ? k0sConfig.network : {};
    // k0s's default (10.244.0.0/16) holds only where k0sConfig is the cluster's: on a standalone worker an absent
    // podCIDR says nothing of the controller's, and a wrong /16 would beat the default route for its addresses while
    // leaving the real pod CIDR open (checkKubeRouterPodCidr warns).
    if (network.podCIDR !== undefined || podCidrDefaults) pods.push(network.podCIDR ?? '10.244.0.0/16');
    const dual = isRecord(network.dualStack) ? network.dualStack : undefined;
    if (dual?.enabled === true) pods.push(dual.IPv6podCIDR);
  }
  const nets = [...pods, ...addresses].map((a) => parseCidr(a)).filter((c) => c !== undefined && c.prefix < (c.family === 4 ? 32 : 128));
  return [...new Set(nets.map((c) => `${formatIp(c!.family, c!.start)}/${c!.prefix}`))];
}

function kubeRouterFailClosedUnitContent(iface: string, routes: readonly string[]): string {
  return [
    '[Unit]',
    'Description=tunnelwright: pod traffic with no kube-router tunnel route fails closed instead of taking the default route',
    'After=network-pre.target',
    `Before=wg-quick@${iface}.service`,
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    ...routes.map((r) => `ExecStart=/usr/sbin/ip ${r.includes(':') ? '-6 ' : ''}route replace unreachable ${r} metric 4096`),
    // Stopping a oneshot runs only ExecStop= (systemd.service(5)), and nothing else removes these `proto boot` routes
    // (kube-router deletes only its own protocol, 0x11: pkg/controllers/routing/utils.go:239-252), so `systemctl
    // disable --now` undoes them here; `-`: a route already gone does not fail the stop.
    ...routes.map((r) => `ExecStop=-/usr/sbin/ip ${r.includes(':') ? '-6 ' : ''}route del unreachable ${r} metric 4096`),
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/**
 * The node-address interface of a node whose pods kube-router carries loads kubeRouterSnat's table in PreUp, before
 * wg-quick adds the addresses and routes (/usr/bin/wg-quick cmd_up: PRE_UP, then add_addr, set_mtu_up, add_route,
 * then POST_UP), and nothing deletes it: NAT binds on a connection's first packet, so a flow that started while the
 * table was absent would keep the underlay source for its whole life, even after the table came back. The table
 * needs nothing from the interface (it matches `tun-*` and SNATs to a fixed address, which nft accepts before the
 * address exists), and with the interface down it matches nothing that can leave, so it stays across `wg-quick down`;
 * `nft -f` of the file replaces it whole, so a second PreUp does not stack it. A k0s controller without a worker runs
 * no kube-router and no kube-proxy, so it gets none. The user's own hooks come first.
 */
export function kubeRouterSnatHooks(host: HostPlan, iface: RenderInterface, cni: OverlayCni, distribution: Distribution, role: NodeRole, installPackages: boolean, k0sConfig: Record<string, unknown> | undefined, clusterK0sConfig: boolean, podCidrs: readonly string[] = []): { preUp?: string[]; units?: HostPlan['units'] } {
  if (!iface.nodeAddress || cni !== 'kube-router' || (distribution === 'k0s' && role === 'controller')) return {};
  // k0s's kube-proxy takes its masquerade bit from the controller's k0s.yaml (a mesh's workers get the mesh's k0sConfig).
  const bit = distribution === 'k0s' ? cniModel.kubeProxyMasqueradeBit(k0sConfig) : cniModel.DEFAULT_MASQUERADE_BIT;
  const snat = kubeRouterSnat(iface.name, overlayNodeModel.interfaceAddresses(iface.address), bit);
  if (!snat) return {};
  const routes = kubeRouterFailClosedRoutes(overlayNodeModel.interfaceAddresses(iface.address), distribution, k0sConfig, clusterK0sConfig || role !== 'worker', podCidrs);
  const failClosed = { name: kubeRouterFailClosedUnit(iface.name), enabled: true, content: kubeRouterFailClosedUnitContent(iface.name, routes) };
  // With kube-proxy disabled nothing sets its mark: k0s then runs kube-router without its service proxy
  // (pkg/component/controller/kuberouter.go:116-118 `run-service-proxy: "false"`, the user's extraArgs merged over it
  // at :135), and where a user turns that on, kube-router SNATs to the node's primary IP itself
  // (pkg/controllers/proxy/network_services_controller.go:1147-1148): the overlay address only with k0s's --node-ip.
  if (cniModel.kubeProxyDisabled(distribution, k0sConfig)) return { units: [failClosed] };
  const path = kubeRouterSnatPath(iface.name);
  host.files.push({ path, mode: 0o644, owner: 'root:root', content: snat.nft });
  if (installPackages && !host.packages.includes('nftables')) host.packages.push('nftables');
  return {
    preUp: [...(iface.preUp ?? []), `nft -f ${path}`],
    units: [
      { name: kubeRouterSnatUnit(iface.name), enabled: true, content: kubeRouterSnatUnitContent(iface.name, path) },
      failClosed,
    ],
  };
}
