/**
 * The original homelab: a dev and a prod k3s cluster with Cilium, each with one gateway node running PIA over
 * OpenVPN as a split tunnel. vpn-class pods (sonarr, radarr, jackett, qbittorrent) leave by the tunnel; direct-class
 * pods (plex, nextcloud) by the LAN. Prod is pinned to a different PIA server than dev: two gateways on one server
 * with one account steal each other's session, and the App refuses that.
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { App, EgressConformance, EgressProbe, EgressSteering } from 'tunnelwright/cdk8s';

const app = new App();
const CLASS = 'tunnelwright.dev/egress-class';

function cluster(name: 'dev' | 'prod', gatewayNode: string, lan: string, piaServer: string): void {
  const chart = new Chart(app, name);
  // The namespace the apps, probes and conformance agent run in. The conformance agent is privileged (it stops and
  // restarts the tunnel), so media admits privileged pods.
  new kplus.Namespace(chart, 'media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
  const steering = new EgressSteering(chart, 'egress', {
    cluster: name,
    gatewayNode,
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    lanCidrs: [lan],
    namespaces: ['media'],
    enforceLabels: { namespaces: ['media'] },
    monitoring: { ruleLabels: { release: 'kube-prometheus-stack' }, kubeStateMetricsValues: { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink]'] } },
    kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' },
    ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
    // The warnings that are this example's lesson, read and accepted: DNS leaves by the WAN unless CoreDNS forwards
    // through the tunnel (README, "DNS leaves by the WAN"); Cilium's policy reaches a new pod shortly after it starts
    // (workloads that must never leak use VpnGateway instead); the gateway node boots with cloud-init, which
    // installs openvpn and nftables (Ignition cannot).
    acknowledge: ['dns-wan', 'policy-delay', 'ignition-packages'],
    tunnel: {
      type: 'openvpn',
      configFrom: { file: '/etc/openvpn/pia/pia.ovpn' },
      credentialsFrom: { file: '/etc/openvpn/pia/credentials' },
      remote: `${piaServer}:1198`,
    },
  });
  // After a change: `sh egress-conformance.sh --destructive` (README, EgressConformance) proves the steering once,
  // the tunnel stopped and restarted included; the probes and the node agent run in media only.
  new EgressConformance(chart, 'conformance', {
    cluster: name,
    namespaces: ['media'],
    destructive: true,
    targets: ['https://ifconfig.example.net/ip'],
    wanIps: [name === 'prod' ? '203.0.113.20' : '203.0.113.10'],
    vpnCidrs: ['212.102.32.0/20'],
    recoverySeconds: 120,
    egressSteerings: [{ steering, probeNamespace: 'media' }],
  });
  new EgressProbe(chart, 'probe', {
    cluster: name,
    namespace: 'media',
    via: { egressSteering: { egressClassLabel: CLASS, vpnClass: 'vpn' } },
    targets: ['https://ifconfig.example.net/ip'],
    wanIps: [name === 'prod' ? '203.0.113.20' : '203.0.113.10'],
    directTwin: true,
    monitoring: { ruleLabels: { release: 'kube-prometheus-stack' } },
  });
  const apps: [string, 'vpn' | 'direct', string][] = [
    ['sonarr', 'vpn', 'lscr.io/linuxserver/sonarr:4.0.11'],
    ['radarr', 'vpn', 'lscr.io/linuxserver/radarr:5.16.3'],
    ['jackett', 'vpn', 'lscr.io/linuxserver/jackett:0.22.1'],
    ['qbittorrent', 'vpn', 'lscr.io/linuxserver/qbittorrent:5.0.3'],
    ['plex', 'direct', 'lscr.io/linuxserver/plex:1.41.3'],
    ['nextcloud', 'direct', 'nextcloud:30.0.4'],
  ];
  for (const [appName, egressClass, image] of apps) {
    new kplus.Deployment(chart, appName, {
      metadata: { name: appName, namespace: 'media' },
      podMetadata: { labels: { 'app.kubernetes.io/name': appName, [CLASS]: egressClass } },
      // linuxserver.io images start as root and drop to PUID/PGID themselves.
      securityContext: { ensureNonRoot: false },
      containers: [{ name: appName, image, securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false } }],
    });
  }
}

cluster('dev', 'dev-gw', '192.168.10.0/24', 'swiss.privacy.network');
cluster('prod', 'prod-gw', '192.168.20.0/24', 'nl-amsterdam.privacy.network');

app.synth();
