// A user's cdk8s app (cdk8s-cli's TypeScript template), built against the packed tunnelwright.
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
// The major `cdk8s init typescript-app` of cdk8s-cli 2.207.60 brings: its workloads route alike.
import * as kplus33 from 'cdk8s-plus-33';
import { App, KillSwitch, VpnGateway, WireguardMesh } from 'tunnelwright/cdk8s';

const app = new App();
const media = new Chart(app, 'media', { namespace: 'media' });
const gateway = new VpnGateway(media, 'vpn', {
  clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
  nodeCidrs: ['192.168.1.0/24'],
  vpnProvider: 'protonvpn',
  wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' },
  serverCountries: ['Switzerland'],
  cni: 'calico',
});
const qbittorrent = new kplus.Deployment(media, 'qbittorrent', { containers: [{ image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080 }] });
gateway.route(qbittorrent);
gateway.route(new kplus33.Deployment(media, 'sonarr', { containers: [{ image: 'lscr.io/linuxserver/sonarr:4.0.11', portNumber: 8989 }] }));
new KillSwitch(media, 'lan-only', {
  selector: { app: 'lan-only' },
  namespace: 'media',
  allowCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
});
new WireguardMesh(new Chart(app, 'overlay'), 'mesh', {
  network: '10.10.0.0/24',
  listenPort: 51820,
  nodes: [
    { node: 'home-cp1', role: 'controller+worker', address: '10.10.0.1', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: { file: '/run/keys/wg0.key' }, installK0s: {} },
    { node: 'office-w2', address: '10.10.0.2', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: { file: '/run/keys/wg0.key' }, installK0s: { tokenFrom: { file: '/run/keys/k0s-token' } } },
  ],
});
app.synth();
