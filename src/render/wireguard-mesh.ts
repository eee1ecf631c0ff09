import { Problem } from '../errors';
import { userDataSizeWarnings } from '../host/artefacts';
import type { WireguardMeshProps } from '../model/wireguard-mesh';
import { wireguardMeshSpec, WireguardMeshSpec } from '../model/wireguard-mesh-spec';
import { HostPlan, Plan } from '../types';
import { PeerSection, RenderInterface, RenderPeer, renderOverlayHost } from './wireguard-overlay-node';
import * as meshModel from '../model/wireguard-mesh';

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

/** Generates every node's interface and peers from WireguardMesh props (`renderWireguardMesh` of their spec). */
export function planWireguardMesh(props: WireguardMeshProps): MeshPlan {
  return renderWireguardMesh(wireguardMeshSpec(props));
}

/** Generates every node's interface and peers (full mesh or hub-and-spoke) from the mesh's spec and plans each node's host files. */
export function renderWireguardMesh(mesh: WireguardMeshSpec): MeshPlan {
  const keepalive = mesh.persistentKeepalive;
  // Each node as others see it, with and without keepalive: made once, so a full mesh of n nodes costs O(n) here and
  // O(n²) only in output.
  const seen = mesh.nodes.map((node) => ({ node, asPeer: node.asPeer, asPeerKeepalive: { ...node.asPeer, persistentKeepalive: keepalive } as RenderPeer }));
  const peerFor = (self: (typeof seen)[number], other: (typeof seen)[number]): RenderPeer =>
    self.node.endpoint === undefined || other.node.endpoint === undefined ? other.asPeerKeepalive : other.asPeer;

  const peerText = new WeakMap<RenderPeer, PeerSection>();
  const nodes: Record<string, MeshNodePlan> = {};
  const warnings: Problem[] = [...mesh.warnings];
  const hosts: HostPlan[] = [];
  const hubEntry = mesh.hub !== undefined ? seen[mesh.hub] : undefined;
  for (const [index, self] of seen.entries()) {
    let peers: RenderPeer[];
    let postUp: string[] | undefined;
    if (!hubEntry) {
      peers = [];
      for (const other of seen) if (other !== self) peers.push(peerFor(self, other));
    } else if (self === hubEntry) {
      peers = seen.filter((s) => s !== self).map((other) => peerFor(self, other));
      postUp = [mesh.network.family === 4 ? 'sysctl -q -w net.ipv4.ip_forward=1' : 'sysctl -q -w net.ipv6.conf.all.forwarding=1'];
    } else {
      // A spoke reaches every other node through the hub.
      const viaHub = peerFor(self, hubEntry);
      peers = [{ ...viaHub, allowedIPs: [mesh.network.cidr] }];
    }
    const wireguard: RenderInterface = {
      name: mesh.interfaceName,
      address: self.node.cidr,
      listenPort: self.node.listenPort,
      nodeAddress: true,
      mtu: mesh.mtu,
      privateKeyFrom: self.node.privateKeyFrom,
      publicKey: self.node.publicKey,
      peers,
      ...(postUp ? { postUp } : {}),
    };
    const { host, values } = renderOverlayHost({ ...self.node.overlay, wireguard: [wireguard] }, peerText);
    nodes[self.node.node] = { node: self.node.node, host, wireguard, values };
    hosts.push(host);
    warnings.push(...userDataSizeWarnings(host, `nodes[${index}]`));
  }
  return { objects: [], hosts, values: {}, warnings, nodes };
}
