import type { OverlayCni } from '../model/cni';
import * as cniModel from '../model/cni';
import * as commonModel from '../model/common';
import { asset } from '../assets';
import { fillTemplate, templateLines } from '../host/template';

/** kubeRouterSnat's file (its comment, then @TABLES@) and one family's table (kube-router-snat-table.nft). */
const KUBE_ROUTER_SNAT = asset(__dirname, 'kube-router-snat.nft');
const KUBE_ROUTER_SNAT_TABLE = asset(__dirname, 'kube-router-snat-table.nft');

/** IPIP's overhead (an outer IPv4 header): kube-router's tunnels between IPv4 node addresses. */
export const IPIP_OVERHEAD = 20;
/**
 * kube-router's tunnel between IPv6 node addresses: ip6ip6, an outer IPv6 header (40) plus the 8-byte destination
 * option Tunnel Encapsulation Limit, 48 in all. kube-router never sets `encaplimit none` (IP6_TNL_F_IGN_ENCAP_LIMIT):
 * v2.1.0 network_routes_controller.go:832 runs `ip -6 tunnel add … mode ip6ip6 local … remote …` (iproute2
 * ip/ip6tunnel.c ip6_tnl_parm_init: encap_limit = IPV6_DEFAULT_TNL_ENCAP_LIMIT); v2.11.1 pkg/tunnels/
 * linux_tunnels.go:298-302 `netlink.Ip6tnl{Name, Local, Remote}` (Flags 0). Linux net/ipv6/ip6_tunnel.c
 * ip6_tnl_link_config: `if (!(t->parms.flags & IP6_TNL_F_IGN_ENCAP_LIMIT)) dev->mtu -= 8`, and the xmit path pushes
 * the option.
 */
export const IPIP6_OVERHEAD = 48;
/** VXLAN's overhead over IPv4: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 (flannel pkg/backend/vxlan/device.go:63 subtracts 50). */
export const CNI_VXLAN_OVERHEAD = 50;
/** VXLAN's overhead over IPv6: the outer header is 40 bytes, not 20 (Calico's vxlan-v6.calico, flannel's flannel-v6.1). */
export const CNI_VXLAN6_OVERHEAD = 70;

/**
 * What the CNI's encapsulation costs, by the family of the node addresses it runs between. With an IPv6 node address
 * (an IPv6 or dual-stack overlay) IPv6 pod traffic is encapsulated in IPv6 and the CNI's one MTU setting must fit that
 * too, so the IPv6 figure is taken.
 */
export function cniOverhead(encapsulation: 'ipip' | 'vxlan', outerIpv6: boolean): number {
  if (encapsulation === 'ipip') return outerIpv6 ? IPIP6_OVERHEAD : IPIP_OVERHEAD;
  return outerIpv6 ? CNI_VXLAN6_OVERHEAD : CNI_VXLAN_OVERHEAD;
}

/**
 * k0s.yaml's `spec.network` for pod traffic over the overlay.
 *
 * kube-router: its default overlay type `subnet` (kube-router pkg/options/options.go:123, :247) tunnels only to nodes
 * in another subnet; all overlay addresses share one, so it installs a plain route `podCIDR via <peer's overlay
 * address>` (pkg/controllers/routing/network_routes_controller.go:680-740, `sameSubnet`), which WireGuard drops (the
 * destination is outside the peer's AllowedIPs, its /32). `--overlay-type=full` with `--enable-overlay` makes an IPIP
 * tunnel to every node (`shouldCreateTunnel`, :673-686) between node addresses, which are in AllowedIPs. k0s passes
 * `kuberouter.extraArgs` over its own args (k0s pkg/component/controller/kuberouter.go:140, `args.Merge`). The IPIP
 * device takes the overlay's MTU less 20 (less 48 for ip6ip6 between IPv6 node addresses); kube-router's auto-mtu sets kube-bridge to the node interface's MTU
 * (pkg/utils/node.go:184 GetNodeMTU, network_routes_controller.go:413) without that 20, so the MTU is set outright
 * (k0s: `mtu` needs `autoMTU: false`, pkg/apis/k0s/v1beta1/kuberouter.go:16).
 *
 * Calico: VXLAN between the addresses Calico autodetects on the overlay interface (`ipAutodetectionMethod:
 * interface=<name>`, k0s pkg/apis/k0s/v1beta1/calico.go), with the MTU 50 below the overlay's (k0s's default 1450 is
 * above a 1420 wg0); 70 below with an IPv6 node address.
 */
export function k0sNetwork(cni: OverlayCni, iface: string, overlayMtu: number | undefined, outerIpv6 = false): Record<string, unknown> {
  switch (cni) {
    case 'kube-router':
      return {
        provider: 'kuberouter',
        kuberouter: {
          ...(overlayMtu !== undefined ? { autoMTU: false, mtu: overlayMtu - cniOverhead('ipip', outerIpv6) } : {}),
          extraArgs: { 'enable-overlay': 'true', 'overlay-type': 'full' },
        },
      };
    case 'calico':
      return { provider: 'calico', calico: { mode: 'vxlan', ipAutodetectionMethod: `interface=${iface}`, ...(overlayMtu !== undefined ? { mtu: overlayMtu - cniOverhead('vxlan', outerIpv6) } : {}) } };
    default:
      return { provider: cniModel.k0sProvider(cni) };
  }
}

/** kube-proxy's masquerade mark for a masquerade bit: KUBE-MARK-MASQ's `--or-mark 1<<bit` (`--iptables-masquerade-bit`, default 14: 0x4000). */
export function kubeProxyMasqueradeMark(bit: number): number {
  return (1 << bit) >>> 0;
}

/** The nft table that gives kube-proxy's masquerade into kube-router's tunnels the overlay address (per interface). */
export function kubeRouterSnatTable(iface: string): string {
  return `tunnelwright-${iface}-kube-router`;
}

/**
 * kube-router's tunnels carry no address of their own, so traffic that kube-proxy masquerades into one takes the
 * node's underlay address as its source, and the pod's reply leaves the peer by its default route, in clear. This nft
 * table, loaded by the overlay interface's PreUp, SNATs exactly that traffic to the overlay address first.
 *
 * - kube-router v2.1.0 (what k0s 1.30 ships, k0s pkg/constant/constant.go:99) makes each tunnel with `ip tunnel add
 *   <tun> mode ipip local <node IP> remote <peer's node IP>` (pkg/controllers/routing/network_routes_controller.go:832),
 *   adds no address to it, and routes the peer's pod CIDR `dev <tun> src <node IP>` (:685-690).
 * - kube-proxy (k0s runs it: kube-router's `run-service-proxy=false`, k0s pkg/component/controller/kuberouter.go:118)
 *   marks NodePort and LoadBalancer traffic with externalTrafficPolicy Cluster, and node-sourced ClusterIP traffic,
 *   with `1 << masqueradeBit` (0x4000 at the default 14), and KUBE-POSTROUTING runs `-j MARK --xor-mark` of it then
 *   `-j MASQUERADE --random-fully` (pkg/proxy/iptables/proxier.go syncProxyRules). The IPVS proxier takes the same
 *   `iptables.masqueradeBit`, the nftables proxier `nftables.masqueradeBit` (cmd/kube-proxy/app/server_linux.go
 *   createProxier); k0s v1.30 offers only iptables and IPVS (pkg/apis/k0s/v1beta1/kubeproxy.go:105). So the caller
 *   passes the bit k0s.yaml configures (src/model/cni.ts kubeProxyMasqueradeBit): a user's masqueradeBit is honoured
 *   here as kube-proxy honours it, and k3s and kubeadm, whose kube-proxy flags the library does not see, take 14.
 * - MASQUERADE ignores the route's `src`: it takes `inet_select_addr(out device, next hop, RT_SCOPE_UNIVERSE)` (Linux
 *   net/netfilter/nf_nat_masquerade.c); with no address on the tunnel that is the first global address of the first
 *   device in the namespace's list (net/ipv4/devinet.c inet_select_addr), eth0's: the underlay.
 * - The pod's reply to the underlay address matches kube-router's `from <podCIDR> lookup 77` (pbr.go:23), whose table
 *   routes only the node IPs into tunnels (network_routes_controller.go:886): it falls through to the default route.
 *
 * Why not the overlay address on `lo` (which would make the masquerade pick it): kube-router finds the node IP's
 * interface by walking `netlink.LinkList()` in order, lo first, so it would take lo for it: its auto-MTU would be lo's
 * 65536 (pkg/utils/node.go:150-168 GetMTUFromNodeIP), and its node interface `lo` (routing/utils.go:122-139
 * getNodeSubnet, used for the FORWARD accept rule at network_routes_controller.go:1046-1047).
 *
 * This chain runs at srcnat − 10, before kube-proxy's (srcnat), and NAT binds once per connection, so kube-proxy's
 * MASQUERADE never runs for these packets; the chain clears the mark as kube-proxy would (so the encapsulated and
 * encrypted packets are not masqueraded again). Only traffic kube-proxy marked, only into `tun-*` (kube-router's
 * tunnel names, routing/utils.go:145-155), is touched: pod-to-pod traffic keeps its pod source.
 *
 * IPv6 too, in an `ip6` table of the same name: kube-router v2.1.0 builds ip6ip6 tunnels for IPv6 node addresses with
 * the same `tun-` names (network_routes_controller.go:80, :773, :832; utils.go:145-155 strips the colons) and routes
 * them `dev <tun> src <node IPv6>` (:675-690), and kube-proxy's ip6tables rules use the same mark. IPv6 source
 * selection (ipv6_dev_get_saddr, RFC 6724) weighs every interface's addresses, so the masquerade picks the overlay's
 * only for some layouts: with a ULA underlay (fd00:1::/64) sharing a longer prefix with a ULA pod CIDR (fd00::/108,
 * k0s's dual-stack example) than the overlay's (fd10::/64) does, it took the underlay (rule 8, longest matching
 * prefix; audit3-26 F5, with an address-less veth for the tunnel, ip6tnl being absent on the test kernel). Each family
 * takes the interface's first address of it; a family the interface has no address of gets no table.
 */
export function kubeRouterSnat(iface: string, addresses: readonly string[], masqueradeBit = 14): { nft: string; table: string } | undefined {
  const v4 = addresses.find((a) => !a.includes(':'));
  const v6 = addresses.find((a) => a.includes(':'));
  if (v4 === undefined && v6 === undefined) return undefined;
  const table = kubeRouterSnatTable(iface);
  const bits = kubeProxyMasqueradeMark(masqueradeBit);
  const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
  const family = (nf: 'ip' | 'ip6', address: string) => templateLines(fillTemplate(KUBE_ROUTER_SNAT_TABLE, { FAMILY: nf, TABLE: table, MARK: hex(bits), KEEP: hex(~bits >>> 0), ADDRESS: address.split('/')[0] }));
  const nft = fillTemplate(KUBE_ROUTER_SNAT, { IFACE: iface, TABLES: [...(v4 !== undefined ? family('ip', v4) : []), ...(v6 !== undefined ? family('ip6', v6) : [])] });
  return { nft, table };
}

/**
 * k3s's flannel: `flannel-iface` names the overlay interface. Without it k3s hands flannel no interface and flannel
 * takes the default gateway's (k3s pkg/agent/flannel/flannel.go LookupExtIface: `iface == nil` →
 * `ip.GetDefaultGatewayIface()`), so its VXLAN runs on the internet NIC. flannel's VXLAN MTU is the interface's less 50
 * (flannel pkg/backend/vxlan/vxlan.go:124 takes the interface MTU, device.go:63 subtracts 50): on the overlay interface
 * it fits inside the overlay by itself.
 */
export function k3sFlannel(iface: string): Record<string, unknown> {
  return { 'flannel-iface': iface };
}

/**
 * A CNI's settings for the user to hand to its install (the library does not own its file), in `values.cni`: the
 * interface, the encapsulation and the MTU, by the CNI's own names.
 */
export function cniValues(cni: OverlayCni, iface: string, overlayMtu: number | undefined, outerIpv6 = false, cluster: { families?: ReadonlySet<number>; podCidrs?: readonly string[] } = {}): Record<string, unknown> | undefined {
  const vxlanMtu = overlayMtu !== undefined ? overlayMtu - cniOverhead('vxlan', outerIpv6) : undefined;
  const families = cluster.families ?? new Set([outerIpv6 ? 6 : 4]);
  const v4 = cluster.podCidrs?.find((c) => !c.includes(':'));
  const v6 = cluster.podCidrs?.find((c) => c.includes(':'));
  const ipv4 = families.has(4) && (cluster.podCidrs === undefined || v4 !== undefined);
  const ipv6 = !families.has(4) || v6 !== undefined;
  switch (cni) {
    case 'flannel':
      // flannel's `--iface` flag (flannel main.go:121); the MTU follows the interface (−50).
      // net-conf.json for the node addresses' families (flannel pkg/subnet/config.go: Network, IPv6Network,
      // EnableIPv4 default true, EnableIPv6): an IPv6-only cluster turns IPv4 off, a dual-stack one turns IPv6 on.
      return {
        flannel: {
          interface: iface, args: [`--iface=${iface}`], ...(vxlanMtu !== undefined ? { mtu: vxlanMtu } : {}),
          ...(cluster.podCidrs?.length ? {
            netConf: {
              ...(v4 !== undefined ? { Network: v4 } : { EnableIPv4: false }),
              ...(v6 !== undefined ? { EnableIPv6: true, IPv6Network: v6 } : {}),
              Backend: { Type: 'vxlan' },
            },
          } : {}),
        },
      };
    case 'calico':
      // The Tigera operator's Installation: spec.calicoNetwork. With an IPv6 node address V6 too: the operator
      // defaults a missing nodeAddressAutodetectionV6 to firstFound (updateInstallationWithDefaults), the internet NIC.
      return { calico: { interface: iface, calicoNetwork: { nodeAddressAutodetectionV4: { interface: iface }, ...(outerIpv6 ? { nodeAddressAutodetectionV6: { interface: iface } } : {}), ...(vxlanMtu !== undefined ? { mtu: vxlanMtu } : {}), ipPools: [{ encapsulation: 'VXLAN' }] } } };
    case 'kube-router':
      // kube-router's auto-mtu (default true, pkg/options/options.go v2.1.0:124, v2.11.1:141) writes the node IP's link
      // MTU into its CNI config (v2.1.0 network_routes_controller.go:437-444 `if nrc.autoMTU { … SetMTU(mtu) }`,
      // v2.11.1 initCNIConfig :413-451), the overlay's, above the tunnel's: `--auto-mtu=false` keeps `mtu`, which goes
      // in the bridge plugin's `mtu` of kube-router's cni-conf.json (kube-router has no MTU flag).
      // Its families: `--enable-ipv4` defaults to true and `--enable-ipv6` to false (kube-router pkg/options/options.go),
      // and with IPv4 on but no IPv4 node address it exits "IPv4 was enabled, but no IPv4 address was found on the node".
      // A dual-stack node address turns IPv6 on only with an IPv6 pod CIDR (else the cluster's pods are IPv4 only).
      return {
        kubeRouter: {
          interface: iface,
          args: ['--enable-overlay=true', '--overlay-type=full', ...(overlayMtu !== undefined ? ['--auto-mtu=false'] : []), ...(ipv4 ? [] : ['--enable-ipv4=false']), ...(ipv6 ? ['--enable-ipv6=true'] : [])],
          ...(overlayMtu !== undefined ? { mtu: overlayMtu - cniOverhead('ipip', outerIpv6) } : {}),
        },
      };
    default:
      return undefined;
  }
}

/** Merges a user's k0s.yaml spec under the library's: the library's keys win (the model refuses a user value for them), SANs are the union. */
export function mergeK0sSpec(user: Record<string, unknown> | undefined, ours: Record<string, unknown>): Record<string, unknown> {
  if (!user) return ours;
  const merge = (a: unknown, b: unknown, path: string): unknown => {
    if (path === 'api.sans' && Array.isArray(a) && Array.isArray(b)) return [...new Set([...a, ...b])];
    if (commonModel.isRecord(a) && commonModel.isRecord(b)) {
      const out: Record<string, unknown> = { ...a };
      for (const [k, v] of Object.entries(b)) out[k] = k in a ? merge(a[k], v, path ? `${path}.${k}` : k) : v;
      return out;
    }
    return b;
  };
  return merge(structuredClone(user), ours, '') as Record<string, unknown>;
}

