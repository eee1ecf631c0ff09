/**
 * The original homelab: a dev and a prod k3s cluster with Cilium, each with one gateway node running PIA over
 * OpenVPN as a split tunnel. vpn-class pods (sonarr, radarr, jackett, qbittorrent) leave by the tunnel; direct-class
 * pods (plex, nextcloud) by the LAN. Prod is pinned to a different PIA server than dev: two gateways on one server
 * with one account steal each other's session, and the App refuses that.
 */
import { ApiObject, Chart } from 'cdk8s';
import { App, EgressConformance, EgressProbe, EgressSteering } from 'tunnelwright/cdk8s';

const app = new App();
const CLASS = 'tunnelwright.dev/egress-class';

function cluster(name: 'dev' | 'prod', gatewayNode: string, lan: string, piaServer: string): void {
  const chart = new Chart(app, name);
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
    const labels = { 'app.kubernetes.io/name': appName, [CLASS]: egressClass };
    new ApiObject(chart, appName, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: appName, namespace: 'media' },
      spec: { selector: { matchLabels: { 'app.kubernetes.io/name': appName } }, template: { metadata: { labels }, spec: { containers: [{ name: appName, image }] } } },
    });
  }
}

cluster('dev', 'dev-gw', '192.168.10.0/24', 'swiss.privacy.network');
cluster('prod', 'prod-gw', '192.168.20.0/24', 'nl-amsterdam.privacy.network');

app.synth();
