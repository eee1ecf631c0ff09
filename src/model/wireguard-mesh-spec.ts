import { Problem, throwIfProblems } from '../errors';
import type { SecretSource } from './common';
import { formatIp, parseCidr } from './net';
import { checkWireguardMesh, DEFAULT_KEEPALIVE, meshMtu, meshNodeAddress, WireguardMeshProps } from './wireguard-mesh';
import { formatEndpoint, OverlayNodeSpec, overlayNodeSpec, parseEndpoint, RenderPeer } from './wireguard-overlay-node';

/** One node of a mesh, parsed: its interface address, the port it listens on, where peers dial it, and its overlay spec. */
export interface MeshNodeSpec {
  readonly node: string;
  readonly publicKey: string;
  readonly privateKeyFrom: SecretSource;
  /** Its interface address with the network's prefix (`10.10.0.1/24`). */
  readonly cidr: string;
  /** Its own `listenPort`, else the mesh's. */
  readonly listenPort?: number;
  /** `host:port` peers dial (the port defaulted to `listenPort`); absent for a node behind NAT. */
  readonly endpoint?: string;
  /** The node as every peer sees it: its name as comment, its key, its host route, its endpoint. */
  readonly asPeer: RenderPeer;
  /** Controllers and a node's own facts (role, distribution, CNI, packages, kubeadm's init or join …): its spec but the interface the plan generates. */
  readonly overlay: Omit<OverlayNodeSpec, 'wireguard'>;
}

/**
 * WireguardMesh's props parsed once (`parseWireguardMesh`): every node's address, port and endpoint parsed, the hub
 * found, the MTU and keepalive defaulted, each node's overlay spec built. The plan takes only this and generates the peers.
 */
export interface WireguardMeshSpec {
  readonly cluster: string;
  readonly interfaceName: string;
  /** The overlay network's family and its address as `start/prefix` (a spoke's one route, through the hub). */
  readonly network: { readonly family: 4 | 6; readonly cidr: string };
  readonly persistentKeepalive: number;
  /** The hub's index in `nodes` (`topology: { hub }`), or undefined for a full mesh. */
  readonly hub?: number;
  /** `mtu`, else derived from `underlayMtu`, else unset (wg-quick's). */
  readonly mtu?: number;
  readonly ignitionVersion: '3.3.0' | '3.4.0' | '3.5.0';
  readonly nodes: readonly MeshNodeSpec[];
  /** The props' warnings. */
  readonly warnings: readonly Problem[];
}

/** The spec of props `checkWireguardMesh` accepted. */
function specOf(mesh: WireguardMeshProps, warnings: readonly Problem[]): WireguardMeshSpec {
  const network = parseCidr(mesh.network)!;
  const hostBits = network.family === 4 ? 32 : 128;
  const hub = typeof mesh.topology === 'object' ? mesh.topology.hub : undefined;
  // k0s with several controllers: without a stable API address each worker reaches only the controller that issued
  // its token (issue 46), so k0s's node-local load balancing, unless the user's k0sConfig gives api.externalAddress
  // or its own nodeLocalLoadBalancing.
  const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const userApi = isRecord(mesh.k0sConfig?.api) ? mesh.k0sConfig.api : {};
  const userNetwork = isRecord(mesh.k0sConfig?.network) ? mesh.k0sConfig.network : {};
  const k0sNodeLocalLoadBalancing = (mesh.distribution ?? 'k0s') === 'k0s' && mesh.nodes.filter((n) => n.role === 'controller' || n.role === 'controller+worker').length > 1
    && userApi.externalAddress === undefined && userNetwork.nodeLocalLoadBalancing === undefined;
  // kubeadm: the first controller runs kubeadm init, the others join its control plane.
  const firstController = mesh.nodes.find((n) => n.role === 'controller' || n.role === 'controller+worker');
  const nodes = mesh.nodes.map((n): MeshNodeSpec => {
    const cidr = meshNodeAddress(n.address, network, mesh.network).cidr!;
    const ip = parseCidr(cidr)!;
    const listenPort = n.listenPort ?? mesh.listenPort;
    const e = n.endpoint !== undefined ? parseEndpoint(n.endpoint, true)! : undefined;
    const endpoint = e ? formatEndpoint(e.host, e.port ?? listenPort!) : undefined;
    const base = { comment: n.node, publicKey: n.publicKey, allowedIPs: [`${formatIp(ip.family, ip.address)}/${hostBits}`] };
    const { wireguard: _none, ...overlay } = overlayNodeSpec({
      node: n.node, role: n.role, distribution: mesh.distribution, wireguard: [],
      controlPlaneEndpoint: mesh.controlPlaneEndpoint, kubeadmJoin: n !== firstController,
      kubernetesVersion: mesh.kubernetesVersion, installK0s: n.installK0s, installPackages: mesh.installPackages, cni: mesh.cni, k0sConfig: mesh.k0sConfig, clusterK0sConfig: true, podCidrs: mesh.podCidrs, k0sNodeLocalLoadBalancing,
    });
    return {
      node: n.node, publicKey: n.publicKey, privateKeyFrom: n.privateKeyFrom, cidr, listenPort,
      ...(endpoint ? { endpoint } : {}),
      asPeer: endpoint ? { ...base, endpoint } : base,
      overlay,
    };
  });
  const hubIndex = mesh.nodes.findIndex((n) => n.node === hub);
  const mtu = mesh.mtu ?? (mesh.underlayMtu !== undefined ? meshMtu(mesh.underlayMtu, mesh.nodes) : undefined);
  return {
    cluster: mesh.cluster ?? 'default',
    interfaceName: mesh.interfaceName ?? 'wg0',
    network: { family: network.family, cidr: `${formatIp(network.family, network.start)}/${network.prefix}` },
    persistentKeepalive: mesh.persistentKeepalive ?? DEFAULT_KEEPALIVE,
    // Node names are strings, so without a hub nothing is found.
    ...(hubIndex >= 0 ? { hub: hubIndex } : {}),
    ...(mtu !== undefined ? { mtu } : {}),
    ignitionVersion: mesh.ignitionVersion ?? '3.4.0',
    nodes,
    warnings,
  };
}

/** Parses WireguardMesh props over the overlay as a whole: the spec, or the problems (all at once); warnings either way. */
export function parseWireguardMesh(input: unknown): { problems: Problem[]; warnings: Problem[]; spec?: WireguardMeshSpec } {
  const checked = checkWireguardMesh(input);
  return { problems: checked.problems, warnings: checked.warnings, ...(checked.value ? { spec: specOf(checked.value, checked.warnings) } : {}) };
}

/** The spec of WireguardMesh props, or a ValidationError with all their problems. */
export function wireguardMeshSpec(input: unknown): WireguardMeshSpec {
  const parsed = parseWireguardMesh(input);
  throwIfProblems(parsed.problems, 'WireguardMesh props');
  return parsed.spec!;
}
