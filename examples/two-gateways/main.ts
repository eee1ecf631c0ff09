/**
 * Two gateways in one cluster, one exiting in the US and one in the EU, with different VXLAN ids (the App refuses
 * two gateways with one VXLAN id in a cluster, or one WireGuard key in two gateways).
 */
import { ApiObject, Chart } from 'cdk8s';
import { App, VpnGateway } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'egress');
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

function app_(name: string, image: string): ApiObject {
  return new ApiObject(chart, name, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'media' },
    spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image }] } } },
  });
}

us.route(app_('jackett', 'lscr.io/linuxserver/jackett:0.22.1'));
eu.route(app_('qbittorrent', 'lscr.io/linuxserver/qbittorrent:5.0.3'));

app.synth();
