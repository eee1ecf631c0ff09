import { Problem, throwIfProblems } from '../errors';
import { userDataSizeWarnings } from '../host/artefacts';
import type { WireguardMeshProps } from '../model/wireguard-mesh';
import { formatIp, parseCidr } from '../model/net';
import { HostPlan, Plan } from '../types';
import { PeerSection, RenderInterface, RenderPeer, renderOverlayHost } from './wireguard-overlay-node';
import * as meshModel from '../model/wireguard-mesh';
import * as overlayNodeModel from '../model/wireguard-overlay-node';

/** Returns the problems of WireguardMesh props without throwing. */
export function validateWireguardMesh(props: unknown): Problem[] {
  return meshModel.checkWireguardMesh(props).problems;
}

/** One node's part of a mesh plan. */
export interface MeshNodePlan {
  readonly node: string;
  readonly host: HostPlan;
  /** The interface generated for the node (peers included). */
  readonly wireguard: RenderInterface;
  readonly values: Record<string, unknown>;
}

/** A mesh plan: the usual Plan (one HostPlan per node, in `nodes` order) and each node's part by name. */
export interface MeshPlan extends Plan {
  readonly nodes: Record<string, MeshNodePlan>;
}

/** Generates every node's interface and peers (full mesh or hub-and-spoke) and plans each node's host files. */
export function planWireguardMesh(props: WireguardMeshProps): MeshPlan {
  const checked = meshModel.checkWireguardMesh(props);
  throwIfProblems(checked.problems, 'WireguardMesh props');
  const mesh = checked.value!;
  const network = parseCidr(mesh.network)!;
  const hostBits = network.family === 4 ? 32 : 128;
  const keepalive = mesh.persistentKeepalive ?? meshModel.DEFAULT_KEEPALIVE;
  const name = mesh.interfaceName ?? 'wg0';
  const hub = typeof mesh.topology === 'object' ? mesh.topology.hub : undefined;
  const mtu = mesh.underlayMtu !== undefined ? meshModel.meshMtu(mesh.underlayMtu, mesh.nodes) : undefined;

  // Each node as others see it: computed once, so a full mesh of n nodes costs O(n) here and O(n²) only in output.
  const seen = mesh.nodes.map((n) => {
    const cidr = meshModel.meshNodeAddress(n.address, network, mesh.network).cidr!;
    const ip = parseCidr(cidr)!;
    const listenPort = n.listenPort ?? mesh.listenPort;
    const e = n.endpoint !== undefined ? overlayNodeModel.parseEndpoint(n.endpoint, true)! : undefined;
    const endpoint = e ? overlayNodeModel.formatEndpoint(e.host, e.port ?? listenPort!) : undefined;
    const base = { comment: n.node, publicKey: n.publicKey, allowedIPs: [`${formatIp(ip.family, ip.address)}/${hostBits}`] };
    const withEndpoint: RenderPeer = endpoint ? { ...base, endpoint } : base;
    return { node: n, cidr, listenPort, endpoint, asPeer: withEndpoint, asPeerKeepalive: { ...withEndpoint, persistentKeepalive: keepalive } as RenderPeer };
  });
  const peerFor = (self: (typeof seen)[number], other: (typeof seen)[number]): RenderPeer =>
    self.endpoint === undefined || other.endpoint === undefined ? other.asPeerKeepalive : other.asPeer;

  // k0s with several controllers: without a stable API address each worker reaches only the controller that issued
  // its token (issue 46), so k0s's node-local load balancing, unless the user's k0sConfig gives api.externalAddress
  // or its own nodeLocalLoadBalancing.
  const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const userApi = isRecord(mesh.k0sConfig?.api) ? mesh.k0sConfig.api : {};
  const userNetwork = isRecord(mesh.k0sConfig?.network) ? mesh.k0sConfig.network : {};
  const k0sNodeLocalLoadBalancing = (mesh.distribution ?? 'k0s') === 'k0s' && mesh.nodes.filter((n) => n.role === 'controller' || n.role === 'controller+worker').length > 1
    && userApi.externalAddress === undefined && userNetwork.nodeLocalLoadBalancing === undefined;
  const peerText = new WeakMap<RenderPeer, PeerSection>();
  const nodes: Record<string, MeshNodePlan> = {};
  const warnings: Problem[] = [...checked.warnings];
  const hosts: HostPlan[] = [];
  // Node names are strings, so without a hub nothing is found.
  const hubEntry = seen.find((s) => s.node.node === hub);
  // kubeadm: the first controller runs kubeadm init, the others join its control plane.
  const firstController = seen.find((s) => s.node.role === 'controller' || s.node.role === 'controller+worker');
  for (const [index, self] of seen.entries()) {
    let peers: RenderPeer[];
    let postUp: string[] | undefined;
    if (!hubEntry) {
      peers = [];
      for (const other of seen) if (other !== self) peers.push(peerFor(self, other));
    } else if (self === hubEntry) {
      peers = seen.filter((s) => s !== self).map((other) => peerFor(self, other));
      postUp = [network.family === 4 ? 'sysctl -q -w net.ipv4.ip_forward=1' : 'sysctl -q -w net.ipv6.conf.all.forwarding=1'];
    } else {
      // A spoke reaches every other node through the hub.
      const viaHub = peerFor(self, hubEntry);
      peers = [{ ...viaHub, allowedIPs: [`${formatIp(network.family, network.start)}/${network.prefix}`] }];
    }
    const wireguard: RenderInterface = {
      name,
      address: self.cidr,
      listenPort: self.listenPort,
      nodeAddress: true,
      mtu: mesh.mtu ?? mtu,
      privateKeyFrom: self.node.privateKeyFrom,
      publicKey: self.node.publicKey,
      peers,
      ...(postUp ? { postUp } : {}),
    };
    const { host, values } = renderOverlayHost(overlayNodeModel.overlayNodeSpec({
      node: self.node.node, role: self.node.role, distribution: mesh.distribution, wireguard: [wireguard],
      controlPlaneEndpoint: mesh.controlPlaneEndpoint, kubeadmJoin: self !== firstController,
      kubernetesVersion: mesh.kubernetesVersion, installK0s: self.node.installK0s, installPackages: mesh.installPackages, cni: mesh.cni, k0sConfig: mesh.k0sConfig, clusterK0sConfig: true, podCidrs: mesh.podCidrs, k0sNodeLocalLoadBalancing,
    }), peerText);
    nodes[self.node.node] = { node: self.node.node, host, wireguard, values };
    hosts.push(host);
    warnings.push(...userDataSizeWarnings(host, `nodes[${index}]`));
  }
  return { objects: [], hosts, values: {}, warnings, nodes };
}


