/**
 * The original design's workflow: NordVPN over WireGuard from a MicroK8s cluster, exiting in Switzerland, with
 * qBittorrent routed through the shared gateway. The WireGuard key lives in the Secret `nordvpn-wireguard`
 * (key `private-key`) in the `vpn-gateway` namespace: create it out of band (sealed-secrets, SOPS, External Secrets).
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { App, EgressProbe, VpnGateway } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'media');

// Routed pods (qBittorrent, the probe) get the gateway client's init container (NET_ADMIN, NET_RAW): their namespace
// admits privileged pods.
new kplus.Namespace(chart, 'media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });

const gatewayProps = {
  clusterCidrs: ['10.1.0.0/16', '10.152.183.0/24'], // MicroK8s pods, services
  nodeCidrs: ['192.168.1.0/24'],
  vpnProvider: 'nordvpn',
  wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' },
  serverCountries: ['Switzerland'],
  cni: 'calico' as const, // MicroK8s' default CNI: its VXLAN owns 4789, so the gateway's VXLAN takes 8472
};
const gateway = new VpnGateway(chart, 'nordvpn', gatewayProps);

const qbittorrent = new kplus.Deployment(chart, 'qbittorrent', {
  metadata: { name: 'qbittorrent', namespace: 'media' },
  replicas: 1,
  podMetadata: { labels: { 'app.kubernetes.io/name': 'qbittorrent' } },
  // linuxserver.io images start as root and drop to PUID/PGID themselves.
  securityContext: { ensureNonRoot: false },
  containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080, securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false } }],
});

// Adds the client init container (first), the sidecar, DNS through the gateway, the settings ConfigMap in `media`
// and the kill switch NetworkPolicy for qBittorrent's pods.
gateway.route(qbittorrent);

// Proves it continuously: a blackbox probe routed through the same gateway fails (VPNEgressLeak) when the echo shows
// the home WAN address. Choose the echo service yourself: tunnelwright phones no one by default.
new EgressProbe(chart, 'probe', {
  namespace: 'media',
  via: { vpnGateway: gatewayProps },
  targets: ['https://ifconfig.example.net/ip'],
  wanIps: ['203.0.113.7'],
  directTwin: true,
  monitoring: { ruleLabels: { release: 'kube-prometheus-stack' } },
});

app.synth();
