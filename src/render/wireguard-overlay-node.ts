import { Problem, throwIfProblems } from '../errors';
import { userDataSizeWarnings } from '../host/artefacts';
import { nftLoaderUnit, rememberLength } from '../host/host-plan';
import { rememberEncoding } from '../host/ignition';
import { addResolvedSecret, planSecretSource } from '../host/secret-source';
import type { Distribution, K0sInstall, NodeRole, WireguardInterface, WireguardOverlayNodeProps, WireguardPeer } from '../model/wireguard-overlay-node';
import {
  DEFERRED_ENDPOINT_PREFIX, WG_ENDPOINTS_FILE, WG_RELOAD_FILE, wireguardEndpointsUnit, wireguardEndpointsUnitContent, wireguardReloadDropin,
} from '../host/wireguard-reload';
import type { OverlayCni } from '../model/cni';
import { cniOverhead, cniValues, k0sNetwork, k3sFlannel, kubeRouterSnat, mergeK0sSpec } from './cni';
import { parseCidr, formatIp } from '../model/net';
import { emptyHostPlan, HostFile, HostPlan, Plan } from '../types';
import { yaml } from '../lazy';
import * as cniModel from '../model/cni';
import * as overlayNodeModel from '../model/wireguard-overlay-node';

/** Returns the problems of WireguardOverlayNode props without throwing (warnings are not problems). */
export function validateWireguardOverlayNode(props: unknown): Problem[] {
  return overlayNodeModel.checkWireguardOverlayNode(props).problems;
}

/** Plans one node's WireGuard interfaces: `/etc/wireguard/<name>.conf`, `wg-quick@<name>.service`, key units, the distribution's ordering and node IP. */
export function planWireguardOverlayNode(props: WireguardOverlayNodeProps): Plan {
  const checked = overlayNodeModel.checkWireguardOverlayNode(props);
  throwIfProblems(checked.problems, 'WireguardOverlayNode props');
  const plan = renderOverlayNode(checked.value!, checked.warnings);
  return { ...plan, warnings: [...plan.warnings, ...userDataSizeWarnings(plan.hosts[0], 'wireguard')] };
}

/** A peer as rendered; `comment` names it in the config (the mesh's node names). */
export interface RenderPeer extends WireguardPeer {
  readonly comment?: string;
}
export interface RenderInterface extends WireguardInterface {
  readonly peers: RenderPeer[];
  /** `PreUp` commands: wg-quick runs them before it adds the addresses and routes (wg-quick cmd_up). */
  readonly preUp?: string[];
  /** Extra `PostUp` commands (a hub forwards between spokes). */
  readonly postUp?: string[];
  /** `PostDown` commands. */
  readonly postDown?: string[];
  /** wg-quick's `Table`: `off` installs no routes (a split tunnel does its own policy routing). */
  readonly table?: 'off';
  /**
   * `'after-up'`: a peer's hostname endpoint is written as a comment that `wg-endpoints` sets once the interface is
   * up (see WG_ENDPOINTS_SCRIPT), so a name that does not resolve cannot keep the interface down. @default - in the
   * config, resolved by `wg-quick up`
   */
  readonly hostnameEndpoints?: 'after-up';
}

/** True when the endpoint is a hostname (not an IP literal). */
export function isHostnameEndpoint(endpoint: string | undefined): boolean {
  return endpoint !== undefined && overlayNodeModel.parseEndpoint(endpoint, true)?.isHostname === true;
}

/** What the distribution calls its node unit, by role. */
export function distributionUnit(distribution: Distribution, role: NodeRole): string {
  const controller = role !== 'worker';
  switch (distribution) {
    case 'k0s':
      return controller ? 'k0scontroller.service' : 'k0sworker.service';
    case 'k3s':
      return controller ? 'k3s.service' : 'k3s-agent.service';
    case 'kubeadm':
      return 'kubelet.service';
  }
}

export const K0S_CONFIG_PATH = '/etc/k0s/k0s.yaml';
export const K3S_CONFIG_PATH = '/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml';
/** Where the packaged kubelet unit reads KUBELET_EXTRA_ARGS: Debian family, then RPM family. */
export const KUBEADM_KUBELET_DEFAULTS_PATHS = ['/etc/default/kubelet', '/etc/sysconfig/kubelet'] as const;
export const K0S_INSTALL_UNIT = 'tunnelwright-k0s-install.service';
/** What k0s writes once a worker has joined: the kubelet's kubeconfig (`KubeletAuthConfigPath`, k0s pkg/config/cfgvars.go:176, under the default data dir /var/lib/k0s, pkg/constant/constant_unix.go:10). */
export const K0S_JOINED_WORKER = '/var/lib/k0s/kubelet.conf';
/** What a k0s controller with its own etcd has once it has joined: etcd's database (k0s cmd/controller/controller.go:754-759; `EtcdDataDir`, cfgvars.go:173). */
export const K0S_JOINED_CONTROLLER = '/var/lib/k0s/etcd/member/snap/db';
export const KUBEADM_CONFIG_PATH = '/etc/kubernetes/tunnelwright-kubeadm.yaml';

/** One `[Peer]` section. */
function renderPeer(peer: RenderPeer, deferHostname: boolean): string {
  const lines = ['', '[Peer]'];
  if (peer.comment) lines.push(`# ${peer.comment}`);
  lines.push(`PublicKey = ${peer.publicKey}`);
  if (peer.presharedKey !== undefined) lines.push(`PresharedKey = ${peer.presharedKey}`);
  if (peer.endpoint !== undefined) lines.push(`${deferHostname && isHostnameEndpoint(peer.endpoint) ? DEFERRED_ENDPOINT_PREFIX : 'Endpoint = '}${peer.endpoint}`);
  lines.push(`AllowedIPs = ${peer.allowedIPs.join(', ')}`);
  if (peer.persistentKeepalive !== undefined) lines.push(`PersistentKeepalive = ${peer.persistentKeepalive}`);
  return `${lines.join('\n')}\n`;
}

/** A peer section and its percent-encoding, shared by every node of a mesh that sees the peer. */
export interface PeerSection {
  readonly text: string;
  readonly encoded: string;
}

/**
 * Renders the wg-quick config of one interface (no private key when it comes from a file).
 */
export function renderWireguardConfig(node: string, iface: RenderInterface, privateKeyPath?: string, presharedKeyPaths: ReadonlyMap<number, string> = new Map()): string {
  return renderWireguardConfigShared(node, iface, privateKeyPath, presharedKeyPaths).text;
}

/**
 * The config and, with `sections`, its percent-encoding: each peer's section is rendered and encoded once per mesh
 * (the cache is keyed by peer object, which a mesh shares among every node that sees it), so a full mesh does n
 * sections of work, not n².
 */
export function renderWireguardConfigShared(node: string, iface: RenderInterface, privateKeyPath?: string, presharedKeyPaths: ReadonlyMap<number, string> = new Map(), sections?: WeakMap<RenderPeer, PeerSection>): { readonly text: string; readonly encoded?: string; readonly length?: number } {
  // The interface's own public key, as a comment: a rotated key changes the node's own config, so a deploy that reloads
  // the nodes whose files changed reloads it too (its reload resolves the new private key from its source).
  const lines = [`# ${iface.name} on ${node}: written by tunnelwright`, ...(iface.publicKey !== undefined ? [`# public key: ${iface.publicKey}`] : []), '[Interface]', `Address = ${overlayNodeModel.interfaceAddresses(iface.address).join(', ')}`];
  if (iface.listenPort !== undefined) lines.push(`ListenPort = ${iface.listenPort}`);
  const mtu = interfaceMtu(iface);
  if (mtu !== undefined) lines.push(`MTU = ${mtu}`);
  if (iface.table) lines.push(`Table = ${iface.table}`);
  if (iface.privateKey !== undefined) lines.push(`PrivateKey = ${iface.privateKey}`);
  for (const cmd of iface.preUp ?? []) lines.push(`PreUp = ${cmd}`);
  if (privateKeyPath) lines.push(`PostUp = wg set %i private-key ${privateKeyPath}`);
  iface.peers.forEach((peer, j) => {
    const psk = presharedKeyPaths.get(j);
    if (psk) lines.push(`PostUp = wg set %i peer ${peer.publicKey} preshared-key ${psk}`);
  });
  for (const cmd of iface.postUp ?? []) lines.push(`PostUp = ${cmd}`);
  for (const cmd of iface.postDown ?? []) lines.push(`PostDown = ${cmd}`);
  const header = `${lines.join('\n')}\n`;
  const defer = iface.hostnameEndpoints === 'after-up';
  if (!sections) return { text: header + iface.peers.map((p) => renderPeer(p, defer)).join('') };
  // One join each: flat strings (appending would build ropes that every later reader flattens again). The encoded
  // text and the length are computed only when asked for.
  const parts: PeerSection[] = [];
  for (const peer of iface.peers) {
    let section = sections.get(peer);
    if (section === undefined) {
      // The cache is per mesh, whose interfaces all render hostnames the same way (deferred).
      const text = renderPeer(peer, defer);
      section = { text, encoded: encodeURIComponent(text) };
      sections.set(peer, section);
    }
    parts.push(section);
  }
  return {
    get text() {
      return [header, ...parts.map((p) => p.text)].join('');
    },
    get encoded() {
      return [encodeURIComponent(header), ...parts.map((p) => p.encoded)].join('');
    },
    get length() {
      return parts.reduce((n, p) => n + p.text.length, header.length);
    },
  };
}

/** The MTU written for an interface: `mtu`, else derived from `underlayMtu`, else none (wg-quick's choice). */
export function interfaceMtu(iface: WireguardInterface): number | undefined {
  if (iface.mtu !== undefined) return iface.mtu;
  return iface.underlayMtu !== undefined ? overlayNodeModel.derivedMtu(iface.underlayMtu, iface.peers.map((p) => p.endpoint)) : undefined;
}

/** VXLAN's overhead (flannel, Calico VXLAN, Cilium tunnel mode): pods crossing the overlay need their MTU this much below it. */
export const VXLAN_OVERHEAD = 50;

/**
 * The interface's config file. In a mesh (shared peer sections) its content is computed when read, from the sections
 * every node shares, and not kept: a 1000-node mesh holds n sections, not n² lines, and a writer holds one node's
 * text at a time. Without shared sections it is a plain string.
 */
function wireguardConfigFile(node: string, iface: RenderInterface, keyPath: string | undefined, pskPaths: ReadonlyMap<number, string>, secret: boolean, sections?: WeakMap<RenderPeer, PeerSection>): HostFile {
  const base = { path: `/etc/wireguard/${iface.name}.conf`, mode: 0o600, owner: 'root:root', ...(secret ? { secret: true } : {}) };
  if (!sections) return { ...base, content: renderWireguardConfigShared(node, iface, keyPath, pskPaths).text };
  const render = () => renderWireguardConfigShared(node, iface, keyPath, pskPaths, sections);
  const file: HostFile = Object.defineProperty({ ...base } as HostFile, 'content', { get: () => render().text, enumerable: true });
  rememberEncoding(file, () => render().encoded!);
  rememberLength(file, () => render().length!);
  return file;
}

export interface OverlayNodeInput {
  /** Shared `[Peer]` sections, by peer object (see renderWireguardConfigShared). */
  readonly peerText?: WeakMap<RenderPeer, PeerSection>;
  readonly node: string;
  readonly role: NodeRole;
  readonly distribution: Distribution;
  readonly wireguard: RenderInterface[];
  readonly kubernetesVersion?: string;
  readonly installK0s?: K0sInstall;
  readonly installPackages?: boolean;
  readonly cni?: OverlayCni;
  readonly k0sConfig?: Record<string, unknown>;
  /**
   * k0sConfig is the cluster's own k0s.yaml spec (a mesh's, which its controllers write), so an absent
   * `network.podCIDR` means k0s's default. A standalone worker's k0sConfig is only what the user copied from the
   * controller: without podCIDR the pod CIDR is not known there.
   */
  readonly clusterK0sConfig?: boolean;
  /**
   * k0s with several controllers and no stable API address of the user's: k0s's node-local load balancing, so each
   * worker's kubelet and konnectivity agent reach every controller, not only the one that issued its token.
   */
  readonly k0sNodeLocalLoadBalancing?: boolean;
  /** kubeadm: the cluster's pod CIDRs (ClusterConfiguration networking.podSubnet, the CNI's network). */
  readonly podCidrs?: readonly string[];
}

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
function kubeRouterSnatHooks(host: HostPlan, iface: RenderInterface, cni: OverlayCni, distribution: Distribution, role: NodeRole, installPackages: boolean, k0sConfig: Record<string, unknown> | undefined, clusterK0sConfig: boolean, podCidrs: readonly string[] = []): { preUp?: string[]; units?: HostPlan['units'] } {
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

/** Renders validated props (no validation here: the mesh calls it with interfaces it generated and checked). */
export function renderOverlayNode(props: WireguardOverlayNodeProps, warnings: Problem[] = []): Plan {
  const input: OverlayNodeInput = {
    node: props.node, role: props.role ?? 'worker', distribution: props.distribution ?? 'k0s', wireguard: props.wireguard,
    kubernetesVersion: props.kubernetesVersion, installK0s: props.installK0s, installPackages: props.installPackages,
    cni: props.cni, k0sConfig: props.k0sConfig, podCidrs: props.podCidrs,
  };
  const { host, values } = renderOverlayHost(input);
  return { objects: [], hosts: [host], values, warnings };
}

export function renderOverlayHost(input: OverlayNodeInput): { host: HostPlan; values: Record<string, unknown> } {
  const { node, role, distribution } = input;
  const host = emptyHostPlan(node);
  if (input.wireguard.length === 0) return { host, values: {} };
  if (input.installPackages !== false) host.packages.push('wireguard-tools');
  host.files.push(WG_RELOAD_FILE);
  const k8sUnit = distributionUnit(distribution, role);
  const wgUnits: string[] = [];
  let nodeIps: string[] | undefined;
  let overlayMtu: number | undefined;
  let overlayIface = '';
  const cni = input.cni ?? cniModel.defaultCni(distribution);
  for (const given of input.wireguard) {
    const { units: snatUnits, ...snatHooks } = kubeRouterSnatHooks(host, given, cni, distribution, role, input.installPackages !== false, input.k0sConfig, input.clusterK0sConfig === true, input.podCidrs);
    const iface: RenderInterface = { ...given, ...snatHooks, hostnameEndpoints: 'after-up' };
    const wgUnit = `wg-quick@${iface.name}.service`;
    wgUnits.push(wgUnit);
    const before: string[] = [];
    const refresh: string[] = [];
    let keyPath: string | undefined;
    if (iface.privateKeyFrom) {
      const s = planSecretSource(`${iface.name}-private-key`, iface.privateKeyFrom, wgUnit);
      addResolvedSecret(host, s);
      keyPath = s.path;
      before.push(s.unit);
      refresh.push(s.refresh);
    }
    const pskPaths = new Map<number, string>();
    iface.peers.forEach((peer, j) => {
      if (!peer.presharedKeyFrom) return;
      const s = planSecretSource(`${iface.name}-peer${j}-preshared-key`, peer.presharedKeyFrom, wgUnit);
      addResolvedSecret(host, s);
      pskPaths.set(j, s.path);
      before.push(s.unit);
      refresh.push(s.refresh);
    });
    const inlineSecret = iface.privateKey !== undefined || iface.peers.some((p) => p.presharedKey !== undefined);
    host.files.push(wireguardConfigFile(node, iface, keyPath, pskPaths, inlineSecret, input.peerText));
    host.units.push({ name: wgUnit, enabled: true });
    host.units.push(...(snatUnits ?? []));
    if (before.length > 0) {
      host.dropins.push({ unit: wgUnit, name: '10-tunnelwright-secrets.conf', content: `[Unit]\nAfter=${before.join(' ')}\nRequires=${before.join(' ')}\n` });
    }
    // Peers dialled by name get their endpoints once the interface is up, from a unit nothing waits for. Every
    // interface gets it, whether or not it dials a name today: cloud-init and Ignition run once, and a peer dialled by
    // name can arrive later by the day-2 path (a node added to the mesh: its wg0.conf copied, the interface reloaded,
    // and the reload starts the unit again). Without a name to set it exits at once. A name written as `Endpoint =`
    // instead would hold the interface, and the distribution after it, until it resolved (wg-quick up, wg syncconf).
    if (!host.files.includes(WG_ENDPOINTS_FILE)) host.files.push(WG_ENDPOINTS_FILE);
    const endpointsUnit = wireguardEndpointsUnit(iface.name);
    host.units.push({ name: endpointsUnit, content: wireguardEndpointsUnitContent(iface.name) });
    host.dropins.push({ unit: wgUnit, name: '30-tunnelwright-endpoints.conf', content: `[Unit]\nWants=${endpointsUnit}\n` });
    host.dropins.push(wireguardReloadDropin(wgUnit, refresh, endpointsUnit));
    if (iface.nodeAddress) {
      // IPv4 first: the first address is the one a single-address setting (k0s api.address, etcd) takes.
      nodeIps = overlayNodeModel.interfaceAddresses(iface.address).map((a) => parseCidr(a)!).sort((a, b) => a.family - b.family).map((c) => formatIp(c.family, c.address));
      overlayMtu = interfaceMtu(iface);
      overlayIface = iface.name;
    }
  }
  // One drop-in per interface, so two constructs adding interfaces to one node merge instead of clashing. The
  // distribution requires the interface that carries its node address (`Requires=`: stopped with it, never started
  // without it); any other interface (a backup link) it only wants, after it: a key that never arrives for that one
  // fails its unit, and with `Requires=` would keep the distribution from ever starting, and `systemctl stop` of it
  // would stop the distribution too (systemd.unit(5), Requires=). Without a node-address interface every one is required.
  const anchor = input.wireguard.findIndex((w) => w.nodeAddress === true);
  for (const [i, wgUnit] of wgUnits.entries()) {
    const dependency = anchor < 0 || anchor === i ? 'Requires' : 'Wants';
    host.dropins.push({ unit: k8sUnit, name: `10-tunnelwright-${input.wireguard[i].name}.conf`, content: `[Unit]\nAfter=${wgUnit}\n${dependency}=${wgUnit}\n` });
  }
  const values: Record<string, unknown> = {};
  // The CNI encapsulates between the node addresses: with an IPv6 one its outer header is IPv6 (src/render/cni.ts).
  const outerIpv6 = (nodeIps ?? []).some((ip) => ip.includes(':'));
  const podMtu = overlayMtu !== undefined ? overlayMtu - cniOverhead('vxlan', outerIpv6) : undefined;
  if (overlayMtu !== undefined) values.network = { overlayMtu, podMtu };
  if (nodeIps) {
    const controller = role !== 'worker';
    const nodeIp = nodeIps[0];
    const apiSans = controller ? nodeIps : [];
    values.node = { name: node, nodeIp, nodeIps, apiSans };
    // The CNI carries pod traffic between nodes over the overlay interface: in the distribution's file where the
    // library owns it (k0s.yaml, k3s's config), else in values.cni for the CNI's install (src/render/cni.ts).
    if (!cniModel.cniOwnedByDistribution(distribution, cni)) {
      const handed = cniValues(cni, overlayIface, overlayMtu, outerIpv6, { families: new Set(nodeIps.map((ip) => (ip.includes(':') ? 6 : 4))), podCidrs: input.podCidrs });
      if (handed) values.cni = handed;
    }
    switch (distribution) {
      case 'k0s':
        // Several controllers: k0s's node-local load balancing (k0s pkg/apis/k0s/v1beta1 NodeLocalLoadBalancing
        // `enabled`, `type: EnvoyProxy`, NllbTypeEnvoyProxy): each worker runs an Envoy on localhost over every
        // controller's API address, and kubelet, kube-proxy and konnectivity use it (k0s pkg/component/controller
        // kubeproxy.go and konnectivity.go switch to localhost when nllb.IsEnabled()).
        values.k0s = renderK0s(host, input, k8sUnit, nodeIps, { ...k0sNetwork(cni, overlayIface, overlayMtu, outerIpv6), ...(input.k0sNodeLocalLoadBalancing ? { nodeLocalLoadBalancing: { enabled: true, type: 'EnvoyProxy' } } : {}) });
        break;
      case 'k3s': {
        // k3s merges config.yaml.d files key by key: a plain key replaces the user's value, `key+` appends to it
        // (pkg/configfilearg). node-ip and advertise-address are ours to set; the SANs add to the user's.
        const config: Record<string, unknown> = { 'node-ip': nodeIps.join(','), ...(cni === 'flannel' ? k3sFlannel(overlayIface) : {}) };
        if (controller) Object.assign(config, { 'advertise-address': nodeIp, 'tls-san+': apiSans });
        values.k3s = { config };
        host.files.push({ path: K3S_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: register the overlay address${cni === 'flannel' ? ', flannel\'s VXLAN on the overlay' : ''}\n${yaml().stringify(config)}` });
        break;
      }
      case 'kubeadm': {
        // The packaged kubelet drop-in (10-kubeadm.conf) reads /etc/default/kubelet on Debian-family hosts and
        // /etc/sysconfig/kubelet on RPM-family ones: both, with the same line.
        const defaults = `# written by tunnelwright: register the overlay address\nKUBELET_EXTRA_ARGS=--node-ip=${nodeIps.join(',')}\n`;
        for (const path of KUBEADM_KUBELET_DEFAULTS_PATHS) host.files.push({ path, mode: 0o644, owner: 'root:root', content: defaults });
        if (controller) {
          const minor = overlayNodeModel.kubernetesMinor(input.kubernetesVersion ?? overlayNodeModel.DEFAULT_KUBERNETES_VERSION)!;
          const v4 = minor >= 31;
          const apiVersion = v4 ? 'kubeadm.k8s.io/v1beta4' : 'kubeadm.k8s.io/v1beta3';
          const kubeletExtraArgs = v4 ? [{ name: 'node-ip', value: nodeIps.join(',') }] : { 'node-ip': nodeIps.join(',') };
          const docs = [
            { apiVersion, kind: 'InitConfiguration', localAPIEndpoint: { advertiseAddress: nodeIp }, nodeRegistration: { kubeletExtraArgs } },
            // networking.podSubnet: one CIDR per family, comma-joined (kubeadm v1beta3 and v1beta4 Networking.PodSubnet
            // string, cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go); kubeadm then starts kube-controller-manager with
            // --allocate-node-cidrs and --cluster-cidr, and each node gets spec.podCIDRs for flannel or kube-router.
            { apiVersion, kind: 'ClusterConfiguration', apiServer: { certSANs: apiSans }, ...(input.podCidrs?.length ? { networking: { podSubnet: input.podCidrs.join(',') } } : {}) },
          ];
          values.kubeadm = { initConfiguration: docs[0], clusterConfiguration: docs[1] };
          host.files.push({ path: KUBEADM_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: kubeadm init --config ${KUBEADM_CONFIG_PATH}\n${docs.map((d) => yaml().stringify(d)).join('---\n')}` });
        }
        break;
      }
    }
  }
  return { host, values };
}

/**
 * k0s: the controller's config (API address, SANs, etcd peer address on the overlay) and,
 * with `installK0s`, a first-boot unit that runs `k0s install` with the kubelet's node IP (k0s takes it only there)
 * once the overlay is up, then starts k0s. Returns `values.k0s`.
 */
function renderK0s(host: HostPlan, input: OverlayNodeInput, k8sUnit: string, nodeIps: string[], network: Record<string, unknown>): Record<string, unknown> {
  const controller = input.role !== 'worker';
  const runsKubelet = input.role !== 'controller';
  const installFlags = runsKubelet ? [`--kubelet-extra-args=--node-ip=${nodeIps.join(',')}`] : [];
  const out: Record<string, unknown> = { installFlags };
  if (controller) {
    const spec = mergeK0sSpec(input.k0sConfig, { api: { address: nodeIps[0], sans: nodeIps }, storage: { type: 'etcd', etcd: { peerAddress: nodeIps[0] } }, network });
    const config = { apiVersion: 'k0s.k0sproject.io/v1beta1', kind: 'ClusterConfig', metadata: { name: 'k0s' }, spec };
    out.config = config;
    host.files.push({ path: K0S_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: the API and etcd listen on the overlay address, pod traffic rides it\n${yaml().stringify(config)}` });
  }
  const install = input.installK0s;
  if (!install) return out;
  const binary = install.binary ?? overlayNodeModel.DEFAULT_K0S_BINARY;
  const after = input.wireguard.map((i) => `wg-quick@${i.name}.service`);
  const args = [binary, 'install', controller ? 'controller' : 'worker'];
  if (input.role === 'controller+worker') args.push('--enable-worker');
  if (controller) args.push(`--config=${K0S_CONFIG_PATH}`);
  if (install.tokenFrom) {
    // k0s install writes --token-file into k0s's own unit, but k0s reads the file only until the node has joined: a
    // worker once its kubelet kubeconfig exists (k0s pkg/component/worker/utils.go:43-46, read lazily by
    // cmd/worker/worker.go:167-190), a controller with its own etcd once etcd's member/snap/db exists
    // (cmd/controller/controller.go:226-236, needToJoin at :754-765). So the token is resolved only while that file is
    // missing: after the join, a reboot does not depend on the token's source (a short-lived token may be gone).
    const token = planSecretSource('k0s-token', install.tokenFrom, K0S_INSTALL_UNIT, [`ConditionPathExists=!${controller ? K0S_JOINED_CONTROLLER : K0S_JOINED_WORKER}`]);
    addResolvedSecret(host, token);
    after.push(token.unit);
    args.push(`--token-file=${token.path}`);
    // Until then k0s reads the file when it starts: it must be there first (a unit skipped by its condition fails no one).
    host.dropins.push({ unit: k8sUnit, name: '10-tunnelwright-k0s-token.conf', content: `[Unit]\nAfter=${token.unit}\nRequires=${token.unit}\n` });
  }
  args.push(...installFlags);
  host.units.push({
    name: K0S_INSTALL_UNIT,
    enabled: true,
    content: [
      '[Unit]',
      `Description=tunnelwright: install k0s with the kubelet on the overlay address`,
      `After=${after.join(' ')}`,
      `Requires=${after.join(' ')}`,
      `ConditionPathExists=!/etc/systemd/system/${k8sUnit}`,
      '',
      '[Service]',
      'Type=oneshot',
      'RemainAfterExit=yes',
      `ExecStart=${args.join(' ')}`,
      `ExecStart=/usr/bin/systemctl start --no-block ${k8sUnit}`,
      '',
      '[Install]',
      'WantedBy=multi-user.target',
      '',
    ].join('\n'),
  });
  return { ...out, installUnit: K0S_INSTALL_UNIT };
}
