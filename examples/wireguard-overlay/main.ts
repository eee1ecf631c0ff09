/**
 * The three-site overlay of the original design: one controller+worker at home and two workers at other sites,
 * joined into one k0s cluster over WireGuard. `cdk8s synth` (or `npm run synth` at the repository root) writes
 * each node's `hosts/<node>/user-data`, `hosts/<node>/ignition.json`, and `hosts/<node>/wg0.conf` (the file to copy onto
 * a running node, then `systemctl reload wg-quick@wg0`, after a change such as a node added).
 */
import { Chart } from 'cdk8s';
import { App, WireguardMesh } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'overlay');

// Keys never appear here: each node reads its private key at boot from a file another agent drops in /run
// (waiting up to 10 minutes for it). Public keys are not secret.
const keyFrom = { file: '/run/corium/wg0.key', waitFor: '10m' } as const;
const tokenFrom = { file: '/run/corium/k0s-worker-token', waitFor: '30m' } as const;

new WireguardMesh(chart, 'overlay', {
  network: '10.10.0.0/24',
  listenPort: 51820,
  underlayMtu: 1450, // a private cloud's network: wg0 gets 1390, and plan.values.network.podMtu 1370 inside kube-router's IPIP
  distribution: 'k0s',
  nodes: [
    // k0s is installed at first boot, after wg0 is up, with the kubelet's --node-ip on the overlay (k0s takes it only
    // at install time). The first controller needs no token; workers read the join token like the key.
    { node: 'home-cp1', role: 'controller+worker', address: '10.10.0.1/24', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: keyFrom, installK0s: {} },
    { node: 'hetzner-w1', address: '10.10.0.2/24', endpoint: '198.51.100.20', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: keyFrom, installK0s: { tokenFrom } },
    // Behind NAT at a third site: no endpoint, so its peers keep the link alive with keepalives.
    { node: 'office-w2', address: '10.10.0.3/24', publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=', privateKeyFrom: keyFrom, installK0s: { tokenFrom } },
  ],
});

// kubeadm with several controllers takes a stable controlPlaneEndpoint on the overlay (docs/wireguard-mesh.md):
//   distribution: 'kubeadm', controlPlaneEndpoint: 'api.cluster.internal:6443', // records 10.10.0.1, 10.10.0.2
// the first controller then runs tunnelwright-kubeadm (kubeadm init --upload-certs), the others join its control plane.

app.synth();
