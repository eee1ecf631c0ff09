/**
 * Fail closed, without a gateway of tunnelwright's: a scraper that must reach only the cluster, the LAN and the VPN
 * server it dials itself (its own WireGuard client in the pod), and the VPN node under it. If the tunnel goes, the
 * pods reach nothing outside `allowCidrs`, and the node drops, on its WAN interface, everything that came from the
 * pods or was meant for the tunnel. `cdk8s synth` writes the NetworkPolicy to dist/media.k8s.yaml and the node's
 * nftables table to dist/hosts/gw-1/{user-data,ignition.json}.
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { App, KillSwitch } from 'tunnelwright/cdk8s';

const app = new App();
const chart = new Chart(app, 'media');

new kplus.Namespace(chart, 'media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } });

new KillSwitch(chart, 'scraper', {
  namespace: 'media',
  selector: { 'app.kubernetes.io/name': 'scraper' },
  // The cluster's pods and services, the LAN, and the one VPN server the pods' own WireGuard dials. Never a default
  // route, not even split in halves: the KillSwitch refuses one.
  allowCidrs: ['10.42.0.0/16', '10.43.0.0/16', '192.168.1.0/24', '185.236.200.1/32'],
  // The node: tunnel- and pod-sourced traffic leaves only by tun0, dropped (and counted) on eth0.
  host: { node: 'gw-1', wanInterface: 'eth0', tunnelInterface: 'tun0', tunnelCidrs: ['10.2.0.2/32'], podCidrs: ['10.42.0.0/16'] },
});

app.synth();
