/**
 * qBittorrent behind ProtonVPN with port forwarding: ProtonVPN forwards one port (NAT-PMP) and changes it on
 * reconnects; the gateway DNATs it to the same port on qBittorrent's pod (no translation, the peer's own source
 * address kept), and a `vpn-port-sync` sidecar beside qBittorrent keeps its listen port equal to it.
 *
 * Create these Secrets out of band (sealed-secrets, SOPS, External Secrets); tunnelwright only names them:
 * - `protonvpn-wireguard` (key `private-key`) in `vpn-gateway`: the WireGuard key of a ProtonVPN P2P config generated
 *   with "NAT-PMP (Port Forwarding)" on (a key made without it never gets a port).
 * - `gluetun-control` (key `api-key`) in `vpn-gateway` AND in `media`: the gateway writes gluetun's control-server
 *   role from it, the sidecar reads `/v1/portforward` with it. Any random string of letters and digits.
 * - `qbittorrent-webui` (keys `username`, `password`) in `media`: qBittorrent's WebUI login, mounted as files.
 */
import { ApiObject, Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { portForwardAlertGroups } from 'tunnelwright';
import { App, VpnGateway } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'media', { namespace: 'media' });

// Routed pods need Pod Security level privileged (pod-gateway's client init adds NET_ADMIN and NET_RAW).
new ApiObject(new Chart(app, 'namespaces'), 'media', { // its own chart: the media chart would give it a namespace
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
});

const gatewayProps = {
  clusterCidrs: ['10.1.0.0/16', '10.152.183.0/24'], // pods, services
  nodeCidrs: ['192.168.1.0/24'],
  vpnProvider: 'protonvpn',
  wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' },
  serverCountries: ['Switzerland'],
  portForwarding: {
    app: 'qbittorrent' as const,
    workload: 'qbittorrent',
    workloadNamespace: 'media',
    controlApiKeySecret: { name: 'gluetun-control' },
    appCredentialsSecret: { name: 'qbittorrent-webui' },
  },
  // Read and done: the key comes from a ProtonVPN WireGuard config generated with NAT-PMP on (synth cannot see it).
  acknowledge: ['protonvpn-wireguard-pmp' as const],
};
const gateway = new VpnGateway(chart, 'protonvpn', gatewayProps);

// A StatefulSet of one replica: its pods take the one fixed VXLAN address the port is DNATed to, and only a
// StatefulSet never runs two of them at once (its controller starts qbittorrent-0 again only once the old pod is
// gone). A Deployment is refused: on a pod delete, drain or eviction its ReplicaSet starts the replacement at once,
// while the old pod still holds the address. cdk8s-plus adds the StatefulSet's headless Service (it needs the
// container port, or a `service`). Parallel, so that reverting a bad template replaces a crash-looping pod by itself
// (OrderedReady waits for it to be Ready first); with one replica it never runs two pods either. The policy is
// immutable: set it when the StatefulSet is created.
const qbittorrent = new kplus.StatefulSet(chart, 'qbittorrent', {
  metadata: { name: 'qbittorrent' },
  replicas: 1,
  podManagementPolicy: kplus.PodManagementPolicy.PARALLEL,
  containers: [{
    name: 'qbittorrent',
    image: 'lscr.io/linuxserver/qbittorrent:5.0.3',
    portNumber: 8080,
    securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false },
  }],
});

// Client init container first, the pod-gateway sidecar, the vpn-port-sync sidecar (metrics on :9808), DNS through
// the gateway, the kill switch.
gateway.route(qbittorrent);

// VPNForwardedPortNotListening (the app's port differs from the forwarded one for 5m) and VPNNoForwardedPort (no
// port for 15m), for the Prometheus Operator. Scrape the sidecar's `port-sync` port with your PodMonitor.
new ApiObject(chart, 'port-forward-alerts', {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: { name: 'qbittorrent-port-forward', namespace: 'monitoring', labels: { release: 'kube-prometheus-stack' } },
  spec: { groups: portForwardAlertGroups(gatewayProps) },
});

app.synth();
