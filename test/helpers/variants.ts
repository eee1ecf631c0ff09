import { HostPlan, planEgressSteering, planKillSwitch, planWireguardMesh, planWireguardOverlayNode, WireguardOverlayNodeProps } from '../../src';
import { KEYS, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from './fixtures';

/** Every shape of host plan the WireGuard constructs render, for the schema and system checks. */
export function wireguardHostVariants(): { name: string; plan: HostPlan; ignitionVersion: '3.3.0' | '3.4.0' | '3.5.0' }[] {
  const out: { name: string; plan: HostPlan; ignitionVersion: '3.3.0' | '3.4.0' | '3.5.0' }[] = [];
  const base = siteA();
  const inline: WireguardOverlayNodeProps = {
    ...base,
    wireguard: [{ name: 'wg0', address: '10.10.0.1/24', listenPort: 51820, nodeAddress: true, privateKey: KEYS.a.privateKey, peers: [{ publicKey: KEYS.b.publicKey, endpoint: '198.51.100.2:51820', allowedIPs: ['10.10.0.2/32'], presharedKey: KEYS.psk }] }],
  };
  const psk: WireguardOverlayNodeProps = {
    ...base,
    wireguard: [{ ...base.wireguard[0], peers: [{ ...base.wireguard[0].peers[0], presharedKeyFrom: { url: 'https://vault.example.test/psk?node=a%2Fb', waitFor: '1h' } }] }],
  };
  for (const distribution of ['k0s', 'k3s', 'kubeadm'] as const) {
    for (const role of ['controller', 'worker', 'controller+worker'] as const) {
      out.push({ name: `${distribution}-${role}`, plan: planWireguardOverlayNode({ ...base, distribution, role }).hosts[0], ignitionVersion: '3.4.0' });
    }
  }
  for (const v of ['3.3.0', '3.4.0', '3.5.0'] as const) {
    out.push({ name: `inline-keys-${v}`, plan: planWireguardOverlayNode({ ...inline, ignitionVersion: v }).hosts[0], ignitionVersion: v });
    out.push({ name: `preshared-from-url-${v}`, plan: planWireguardOverlayNode({ ...psk, ignitionVersion: v }).hosts[0], ignitionVersion: v });
  }
  // k0s installed by the library (the install unit, the token unit, the token drop-in on k0s's own unit).
  out.push({ name: 'k0s-worker-installed', plan: planWireguardOverlayNode({ ...base, role: 'worker', installK0s: { tokenFrom: { url: 'https://vault.example.test/k0s/worker-token' } } }).hosts[0], ignitionVersion: '3.4.0' });
  out.push({ name: 'k0s-controller+worker-installed', plan: planWireguardOverlayNode({ ...base, installK0s: { binary: '/opt/bin/k0s' } }).hosts[0], ignitionVersion: '3.5.0' });
  // Dual stack, MTU from the underlay.
  const { mtu: _mtu, ...iface } = base.wireguard[0];
  out.push({ name: 'dual-stack-underlay-mtu', plan: planWireguardOverlayNode({ ...base, distribution: 'kubeadm', wireguard: [{ ...iface, address: ['10.10.0.1/24', 'fd10::1/64'], underlayMtu: 1450 }] }).hosts[0], ignitionVersion: '3.3.0' });
  const mesh = planWireguardMesh(threeNodeMesh());
  for (const h of mesh.hosts) out.push({ name: `mesh-${h.node}`, plan: h, ignitionVersion: '3.4.0' });
  // A node dialled by hostname: the endpoints unit and its drop-in on the dialling nodes.
  const m = threeNodeMesh();
  const named = planWireguardMesh({ ...m, nodes: [m.nodes[0], { ...m.nodes[1], endpoint: 'site-b.example.net' }, { ...m.nodes[2], installK0s: { tokenFrom: { file: '/run/corium/k0s-token' } } }] });
  out.push({ name: 'mesh-hostname-site-a', plan: named.nodes['site-a'].host, ignitionVersion: '3.4.0' });
  out.push({ name: 'mesh-hostname-site-c-k0s-token', plan: named.nodes['site-c'].host, ignitionVersion: '3.5.0' });
  const hub = planWireguardMesh({ ...threeNodeMesh(), topology: { hub: 'site-a' }, distribution: 'k3s' });
  for (const h of hub.hosts) out.push({ name: `hub-${h.node}`, plan: h, ignitionVersion: '3.5.0' });
  return out;
}

/** Every shape of host plan the kill switch renders. */
export function killSwitchHostVariants(): { name: string; plan: HostPlan; ignitionVersion: '3.3.0' | '3.4.0' | '3.5.0' }[] {
  const base = qbittorrentKillSwitch();
  return [
    { name: 'killswitch-pods-and-tunnel', plan: planKillSwitch(base).hosts[0], ignitionVersion: '3.4.0' },
    { name: 'killswitch-tunnel-only-dual-stack', plan: planKillSwitch({ ...base, host: { node: 'gw-2', wanInterface: 'enp1s0', tunnelInterface: 'wg-vpn', tunnelCidrs: ['10.2.0.2/32', 'fd00:2::2/128'] } }).hosts[0], ignitionVersion: '3.3.0' },
  ];
}

/** Every shape of host plan EgressSteering renders for its gateway node. */
export function steeringHostVariants(): { name: string; plan: HostPlan; ignitionVersion: '3.3.0' | '3.4.0' | '3.5.0' }[] {
  const { tunnel: _t, ...noTunnel } = wireguardSteering();
  const wg = wireguardSteering();
  const withPsk = { ...wg, kubeconfigFrom: { url: 'https://vault.example.test/kubeconfig', waitFor: '5m' }, tunnel: { ...(wg.tunnel as Extract<typeof wg.tunnel, { type: 'wireguard' }>), peer: { publicKey: KEYS.b.publicKey, endpoint: '198.51.100.7:51820', presharedKeyFrom: { file: '/run/corium/vpn.psk' } } } };
  return [
    { name: 'steering-openvpn', plan: planEgressSteering(prodSteering()).hosts[0], ignitionVersion: '3.4.0' },
    { name: 'steering-wireguard', plan: planEgressSteering(wg).hosts[0], ignitionVersion: '3.3.0' },
    { name: 'steering-wireguard-psk', plan: planEgressSteering(withPsk).hosts[0], ignitionVersion: '3.5.0' },
    { name: 'steering-hook-only', plan: planEgressSteering(noTunnel).hosts[0], ignitionVersion: '3.4.0' },
  ];
}

/** All host variants, for checks that apply to every host artefact. */
export function allHostVariants(): { name: string; plan: HostPlan; ignitionVersion: '3.3.0' | '3.4.0' | '3.5.0' }[] {
  return [...wireguardHostVariants(), ...killSwitchHostVariants(), ...steeringHostVariants()];
}
