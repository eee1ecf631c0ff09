import { KillSwitchProps, WireguardMeshProps, WireguardOverlayNodeProps } from '../../src';

/** Fixed keys (generated once with `wg genkey` / `wg pubkey`): tests must be deterministic. */
export const KEYS = {
  a: { privateKey: 'OFCo9jme+tsrIJZcDrZo1ZCxPTDiLhDSQPRhoBV/eEU=', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=' },
  b: { privateKey: 'EE3+T5cYE6HlM9h6gxBPIFqQui9VkVVX7Bv7LWMK4Fw=', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=' },
  c: { privateKey: 'CJ432kWiz/UTsJBQfczbKyi3FK7BY32zKUlZlICADHo=', publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=' },
  psk: '9WtgVueOmg0URxWKD1F5FqQ1UKEvSvduB0AKq0TTIzs=',
};

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
