import * as z from '../zod';
import { checkKubeRouterPodCidr, checkKubeRouterSnatPackages, checkOverlayCni, checkPodCidrs, k0sConfigSchema, OverlayCni, overlayCniSchema } from './cni';
import { Problem } from '../errors';
import { isWireguardKey, publicKeyFromPrivate } from '../keys';
import {
  asArray, Cidr, cidrSchema, clusterSchema, intInRange, isRecord, networkCidrSchema, parseWith, redactProblems, portSchema, received, SecretSource, secretSourceSchema, sortProblems,
} from './common';
import { KEY_FIELD_MESSAGE } from './common';
import { DNS_SUBDOMAIN, isDnsSubdomain } from './labels';
import {
  cidrContainsIp, findDuplicates, findOverlaps, formatIp, hasHostBits, isNonCanonicalIpv4, Located, parseCidr, ParsedCidr, parseIp,
} from './net';

/** Kubernetes distributions whose units and node-IP settings tunnelwright knows. */
export type Distribution = 'k0s' | 'k3s' | 'kubeadm';
/** A node's role in the cluster. */
export type NodeRole = 'controller' | 'worker' | 'controller+worker';

/** A WireGuard peer, as in a `[Peer]` section of wg-quick's config. */
export interface WireguardPeer {
  /** The peer's public key (base64 of 32 bytes). */
  readonly publicKey: string;
  /** `host:port` the interface dials; an IP is preferred (a hostname may need the overlay to resolve). @default - the peer dials us */
  readonly endpoint?: string;
  /** Addresses routed to this peer; must not overlap another peer's on the same interface. */
  readonly allowedIPs: Cidr[];
  /** Seconds between keepalive packets, 1–65535 (for peers behind NAT). @default - none */
  readonly persistentKeepalive?: number;
  /** An inline preshared key: for labs only (a warning); prefer `presharedKeyFrom`. */
  readonly presharedKey?: string;
  /** Where the host reads the preshared key at boot. */
  readonly presharedKeyFrom?: SecretSource;
}

/** One WireGuard interface of a node, rendered to `/etc/wireguard/<name>.conf` and `wg-quick@<name>.service`. */
export interface WireguardInterface {
  /** Interface name: `^[a-z0-9][-a-z0-9]*$`, at most 15 characters, unique on the node. */
  readonly name: string;
  /**
   * The interface address with its prefix, e.g. `10.10.0.1/24` (a host address, not a network); for a dual-stack
   * overlay a list of one IPv4 and one IPv6 address, e.g. `['10.10.0.1/24', 'fd10::1/64']`.
   */
  readonly address: Cidr | Cidr[];
  /** UDP port to listen on; required when any peer dials this node. @default - a random port (the node only dials) */
  readonly listenPort?: number;
  /** Register this interface's address as the Kubernetes node IP (at most one interface per node). @default false */
  readonly nodeAddress?: boolean;
  /** Interface MTU, 576–65535 (at least 1280 with an IPv6 address). @default - derived from `underlayMtu`; without it, wg-quick's (the route's MTU − 80) */
  readonly mtu?: number;
  /**
   * MTU of the network the tunnel packets cross (1500 Ethernet, 1450 many private clouds, 1460 GCP, 1492 PPPoE): the
   * interface MTU becomes this minus WireGuard's overhead, 60 over IPv4 and 80 when any peer is dialled over IPv6 or
   * by hostname. Ignored when `mtu` is set. @default - not known
   */
  readonly underlayMtu?: number;
  /** An inline private key: for labs only (a warning); exactly one of `privateKey` / `privateKeyFrom`. */
  readonly privateKey?: string;
  /** Where the host reads its private key at boot; exactly one of `privateKey` / `privateKeyFrom`. */
  readonly privateKeyFrom?: SecretSource;
  /**
   * This interface's own public key (of the key at `privateKeyFrom`), recorded as a comment in its config: when you
   * rotate the key, the node's own config changes with it, so a deploy that copies and reloads the nodes whose files
   * changed reloads this one too (the reload resolves the new key from its source). A WireguardMesh records each
   * node's. @default - not recorded: a rotated key changes only the peers' configs
   */
  readonly publicKey?: string;
  readonly peers: WireguardPeer[];
}

export interface WireguardOverlayNodeProps {
  /** The cluster this node belongs to. @default 'default' */
  readonly cluster?: string;
  /** The node's hostname: a Kubernetes node name (a DNS subdomain, at most 253 characters). */
  readonly node: string;
  /** @default 'worker' */
  readonly role?: NodeRole;
  /** @default 'k0s' */
  readonly distribution?: Distribution;
  /** The Kubernetes API endpoint the node joins (`10.10.0.1:6443` or `https://10.10.0.1:6443`), to check it crosses the overlay. @default - not checked */
  readonly clusterEndpoint?: string;
  /** Ignition spec version of `ignition`. @default '3.4.0' */
  readonly ignitionVersion?: '3.3.0' | '3.4.0' | '3.5.0';
  /**
   * Kubernetes minor version (`'1.31'` or `'v1.31.2'`): kubeadm reads `kubeadm.k8s.io/v1beta4` from 1.31 and
   * `v1beta3` (removed in 1.37) before it. @default '1.31' (v1beta4)
   */
  readonly kubernetesVersion?: string;
  /**
   * k0s only: install k0s at first boot, after the overlay is up, with the kubelet's `--node-ip` on the overlay
   * (k0s takes it only at `k0s install`). Without it the library cannot set the node IP of a k0s worker and warns.
   * @default - k0s is installed by you (k0sctl: `installFlags` from `plan.values.k0s.installFlags`)
   */
  readonly installK0s?: K0sInstall;
  /**
   * Install `wireguard-tools` from the distribution's packages (cloud-init `packages`), and `nftables` on a node whose
   * pods kube-router carries (wg-quick's PreUp runs `nft` to load the SNAT table into kube-router's tunnels); off for
   * images that ship them (a warning names nftables then: without `nft` the interface does not come up). Ignition
   * hosts install no packages either way: their image must ship both.
   * @default true
   */
  readonly installPackages?: boolean;
  /**
   * The cluster's CNI, configured so pod traffic between nodes rides the overlay interface (the one with
   * `nodeAddress`): k0s `kube-router` (IPIP between node addresses, `overlay-type: full`) or `calico` (VXLAN on the
   * overlay interface) in k0s.yaml's `spec.network`; k3s `flannel` (`flannel-iface`); any other pair gets its
   * settings in `plan.values.cni` with a warning; k0s with `flannel` is refused.
   * @default - k0s: 'kube-router', k3s: 'flannel', kubeadm: 'other' (settings to hand over, with a warning)
   */
  readonly cni?: OverlayCni;
  /**
   * k0s only: your own k0s.yaml `spec` (a controller's `/etc/k0s/k0s.yaml`), merged under the library's: your keys are
   * kept (`api.externalAddress`, `network.podCIDR`, …), `api.sans` is the union of yours and the overlay's, and the
   * keys the library sets from the overlay (`K0S_OWNED_KEYS`: `api.address`, `storage.etcd.peerAddress`, the CNI's
   * overlay settings) are refused here. A worker writes no k0s.yaml, but on kube-router it reads two things from it:
   * its SNAT table follows kube-proxy's `network.kubeProxy.iptables.masqueradeBit`, and its fail-closed unit covers
   * `network.podCIDR` (and `network.dualStack.IPv6podCIDR`) with an unreachable route. Give a worker the
   * controller's k0sConfig, with its podCIDR even when that is k0s's default 10.244.0.0/16: without it the worker
   * fails closed for the overlay network only, and is warned. @default - none
   */
  readonly k0sConfig?: Record<string, unknown>;
  /**
   * kubeadm only: the cluster's pod CIDRs, one per family of the node address (`['10.244.0.0/16']`, dual-stack
   * `['10.244.0.0/16', 'fd00:10:244::/56']`), written as a controller's ClusterConfiguration `networking.podSubnet`
   * and handed to the CNI's install in `values.cni` (flannel's net-conf.json). Required on a controller with cni
   * `flannel` or `kube-router`: they take each node's pod CIDR, which kubeadm allocates only from a podSubnet.
   * An IPv4 CIDR from /8 to /24, an IPv6 one from /48 to /64 (kubeadm gives each node a /24 or a /64).
   * @default - none (kubeadm allocates no pod CIDRs)
   */
  readonly podCidrs?: Cidr[];
  readonly wireguard: WireguardInterface[];
}

/** How the library installs k0s at first boot. */
export interface K0sInstall {
  /** The join token (workers, and controllers joining an existing cluster); the first controller has none. @default - no token */
  readonly tokenFrom?: SecretSource;
  /** Where the k0s binary is (get.k0s.sh installs it there). @default '/usr/local/bin/k0s' */
  readonly binary?: string;
}

/** WireGuard's overhead on an IPv4 underlay (20 IP + 8 UDP + 32 WireGuard) and an IPv6 one (40 IP + 8 + 32). */
export const WIREGUARD_OVERHEAD = { 4: 60, 6: 80 } as const;
export const DEFAULT_K0S_BINARY = '/usr/local/bin/k0s';
export const DEFAULT_KUBERNETES_VERSION = '1.31';
const KUBERNETES_VERSION = /^v?1\.(\d{1,3})(?:\.\d{1,3})?$/;

/** The minor version of a Kubernetes version text, or undefined when it is not one. */
export function kubernetesMinor(text: string): number | undefined {
  const m = KUBERNETES_VERSION.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** An interface's addresses as a list (the prop takes one or a list). */
export function interfaceAddresses(address: string | readonly string[]): string[] {
  return typeof address === 'string' ? [address] : [...address];
}
export const INTERFACE_NAME = /^[a-z0-9][-a-z0-9]*$/;

/**
 * A Kubernetes node name: a DNS-1123 subdomain of at most 253 characters, as the API server takes it. It is also a
 * folder the App writes (`hosts/<node>/`): without the limit a long name validates and the synth fails on disk.
 * @internal
 */
export const nodeNameSchema = z.string()
  .check(z.regex(DNS_SUBDOMAIN, { message: 'expected a hostname (lowercase letters, digits, "-" and ".")' }))
  .check(z.maxLength(253, { message: 'expected a node name of at most 253 characters (a DNS subdomain, as Kubernetes takes it)' }));

const keyString = z.string();

/** @internal */
export const k0sInstallSchema = z.strictObject({
  tokenFrom: z.optional(secretSourceSchema),
  binary: z.optional(z.string().check(z.regex(/^\/[-_./a-zA-Z0-9]+$/, { message: 'expected an absolute path' }))),
});

const peerSchema = z.strictObject({
  publicKey: keyString,
  endpoint: z.optional(z.string()),
  allowedIPs: z.array(cidrSchema),
  persistentKeepalive: z.optional(intInRange(1, 65535, 'a keepalive interval in seconds')),
  presharedKey: z.optional(keyString),
  presharedKeyFrom: z.optional(secretSourceSchema),
});

const interfaceSchema = z.strictObject({
  name: z.string(),
  address: z.union([z.string(), z.array(z.string())], { error: 'expected an address with its prefix such as 10.10.0.1/24, or a list of them' }),
  listenPort: z.optional(portSchema),
  nodeAddress: z.optional(z.boolean()),
  mtu: z.optional(z.number()),
  underlayMtu: z.optional(intInRange(1280, 65535, 'an underlay MTU')),
  privateKey: z.optional(keyString),
  privateKeyFrom: z.optional(secretSourceSchema),
  publicKey: z.optional(keyString),
  peers: z.array(peerSchema),
});

/** @internal */
export const wireguardOverlayNodeSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  node: nodeNameSchema,
  role: z.optional(z.enum(['controller', 'worker', 'controller+worker'])),
  distribution: z.optional(z.enum(['k0s', 'k3s', 'kubeadm'])),
  clusterEndpoint: z.optional(z.string()),
  ignitionVersion: z.optional(z.enum(['3.3.0', '3.4.0', '3.5.0'])),
  kubernetesVersion: z.optional(z.string()),
  installK0s: z.optional(k0sInstallSchema),
  installPackages: z.optional(z.boolean()),
  cni: z.optional(overlayCniSchema),
  k0sConfig: z.optional(k0sConfigSchema),
  podCidrs: z.optional(z.array(networkCidrSchema)),
  wireguard: z.array(interfaceSchema),
});

/** An endpoint `host:port`: IPv4, `[IPv6]` or a hostname. */
export interface ParsedEndpoint {
  readonly host: string;
  readonly port?: number;
  readonly isHostname: boolean;
}

/** Parses `host:port` (or `host` when `portOptional`). */
export function parseEndpoint(text: string, portOptional = false): ParsedEndpoint | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) return undefined;
  const host = m[1] ?? m[2];
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port === undefined && !portOptional) return undefined;
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  if (m[1] !== undefined) return parseIp(host)?.family === 6 ? { host, port, isHostname: false } : undefined;
  if (parseIp(host)) return { host, port, isHostname: false };
  // Dotted digits that are not an address (`1.2.3.4.5`, `256.1.1.1`) are no hostname either: a top-level label is never all digits.
  if (/^[\d.]+$/.test(host) || isNonCanonicalIpv4(host)) return undefined;
  return isDnsSubdomain(host) ? { host, port, isHostname: true } : undefined;
}

/**
 * What two endpoints share when they reach one socket: the address (an IP in canonical form, a hostname in lower case
 * without a final dot) and the port. WireGuard sends to one address and port, where one host answers: two peers
 * dialled there (two nodes behind one NAT with one forwarded port) are one of them, and the other is never reached.
 */
export function endpointKey(e: ParsedEndpoint, port: number): string {
  const ip = parseIp(e.host);
  return `${ip ? `${ip.family}/${ip.value}` : e.host.toLowerCase().replace(/\.$/, '')}|${port}`;
}

/** `host:port` with IPv6 hosts in brackets. */
export function formatEndpoint(host: string, port: number): string {
  return parseIp(host)?.family === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The API endpoint's host, from `host:port` or `https://host:port`. */
export function clusterEndpointHost(text: string): string | undefined {
  const stripped = text.replace(/^https:\/\//, '').replace(/\/$/, '');
  return parseEndpoint(stripped, true)?.host;
}

/** Checks that only look at one interface address. */
export function checkInterfaceAddress(address: unknown, path: string, problems: Problem[]): ParsedCidr | undefined {
  if (typeof address !== 'string') return undefined;
  const c = parseCidr(address);
  if (!c) {
    const bare = parseIp(address);
    problems.push({ path, code: 'cidr', message: bare ? `expected an interface address with its prefix such as ${address}/24, received a bare IP ${JSON.stringify(address)}` : `expected an interface address such as 10.10.0.1/24, ${received(address)}` });
    return undefined;
  }
  const bits = c.family === 4 ? 32 : 128;
  if (c.prefix < bits - 1 && (!hasHostBits(c) || (c.family === 4 && c.address === c.end))) {
    problems.push({ path, code: 'host-address', message: `expected a host address inside the network, ${received(address)}, which is the network${c.address === c.end ? "'s broadcast" : ''} address` });
    return undefined;
  }
  return c;
}

/** The interface's addresses: one, or a list of one IPv4 and/or one IPv6 address, each checked alone. */
export function checkInterfaceAddresses(address: unknown, path: string, problems: Problem[]): ParsedCidr[] {
  if (typeof address === 'string') {
    const c = checkInterfaceAddress(address, path, problems);
    return c ? [c] : [];
  }
  if (!Array.isArray(address)) return [];
  if (address.length === 0 || address.length > 2) {
    problems.push({ path, code: 'addresses', message: `expected one IPv4 and/or one IPv6 interface address, received a list of ${address.length}` });
  }
  const out: ParsedCidr[] = [];
  address.forEach((a, k) => {
    const c = checkInterfaceAddress(a, `${path}[${k}]`, problems);
    if (!c) return;
    if (out.some((o) => o.family === c.family)) {
      problems.push({ path: `${path}[${k}]`, code: 'addresses', message: `expected at most one IPv${c.family} address per interface (a dual-stack interface has one of each), ${received(a)}` });
    } else out.push(c);
  });
  return out;
}

/**
 * The interface MTU derived from the underlay's: minus 80 when any peer is dialled over IPv6 or by hostname (which
 * may resolve to IPv6), else minus 60.
 */
export function derivedMtu(underlayMtu: number, endpoints: readonly unknown[]): number {
  const v6 = endpoints.some((e) => {
    if (typeof e !== 'string') return false;
    const parsed = parseEndpoint(e, true);
    return parsed !== undefined && (parsed.isHostname || parseIp(parsed.host)?.family === 6);
  });
  return underlayMtu - WIREGUARD_OVERHEAD[v6 ? 6 : 4];
}

function keyProblem(path: string, what: string): Problem {
  return { path, code: 'key', message: `expected a WireGuard ${what}: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: it is secret)` };
}

/** Semantic checks of one node's props: everything the schema cannot see. Tolerates malformed parts (the schema reports them). */
function checkNode(input: Record<string, unknown>, problems: Problem[], warnings: Problem[]): void {
  const ifaces = asArray(input.wireguard);
  const names: Located<string>[] = [];
  const nodeAddressAt: string[] = [];
  let ipv6NodeAt: string | undefined;
  /** The families of the node-address interface's addresses (the node IPs the kubelet registers). */
  const nodeFamilies = new Set<4 | 6>();
  /** The node-address interface's `mtu`, when neither it nor `underlayMtu` is set (the CNI's MTU is then unknown). */
  let nodeMtuAt: string | undefined;
  const networks: ParsedCidr[] = [];
  ifaces.forEach((raw, i) => {
    if (!isRecord(raw)) return;
    const p = `wireguard[${i}]`;
    if (typeof raw.name === 'string') {
      if (!INTERFACE_NAME.test(raw.name) || raw.name.length > 15) {
        problems.push({ path: `${p}.name`, code: 'interface-name', message: `expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, ${received(raw.name)}` });
      } else names.push({ value: raw.name, at: `${p}.name` });
    }
    const addrs = checkInterfaceAddresses(raw.address, `${p}.address`, problems);
    networks.push(...addrs);
    const hasV6 = addrs.some((a) => a.family === 6);
    if (typeof raw.mtu === 'number') {
      if (!Number.isInteger(raw.mtu) || raw.mtu < 576 || raw.mtu > 65535) {
        problems.push({ path: `${p}.mtu`, code: 'range', message: `expected an MTU: an integer from 576 to 65535, ${received(raw.mtu)}` });
      } else if (hasV6 && raw.mtu < 1280) {
        problems.push({ path: `${p}.mtu`, code: 'mtu-ipv6', message: `expected an MTU of at least 1280 on an interface with an IPv6 address, ${received(raw.mtu)}` });
      }
    } else if (typeof raw.underlayMtu === 'number' && Number.isInteger(raw.underlayMtu)) {
      const mtu = derivedMtu(raw.underlayMtu, asArray(raw.peers).map((peer) => (isRecord(peer) ? peer.endpoint : undefined)));
      if (hasV6 && mtu < 1280) {
        problems.push({ path: `${p}.underlayMtu`, code: 'mtu-ipv6', message: `the interface MTU derived from underlayMtu ${raw.underlayMtu} is ${mtu}, below the 1280 an IPv6 address needs; expected an underlay MTU of at least ${raw.underlayMtu + 1280 - mtu}` });
      }
    }
    const hasKey = raw.privateKey !== undefined;
    const hasFrom = raw.privateKeyFrom !== undefined;
    if (hasKey === hasFrom) {
      problems.push({ path: p, code: 'private-key', message: `expected exactly one of privateKey or privateKeyFrom, received ${hasKey ? 'both' : 'neither'}` });
    }
    if (typeof raw.publicKey === 'string') {
      if (!isWireguardKey(raw.publicKey)) problems.push({ path: `${p}.publicKey`, code: 'key', message: KEY_FIELD_MESSAGE });
      else if (typeof raw.privateKey === 'string' && isWireguardKey(raw.privateKey) && publicKeyFromPrivate(raw.privateKey) !== raw.publicKey) {
        problems.push({ path: `${p}.publicKey`, code: 'key-pair', message: 'this public key is not the one of privateKey (keys are never shown): set the public key of this interface\'s private key (publicKeyFromPrivate), or leave publicKey out' });
      }
    }
    if (typeof raw.privateKey === 'string') {
      if (!isWireguardKey(raw.privateKey)) problems.push(keyProblem(`${p}.privateKey`, 'private key'));
      else warnings.push({ path: `${p}.privateKey`, code: 'inline-secret', message: 'an inline private key ends up in the host artefacts (0600, secret outputs); use privateKeyFrom outside labs' });
    }
    if (raw.nodeAddress === true) {
      nodeAddressAt.push(`${p}.nodeAddress`);
      if (hasV6 && ipv6NodeAt === undefined) ipv6NodeAt = `${p}.address`;
      if (nodeAddressAt.length === 1) for (const a of addrs) nodeFamilies.add(a.family);
      if (nodeMtuAt === undefined && raw.mtu === undefined && raw.underlayMtu === undefined) nodeMtuAt = `${p}.mtu`;
    }
    checkPeers(raw, p, problems, warnings);
  });
  for (const d of findDuplicates(names, (v) => v)) {
    problems.push({ path: d.again.at, code: 'duplicate', message: `interface name ${JSON.stringify(d.again.value)} is already used by ${d.first.at.replace(/\.name$/, '')}` });
  }
  for (const at of nodeAddressAt.slice(1)) {
    problems.push({ path: at, code: 'node-address', message: `at most one interface per node registers the node address; ${nodeAddressAt[0].replace(/\.nodeAddress$/, '')} already does` });
  }
  if (nodeAddressAt.length === 0 && typeof input.clusterEndpoint === 'string') {
    const host = clusterEndpointHost(input.clusterEndpoint);
    const ip = host ? parseIp(host) : undefined;
    if (ip && networks.some((n) => cidrContainsIp(n, ip))) {
      warnings.push({ path: 'wireguard', code: 'no-node-address', message: `the node joins the cluster over the overlay (${input.clusterEndpoint}) but no interface sets nodeAddress: the kubelet will register another interface's address` });
    }
  }
  const distribution = input.distribution ?? 'k0s';
  if (typeof input.kubernetesVersion === 'string') {
    const minor = kubernetesMinor(input.kubernetesVersion);
    if (minor === undefined || minor < 28) {
      problems.push({ path: 'kubernetesVersion', code: 'kubernetes-version', message: `expected a Kubernetes version from 1.28 such as '1.31' or 'v1.31.2', ${received(input.kubernetesVersion)}` });
    }
  }
  if (input.installK0s !== undefined && distribution !== 'k0s') {
    problems.push({ path: 'installK0s', code: 'distribution', message: `installK0s installs k0s; this node's distribution is ${JSON.stringify(distribution)}` });
  }
  // A node of no role is a worker: only a controller runs no kubelet.
  const runsKubelet = input.role !== 'controller';
  if (distribution === 'k0s' && runsKubelet && nodeAddressAt.length > 0 && input.installK0s === undefined) {
    warnings.push({ path: nodeAddressAt[0], code: 'k0s-node-ip', message: 'k0s takes the kubelet\'s node IP only at `k0s install`: nothing on this host can set it, so the node registers its first interface\'s address unless you pass plan.values.k0s.installFlags to k0s install (k0sctl: the host\'s installFlags), or set installK0s' });
  }
  if (typeof distribution === 'string') checkOverlayCni(input, distribution, problems, warnings, 'plan', nodeAddressAt.length > 0, nodeAddressAt.length === 1 ? nodeMtuAt : undefined, ipv6NodeAt);
  if (typeof distribution === 'string') checkKubeRouterSnatPackages(input, distribution, nodeAddressAt.length > 0 && !(distribution === 'k0s' && input.role === 'controller'), warnings);
  if (typeof distribution === 'string') checkKubeRouterPodCidr(input, distribution, nodeAddressAt.length > 0, warnings);
  if (typeof distribution === 'string') checkPodCidrs(input, distribution, nodeFamilies, nodeAddressAt.length > 0 && !(distribution === 'k0s' && input.role === 'controller'), input.role !== undefined && input.role !== 'worker', problems, ipv6NodeAt ?? 'wireguard');
  if (typeof input.clusterEndpoint === 'string' && !clusterEndpointHost(input.clusterEndpoint)) {
    problems.push({ path: 'clusterEndpoint', code: 'endpoint', message: `expected host:port or https://host:port, ${received(input.clusterEndpoint)}` });
  }
}

function checkPeers(raw: Record<string, unknown>, p: string, problems: Problem[], warnings: Problem[]): void {
  const keys: Located<string>[] = [];
  const allowed: Located<ParsedCidr>[] = [];
  const peerOf = new Map<string, number>();
  const dialled: Located<string>[] = [];
  asArray(raw.peers).forEach((peer, j) => {
    if (!isRecord(peer)) return;
    const pp = `${p}.peers[${j}]`;
    if (typeof peer.publicKey === 'string') {
      if (!isWireguardKey(peer.publicKey)) problems.push({ path: `${pp}.publicKey`, code: 'key', message: KEY_FIELD_MESSAGE });
      else keys.push({ value: peer.publicKey, at: `${pp}.publicKey` });
    }
    if (typeof peer.endpoint === 'string') {
      const e = parseEndpoint(peer.endpoint);
      if (!e) problems.push({ path: `${pp}.endpoint`, code: 'endpoint', message: `expected host:port (an IPv6 host in brackets), ${received(peer.endpoint)}` });
      if (e) dialled.push({ value: endpointKey(e, e.port!), at: `${pp}.endpoint` });
      if (e?.isHostname) warnings.push({ path: `${pp}.endpoint`, code: 'hostname-endpoint', message: `endpoint ${JSON.stringify(peer.endpoint)} is a hostname: tunnelwright-${typeof raw.name === 'string' ? raw.name : 'wg0'}-endpoints.service sets it once the interface is up and retries until the name resolves (DNS may need the overlay itself); until then this peer is unreachable, while the interface, its other peers and the distribution start without waiting; prefer an IP` });
    }
    if (Array.isArray(peer.allowedIPs)) {
      if (peer.allowedIPs.length === 0) problems.push({ path: `${pp}.allowedIPs`, code: 'required', message: 'expected at least one CIDR: a peer without allowedIPs receives nothing' });
      peer.allowedIPs.forEach((c, k) => {
        const parsed = parseCidr(c);
        if (parsed) {
          const at = `${pp}.allowedIPs[${k}]`;
          allowed.push({ value: parsed, at });
          peerOf.set(at, j);
        }
      });
    }
    if (peer.presharedKey !== undefined && peer.presharedKeyFrom !== undefined) {
      problems.push({ path: pp, code: 'preshared-key', message: 'expected at most one of presharedKey or presharedKeyFrom, received both' });
    }
    if (typeof peer.presharedKey === 'string') {
      if (!isWireguardKey(peer.presharedKey)) problems.push(keyProblem(`${pp}.presharedKey`, 'preshared key'));
      else warnings.push({ path: `${pp}.presharedKey`, code: 'inline-secret', message: 'an inline preshared key ends up in the host artefacts (0600, secret outputs); use presharedKeyFrom outside labs' });
    }
  });
  for (const d of findDuplicates(keys, (v) => v)) {
    problems.push({ path: d.again.at, code: 'duplicate-key', message: `this public key is already the key of ${d.first.at.replace(/\.publicKey$/, '')} (keys are never shown): one peer per key` });
  }
  for (const d of findDuplicates(dialled, (v) => v)) {
    problems.push({ path: d.again.at, code: 'duplicate-endpoint', message: `this peer is dialled at the same address and port as ${d.first.at.replace(/\.endpoint$/, '')}: WireGuard sends each peer's packets there and one host answers, so one of the two peers is never reached (a NAT forwards a port to one host). Give each peer its own port (a port forward and listenPort per node), or leave this endpoint out so the peer dials this node (with persistentKeepalive)` });
  }
  for (const o of findOverlaps(allowed)) {
    if (peerOf.get(o.a.at) === peerOf.get(o.b.at)) continue;
    problems.push({ path: o.b.at, code: 'overlap', message: `allowed IP ${cidrText(o.b.value)} overlaps ${cidrText(o.a.value)} of ${o.a.at}: WireGuard gives an address to one peer only, the other silently loses it` });
  }
}

function cidrText(c: ParsedCidr): string {
  // Report the CIDR in network form (what WireGuard keeps).
  return `${formatAddr(c)}/${c.prefix}`;
}

function formatAddr(c: ParsedCidr): string {
  return formatIp(c.family, c.address);
}

/** Validates WireguardOverlayNode props: all problems at once, and the warnings. */
export function checkWireguardOverlayNode(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: WireguardOverlayNodeProps } {
  const parsed = parseWith<WireguardOverlayNodeProps>(wireguardOverlayNodeSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  const warnings: Problem[] = [];
  if (isRecord(input)) checkNode(input, problems, warnings);
  return { problems: redactProblems(sortProblems(problems)), warnings: redactProblems(warnings), value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}

