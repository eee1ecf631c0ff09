// A user's unit test of a cdk8s chart, with Node's own test runner (no jest), against the installed package:
// `node --test user-unit-test.js`. tunnelwright/testing finds the schemas the package ships; nothing is configured.
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Chart, Testing } = require('cdk8s');
const { EgressSteering, KillSwitch, WireguardMesh } = require('tunnelwright/cdk8s');
const { checkCloudConfig, checkIgnition, checkKubeObjects } = require('tunnelwright/testing');

test('the egress chart synthesizes objects that their schemas accept', () => {
  const chart = new Chart(Testing.app(), 'egress');
  new EgressSteering(chart, 'egress', {
    cluster: 'prod',
    gatewayNode: 'prod-gw',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    lanCidrs: ['192.168.20.0/24'],
    namespaces: ['media'],
    enforceLabels: { namespaces: ['media'] },
    monitoring: { ruleLabels: { release: 'kube-prometheus-stack' } },
    kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' },
    tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/pia/pia.ovpn' }, credentialsFrom: { file: '/etc/openvpn/pia/credentials' }, remote: 'nl-amsterdam.privacy.network:1198' },
    ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
    acknowledge: ['dns-wan', 'policy-delay'],
  });
  new KillSwitch(chart, 'lan-only', { selector: { app: 'lan-only' }, namespace: 'media', allowCidrs: ['10.42.0.0/16'], flavor: 'cilium' });
  const objects = Testing.synth(chart);
  const kinds = new Set(objects.map((o) => o.kind));
  for (const kind of ['CiliumEgressGatewayPolicy', 'CiliumNetworkPolicy', 'ClusterPolicy', 'PrometheusRule']) assert.ok(kinds.has(kind), `the chart has a ${kind}`);
  assert.deepEqual(checkKubeObjects(objects), []);
});

test('the overlay node\'s cloud-config and Ignition pass their schemas', () => {
  const mesh = new WireguardMesh(new Chart(Testing.app(), 'overlay'), 'mesh', {
    network: '10.10.0.0/24',
    listenPort: 51820,
    nodes: [
      { node: 'a', address: '10.10.0.1', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: { file: '/run/keys/wg0.key' } },
      { node: 'b', address: '10.10.0.2', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: { file: '/run/keys/wg0.key' } },
    ],
  });
  assert.deepEqual(checkCloudConfig(mesh.nodes.a.cloudConfig), []);
  assert.deepEqual(checkIgnition(mesh.nodes.a.ignition), []);
});

test('the checks really read the schemas: a misspelt field fails each of them', () => {
  assert.deepEqual(checkCloudConfig('#cloud-config\nwrite_filez: []\n'), ['/: must NOT have additional properties (write_filez)']);
  assert.deepEqual(checkIgnition({ ignition: { version: '3.4.0' }, storage: { filez: [] } }), ['/storage: must NOT have additional properties (filez)']);
  const rule = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'r', namespace: 'media' }, spec: { groupz: [] } };
  assert.deepEqual(checkKubeObjects([rule]), ['PrometheusRule/r: /spec: must NOT have additional properties (groupz)']);
});
