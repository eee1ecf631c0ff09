import * as z from '../zod';
import { checkKubeRouterSnatPackages, checkOverlayCni, checkPodCidrs, k0sConfigSchema, OverlayCni, overlayCniSchema } from './cni';
import { Problem } from '../errors';
import { isWireguardKey } from '../keys';
import {
  asArray, Cidr, cidrSchema, clusterSchema, intInRange, isRecord, networkCidrSchema, parseWith, redactProblems, portSchema, received, SecretSource, secretSourceSchema, sortProblems,
} from './common';
import { KEY_FIELD_MESSAGE } from './common';
import { cidrContainsIp, findDuplicates, formatIp, Located, parseCidr, ParsedCidr, parseIp } from './net';
import {
  checkControlPlaneEndpoint, derivedMtu, Distribution, endpointKey, INTERFACE_NAME, K0sInstall, KubeadmController, kubernetesMinor, NodeRole, parseEndpoint,
} from './wireguard-overlay-node';
import { k0sInstallSchema, nodeNameSchema } from './wireguard-overlay-node/schema';

/** One node of a mesh. */
export interface WireguardMeshNode {
  /** The node's hostname, unique in the mesh: a Kubernetes node name (a DNS subdomain, at most 253 characters). */
  readonly node: string;
  /** Overlay address inside `network`: `10.10.0.1`, or with the network's prefix `10.10.0.1/24`. */
  readonly address: string;
  /** The node's public key (see `publicKeyFromPrivate` / `generateKeyPair`). */
  readonly publicKey: string;
  /** Where the node reads its private key at boot (never inline in a mesh). */
  readonly privateKeyFrom: SecretSource;
  /** `host` or `host:port` other nodes dial; omitted for nodes behind NAT (they dial out, with keepalive). @default - not dialable */
  readonly endpoint?: string;
  /** UDP port this node listens on. @default - the mesh's `listenPort` */
  readonly listenPort?: number;
  /** @default 'worker' */
  readonly role?: NodeRole;
  /** k0s only: install k0s on this node at first boot with the kubelet on its overlay address (see WireguardOverlayNodeProps). @default - installed by you */
  readonly installK0s?: K0sInstall;
}

export interface WireguardMeshProps {
  /** The cluster this mesh belongs to. @default 'default' */
  readonly cluster?: string;
  /** The overlay network, e.g. `10.10.0.0/24`: every node address is inside it. */
  readonly network: Cidr;
  /** `'full'`: every node peers with every other; `{ hub }`: spokes peer with the hub only, which forwards between them. @default 'full' */
  readonly topology?: 'full' | { readonly hub: string };
  /** Interface name on every node. @default 'wg0' */
  readonly interfaceName?: string;
  /** UDP port of every node that a peer dials (a node's own `listenPort` wins). @default - required when any node has an endpoint */
  readonly listenPort?: number;
  /** Interface MTU, 576–65535 (1280 at least with IPv6). @default - derived from `underlayMtu`; without it, wg-quick's (the route's MTU − 80) */
  readonly mtu?: number;
  /** MTU of the network between the nodes; the interface MTU is this minus 60 (80 when any node is dialled over IPv6 or by hostname). @default - not known */
  readonly underlayMtu?: number;
  /** Kubernetes minor version, for kubeadm's config API (see WireguardOverlayNodeProps). @default '1.31' */
  readonly kubernetesVersion?: string;
  /**
   * Install `wireguard-tools` from the distribution's packages, and `nftables` on the nodes whose pods kube-router
   * carries (wg-quick's PreUp runs `nft` to load the SNAT table into kube-router's tunnels); off for images that ship
   * them (a warning names nftables then: without `nft` the interface does not come up). Ignition hosts install no
   * packages either way: their image must ship both.
   * @default true
   */
  readonly installPackages?: boolean;
  /** Keepalive, in seconds, on every peer link where one side has no endpoint. @default 25 */
  readonly persistentKeepalive?: number;
  /** @default 'k0s' */
  readonly distribution?: Distribution;
  /** Ignition spec version of each node's `ignition`. @default '3.4.0' */
  readonly ignitionVersion?: '3.3.0' | '3.4.0' | '3.5.0';
  /** The cluster's CNI, configured to carry pod traffic over the mesh (see WireguardOverlayNodeProps). @default - k0s: 'kube-router', k3s: 'flannel', kubeadm: 'other' */
  readonly cni?: OverlayCni;
  /** k0s only: your k0s.yaml `spec`, merged under the library's on every controller (see WireguardOverlayNodeProps). @default - none */
  readonly k0sConfig?: Record<string, unknown>;
  /**
   * kubeadm only: the cluster's pod CIDR, of the network's family (`['10.244.0.0/16']`), written as the
   * controller's ClusterConfiguration `networking.podSubnet` and handed to the CNI in `values.cni` (see
   * WireguardOverlayNodeProps). Required with cni `flannel` or `kube-router`.
   * @default - none (kubeadm allocates no pod CIDRs)
   */
  readonly podCidrs?: Cidr[];
  /**
   * kubeadm only: the cluster's stable API address, `host[:port]` (see WireguardOverlayNodeProps): required with
   * several controllers. The first controller in `nodes` runs kubeadm init (`--upload-certs`), the others join its
   * control plane (`kubeadm join --control-plane`); an IP inside `network` must be a controller's.
   * @default - none (one controller)
   */
  readonly controlPlaneEndpoint?: string;
  readonly nodes: WireguardMeshNode[];
}

export const DEFAULT_KEEPALIVE = 25;

const nodeSchema = z.strictObject({
  node: nodeNameSchema,
  address: z.string(),
  publicKey: z.string(),
  privateKeyFrom: secretSourceSchema,
  endpoint: z.optional(z.string()),
  listenPort: z.optional(portSchema),
  role: z.optional(z.enum(['controller', 'worker', 'controller+worker'])),
  installK0s: z.optional(k0sInstallSchema),
});

/** @internal */
export const wireguardMeshSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  network: cidrSchema,
  topology: z.optional(z.union([z.literal('full'), z.strictObject({ hub: z.string() })], { error: 'expected \'full\' or { hub: <a node\'s name> }' })),
  interfaceName: z.optional(z.string()),
  listenPort: z.optional(portSchema),
  mtu: z.optional(intInRange(576, 65535, 'an MTU')),
  underlayMtu: z.optional(intInRange(1280, 65535, 'an underlay MTU')),
  kubernetesVersion: z.optional(z.string()),
  installPackages: z.optional(z.boolean()),
  persistentKeepalive: z.optional(intInRange(1, 65535, 'a keepalive interval in seconds')),
  distribution: z.optional(z.enum(['k0s', 'k3s', 'kubeadm'])),
  ignitionVersion: z.optional(z.enum(['3.3.0', '3.4.0', '3.5.0'])),
  cni: z.optional(overlayCniSchema),
  k0sConfig: z.optional(k0sConfigSchema),
  podCidrs: z.optional(z.array(networkCidrSchema)),
  controlPlaneEndpoint: z.optional(z.string()),
  nodes: z.array(nodeSchema),
});

/** A node's address as an interface CIDR in the network (`networkText`: the network as the user wrote it), or a problem. */
export function meshNodeAddress(address: string, network: ParsedCidr, networkText: string): { cidr?: string; problem?: Omit<Problem, 'path'> } {
  const asCidr = parseCidr(address);
  const ip = asCidr ? { family: asCidr.family, value: asCidr.address } : parseIp(address);
  if (!ip) return { problem: { code: 'ip', message: `expected an address inside the network such as 10.10.0.1, ${received(address)}` } };
  if (asCidr && asCidr.prefix !== network.prefix) return { problem: { code: 'prefix', message: `expected the network's prefix /${network.prefix} (or a bare address), ${received(address)}` } };
  if (!cidrContainsIp(network, ip)) return { problem: { code: 'outside-network', message: `expected an address inside ${networkText}, ${received(address)}` } };
  const bits = network.family === 4 ? 32 : 128;
  if (network.prefix < bits - 1 && (ip.value === network.start || (network.family === 4 && ip.value === network.end))) {
    return { problem: { code: 'host-address', message: `expected a host address, ${received(address)}, which is the network's ${ip.value === network.start ? 'network' : 'broadcast'} address` } };
  }
  return { cidr: asCidr ? address : `${address}/${network.prefix}` };
}

/** Validates WireguardMesh props over the overlay as a whole, in O(n log n). */
export function checkWireguardMesh(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: WireguardMeshProps } {
  const parsed = parseWith<WireguardMeshProps>(wireguardMeshSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  const warnings: Problem[] = [];
  if (!isRecord(input)) return { problems, warnings };
  const network = parseCidr(input.network);
  if (typeof input.interfaceName === 'string' && (!INTERFACE_NAME.test(input.interfaceName) || input.interfaceName.length > 15)) {
    problems.push({ path: 'interfaceName', code: 'interface-name', message: `expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, ${received(input.interfaceName)}` });
  }
  if (network && typeof input.mtu === 'number' && network.family === 6 && input.mtu < 1280) {
    problems.push({ path: 'mtu', code: 'mtu-ipv6', message: `expected an MTU of at least 1280 on an IPv6 overlay, ${received(input.mtu)}` });
  }
  const nodes = asArray(input.nodes);
  if (network && typeof input.underlayMtu === 'number' && input.mtu === undefined && network.family === 6) {
    const mtu = meshMtu(input.underlayMtu, nodes);
    if (mtu < 1280) problems.push({ path: 'underlayMtu', code: 'mtu-ipv6', message: `the interface MTU derived from underlayMtu ${input.underlayMtu} is ${mtu}, below the 1280 an IPv6 overlay needs` });
  }
  if (typeof input.kubernetesVersion === 'string') {
    const minor = kubernetesMinor(input.kubernetesVersion);
    if (minor === undefined || minor < 28) problems.push({ path: 'kubernetesVersion', code: 'kubernetes-version', message: `expected a Kubernetes version from 1.28 such as '1.31' or 'v1.31.2', ${received(input.kubernetesVersion)}` });
  }
  const distribution = input.distribution ?? 'k0s';
  if (typeof distribution === 'string') checkOverlayCni(input, distribution, problems, warnings, 'plan.nodes[<node>]', true, input.mtu === undefined && input.underlayMtu === undefined ? 'mtu' : undefined, network?.family === 6 ? 'network' : undefined);
  if (typeof distribution === 'string') {
    const families = new Set<4 | 6>(network ? [network.family] : []);
    const podNodes = asArray(input.nodes).some((n) => !isRecord(n) || n.role !== 'controller');
    const controllers = asArray(input.nodes).some((n) => isRecord(n) && (n.role === 'controller' || n.role === 'controller+worker'));
    checkPodCidrs(input, distribution, families, distribution === 'k0s' ? podNodes : true, controllers, problems, 'network');
  }
  if (typeof distribution === 'string') checkKubeRouterSnatPackages(input, distribution, distribution !== 'k0s' || asArray(input.nodes).some((n) => !isRecord(n) || n.role !== 'controller'), warnings);
  const names: Located<string>[] = [];
  const keys: Located<string>[] = [];
  const addrs: Located<{ key: string; text: string }>[] = [];
  const undialable: string[] = [];
  const dialled: Located<string>[] = [];
  const byName: { index: number; node: string; endpoint: string }[] = [];
  const controllers: number[] = [];
  nodes.forEach((n, i) => {
    if (!isRecord(n)) return;
    const p = `nodes[${i}]`;
    if (typeof n.node === 'string') names.push({ value: n.node, at: p });
    if (n.role === 'controller' || n.role === 'controller+worker') controllers.push(i);
    if (n.installK0s !== undefined && distribution !== 'k0s') {
      problems.push({ path: `${p}.installK0s`, code: 'distribution', message: `installK0s installs k0s; the mesh's distribution is ${JSON.stringify(distribution)}` });
    } else if (distribution === 'k0s' && n.installK0s === undefined && n.role !== 'controller') {
      warnings.push({ path: `${p}.installK0s`, code: 'k0s-node-ip', message: 'k0s takes the kubelet\'s node IP only at `k0s install`: nothing on this host can set it, so the node registers its first interface\'s address unless you pass plan.nodes[<node>].values.k0s.installFlags to k0s install (k0sctl: the host\'s installFlags), or set installK0s' });
    }
    if (typeof n.publicKey === 'string') {
      if (!isWireguardKey(n.publicKey)) problems.push({ path: `${p}.publicKey`, code: 'key', message: KEY_FIELD_MESSAGE });
      else keys.push({ value: n.publicKey, at: p });
    }
    if (typeof n.address === 'string' && network) {
      const a = meshNodeAddress(n.address, network, String(input.network));
      if (a.problem) problems.push({ path: `${p}.address`, ...a.problem });
      else addrs.push({ value: { key: String(parseCidr(a.cidr!)!.address), text: n.address }, at: p });
    }
    if (typeof n.endpoint === 'string') {
      const e = parseEndpoint(n.endpoint, true);
      if (!e) problems.push({ path: `${p}.endpoint`, code: 'endpoint', message: `expected host or host:port (an IPv6 host in brackets), ${received(n.endpoint)}` });
      else {
        if (e.isHostname) {
          warnings.push({ path: `${p}.endpoint`, code: 'hostname-endpoint', message: `endpoint ${JSON.stringify(n.endpoint)} is a hostname: every node that dials it sets it only once its interface is up and the name resolves (DNS may need the overlay itself), and reaches this node only then; prefer an IP` });
          byName.push({ index: i, node: String(n.node), endpoint: n.endpoint });
        }
        const port = e.port ?? n.listenPort ?? input.listenPort;
        if (typeof port === 'number') dialled.push({ value: endpointKey(e, port), at: p });
        if (n.listenPort === undefined && input.listenPort === undefined) {
          problems.push({ path: `${p}.listenPort`, code: 'listen-port-required', message: `peers dial this node at ${n.endpoint}, so it needs a fixed listen port: set nodes[${i}].listenPort or the mesh's listenPort` });
        }
      }
    } else if (n.endpoint === undefined) {
      undialable.push(p);
    }
  });
  // Each is located at its node (`nodes[i]`): the problem's path adds the field.
  for (const d of findDuplicates(names, (v) => v)) problems.push({ path: `${d.again.at}.node`, code: 'duplicate-node', message: `node ${JSON.stringify(d.again.value)} is already ${d.first.at}` });
  for (const d of findDuplicates(keys, (v) => v)) problems.push({ path: `${d.again.at}.publicKey`, code: 'duplicate-key', message: `this public key is already the key of ${d.first.at} (keys are never shown): one key per node` });
  for (const d of findDuplicates(dialled, (v) => v)) {
    problems.push({ path: `${d.again.at}.endpoint`, code: 'duplicate-endpoint', message: `peers dial this node at the same address and port as ${d.first.at}: WireGuard sends both nodes' packets there and one host answers (a NAT forwards a port to one host), so every peer reaches only one of the two. Give each node its own port (a port forward per node and its listenPort), or leave this node's endpoint out so it dials the others (with keepalive)` });
  }
  for (const d of findDuplicates(addrs, (v) => v.key)) problems.push({ path: `${d.again.at}.address`, code: 'duplicate-address', message: `address ${JSON.stringify(d.again.value.text)} is already the address of ${d.first.at}: the two would overlap in every peer's allowedIPs` });
  // Several kubeadm controllers: the first runs kubeadm init, the others join its control plane at controlPlaneEndpoint.
  const controllerAddrs: KubeadmController[] = controllers.map((i) => {
    const c = network && isRecord(nodes[i]) && typeof (nodes[i] as Record<string, unknown>).address === 'string' ? parseCidr(meshNodeAddress(String((nodes[i] as Record<string, unknown>).address), network, String(input.network)).cidr) : undefined;
    return { at: `nodes[${i}]`, addresses: c ? [{ family: c.family, value: c.address }] : [] };
  });
  checkControlPlaneEndpoint({ distribution, controlPlaneEndpoint: input.controlPlaneEndpoint, controllers: controllerAddrs, networks: network ? [network] : [], controllersAt: 'them' }, problems, warnings);
  const topology = input.topology;
  if (isRecord(topology) && typeof topology.hub === 'string') {
    const hubIndex = nodes.findIndex((n) => isRecord(n) && n.node === topology.hub);
    if (hubIndex < 0) problems.push({ path: 'topology.hub', code: 'unknown-node', message: `expected the name of one of the nodes, ${received(topology.hub)}` });
    else if (!isRecord(nodes[hubIndex]) || (nodes[hubIndex] as Record<string, unknown>).endpoint === undefined) {
      problems.push({ path: `nodes[${hubIndex}].endpoint`, code: 'hub-endpoint', message: `the hub ${JSON.stringify(topology.hub)} needs an endpoint: every spoke dials it` });
    }
  } else {
    // In a full mesh, two nodes without an endpoint can never reach each other: report each against the first (O(n)).
    for (const p of undialable.slice(1)) {
      problems.push({ path: `${p}.endpoint`, code: 'unreachable-pair', message: `neither this node nor ${undialable[0]} has an endpoint: in a full mesh neither can dial the other; give one an endpoint or use topology { hub }` });
    }
  }
  dialsHostnameWarnings(nodes, byName, input.topology, typeof input.interfaceName === 'string' ? input.interfaceName : 'wg0', warnings);
  if (network && network.address !== network.start) {
    problems.push({ path: 'network', code: 'network', message: `expected a network address such as ${formatNetwork(network)}, ${received(input.network)}` });
  }
  return { problems: redactProblems(sortProblems(problems)), warnings: redactProblems(warnings), value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}

/**
 * One `dials-hostname` warning on every node that dials a peer by name (full mesh: every other node; hub: the hub
 * dials the spokes, the spokes dial the hub), naming at most three of them: O(n) warnings, each of bounded length.
 */
function dialsHostnameWarnings(nodes: unknown[], byName: { index: number; node: string; endpoint: string }[], topology: unknown, iface: string, warnings: Problem[]): void {
  if (byName.length === 0) return;
  const hub = isRecord(topology) && typeof topology.hub === 'string' ? topology.hub : undefined;
  const hubIndex = hub === undefined ? -1 : nodes.findIndex((n) => isRecord(n) && n.node === hub);
  if (hub !== undefined && hubIndex < 0) return;
  nodes.forEach((n, i) => {
    if (!isRecord(n)) return;
    let dialled: typeof byName;
    if (hubIndex < 0 || i === hubIndex) dialled = byName.filter((b) => b.index !== i);
    else dialled = byName.filter((b) => b.index === hubIndex);
    if (dialled.length === 0) return;
    const shown = dialled.slice(0, 3).map((b) => `${JSON.stringify(b.node)} at ${JSON.stringify(b.endpoint)}`).join(', ');
    const more = dialled.length > 3 ? ` and ${dialled.length - 3} more` : '';
    warnings.push({
      path: `nodes[${i}]`, code: 'dials-hostname',
      message: `this node dials ${dialled.length === 1 ? 'a peer' : `${dialled.length} peers`} by hostname (${shown}${more}): tunnelwright-${iface}-endpoints.service sets ${dialled.length === 1 ? 'its endpoint' : 'their endpoints'} once ${iface} is up and retries until each name resolves; until then ${dialled.length === 1 ? 'that link is' : 'those links are'} down, while ${iface}, its other peers and the distribution start without waiting`,
    });
  });
}

/** A mesh's interface MTU from its underlay's: the overhead is IPv6's when any node is dialled over IPv6 or by name. */
export function meshMtu(underlayMtu: number, nodes: readonly unknown[]): number {
  return derivedMtu(underlayMtu, nodes.map((n) => (isRecord(n) ? n.endpoint : undefined)));
}

function formatNetwork(c: ParsedCidr): string {
  return `${formatIp(c.family, c.start)}/${c.prefix}`;
}
