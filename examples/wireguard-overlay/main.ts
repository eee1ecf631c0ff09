/**
 * The three-site overlay of the original design: one controller+worker at home and two workers at other sites,
 * joined into one k0s cluster over WireGuard. `cdk8s synth` (or `npm run synth` at the repository root) writes
 * each node's `hosts/<node>/user-data` and `hosts/<node>/ignition.json`.
 */
import { Chart } from 'cdk8s';
import { App, WireguardMesh } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'overlay');

// Keys never appear here: each node reads its private key at boot from a file another agent drops in /run
// (waiting up to 10 minutes for it). Public keys are not secret.
const keyFrom = { file: '/run/corium/wg0.key', waitFor: '10m' } as const;

new WireguardMesh(chart, 'overlay', {
  network: '10.10.0.0/24',
  listenPort: 51820,
  mtu: 1420,
  distribution: 'k0s',
  nodes: [
    { node: 'home-cp1', role: 'controller+worker', address: '10.10.0.1/24', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: keyFrom },
    { node: 'hetzner-w1', address: '10.10.0.2/24', endpoint: '198.51.100.20', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: keyFrom },
    // Behind NAT at a third site: no endpoint, so its peers keep the link alive with keepalives.
    { node: 'office-w2', address: '10.10.0.3/24', publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=', privateKeyFrom: keyFrom },
  ],
});

app.synth();
