import { EgressConformanceProps, EgressProbeProps, EgressSteeringProps, HostPlan, KillSwitchProps, VpnGatewayProps, WireguardMeshProps, WireguardOverlayNodeProps } from '../../src';
import { emptyHostPlan } from '../../src/types';

/** Fixed keys (generated once with `wg genkey` / `wg pubkey`): tests must be deterministic. */
export const KEYS = {
  a: { privateKey: 'OFCo9jme+tsrIJZcDrZo1ZCxPTDiLhDSQPRhoBV/eEU=', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=' },
  b: { privateKey: 'EE3+T5cYE6HlM9h6gxBPIFqQui9VkVVX7Bv7LWMK4Fw=', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=' },
  c: { privateKey: 'CJ432kWiz/UTsJBQfczbKyi3FK7BY32zKUlZlICADHo=', publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=' },
  psk: '9WtgVueOmg0URxWKD1F5FqQ1UKEvSvduB0AKq0TTIzs=',
};

/** A distinct, valid-looking public key for the i-th of many generated peers or nodes (not a key pair). */
export function numberedKey(i: number): string {
  const b = Buffer.alloc(32);
  b.writeUInt32BE(i + 1, 28);
  return b.toString('base64');
}

/** The controller+worker of the original three-site design. */
export function siteA(): WireguardOverlayNodeProps {
  return {
    node: 'site-a',
    role: 'controller+worker',
    distribution: 'k0s',
    wireguard: [
      {
        name: 'wg0',
        address: '10.10.0.1/24',
        listenPort: 51820,
        nodeAddress: true,
        mtu: 1420,
        privateKeyFrom: { file: '/run/corium/wg0.key', waitFor: '10m' },
        peers: [
          { publicKey: KEYS.b.publicKey, endpoint: '198.51.100.2:51820', allowedIPs: ['10.10.0.2/32'] },
          { publicKey: KEYS.c.publicKey, allowedIPs: ['10.10.0.3/32'], persistentKeepalive: 25 },
        ],
      },
    ],
  };
}

export function threeNodeMesh(): WireguardMeshProps {
  return {
    network: '10.10.0.0/24',
    listenPort: 51820,
    nodes: [
      { node: 'site-a', address: '10.10.0.1', publicKey: KEYS.a.publicKey, privateKeyFrom: { file: '/run/corium/wg0.key', waitFor: '10m' }, endpoint: '198.51.100.1', role: 'controller+worker' },
      { node: 'site-b', address: '10.10.0.2', publicKey: KEYS.b.publicKey, privateKeyFrom: { file: '/run/corium/wg0.key', waitFor: '10m' }, endpoint: '198.51.100.2' },
      { node: 'site-c', address: '10.10.0.3', publicKey: KEYS.c.publicKey, privateKeyFrom: { url: 'https://vault.example.test/v1/wg/site-c', waitFor: '10m' } },
    ],
  };
}

/** A kill switch for qBittorrent routed through a gateway, with the gateway node's host table. */
export function qbittorrentKillSwitch(): KillSwitchProps {
  return {
    selector: { 'app.kubernetes.io/name': 'qbittorrent' },
    namespace: 'media',
    allowCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    gatewayPodLabels: { 'app.kubernetes.io/name': 'vpn-gateway' },
    gatewayNamespace: 'vpn-gateway',
    host: { node: 'gw-1', wanInterface: 'eth0', tunnelInterface: 'tun0', tunnelCidrs: ['10.2.0.2/32'], podCidrs: ['10.42.0.0/16'] },
  };
}

/** The original design's gateway: NordVPN over WireGuard from MicroK8s, server country Switzerland. */
export function nordvpnGateway(): VpnGatewayProps {
  return {
    clusterCidrs: ['10.1.0.0/16', '10.152.183.0/24'],
    nodeCidrs: ['192.168.1.0/24'],
    vpnProvider: 'nordvpn',
    wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' },
    serverCountries: ['Switzerland'],
  };
}

/** A valid gateway for every provider row (the matrix's valid cases). */
export function gatewayFor(provider: string): VpnGatewayProps {
  const base = nordvpnGateway();
  const { serverCountries: _c, ...noFilter } = base;
  switch (provider) {
    case 'nordvpn': return base;
    // The key's NAT-PMP setting cannot be seen at synth: the fixture's user has read the warning.
    case 'protonvpn': return { ...base, vpnProvider: 'protonvpn', portForwarding: { toPort: 6881, workload: 'qbittorrent', workloadNamespace: 'media' }, acknowledge: ['protonvpn-wireguard-pmp'] };
    case 'mullvad': return { ...base, vpnProvider: 'mullvad', wireguardAddresses: ['10.64.1.2/32'], vpnEndpointPort: 51820, wireguardPresharedKeySecret: { name: 'mullvad-psk' } };
    case 'surfshark': return { ...base, vpnProvider: 'surfshark', wireguardAddresses: ['10.14.0.2/16'] };
    case 'ivpn': return { ...base, vpnProvider: 'ivpn', wireguardAddresses: ['172.28.1.2/32'], vpnEndpointPort: 2049 };
    case 'windscribe': return { ...noFilter, vpnProvider: 'windscribe', wireguardAddresses: ['100.80.1.2/32'], serverRegions: ['Switzerland'], vpnEndpointPort: 443 };
    case 'airvpn': return { ...base, vpnProvider: 'airvpn', wireguardAddresses: ['10.128.1.2/32'], wireguardPresharedKeySecret: { name: 'airvpn-psk' }, vpnEndpointPort: 1637 };
    case 'fastestvpn': return { ...base, vpnProvider: 'fastestvpn', wireguardAddresses: ['10.8.1.2/32'] };
    case 'private internet access': {
      const { wireguardPrivateKeySecret: _k, ...rest } = noFilter;
      return { ...rest, vpnProvider: 'pia', vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'pia-credentials' }, serverRegions: ['Switzerland'], portForwarding: {} };
    }
    case 'custom': return { ...noFilter, vpnProvider: 'custom', vpnEndpointIp: '203.0.113.50', vpnEndpointPort: 1337, wireguardPublicKey: KEYS.a.publicKey, wireguardAddresses: ['10.13.0.2/32'], serverNames: ['swiss-1'], portForwarding: { provider: 'pia', credentialsSecret: { name: 'pia-credentials' } } };
    default: throw new Error(provider);
  }
}

/** The homelab's prod gateway: PIA over OpenVPN on one node, vpn-class media apps, with monitoring. */
export function prodSteering(): EgressSteeringProps {
  return {
    cluster: 'prod',
    gatewayNode: 'prod-gw',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    lanCidrs: ['192.168.20.0/24'],
    namespaces: ['media'],
    enforceLabels: { namespaces: ['media'] },
    monitoring: { ruleLabels: { release: 'kube-prometheus-stack' }, kubeStateMetricsValues: { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink]'] } },
    kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' },
    ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
    tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/pia/nl_amsterdam.ovpn' }, credentialsFrom: { file: '/etc/openvpn/pia/credentials' }, remote: 'nl-amsterdam.privacy.network:1198' },
  };
}

/** A gateway node with a WireGuard split tunnel. */
export function wireguardSteering(): EgressSteeringProps {
  return {
    gatewayNode: 'gw-1',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/run/corium/vpn.key' }, peer: { publicKey: KEYS.b.publicKey, endpoint: '198.51.100.7:51820' } },
  };
}

/** The WireGuard gateway gw-1 with a standby gw-2 on its own key and address (failover). */
export function failoverSteering(): EgressSteeringProps {
  const p = wireguardSteering();
  const t = p.tunnel as Extract<EgressSteeringProps['tunnel'], { type: 'wireguard' }>;
  return { ...p, failover: { standbys: [{ node: 'gw-2', tunnel: { ...t, address: '10.2.0.3/32', privateKeyFrom: { file: '/run/corium/vpn-2.key' } } }] } };
}

/** A probe routed through the NordVPN gateway, with a direct twin and an expected VPN range. */
export function gatewayProbe(): EgressProbeProps {
  return {
    namespace: 'media',
    via: { vpnGateway: nordvpnGateway() },
    targets: ['https://ifconfig.example.test/ip'],
    wanIps: ['203.0.113.7'],
    vpnCidrs: ['185.236.200.0/22'],
    directTwin: true,
    monitoring: { ruleLabels: { release: 'kube-prometheus-stack' } },
  };
}

/** A host plan for node n1: empty but for what is given. */
export function hostPlan(p: Partial<HostPlan> = {}): HostPlan {
  return { ...emptyHostPlan('n1'), ...p };
}

/** A conformance check of the NordVPN gateway (probe in media) and the production steering. */
export function homelabConformance(): EgressConformanceProps {
  return {
    namespaces: ['media', 'vpn-gateway'],
    destructive: true,
    targets: ['https://ifconfig.example.test/ip', 'http://echo.example.test/'],
    wanIps: ['203.0.113.7'],
    vpnCidrs: ['185.236.200.0/22'],
    recoverySeconds: 120,
    vpnGateways: [{ gateway: nordvpnGateway(), probeNamespace: 'media' }],
    egressSteerings: [{ steering: prodSteering(), probeNamespace: 'media' }],
  };
}

/** threeNodeMesh on kubeadm with two controllers (site-a inits, site-b joins) behind a controlPlaneEndpoint. */
export function kubeadmHaMesh(): WireguardMeshProps {
  const mesh = threeNodeMesh();
  return {
    ...mesh, distribution: 'kubeadm', controlPlaneEndpoint: 'api.cluster.internal', podCidrs: ['10.244.0.0/16'], cni: 'flannel', mtu: 1420,
    nodes: mesh.nodes.map((n, i) => (i === 1 ? { ...n, role: 'controller' as const } : n)),
  };
}
