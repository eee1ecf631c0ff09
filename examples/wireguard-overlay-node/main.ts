/**
 * One node's WireGuard interfaces by hand, where a WireguardMesh does not fit: a k3s worker at a VPS that joins the
 * home cluster over the overlay (wg0, its node address) and keeps a second, unrelated interface to an off-site
 * backup box (wg1). Every rule of a WireGuard config is checked offline: keys, overlapping allowed IPs, a listen port
 * where a peer dials in, keepalive behind NAT. `cdk8s synth` writes dist/hosts/vps-w1/{user-data,ignition.json} and
 * the wg0.conf / wg1.conf to copy onto a running node.
 *
 * The private keys never appear here: the node reads each from a file another agent drops in /run at boot.
 */
import { Chart } from 'cdk8s';
import { App, WireguardOverlayNode } from 'tunnelwright/cdk8s';

const app = new App();

new WireguardOverlayNode(new Chart(app, 'vps-w1'), 'node', {
  node: 'vps-w1',
  role: 'worker',
  distribution: 'k3s',
  clusterEndpoint: 'https://10.10.0.1:6443', // the k3s server, reached over the overlay
  wireguard: [
    {
      name: 'wg0',
      address: '10.10.0.2/24',
      listenPort: 51820,
      nodeAddress: true, // the kubelet's node IP is the overlay address
      underlayMtu: 1500,
      privateKeyFrom: { file: '/run/keys/wg0.key', waitFor: '10m' },
      peers: [
        // the home server, at a public address
        { publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '203.0.113.10:51820', allowedIPs: ['10.10.0.1/32', '10.42.0.0/24'] },
        // an office worker behind NAT: it dials in, and keepalives hold its NAT mapping open
        { publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=', allowedIPs: ['10.10.0.3/32', '10.42.2.0/24'], persistentKeepalive: 25 },
      ],
    },
    {
      name: 'wg1',
      address: '172.31.9.2/30',
      privateKeyFrom: { file: '/run/keys/wg1.key', waitFor: '10m' },
      peers: [{ publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', endpoint: '198.51.100.30:51821', allowedIPs: ['172.31.9.1/32'], persistentKeepalive: 25 }],
    },
  ],
});

app.synth();
