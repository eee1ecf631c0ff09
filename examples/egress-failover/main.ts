/**
 * EgressSteering with a standby gateway node: gw-1 and gw-2 each bring up their own WireGuard tunnel (their own key),
 * and an agent on each holds the egress role only while its tunnel is healthy (docs/egress-steering.md, "Failover").
 * The App writes hosts/gw-1 and hosts/gw-2. EgressConformance proves the failover once on the cluster (its R5 step,
 * docs/egress-conformance.md): it stops the holder's tunnel, and vpn-class egress must come back through the standby
 * within failoverSeconds with no vpn-class packet counted on either node's WAN.
 */
import { ApiObject, Chart } from 'cdk8s';
import { App, EgressConformance, EgressSteering } from 'tunnelwright/cdk8s';

const app = new App();
const peer = { publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '185.236.200.1:51820' };
const chart = new Chart(app, 'egress');
const steering = new EgressSteering(chart, 'egress', {
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
// The check's node agents are privileged (hostPID, hostNetwork): their namespace must allow it.
new ApiObject(chart, 'media', {
  apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
});
new EgressConformance(chart, 'conformance', {
  namespaces: ['media'],
  destructive: true,
  targets: ['https://ifconfig.me/ip'],
  wanIps: ['203.0.113.7'],
  vpnCidrs: ['185.236.200.0/22'],
  egressSteerings: [{ steering, probeNamespace: 'media', failoverSeconds: 60 }],
});
app.synth();
