import { Problem, throwIfProblems } from '../errors';
import { renderHostArtefacts, userDataSizeWarnings } from '../host/artefacts';
import { rememberEncoding } from '../host/ignition';
import { addResolvedSecret, planSecretSource } from '../host/secret-source';
import {
  checkWireguardOverlayNode, DEFAULT_WIREGUARD_MTU, Distribution, NodeRole, WireguardInterface, WireguardOverlayNodeProps, WireguardPeer,
} from '../model/wireguard-overlay-node';
import { parseCidr, formatIp } from '../model/net';
import { emptyHostPlan, HostPlan, Plan } from '../types';
import { stringify } from 'yaml';

/** Returns the problems of WireguardOverlayNode props without throwing (warnings are not problems). */
export function validateWireguardOverlayNode(props: unknown): Problem[] {
  return checkWireguardOverlayNode(props).problems;
}

/** Plans one node's WireGuard interfaces: `/etc/wireguard/<name>.conf`, `wg-quick@<name>.service`, key units, the distribution's ordering and node IP. */
export function planWireguardOverlayNode(props: WireguardOverlayNodeProps): Plan {
  const checked = checkWireguardOverlayNode(props);
  throwIfProblems(checked.problems, 'WireguardOverlayNode props');
  const plan = renderOverlayNode(checked.value!, checked.warnings);
  const artefacts = renderHostArtefacts(plan.hosts[0], checked.value!.ignitionVersion);
  return { ...plan, warnings: [...plan.warnings, ...userDataSizeWarnings(artefacts, 'wireguard')] };
}

/** A peer as rendered; `comment` names it in the config (the mesh's node names). */
export interface RenderPeer extends WireguardPeer {
  readonly comment?: string;
}
export interface RenderInterface extends WireguardInterface {
  readonly peers: RenderPeer[];
  /** Extra `PostUp` commands (a hub forwards between spokes). */
  readonly postUp?: string[];
  /** `PostDown` commands. */
  readonly postDown?: string[];
  /** wg-quick's `Table`: `off` installs no routes (a split tunnel does its own policy routing). */
  readonly table?: 'off';
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
export const KUBEADM_KUBELET_DEFAULTS_PATH = '/etc/default/kubelet';
export const KUBEADM_CONFIG_PATH = '/etc/kubernetes/tunnelwright-kubeadm.yaml';

/** One `[Peer]` section. */
function renderPeer(peer: RenderPeer): string {
  const lines = ['', '[Peer]'];
  if (peer.comment) lines.push(`# ${peer.comment}`);
  lines.push(`PublicKey = ${peer.publicKey}`);
  if (peer.presharedKey !== undefined) lines.push(`PresharedKey = ${peer.presharedKey}`);
  if (peer.endpoint !== undefined) lines.push(`Endpoint = ${peer.endpoint}`);
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
export function renderWireguardConfigShared(node: string, iface: RenderInterface, privateKeyPath?: string, presharedKeyPaths: ReadonlyMap<number, string> = new Map(), sections?: WeakMap<RenderPeer, PeerSection>): { text: string; encoded?: string } {
  const lines = [`# ${iface.name} on ${node}: written by tunnelwright`, '[Interface]', `Address = ${iface.address}`];
  if (iface.listenPort !== undefined) lines.push(`ListenPort = ${iface.listenPort}`);
  lines.push(`MTU = ${iface.mtu ?? DEFAULT_WIREGUARD_MTU}`);
  if (iface.table) lines.push(`Table = ${iface.table}`);
  if (iface.privateKey !== undefined) lines.push(`PrivateKey = ${iface.privateKey}`);
  if (privateKeyPath) lines.push(`PostUp = wg set %i private-key ${privateKeyPath}`);
  iface.peers.forEach((peer, j) => {
    const psk = presharedKeyPaths.get(j);
    if (psk) lines.push(`PostUp = wg set %i peer ${peer.publicKey} preshared-key ${psk}`);
  });
  for (const cmd of iface.postUp ?? []) lines.push(`PostUp = ${cmd}`);
  for (const cmd of iface.postDown ?? []) lines.push(`PostDown = ${cmd}`);
  const header = `${lines.join('\n')}\n`;
  if (!sections) return { text: header + iface.peers.map(renderPeer).join('') };
  // One join each: flat strings (appending would build ropes that every later reader flattens again).
  const texts = [header];
  const encoded = [encodeURIComponent(header)];
  for (const peer of iface.peers) {
    let section = sections.get(peer);
    if (section === undefined) {
      const text = renderPeer(peer);
      section = { text, encoded: encodeURIComponent(text) };
      sections.set(peer, section);
    }
    texts.push(section.text);
    encoded.push(section.encoded);
  }
  return { text: texts.join(''), encoded: encoded.join('') };
}

export interface OverlayNodeInput {
  /** Shared `[Peer]` sections, by peer object (see renderWireguardConfigShared). */
  readonly peerText?: WeakMap<RenderPeer, PeerSection>;
  readonly node: string;
  readonly role: NodeRole;
  readonly distribution: Distribution;
  readonly wireguard: RenderInterface[];
}

/** Renders validated props (no validation here: the mesh calls it with interfaces it generated and checked). */
export function renderOverlayNode(props: WireguardOverlayNodeProps, warnings: Problem[] = []): Plan {
  const input: OverlayNodeInput = { node: props.node, role: props.role ?? 'worker', distribution: props.distribution ?? 'k0s', wireguard: props.wireguard };
  const { host, values } = renderOverlayHost(input);
  return { objects: [], hosts: [host], values, warnings };
}

export function renderOverlayHost(input: OverlayNodeInput): { host: HostPlan; values: Record<string, unknown> } {
  const { node, role, distribution } = input;
  const host = emptyHostPlan(node);
  if (input.wireguard.length === 0) return { host, values: {} };
  host.packages.push('wireguard-tools');
  const k8sUnit = distributionUnit(distribution, role);
  const wgUnits: string[] = [];
  let nodeIp: string | undefined;
  for (const iface of input.wireguard) {
    const wgUnit = `wg-quick@${iface.name}.service`;
    wgUnits.push(wgUnit);
    const before: string[] = [];
    let keyPath: string | undefined;
    if (iface.privateKeyFrom) {
      const s = planSecretSource(`${iface.name}-private-key`, iface.privateKeyFrom, wgUnit);
      addResolvedSecret(host, s);
      keyPath = s.path;
      before.push(s.unit);
    }
    const pskPaths = new Map<number, string>();
    iface.peers.forEach((peer, j) => {
      if (!peer.presharedKeyFrom) return;
      const s = planSecretSource(`${iface.name}-peer${j}-preshared-key`, peer.presharedKeyFrom, wgUnit);
      addResolvedSecret(host, s);
      pskPaths.set(j, s.path);
      before.push(s.unit);
    });
    const inlineSecret = iface.privateKey !== undefined || iface.peers.some((p) => p.presharedKey !== undefined);
    const conf = renderWireguardConfigShared(node, iface, keyPath, pskPaths, input.peerText);
    const file = { path: `/etc/wireguard/${iface.name}.conf`, mode: 0o600, owner: 'root:root', content: conf.text, secret: inlineSecret || undefined };
    if (conf.encoded !== undefined) rememberEncoding(file, conf.encoded);
    host.files.push(file);
    host.units.push({ name: wgUnit, enabled: true });
    if (before.length > 0) {
      host.dropins.push({ unit: wgUnit, name: '10-tunnelwright-secrets.conf', content: `[Unit]\nAfter=${before.join(' ')}\nRequires=${before.join(' ')}\n` });
    }
    if (iface.nodeAddress) {
      const c = parseCidr(iface.address)!;
      nodeIp = formatIp(c.family, c.address);
    }
  }
  // One drop-in per interface, so two constructs adding interfaces to one node merge instead of clashing.
  for (const [i, wgUnit] of wgUnits.entries()) {
    host.dropins.push({ unit: k8sUnit, name: `10-tunnelwright-${input.wireguard[i].name}.conf`, content: `[Unit]\nAfter=${wgUnit}\nRequires=${wgUnit}\n` });
  }
  const values: Record<string, unknown> = {};
  if (nodeIp) {
    const controller = role !== 'worker';
    const apiSans = controller ? [nodeIp] : [];
    values.node = { name: node, nodeIp, apiSans };
    switch (distribution) {
      case 'k0s': {
        const installFlags = [`--kubelet-extra-args=--node-ip=${nodeIp}`];
        values.k0s = { installFlags };
        if (controller) {
          const config = { apiVersion: 'k0s.k0sproject.io/v1beta1', kind: 'ClusterConfig', metadata: { name: 'k0s' }, spec: { api: { address: nodeIp, sans: apiSans } } };
          (values.k0s as Record<string, unknown>).config = config;
          host.files.push({ path: K0S_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: the API listens on the overlay address\n${stringify(config)}` });
        }
        break;
      }
      case 'k3s': {
        const config: Record<string, unknown> = { 'node-ip': nodeIp };
        if (controller) Object.assign(config, { 'advertise-address': nodeIp, 'tls-san': apiSans });
        values.k3s = { config };
        host.files.push({ path: K3S_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: register the overlay address\n${stringify(config)}` });
        break;
      }
      case 'kubeadm': {
        host.files.push({ path: KUBEADM_KUBELET_DEFAULTS_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: register the overlay address\nKUBELET_EXTRA_ARGS=--node-ip=${nodeIp}\n` });
        if (controller) {
          const docs = [
            { apiVersion: 'kubeadm.k8s.io/v1beta3', kind: 'InitConfiguration', localAPIEndpoint: { advertiseAddress: nodeIp }, nodeRegistration: { kubeletExtraArgs: { 'node-ip': nodeIp } } },
            { apiVersion: 'kubeadm.k8s.io/v1beta3', kind: 'ClusterConfiguration', apiServer: { certSANs: apiSans } },
          ];
          values.kubeadm = { initConfiguration: docs[0], clusterConfiguration: docs[1] };
          host.files.push({ path: KUBEADM_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: kubeadm init --config ${KUBEADM_CONFIG_PATH}\n${docs.map((d) => stringify(d)).join('---\n')}` });
        }
        break;
      }
    }
  }
  return { host, values };
}
