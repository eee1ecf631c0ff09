/**
 * A VpnGateway with a warm standby (issue 43): two gateway pods on different nodes, each with a WireGuard key of its
 * own (create a second key or device at NordVPN and put it in the Secret `nordvpn-wireguard-standby`). The pod whose
 * tunnel is healthy holds the Lease `vpn-gateway/vpn-gateway` and is the only one behind the gateway's name; when its
 * tunnel dies it takes its vxlan0 down and qBittorrent's gateway client moves to the standby (~15-25 s, never in the
 * clear: the kill switches stay closed while the role moves). The standby connects to servers of its own
 * (`standby.servers`): gluetun picks a server at random among the ones its filters match, so with the gateway's filters
 * both tunnels could land on one server, and that server's outage would take both down.
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { App, VpnGateway } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'media');

new kplus.Namespace(chart, 'media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });

const gateway = new VpnGateway(chart, 'nordvpn', {
  clusterCidrs: ['10.1.0.0/16', '10.152.183.0/24'],
  nodeCidrs: ['192.168.1.0/24'],
  vpnProvider: 'nordvpn',
  wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' },
  serverCountries: ['Switzerland'],
  cni: 'calico',
  // The standby's own key: one key for both would be refused (the provider follows the latest handshake).
  standby: {
    wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-standby' },
    // Another country's servers for the standby: no server is both pods' (the same single hostname would be refused).
    servers: { serverCountries: ['Austria'] },
  },
});

const qbittorrent = new kplus.Deployment(chart, 'qbittorrent', {
  metadata: { name: 'qbittorrent', namespace: 'media' },
  replicas: 1,
  podMetadata: { labels: { 'app.kubernetes.io/name': 'qbittorrent' } },
  securityContext: { ensureNonRoot: false },
  containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080, securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false } }],
});
gateway.route(qbittorrent);

app.synth();
