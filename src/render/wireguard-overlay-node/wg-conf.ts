import { rememberLength } from '../../host/host-plan';
import { rememberEncoding } from '../../host/ignition';
import { DEFERRED_ENDPOINT_PREFIX } from '../../host/wireguard-reload';
import type { RenderInterface, RenderPeer, WireguardInterface } from '../../model/wireguard-overlay-node';
import { HostFile } from '../../types';
import * as overlayNodeModel from '../../model/wireguard-overlay-node';

export type { RenderInterface, RenderPeer } from '../../model/wireguard-overlay-node';

/** True when the endpoint is a hostname (not an IP literal). */
export function isHostnameEndpoint(endpoint: string | undefined): boolean {
  return endpoint !== undefined && overlayNodeModel.parseEndpoint(endpoint, true)?.isHostname === true;
}

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

/**
 * The interface's config file. In a mesh (shared peer sections) its content is computed when read, from the sections
 * every node shares, and not kept: a 1000-node mesh holds n sections, not n² lines, and a writer holds one node's
 * text at a time. Without shared sections it is a plain string.
 */
export function wireguardConfigFile(node: string, iface: RenderInterface, keyPath: string | undefined, pskPaths: ReadonlyMap<number, string>, secret: boolean, sections?: WeakMap<RenderPeer, PeerSection>): HostFile {
  const base = { path: `/etc/wireguard/${iface.name}.conf`, mode: 0o600, owner: 'root:root', ...(secret ? { secret: true } : {}) };
  if (!sections) return { ...base, content: renderWireguardConfigShared(node, iface, keyPath, pskPaths).text };
  const render = () => renderWireguardConfigShared(node, iface, keyPath, pskPaths, sections);
  const file: HostFile = Object.defineProperty({ ...base } as HostFile, 'content', { get: () => render().text, enumerable: true });
  rememberEncoding(file, () => render().encoded!);
  rememberLength(file, () => render().length!);
  return file;
}
