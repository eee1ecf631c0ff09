/**
 * EgressSteering with a standby gateway node: gw-1 and gw-2 each bring up their own WireGuard tunnel (their own key),
 * and an agent on each holds the egress role only while its tunnel is healthy (docs/egress-steering.md, "Failover").
 * The App writes hosts/gw-1 and hosts/gw-2.
 */
import { Chart } from 'cdk8s';
import { App, EgressSteering } from 'tunnelwright/cdk8s';

const app = new App();
const peer = { publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '185.236.200.1:51820' };
new EgressSteering(new Chart(app, 'egress'), 'egress', {
  gatewayNode: 'gw-1',
  clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
  namespaces: ['media'],
  tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/run/keys/vpn.key' }, peer },
  failover: {
    standbys: [{ node: 'gw-2', tunnel: { type: 'wireguard', address: '10.2.0.3/32', privateKeyFrom: { file: '/run/keys/vpn-2.key' }, peer } }],
  },
  kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' },
  monitoring: { ruleLabels: { release: 'kube-prometheus-stack' }, kubeStateMetricsValues: { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink,egress-active.tunnelwright.dev/vpn-egress]'] } },
  ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
  acknowledge: ['dns-wan', 'policy-delay', 'ignition-packages'],
});
app.synth();
