/**
 * Two gateways in one cluster, one exiting in the US and one in the EU, with different VXLAN ids (the App refuses
 * two gateways with one VXLAN id in a cluster, or one WireGuard key in two gateways).
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { App, VpnGateway } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'egress');
// Routed pods get the gateway client's init container (NET_ADMIN, NET_RAW): their namespace admits privileged pods.
new kplus.Namespace(chart, 'media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
const network = { clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], nodeCidrs: ['192.168.10.0/24'], cni: 'flannel' as const };

const us = new VpnGateway(chart, 'us', {
  ...network,
  name: 'vpn-us',
  vpnProvider: 'mullvad',
  wireguardPrivateKeySecret: { name: 'mullvad-us' },
  wireguardAddresses: ['10.66.12.34/32'],
  serverCountries: ['USA'],
  vxlanId: 42,
  vxlanNetwork: '172.16.0.0/24',
});
const eu = new VpnGateway(chart, 'eu', {
  ...network,
  name: 'vpn-eu',
  vpnProvider: 'mullvad',
  wireguardPrivateKeySecret: { name: 'mullvad-eu' },
  wireguardAddresses: ['10.66.56.78/32'],
  serverCountries: ['Netherlands'],
  vxlanId: 43,
  vxlanNetwork: '172.16.1.0/24',
});

function app_(name: string, image: string): kplus.Deployment {
  return new kplus.Deployment(chart, name, {
    metadata: { name, namespace: 'media' },
    podMetadata: { labels: { app: name } },
    // linuxserver.io images start as root and drop to PUID/PGID themselves.
    securityContext: { ensureNonRoot: false },
    containers: [{ name, image, securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false } }],
  });
}

us.route(app_('jackett', 'lscr.io/linuxserver/jackett:0.22.1'));
eu.route(app_('qbittorrent', 'lscr.io/linuxserver/qbittorrent:5.0.3'));

app.synth();
