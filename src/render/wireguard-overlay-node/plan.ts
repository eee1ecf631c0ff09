import { createHash } from 'node:crypto';
import { Problem, throwIfProblems } from '../../errors';
import { userDataSizeWarnings } from '../../host/artefacts';
import { addResolvedSecret, planSecretSource } from '../../host/secret-source';
import type { OverlayNodeSpec, WireguardOverlayNodeProps } from '../../model/wireguard-overlay-node';
import { WG_ENDPOINTS_FILE, WG_RELOAD_FILE, wireguardEndpointsUnit, wireguardEndpointsUnitContent, wireguardReloadDropin } from '../../host/wireguard-reload';
import { cniOverhead, cniValues, k0sNetwork } from '../cni';
import { parseCidr, formatIp } from '../../model/net';
import { emptyHostPlan, HostPlan, Plan } from '../../types';
import * as cniModel from '../../model/cni';
import * as overlayNodeModel from '../../model/wireguard-overlay-node';
import { distributionUnit } from './distribution-unit';
import { renderK0s } from './k0s';
import { renderK3s } from './k3s';
import { renderKubeadm } from './kubeadm';
import { kubeRouterSnatHooks } from './kube-router';
import { interfaceMtu, PeerSection, RenderInterface, RenderPeer, wireguardConfigFile } from './wg-conf';

/**
 * A peer's preshared-key secret, named by its public key (8 hex digits of its SHA-256), not its place among the peers:
 * a peer added before it or removed does not move its file and unit to another peer's name (a day-2 reload would
 * otherwise read one peer's key for another). Keys are unique per interface (the model refuses a duplicate).
 */
export function presharedKeyName(iface: string, publicKey: string): string {
  return `${iface}-peer-${createHash('sha256').update(publicKey).digest('hex').slice(0, 8)}-preshared-key`;
}

/** Returns the problems of WireguardOverlayNode props without throwing (warnings are not problems). */
export function validateWireguardOverlayNode(props: unknown): Problem[] {
  return overlayNodeModel.checkWireguardOverlayNode(props).problems;
}

/** Plans one node's WireGuard interfaces: `/etc/wireguard/<name>.conf`, `wg-quick@<name>.service`, key units, the distribution's ordering and node IP. */
export function planWireguardOverlayNode(props: WireguardOverlayNodeProps): Plan {
  const checked = overlayNodeModel.checkWireguardOverlayNode(props);
  throwIfProblems(checked.problems, 'WireguardOverlayNode props');
  const plan = renderOverlayNode(checked.spec!, checked.warnings);
  return { ...plan, warnings: [...plan.warnings, ...userDataSizeWarnings(plan.hosts[0], 'wireguard')] };
}

/** Renders a node's spec (no validation here: the model made the spec from checked props, or the mesh from its own). */
export function renderOverlayNode(spec: OverlayNodeSpec, warnings: Problem[] = []): Plan {
  const { host, values } = renderOverlayHost(spec);
  return { objects: [], hosts: [host], values, warnings };
}

/**
 * One node's host plan and values. `peerText`: shared `[Peer]` sections, by peer object (see
 * renderWireguardConfigShared), for a mesh.
 */
export function renderOverlayHost(input: OverlayNodeSpec, peerText?: WeakMap<RenderPeer, PeerSection>): { host: HostPlan; values: Record<string, unknown> } {
  const { node, role, distribution } = input;
  const host = emptyHostPlan(node);
  if (input.wireguard.length === 0) return { host, values: {} };
  if (input.installPackages) host.packages.push('wireguard-tools');
  host.files.push(WG_RELOAD_FILE);
  const k8sUnit = distributionUnit(distribution, role);
  const wgUnits: string[] = [];
  let nodeIps: string[] | undefined;
  let overlayMtu: number | undefined;
  let overlayIface = '';
  const cni = input.cni;
  for (const given of input.wireguard) {
    const { units: snatUnits, ...snatHooks } = kubeRouterSnatHooks(host, given, cni, distribution, role, input.installPackages, input.k0sConfig, input.clusterK0sConfig, input.podCidrs);
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
      const s = planSecretSource(presharedKeyName(iface.name, peer.publicKey), peer.presharedKeyFrom, wgUnit);
      addResolvedSecret(host, s);
      pskPaths.set(j, s.path);
      before.push(s.unit);
      refresh.push(s.refresh);
    });
    const inlineSecret = iface.privateKey !== undefined || iface.peers.some((p) => p.presharedKey !== undefined);
    host.files.push(wireguardConfigFile(node, iface, keyPath, pskPaths, inlineSecret, peerText));
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
  // The pods' MTU inside the CNI's encapsulation: kube-router's IPIP (ip6ip6) tunnels, else VXLAN (flannel, Calico;
  // the largest overhead of the common ones for a CNI the library does not know).
  const podMtu = overlayMtu !== undefined ? overlayMtu - cniOverhead(cni === 'kube-router' ? 'ipip' : 'vxlan', outerIpv6) : undefined;
  if (overlayMtu !== undefined) values.network = { overlayMtu, podMtu };
  if (nodeIps) {
    const controller = role !== 'worker';
    values.node = { name: node, nodeIp: nodeIps[0], nodeIps, apiSans: controller ? nodeIps : [] };
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
      case 'k3s':
        values.k3s = renderK3s(host, cni, overlayIface, nodeIps, controller);
        break;
      case 'kubeadm': {
        const kubeadm = renderKubeadm(host, input, nodeIps);
        if (kubeadm) values.kubeadm = kubeadm;
        break;
      }
    }
  }
  return { host, values };
}
