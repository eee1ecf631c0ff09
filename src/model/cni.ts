import * as z from '../zod';
import { Problem } from '../errors';
import { isRecord, received } from './common';
import { parseCidr } from './net';

/**
 * The cluster's CNI, for an overlay node: what carries pod traffic between nodes. Pod traffic rides the overlay only
 * when the CNI sends it between the nodes' overlay addresses (an encapsulation whose outer addresses are the /32s in
 * the peers' AllowedIPs) on the overlay interface.
 * - `kube-router`: k0s's default (k0s `pkg/apis/k0s/v1beta1/network.go` DefaultNetwork: `provider: kuberouter`).
 * - `calico`: k0s's other provider; Calico VXLAN.
 * - `flannel`: k3s's embedded CNI (VXLAN).
 * - `other`: a CNI tunnelwright does not configure (k0s `provider: custom`).
 */
export type OverlayCni = 'kube-router' | 'calico' | 'flannel' | 'other';

/** @internal */
export const overlayCniSchema = z.enum(['kube-router', 'calico', 'flannel', 'other']);
/** @internal */
export const k0sConfigSchema = z.record(z.string(), z.unknown());

/** The CNI a distribution runs when none is named: k0s kube-router, k3s flannel, kubeadm none the library knows. */
export function defaultCni(distribution: string): OverlayCni {
  return distribution === 'k0s' ? 'kube-router' : distribution === 'k3s' ? 'flannel' : 'other';
}

/** Whether the library writes the CNI's settings into a file the distribution reads (else they go in `values.cni`). */
export function cniOwnedByDistribution(distribution: string, cni: OverlayCni): boolean {
  return (distribution === 'k0s' && cni !== 'other') || (distribution === 'k3s' && cni === 'flannel');
}

import { K0S_OWNED_KEYS } from './values';
export { K0S_OWNED_KEYS } from './values';

/** The CNI whose settings a k0s.yaml key is, if any. */
function keyCni(key: string): OverlayCni | undefined {
  return key.startsWith('network.kuberouter.') ? 'kube-router' : key.startsWith('network.calico.') ? 'calico' : undefined;
}

/** Why a user's k0sConfig may not set a key tunnelwright owns, naming the CNI the key belongs to and the one chosen. */
function ownedKeyMessage(key: string, cni: OverlayCni): string {
  const of = keyCni(key);
  if (of === undefined) return `tunnelwright sets ${key} to the node's overlay address: leave it out of k0sConfig`;
  if (of === cni) return `tunnelwright sets ${key} for cni ${JSON.stringify(cni)} from the overlay: leave it out of k0sConfig`;
  return `${key} configures ${of}, but cni is ${JSON.stringify(cni)} (k0s provider ${k0sProvider(cni)}, which does not read it): set cni '${of}' if the cluster runs ${of}, else leave it out of k0sConfig`;
}

/** k0s's `spec.network.provider` for a CNI. */
export function k0sProvider(cni: OverlayCni): string {
  return cni === 'kube-router' ? 'kuberouter' : cni === 'calico' ? 'calico' : 'custom';
}

function at(obj: unknown, path: string): unknown {
  let node = obj;
  for (const part of path.split('.')) {
    if (!isRecord(node)) return undefined;
    node = node[part];
  }
  return node;
}

/** kube-proxy's default `masqueradeBit` (KUBE-MARK-MASQ `--or-mark 0x4000`). */
export const DEFAULT_MASQUERADE_BIT = 14;

/**
 * Where a k0s.yaml spec sets kube-proxy's masquerade bit: k0s passes `network.kubeProxy.iptables` verbatim into
 * kube-proxy's config.conf (k0s v1.30 pkg/apis/k0s/v1beta1/kubeproxy.go:46 `MasqueradeBit *int32`,
 * pkg/component/controller/kubeproxy.go:153-157 and the template's `iptables: {{ .IPTables }}` at :288), and kube-proxy
 * hands `IPTables.MasqueradeBit` to both its iptables and its IPVS proxier (cmd/kube-proxy/app/server_linux.go
 * createProxier). Its nftables proxier takes `NFTables.MasqueradeBit` instead; k0s v1.30 does not offer that mode
 * (kubeproxy.go:105 Validate: iptables|ipvs|userspace, and checkOverlayCni refuses it), so `nftables` is read only
 * with `mode: nftables`, which passes only with kube-proxy disabled.
 */
export function masqueradeBitPath(k0sConfig: unknown): string {
  return at(k0sConfig, 'network.kubeProxy.mode') === 'nftables' ? 'network.kubeProxy.nftables.masqueradeBit' : 'network.kubeProxy.iptables.masqueradeBit';
}

/** k0s with `network.kubeProxy.disabled: true`: no kube-proxy, so no mark for the kube-router SNAT table to match. */
export function kubeProxyDisabled(distribution: string, k0sConfig: unknown): boolean {
  return distribution === 'k0s' && at(k0sConfig, 'network.kubeProxy.disabled') === true;
}

/** kube-proxy's masquerade bit as a k0s.yaml spec sets it (see masqueradeBitPath), else its default 14. */
export function kubeProxyMasqueradeBit(k0sConfig: unknown): number {
  const bit = at(k0sConfig, masqueradeBitPath(k0sConfig));
  return typeof bit === 'number' && Number.isInteger(bit) && bit >= 0 && bit <= 31 ? bit : DEFAULT_MASQUERADE_BIT;
}

/** The warning for k3s's flannel on an IPv6 node address (see checkOverlayCni). */
export const FLANNEL_IPV6_MTU = 'k3s\'s flannel sets its IPv6 VXLAN device to its vxlan backend\'s mtu minus 50, and that mtu defaults to the overlay interface\'s, but VXLAN over IPv6 needs 70: full-size IPv6 pod packets between nodes are dropped where path-MTU discovery is blocked. Lowering the overlay interface\'s mtu does not help (flannel follows it). Give flannel\'s vxlan backend an mtu 20 below the overlay interface\'s: write a flannel net-conf.json with "Backend": {"Type": "vxlan", "mtu": <overlay MTU - 20>} beside your "Network", "EnableIPv6" and "IPv6Network" (k3s then writes none of it) and name it in k3s\'s flannel-conf; or register an IPv4 overlay address as the node address';

/**
 * `installPackages: false` on a node that loads the kube-router SNAT table (src/render/cni.ts kubeRouterSnat): the
 * image must ship `nft`. wg-quick runs its hooks under `set -e` with `trap 'del_if; exit'` (/usr/bin/wg-quick:7,
 * :329-342), so a PreUp whose command is not found (rc 127) takes the interface down again, and k0s's drop-in
 * `Requires=wg-quick@<iface>.service` keeps k0s from starting. Guarding the hook (`command -v nft || true`) would fail
 * open, into the leak the table closes, so this is a warning and not a fallback. `getsTable`: a node-address
 * interface, cni kube-router, and not a k0s controller without a worker (no kube-router, no kube-proxy there).
 */
export function checkKubeRouterSnatPackages(input: Record<string, unknown>, distribution: string, getsTable: boolean, warnings: Problem[]): void {
  const cni = typeof input.cni === 'string' ? input.cni : defaultCni(distribution);
  if (input.installPackages !== false || cni !== 'kube-router' || !getsTable || kubeProxyDisabled(distribution, input.k0sConfig)) return;
  warnings.push({ path: 'installPackages', code: 'packages', message: 'installPackages is false, and on a kube-router node wg-quick\'s PreUp runs `nft -f /etc/tunnelwright/<interface>-kube-router-snat.nft`: the image must ship nftables (the nft binary, a version that knows the `srcnat` priority name) beside wireguard-tools, or wg-quick up fails, the interface is taken down again and the distribution\'s unit (which requires it) does not start' });
}

/** The warning for a standalone k0s worker on kube-router whose k0sConfig has no `network.podCIDR` (see checkKubeRouterPodCidr). */
export const K0S_WORKER_POD_CIDR = 'this k0s worker\'s pod CIDR is not known (a worker writes no k0s.yaml, and k0s\'s default 10.244.0.0/16 need not be the controller\'s), so its fail-closed unit gets unreachable routes for the overlay network only: pod traffic whose kube-router tunnel route is gone (a peer\'s BGP session dropped) leaves by the default route in clear. Pass the controller\'s k0sConfig, with its network.podCIDR (and network.dualStack), to fail closed for pod traffic';

/**
 * A standalone k0s worker (`role: 'worker'`) on kube-router: its fail-closed routes
 * (src/render/wireguard-overlay-node/kube-router.ts kubeRouterFailClosedRoutes) cover the pod CIDR only when k0sConfig names it,
 * since k0s's default would be a guess (and a wrong /16 unreachable beats the default route for its addresses).
 * `getsTable` as for checkKubeRouterSnatPackages.
 */
export function checkKubeRouterPodCidr(input: Record<string, unknown>, distribution: string, getsTable: boolean, warnings: Problem[]): void {
  const cni = typeof input.cni === 'string' ? input.cni : defaultCni(distribution);
  if (distribution !== 'k0s' || cni !== 'kube-router' || !getsTable || (input.role ?? 'worker') !== 'worker') return;
  if (at(input.k0sConfig, 'network.podCIDR') !== undefined) return;
  warnings.push({ path: 'k0sConfig.network.podCIDR', code: 'pod-cidr', message: K0S_WORKER_POD_CIDR });
}

/**
 * Checks of the CNI beside the distribution (and of a user's k0s.yaml spec), at `prefix` ('' for a node, the mesh's
 * own keys for a mesh). Problems for combinations that cannot work; warnings where the library hands the CNI's
 * settings in `values.cni` because it does not own the file the CNI reads.
 */
export function checkOverlayCni(input: Record<string, unknown>, distribution: string, problems: Problem[], warnings: Problem[], valuesAt: string, carriesPods = true, mtuAt?: string, ipv6NodeAt?: string): void {
  const cni = (typeof input.cni === 'string' ? input.cni : defaultCni(distribution)) as OverlayCni;
  if (ipv6NodeAt !== undefined && carriesPods && distribution === 'k3s' && cni === 'flannel') {
    // flannel gives its VXLAN devices its backend `mtu` minus 50, for both families (flannel v0.28.9
    // pkg/backend/vxlan/device.go:63 `MTU: devAttrs.MTU - 50`; flannel-v6.1 takes the same cfg.MTU, vxlan.go:234),
    // but VXLAN over IPv6 takes 70: on an IPv6 overlay address k3s's flannel-v6.1 is 20 bytes too large. The backend's
    // `mtu` (vxlan.go:162 `MTU int json:"mtu"`) defaults to the interface's (:124, :168-171), so it fixes this, and
    // lowering the interface's MTU does not (flannel follows it). k3s writes net-conf.json's Backend as `{"Type":
    // "vxlan"}` itself unless `flannel-conf` names a file, which it then uses whole (k3s pkg/agent/flannel/setup.go
    // createFlannelConf: `if nodeConfig.Flannel.ConfOverride { … return nil }`).
    warnings.push({ path: ipv6NodeAt, code: 'cni-mtu', message: FLANNEL_IPV6_MTU });
  }
  if (mtuAt !== undefined && carriesPods && distribution === 'k0s' && (cni === 'kube-router' || cni === 'calico')) {
    // Without the overlay's MTU nothing is written for the CNI's, and k0s's own choice depends on its version:
    // kube-router's auto-MTU takes the node interface's MTU, with IPIP's 20 bytes subtracted in some versions
    // (pkg/utils/node.go GetMTUFromNodeIP(nodeIP, overlayEnabled): `linkMTU - 20`) and not in later ones
    // (GetMTUFromNodeIP(nodeIP): `linkMTU`); k0s's Calico default was 1450 in several versions
    // (pkg/apis/k0s/v1beta1/calico.go DefaultCalico `MTU: 1450`), above wg-quick's 1420 on a 1500 link.
    const what = cni === 'kube-router'
      ? "kube-router then sets the pod MTU itself, equal to the overlay's in the kube-router versions that do not subtract IPIP's 20 bytes"
      : "Calico then takes k0s's default MTU, 1450 in several k0s versions, above the 1420 wg-quick gives the overlay on a 1500 link";
    warnings.push({ path: mtuAt, code: 'cni-mtu', message: `the overlay's MTU is not known (set mtu, or underlayMtu), so tunnelwright writes no MTU for ${cni}: ${what}; pod packets above the overlay's MTU are then fragmented or dropped where path-MTU discovery is blocked` });
  }
  if (distribution === 'k0s' && cni === 'flannel') {
    problems.push({ path: 'cni', code: 'cni', message: 'k0s runs kube-router or Calico (spec.network.provider kuberouter, calico or custom), not flannel: choose cni \'kube-router\' or \'calico\', or \'other\' for a CNI you install yourself (provider custom)' });
  } else if (carriesPods && !cniOwnedByDistribution(distribution, cni)) {
    const how = cni === 'other'
      ? 'tunnelwright does not know this CNI and configures none: make it encapsulate pod traffic between the nodes\' overlay addresses on the overlay interface, with an MTU inside the overlay\'s (the peers\' AllowedIPs hold only their /32s: a plain route to a pod CIDR via a peer is dropped)'
      : `${distribution} does not install ${cni} itself, so tunnelwright cannot write its settings: pass ${valuesAt}.values.cni.${cni === 'kube-router' ? 'kubeRouter' : cni} (the overlay interface, the encapsulation and the MTU) to its install, or pod traffic between nodes leaves by the default-route interface`;
    warnings.push({ path: 'cni', code: 'cni-values', message: how });
  }
  if (input.k0sConfig !== undefined) {
    if (distribution !== 'k0s') {
      problems.push({ path: 'k0sConfig', code: 'distribution', message: `k0sConfig is k0s.yaml's spec; the distribution is ${JSON.stringify(distribution)}` });
      return;
    }
    const user = input.k0sConfig;
    for (const key of K0S_OWNED_KEYS) {
      if (at(user, key) !== undefined) problems.push({ path: `k0sConfig.${key}`, code: 'k0s-owned', message: ownedKeyMessage(key, cni) });
    }
    const encap = isRecord(at(user, 'network.kuberouter.extraArgs')) ? (at(user, 'network.kuberouter.extraArgs') as Record<string, unknown>)['overlay-encap'] : undefined;
    if (cni === 'kube-router' && encap !== undefined && encap !== 'ipip') {
      // kube-router's `overlay-encap` (pkg/options/options.go v2.11.1:242, ipip|fou): fou wraps IPIP in UDP + GUE
      // (pkg/tunnels/linux_tunnels.go v2.11.1:363-367 `encap gue encap-sport auto encap-dport`), 32 bytes over IPv4
      // where the MTU tunnelwright writes takes IPIP's 20.
      problems.push({ path: 'k0sConfig.network.kuberouter.extraArgs.overlay-encap', code: 'cni', message: `expected "ipip" (the encapsulation the kube-router MTU tunnelwright writes is computed for), ${received(encap)}: fou adds UDP and GUE headers (32 bytes over IPv4, not IPIP's 20), so pods would send packets larger than the tunnel; leave overlay-encap out of k0sConfig` });
    }
    const mode = at(user, 'network.kubeProxy.mode');
    if (at(user, 'network.kubeProxy.disabled') !== true && mode !== undefined && mode !== 'iptables' && mode !== 'ipvs') {
      // k0s v1.30 pkg/apis/k0s/v1beta1/kubeproxy.go:105-106 Validate (skipped when disabled): iptables, ipvs or
      // userspace, else "unsupported mode %s for kubeProxy config", and the controller does not start. userspace
      // passes k0s but not kube-proxy, whose userspace proxier was removed in Kubernetes 1.26
      // (pkg/proxy/apis/config/validation validateProxyModeLinux: iptables, ipvs and, behind NFTablesProxyMode, nftables).
      const why = mode === 'userspace'
        ? 'kube-proxy has had no userspace proxier since Kubernetes 1.26 (its validation takes iptables, ipvs or, behind a feature gate, nftables), so it does not start'
        : mode === 'nftables'
          ? 'k0s v1.30 refuses it ("unsupported mode nftables for kubeProxy config": its kube-proxy modes are iptables, ipvs and userspace), so the controller does not start'
          : 'k0s v1.30 takes iptables, ipvs or userspace ("unsupported mode … for kubeProxy config"), so the controller does not start';
      problems.push({ path: 'k0sConfig.network.kubeProxy.mode', code: 'cni', message: `expected "iptables" (kube-proxy's default) or "ipvs", ${received(mode)}: ${why}; leave mode out or choose one of those` });
    }
    const bitAt = masqueradeBitPath(user);
    const bit = at(user, bitAt);
    if (bit !== undefined && !(typeof bit === 'number' && Number.isInteger(bit) && bit >= 0 && bit <= 31)) {
      // kube-proxy refuses the same (pkg/proxy/apis/config/validation: masqueradeBit "must be in the range [0, 31]").
      problems.push({ path: `k0sConfig.${bitAt}`, code: 'cni', message: `expected kube-proxy's masquerade bit, an integer from 0 to 31 (default 14), ${received(bit)}` });
    }
    const provider = at(user, 'network.provider');
    if (provider !== undefined && provider !== k0sProvider(cni)) {
      problems.push({ path: 'k0sConfig.network.provider', code: 'cni', message: `expected ${JSON.stringify(k0sProvider(cni))} (cni ${JSON.stringify(cni)}), ${received(provider)}: name the CNI with cni instead` });
    }
  }
}

/**
 * kubeadm's per-node pod CIDR mask (kube-controller-manager's `--node-cidr-mask-size-ipv4` 24 and `-ipv6` 64, which
 * kubeadm leaves at their defaults) and the most bits a pod subnet may be larger by: kubeadm's
 * ValidatePodSubnetNodeMask refuses a pod subnet smaller than the node mask or more than
 * `PodSubnetNodeMaskMaxDiff` (16) bits larger (kubernetes cmd/kubeadm/app/apis/kubeadm/validation/validation.go,
 * cmd/kubeadm/app/constants/constants.go).
 */
export const KUBEADM_NODE_MASK = { 4: 24, 6: 64 } as const;
export const KUBEADM_MASK_MAX_DIFF = 16;

/** Whether a CNI needs the nodes' pod CIDRs from the cluster (`node.spec.podCIDRs`), which kubeadm allocates only with a podSubnet. */
export function needsPodSubnet(cni: OverlayCni): boolean {
  return cni === 'flannel' || cni === 'kube-router';
}

/**
 * `podCidrs`, kubeadm's ClusterConfiguration `networking.podSubnet` (one CIDR per family, comma-joined for
 * dual-stack: kubeadm v1beta3 and v1beta4 `Networking.PodSubnet string`). flannel and kube-router read each node's
 * `spec.podCIDRs`, which kube-controller-manager allocates only when kubeadm passes it `--allocate-node-cidrs` and
 * `--cluster-cidr`, that is with a podSubnet: without it the node has no pod CIDR and the CNI does not start. So a
 * kubeadm controller (`needsClusterConfig`) with one of them needs it. Each family the overlay registers as node
 * address needs a pod CIDR of it, and none other (a pod CIDR of a family the nodes have no address of is routed by
 * no CNI). And on k0s, kube-router on IPv6 node addresses alone is refused: kube-router's `--enable-ipv4` defaults to
 * true and it exits "IPv4 was enabled, but no IPv4 address was found on the node" (kube-router
 * pkg/controllers/routing/network_routes_controller.go NewNetworkRoutingController, pkg/utils/node.go
 * NewKRNode); k0s turns IPv4 off only for an IPv6 `network.podCIDR`, its IPv6 single-stack mode (alpha, the
 * IPv6SingleStack feature gate: k0s docs/ipv6-single-stack.md).
 */
export function checkPodCidrs(input: Record<string, unknown>, distribution: string, families: ReadonlySet<4 | 6>, carriesPods: boolean, needsClusterConfig: boolean, problems: Problem[], familiesAt: string): void {
  const cni = (typeof input.cni === 'string' ? input.cni : defaultCni(distribution)) as OverlayCni;
  const podCidr = at(input.k0sConfig, 'network.podCIDR');
  if (distribution === 'k0s' && carriesPods && cni === 'kube-router' && families.size > 0 && !families.has(4) && !(typeof podCidr === 'string' && podCidr.includes(':'))) {
    problems.push({ path: familiesAt, code: 'cni-family', message: `the node addresses are IPv6 only, and k0s runs kube-router for IPv4 unless its pod CIDR is IPv6 (k0sConfig network.podCIDR is ${podCidr === undefined ? 'k0s\'s default 10.244.0.0/16' : JSON.stringify(podCidr)}): kube-router exits "IPv4 was enabled, but no IPv4 address was found on the node" on every node. Follow k0s's IPv6 single-stack setup (the IPv6SingleStack feature gate on every controller, and an IPv6 network.podCIDR and network.serviceCIDR in k0sConfig), or give the node-address interface an IPv4 address too, or use cni 'calico'` });
  }
  const given = input.podCidrs;
  if (given === undefined) {
    if (distribution === 'kubeadm' && carriesPods && needsClusterConfig && needsPodSubnet(cni)) {
      const example = families.has(4) ? (families.has(6) ? "['10.244.0.0/16', 'fd00:10:244::/56']" : "['10.244.0.0/16']") : "['fd00:10:244::/56']";
      problems.push({ path: 'podCidrs', code: 'pod-subnet', message: `kubeadm with ${cni}: ${cni} takes each node's pod CIDR, which kubeadm has allocated only with a ClusterConfiguration networking.podSubnet; without it the nodes get none and ${cni} does not start. Set podCidrs, one per node-address family, e.g. ${example}${cni === 'flannel' ? ' (flannel\'s net-conf.json Network must be the same)' : ''}` });
    }
    return;
  }
  if (distribution !== 'kubeadm') {
    problems.push({ path: 'podCidrs', code: 'distribution', message: `podCidrs is kubeadm's networking.podSubnet; the distribution is ${JSON.stringify(distribution)}: ${distribution === 'k0s' ? 'set k0sConfig network.podCIDR (and network.dualStack.IPv6podCIDR)' : 'set k3s\'s cluster-cidr in its own config'}, and leave podCidrs out` });
    return;
  }
  if (!Array.isArray(given)) return;
  const seen = new Map<number, number>();
  given.forEach((text, i) => {
    const c = parseCidr(text);
    if (!c) return; // the schema reports it
    const at = `podCidrs[${i}]`;
    if (seen.has(c.family)) {
      problems.push({ path: at, code: 'pod-subnet', message: `kubeadm takes at most one pod CIDR per family (podSubnet is "<IPv4 CIDR>,<IPv6 CIDR>" for dual-stack); podCidrs[${seen.get(c.family)}] is already IPv${c.family}` });
      return;
    }
    seen.set(c.family, i);
    const node = KUBEADM_NODE_MASK[c.family];
    if (c.prefix > node || node - c.prefix > KUBEADM_MASK_MAX_DIFF) {
      problems.push({ path: at, code: 'pod-subnet', message: `expected an IPv${c.family} pod CIDR from /${node - KUBEADM_MASK_MAX_DIFF} to /${node}, ${received(text)}: kubeadm gives each node a /${node} of it and refuses a pod subnet smaller than that or more than ${KUBEADM_MASK_MAX_DIFF} bits larger` });
    }
    if (families.size > 0 && !families.has(c.family)) {
      problems.push({ path: at, code: 'pod-subnet-family', message: `an IPv${c.family} pod CIDR, but the overlay registers no IPv${c.family} node address: no CNI routes these pods between nodes. Remove it, or give the node-address interface an IPv${c.family} address` });
    }
  });
  for (const f of families) {
    if (!seen.has(f)) problems.push({ path: 'podCidrs', code: 'pod-subnet-family', message: `the overlay registers an IPv${f} node address, but podCidrs has no IPv${f} CIDR: ${families.size === 2 ? 'a dual-stack cluster needs a pod CIDR of each family' : `pods would get addresses of a family the nodes cannot carry`}. Add an IPv${f} pod CIDR, e.g. ${f === 4 ? '10.244.0.0/16' : 'fd00:10:244::/56'}` });
  }
}
