import * as pulumi from '@pulumi/pulumi';
import { planWireguardMesh, planWireguardOverlayNode, renderHostArtefacts, ValidationError } from '../../src';
import { failoverSteering, gatewayFor, KEYS, kubeadmHaMesh, nordvpnGateway, prodSteering, siteA, threeNodeMesh } from '../helpers/fixtures';
import { recordResources, settle, valueOf } from '../helpers/pulumi';
import { expectWarnings } from '../helpers/stderr-guard';
import { thrown } from '../helpers/thrown';

const seen = recordResources();
// Loaded after the mocks are in place, as Pulumi's own tests do.
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');
const k8s = require('@pulumi/kubernetes') as typeof import('@pulumi/kubernetes');

beforeEach(() => {
  tw.resetRegistry();
  seen.length = 0;
});

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'Pulumi components EgressSteering with resteerAdmission kyverno registers the re-steer scope as a Kyverno ClusterPolicy and no ValidatingAdmissionPolicy (the default registers the VAP and its binding)': ['clusterCidrs', 'vpnClass', 'tunnel', 'clusterCidrs', 'vpnClass', 'tunnel'],
  'Pulumi components WireguardMesh outputs each node\'s artefacts, secret exactly when they embed a secret (site-c\'s key URL)': ['mtu', 'nodes[0].installK0s', 'nodes[1].installK0s', 'nodes[2].installK0s'],
  'Pulumi components WireguardOverlayNode marks outputs secret exactly when they embed an inline key': ['wireguard[0].nodeAddress'],
  'Pulumi components refuses a second EgressSteering whose objects have the first one\'s names in its cluster, before it registers; distinct names pass': ['clusterCidrs', 'vpnClass', 'clusterCidrs', 'vpnClass', 'clusterCidrs', 'vpnClass'],
  'Pulumi components refuses a second component that writes one node\'s file differently, before it registers': ['mtu', 'nodes[0].installK0s', 'nodes[1].installK0s', 'nodes[2].installK0s'],
  'Pulumi components WireguardMesh with two kubeadm controllers: the first\'s user-data inits at the controlPlaneEndpoint, the second\'s joins, as the core plans them': ['cni'],
});

describe('Pulumi components', () => {
  it('WireguardMesh with two kubeadm controllers: the first\'s user-data inits at the controlPlaneEndpoint, the second\'s joins, as the core plans them', async () => {
    const mesh = new tw.WireguardMesh('ha', kubeadmHaMesh());
    const plan = planWireguardMesh(kubeadmHaMesh());
    for (const node of ['site-a', 'site-b']) expect(await valueOf(mesh.nodes[node].cloudConfig)).toBe(renderHostArtefacts(plan.nodes[node].host).cloudConfig);
    expect(await valueOf(mesh.nodes['site-a'].cloudConfig)).toContain('controlPlaneEndpoint: api.cluster.internal:6443');
    expect(await valueOf(mesh.nodes['site-b'].cloudConfig)).toContain('kind: JoinConfiguration');
  });
  it('WireguardMesh outputs each node\'s artefacts, secret exactly when they embed a secret (site-c\'s key URL)', async () => {
    const mesh = new tw.WireguardMesh('overlay', threeNodeMesh());
    const plan = planWireguardMesh(threeNodeMesh());
    for (const node of ['site-a', 'site-b', 'site-c']) {
      const expected = renderHostArtefacts(plan.nodes[node].host);
      expect(await valueOf(mesh.nodes[node].cloudConfig)).toBe(expected.cloudConfig);
      expect(await valueOf(mesh.nodes[node].ignition)).toBe(expected.ignitionJson);
      // A key URL may carry a token: site-c's artefacts hold it (in a 0600 file) and are secret; the others are not.
      expect(await pulumi.isSecret(mesh.nodes[node].cloudConfig)).toBe(node === 'site-c');
      expect(await pulumi.isSecret(mesh.nodes[node].ignition)).toBe(node === 'site-c');
      // The day-2 file: the interface config alone (it holds no key, so it is not secret).
      const conf = plan.nodes[node].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;
      expect(Object.keys(mesh.nodes[node].wireguardConfigs)).toEqual(['wg0.conf']);
      expect(await valueOf(mesh.nodes[node].wireguardConfigs['wg0.conf'])).toBe(conf);
      expect(await pulumi.isSecret(mesh.nodes[node].wireguardConfigs['wg0.conf'])).toBe(false);
    }
    await settle();
    expect(seen.map((r) => `${r.type} ${r.name}`)).toEqual(['tunnelwright:index:WireguardMesh overlay']);
  });

  it('WireguardOverlayNode marks outputs secret exactly when they embed an inline key', async () => {
    const props = siteA();
    const { privateKeyFrom: _f, ...iface } = props.wireguard[0];
    const warn = jest.spyOn(pulumi.log, 'warn').mockImplementation(() => Promise.resolve());
    const lab = new tw.WireguardOverlayNode('lab', { ...props, node: 'lab-1', installK0s: {}, wireguard: [{ ...iface, privateKey: KEYS.a.privateKey }] });
    expect(warn).toHaveBeenCalledWith('wireguard[0].privateKey: an inline private key ends up in the host artefacts (0600, secret outputs); use privateKeyFrom outside labs', lab);
    expect(JSON.stringify(warn.mock.calls[0][0])).not.toContain(KEYS.a.privateKey);
    warn.mockRestore();
    expect(await pulumi.isSecret(lab.cloudConfig)).toBe(true);
    expect(await pulumi.isSecret(lab.ignition)).toBe(true);
    expect(await pulumi.isSecret(lab.wireguardConfigs['wg0.conf'])).toBe(true);
    const prod = new tw.WireguardOverlayNode('prod', siteA());
    expect(await pulumi.isSecret(prod.cloudConfig)).toBe(false);
    expect(await valueOf(prod.cloudConfig)).toBe(renderHostArtefacts(planWireguardOverlayNode(siteA()).hosts[0]).cloudConfig);
  });

  it('refuses invalid args before registering anything', async () => {
    expect(() => new tw.WireguardOverlayNode('bad', { ...siteA(), node: 'Bad Name' })).toThrow(ValidationError);
    await settle();
    expect(seen).toEqual([]);
  });

  it('refuses a second EgressSteering whose objects have the first one\'s names in its cluster, before it registers; distinct names pass', async () => {
    const { tunnel: _t, enforceLabels: _e, ...base } = prodSteering();
    new tw.EgressSteering('nl', { ...base, acknowledge: ['kube-state-metrics'] });
    expect(() => new tw.EgressSteering('us', { ...base, vpnClass: 'vpn-us', gatewayNode: 'prod-gw-us', acknowledge: ['kube-state-metrics'] })).toThrow(/us:name: CiliumEgressGatewayPolicy vpn-egress in cluster "prod" \(one object: the second to apply replaces the first; set a distinct name on one of them\) is already claimed by nl:name/);
    new tw.EgressSteering('us2', { ...base, name: 'vpn-egress-us', vpnClass: 'vpn-us', gatewayNode: 'prod-gw-us', acknowledge: ['kube-state-metrics'] });
    // In another cluster the same names are other objects.
    new tw.EgressSteering('dev', { ...base, cluster: 'dev', gatewayNode: 'dev-gw', acknowledge: ['kube-state-metrics'] });
    await settle();
    expect(seen.filter((r) => r.type === 'tunnelwright:index:EgressSteering').map((r) => r.name)).toEqual(['nl', 'us2', 'dev']);
  });

  it('EgressSteering with failover outputs every candidate node\'s artefacts, each with its agent, and registers the Lease', async () => {
    const steering = new tw.EgressSteering('egress', { ...failoverSteering(), acknowledge: ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages', 'default-kubeconfig'] });
    expect(Object.keys(steering.nodes)).toEqual(['gw-1', 'gw-2']);
    for (const node of ['gw-1', 'gw-2']) expect(await valueOf(steering.nodes[node].cloudConfig)).toContain('/opt/tunnelwright/bin/egress-failover-agent');
    await settle();
    expect(seen.filter((r) => r.type === 'kubernetes:coordination.k8s.io/v1:Lease').length).toBe(1);
  });

  it('EgressSteering with resteerAdmission kyverno registers the re-steer scope as a Kyverno ClusterPolicy and no ValidatingAdmissionPolicy (the default registers the VAP and its binding)', async () => {
    const ack = { acknowledge: ['kube-state-metrics', 'default-kubeconfig'] as ('kube-state-metrics' | 'default-kubeconfig')[] };
    new tw.EgressSteering('kyv', { ...prodSteering(), ...ack, resteerAdmission: 'kyverno' });
    await settle();
    // The re-steer scope by its name (the steering's own Kyverno ClusterPolicy for the vpn class is another object).
    const kinds = (types: string[]) => seen.filter((r) => types.some((t) => r.type.endsWith(t)) && r.name.endsWith('resteer-scope')).map((r) => r.type.split(':').pop());
    expect(kinds([':ClusterPolicy', ':ValidatingAdmissionPolicy', ':ValidatingAdmissionPolicyBinding'])).toEqual(['ClusterPolicy']);
    tw.resetRegistry();
    seen.length = 0;
    new tw.EgressSteering('vap', { ...prodSteering(), ...ack });
    await settle();
    expect(kinds([':ClusterPolicy', ':ValidatingAdmissionPolicy', ':ValidatingAdmissionPolicyBinding']).sort()).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  });

  it('refuses a second component that writes one node\'s file differently, before it registers', async () => {
    new tw.WireguardMesh('overlay', threeNodeMesh());
    expect(() => new tw.WireguardOverlayNode('extra', siteA())).toThrow(/extra:\/etc\/wireguard\/wg0\.conf: node "site-a": \/etc\/wireguard\/wg0\.conf is also written by overlay with different content/);
    expect(() => new tw.WireguardMesh('overlay', { ...threeNodeMesh(), interfaceName: 'wg9' })).toThrow(/overlay: a tunnelwright component named "overlay" already exists/);
    await settle();
    expect(seen.map((r) => r.name)).toEqual(['overlay']);
  });

  it('emits planned objects as children with derived names, the component as parent and its provider', async () => {
    class Probe extends pulumi.ComponentResource {
      public readonly children: pulumi.CustomResource[];
      public constructor(name: string, opts?: pulumi.ComponentResourceOptions) {
        const plan = { objects: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'vpn' }, data: { a: 'b' } }], hosts: [], values: {}, warnings: [] };
        tw.reserve(name, plan, []);
        super('tunnelwright:index:Probe', name, {}, opts);
        this.children = tw.emitPlan(this, name, plan, opts);
      }
    }
    const provider = new k8s.Provider('cluster', {});
    const probe = new Probe('probe', { provider });
    const urn = await valueOf(probe.children[0].urn);
    await settle();
    expect(urn).toMatch(/tunnelwright:index:Probe\$kubernetes:v1:ConfigMap::probe-configmap-vpn-settings$/);
    const child = seen.find((r) => r.name === 'probe-configmap-vpn-settings')!;
    expect(child.type).toBe('kubernetes:v1:ConfigMap');
    expect(child.inputs).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'vpn' }, data: { a: 'b' } });
    expect(child.provider).toMatch(/::cluster::cluster-id$/);
  });

  it('VpnGateway: a ProtonVPN port-forwarding warning goes to pulumi.log.warn on the component; acknowledged, it does not', () => {
    const { acknowledge: _a, ...unacknowledged } = gatewayFor('protonvpn');
    const warn = jest.spyOn(pulumi.log, 'warn').mockImplementation(() => Promise.resolve());
    try {
      const gw = new tw.VpnGateway('proton', unacknowledged);
      const pmp = warn.mock.calls.filter((c) => String(c[0]).includes('NAT-PMP'));
      expect(pmp.map((c) => [String(c[0]).split(':')[0], c[1]])).toEqual([['wireguardPrivateKeySecret', gw]]);
      warn.mockClear();
      tw.resetRegistry();
      new tw.VpnGateway('proton-read', { ...unacknowledged, acknowledge: ['protonvpn-wireguard-pmp'] });
      expect(warn.mock.calls.filter((c) => String(c[0]).includes('NAT-PMP'))).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  it('takes a Secret\'s name and key made by another resource as Outputs, and registers them resolved', async () => {
    const secret = pulumi.output('made-by-another-stack');
    const key = pulumi.output('wg.key');
    new tw.VpnGateway('elsewhere', { ...nordvpnGateway(), wireguardPrivateKeySecret: { name: secret, key } });
    await settle();
    const deployment = seen.find((r) => r.name === 'elsewhere-deployment-vpn-gateway-vpn-gateway')!;
    const volumes = (deployment.inputs.spec as { template: { spec: { volumes: { name: string; projected?: { sources: { secret: { name: string; items: { key: string }[] } }[] } }[] } } }).template.spec.volumes;
    expect(volumes.find((v) => v.name === 'gluetun-secrets')!.projected!.sources[0].secret).toEqual({ name: 'made-by-another-stack', items: [{ key: 'wg.key', path: 'wireguard_private_key' }] });
    expect(JSON.stringify(seen.map((r) => r.inputs))).not.toContain('tw-input-');
  });

  it('refuses an Output in a prop the checks read, saying it is a Pulumi Output and what to do, and registers nothing; the same value plain registers', async () => {
    const error = thrown(() => new tw.VpnGateway('pending', { ...nordvpnGateway(), vxlanId: pulumi.output(43) as never }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error!.message.split('\n')).toEqual([
      'invalid VpnGateway props at pending:',
      'vxlanId: expected number, received a Pulumi Output, whose value is not known when the component is planned (this prop is checked then): pass a plain value, or create the component inside the Output\'s apply, `output.apply((v) => new Component(name, { ...args, prop: v }))` (`pulumi.all([...]).apply(...)` for several; a preview shows it once the value is known)',
    ]);
    await settle();
    expect(seen).toEqual([]);
    new tw.VpnGateway('plain', { ...nordvpnGateway(), vxlanId: 43 });
    await settle();
    expect(seen.length).toBeGreaterThan(0);
  });
});

describe('Pulumi EgressConformance', () => {
  it('registers the probes and the script\'s ConfigMap as children and exposes the one command; refuses an unnamed namespace', async () => {
    const { homelabConformance } = require('../helpers/fixtures') as typeof import('../helpers/fixtures');
    const { planEgressConformance } = require('../../src') as typeof import('../../src');
    const c = new tw.EgressConformance('check', homelabConformance());
    const plan = planEgressConformance(homelabConformance());
    expect(c.command).toBe((plan.values.egressConformance as { command: string }).command);
    expect(c.egressConformanceScript).toBe((plan.values.egressConformance as { script: string }).script);
    await settle();
    expect(seen.filter((r) => r.type !== 'tunnelwright:index:EgressConformance').map((r) => r.name).sort()).toEqual(plan.objects.map((o) => tw.childName('check', o)).sort());
    expect(() => new tw.EgressConformance('bad', { ...homelabConformance(), namespaces: ['media'] })).toThrow(
      'invalid EgressConformance props at bad:\nvpnGateways[0].gateway.namespace: the gateway\'s namespace (where the check stops gluetun\'s VPN) "vpn-gateway" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)',
    );
  });
});
