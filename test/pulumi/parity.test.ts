import { ApiObject } from 'cdk8s';
import { EgressProbe as Cdk8sEgressProbe, EgressSteering as Cdk8sEgressSteering, KillSwitch as Cdk8sKillSwitch, VpnGateway as Cdk8sVpnGateway } from '../../src/cdk8s';
import { PROVIDERS } from '../../src';
import { gatewayFor, gatewayProbe, prodSteering, qbittorrentKillSwitch, wireguardSteering } from '../helpers/fixtures';
import * as pulumi from '@pulumi/pulumi';
import { cdk8sObjects, pulumiObjects, sortObjects, typeToken } from '../helpers/parity';
import { settle } from '../helpers/pulumi';
import { thrown } from '../helpers/thrown';
import { recordResources } from '../helpers/pulumi';
import { expectWarnings } from '../helpers/stderr-guard';

const seen = recordResources();
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');
const k8s = require('@pulumi/kubernetes') as typeof import('@pulumi/kubernetes');

type Kind = 'Deployment' | 'StatefulSet' | 'DaemonSet';
const workload = (kind: Kind, replicas?: number) => ({
  apiVersion: 'apps/v1',
  kind,
  metadata: { name: 'qbittorrent', namespace: 'media' },
  spec: {
    ...(replicas !== undefined ? { replicas } : {}),
    selector: { matchLabels: { app: 'qbittorrent' } },
    template: { metadata: { labels: { app: 'qbittorrent' } }, spec: { containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] } },
  },
});

beforeEach(() => tw.resetRegistry());

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects nordvpn (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects protonvpn (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects mullvad (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects surfshark (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects ivpn (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects windscribe (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects airvpn (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects fastestvpn (cni undefined)': ['gw:routeTransform(qbittorrent)'],
  // With PIA both adapters warn that the /gluetun claim names no storage class.
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects private internet access (cni undefined)': ['parity/gw: portForwarding.stateClaim.storageClassName', 'portForwarding.stateClaim.storageClassName', 'gw:routeTransform(qbittorrent)'],
  // With PIA both adapters warn that the /gluetun claim names no storage class.
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects custom (cni undefined)': ['parity/gw: portForwarding.stateClaim.storageClassName', 'portForwarding.stateClaim.storageClassName', 'gw:routeTransform(qbittorrent)'],
  'VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects nordvpn (cni cilium)': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: both adapters refuse the same forwarded workload that can run two pods, with the same problems control: both accept the StatefulSet of one replica, and give it the same objects': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway: the forwarded StatefulSet without metadata.name Pulumi: control: name set, accepted': ['gw:routeTransform(qbittorrent)'],
  'VpnGateway with slskd: both adapters put slskd\'s VPN environment on the same container a container without env': ['gw:routeTransform(slskd)'],
  'VpnGateway with slskd: both adapters put slskd\'s VPN environment on the same container env of its own, slskd second': ['gw:routeTransform(slskd)'],
  'EgressSteering: the same objects from both adapters prod': ['parity/steer: clusterCidrs', 'parity/steer: vpnClass', 'parity/steer: tunnel', 'clusterCidrs', 'vpnClass', 'tunnel'],
  'EgressSteering: the same objects from both adapters wireguard': ['parity/steer: clusterCidrs', 'parity/steer: vpnClass', 'parity/steer: ciliumValues', 'parity/steer: kubeconfigFrom', 'parity/steer: tunnel', 'clusterCidrs', 'vpnClass', 'ciliumValues', 'kubeconfigFrom', 'tunnel'],
  'the Pulumi registry marks no output secret when nothing secret is embedded': ['clusterCidrs', 'vpnClass', 'tunnel'],
});

describe('cdk8s and Pulumi register the same Kubernetes objects', () => {
  it.each(['kubernetes', 'cilium'] as const)('KillSwitch (%s)', async (flavor) => {
    const props = { ...qbittorrentKillSwitch(), flavor };
    const fromCdk8s = cdk8sObjects((chart) => new Cdk8sKillSwitch(chart, 'qb', props), 'ignored-chart-namespace');
    const fromPulumi = await pulumiObjects(seen, () => new tw.KillSwitch('qb', props));
    expect(fromPulumi.map((r) => r.parent)).toEqual(['tunnelwright:index:KillSwitch']);
    expect(fromPulumi.map((r) => r.inputs)).toEqual(fromCdk8s);
    expect(fromPulumi.map((r) => r.type)).toEqual(fromCdk8s.map(typeToken));
    expect(fromPulumi.map((r) => r.name)).toEqual([`qb-${String(fromCdk8s[0].kind).toLowerCase()}-media-qbittorrent-kill-switch`]);
  });
});

describe('VpnGateway: cdk8s route() and Pulumi routeTransform() give the same objects', () => {
  it.each([...Object.keys(PROVIDERS).map((p) => [p, undefined] as const), ['nordvpn', 'cilium'] as const])('%s (cni %s)', async (provider, cni) => {
    const props = { ...gatewayFor(provider), ...(cni ? { cni } : {}) };
    // protonvpn's fixture forwards a port to qbittorrent, which must then be a StatefulSet; the others route a Deployment.
    const kind = props.portForwarding?.workload === 'qbittorrent' ? 'StatefulSet' : 'Deployment';
    const fromCdk8s = cdk8sObjects((chart) => {
      const gateway = new Cdk8sVpnGateway(chart, 'gw', props);
      gateway.route(new ApiObject(chart, 'qbittorrent', workload(kind)));
    });
    const fromPulumi = await pulumiObjects(seen, () => {
      const gateway = new tw.VpnGateway('gw', props);
      const { apiVersion: _a, kind: _k, ...args } = workload(kind);
      new k8s.apps.v1[kind]('qbittorrent', args, { transformations: [gateway.routeTransform()] });
      return gateway;
    });
    // The gateway's objects are its children; the route's ConfigMap and kill switch follow the workload (here the
    // program's, with no parent).
    const isRoute = (name: string) => name.startsWith('gw-') && name.includes('-media-qbittorrent-');
    expect(fromPulumi.filter((r) => r.name !== 'qbittorrent').map((r) => `${r.name} ${r.parent}`)).toEqual(fromPulumi.filter((r) => r.name !== 'qbittorrent').map((r) => `${r.name} ${isRoute(r.name) ? 'undefined' : 'tunnelwright:index:VpnGateway'}`));
    expect(fromPulumi.filter((r) => isRoute(r.name)).length).toBeGreaterThanOrEqual(2);
    expect(sortObjects(fromPulumi.map((r) => ({ ...r.inputs, apiVersion: r.inputs.apiVersion ?? 'apps/v1', kind: r.inputs.kind ?? kind })))).toEqual(sortObjects(fromCdk8s));
    expect(fromPulumi.map((r) => r.type).sort()).toEqual(fromCdk8s.map(typeToken).sort());
    expect(fromCdk8s.filter((o) => (o.metadata as { name: string }).name === 'qbittorrent').map((o) => o.kind)).toEqual([kind]);
    // Both adapters take the kill switch's flavour from the core: a CiliumNetworkPolicy under Cilium.
    expect(fromCdk8s.filter((o) => String(o.kind).endsWith('NetworkPolicy')).map((o) => o.kind)).toEqual([cni === 'cilium' ? 'CiliumNetworkPolicy' : 'NetworkPolicy']);
  });
});

describe('VpnGateway: both adapters refuse the same forwarded workload that can run two pods, with the same problems', () => {
  const props = { ...gatewayFor('protonvpn'), portForwarding: { app: 'qbittorrent' as const, workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } };
  const sts = 'make it a StatefulSet with replicas 1 (portForwarding.workload names it; a cdk8s-plus StatefulSet needs a container port or `service`): its controller starts qbittorrent-0 again only once the old pod is gone';
  const problemsOf = (f: () => unknown) => (thrown(f) as { problems?: unknown }).problems;
  it.each<[string, Kind, number | undefined, { path: string; code: string; message: string }[]]>([
    ['a Deployment', 'Deployment', 1, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a Deployment: its ReplicaSet starts the replacement pod as soon as the old one is terminating (a pod delete, a drain, an eviction; \`Recreate\` covers rollouts only), and both hold the one fixed VXLAN address until the old one is killed, since pod-gateway's sidecar ignores SIGTERM; ${sts}` }]],
    ['a DaemonSet', 'DaemonSet', undefined, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a DaemonSet: it runs a pod on every node it fits, and each would take the one fixed VXLAN address; ${sts}` }]],
    ['a StatefulSet of 2 replicas', 'StatefulSet', 2, [{ path: 'route.replicas', code: 'two-pods', message: 'the port-forwarding workload media/qbittorrent has 2 replicas: they would all take the one fixed VXLAN address and one forwarded port; set replicas to 1' }]],
  ])('%s', async (_n, kind, replicas, problems) => {
    const fromCdk8s = problemsOf(() => cdk8sObjects((chart) => new Cdk8sVpnGateway(chart, 'gw', props).route(new ApiObject(chart, 'qbittorrent', workload(kind, replicas)))));
    const gateway = new tw.VpnGateway('gw', props);
    const { apiVersion: _a, kind: _k, ...args } = workload(kind, replicas);
    const fromPulumi = problemsOf(() => new k8s.apps.v1[kind]('qbittorrent', args, { transformations: [gateway.routeTransform()] }));
    expect(fromCdk8s).toEqual(problems);
    expect(fromPulumi).toEqual(problems);
    await settle(); // the gateway's own objects, registered before the refusal, reach the mocks within this test
  });

  it('control: both accept the StatefulSet of one replica, and give it the same objects', async () => {
    const fromCdk8s = cdk8sObjects((chart) => new Cdk8sVpnGateway(chart, 'gw', props).route(new ApiObject(chart, 'qbittorrent', workload('StatefulSet', 1))));
    const fromPulumi = await pulumiObjects(seen, () => {
      const gateway = new tw.VpnGateway('gw', props);
      const { apiVersion: _a, kind: _k, ...args } = workload('StatefulSet', 1);
      new k8s.apps.v1.StatefulSet('qbittorrent', args, { transformations: [gateway.routeTransform()] });
      return gateway;
    });
    expect(sortObjects(fromPulumi.map((r) => ({ ...r.inputs, apiVersion: r.inputs.apiVersion ?? 'apps/v1', kind: r.inputs.kind ?? 'StatefulSet' })))).toEqual(sortObjects(fromCdk8s));
    expect(fromCdk8s.map((o) => o.kind)).toContain('StatefulSet');
  });
});

describe('VpnGateway: the forwarded StatefulSet without metadata.name', () => {
  const props = { ...gatewayFor('protonvpn'), portForwarding: { app: 'qbittorrent' as const, workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } };
  const named = (name?: string) => {
    const { apiVersion: _a, kind: _k, ...rest } = workload('StatefulSet', 1);
    return { ...rest, metadata: { namespace: 'media', ...(name !== undefined ? { name } : {}) } };
  };
  const refusal = [{ path: 'routeTransform(qbittorrent).metadata.name', code: 'name', message: 'StatefulSet qbittorrent is the port-forwarding workload and has no metadata.name: Pulumi would auto-name it qbittorrent-<random suffix>, so its pod would not be qbittorrent-<ordinal> and vpn-route-init\'s hostname guard would refuse it forever; set metadata.name explicitly' }];
  it.each<[string, string | undefined, unknown]>([
    ['name unset: refused (before: accepted, and the guard expected qbittorrent-0 of a pod Pulumi names qbittorrent-<hex>-0)', undefined, refusal],
    ['name empty: refused', '', refusal],
    ['control: name set, accepted', 'qbittorrent', undefined],
  ])('Pulumi: %s', async (_n, name, expected) => {
    const gateway = new tw.VpnGateway('gw', props);
    let error: unknown;
    try {
      new k8s.apps.v1.StatefulSet('qbittorrent', named(name), { transformations: [gateway.routeTransform()] });
    } catch (e) {
      error = e;
    }
    expect((error as { problems?: unknown } | undefined)?.problems).toEqual(expected);
    await settle();
  });
});

describe('VpnGateway: a routed workload without metadata.namespace', () => {
  const props = { ...gatewayFor('protonvpn'), portForwarding: { app: 'qbittorrent' as const, workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } };
  const noNamespace = (kind: Kind, namespace?: string) => {
    const { apiVersion: _a, kind: _k, metadata, ...rest } = workload(kind, 1);
    return { ...rest, metadata: { name: metadata.name, ...(namespace !== undefined ? { namespace } : {}) } };
  };
  const refusal = (kind: Kind) => [{ path: 'routeTransform(qbittorrent).metadata.namespace', code: 'namespace', message: `${kind} qbittorrent has no metadata.namespace: it would go to the provider's or the kubeconfig context's namespace, which a transform cannot read, while its client ConfigMap and kill switch need theirs; set metadata.namespace explicitly` }];
  it.each<[string, Kind, string | undefined]>([
    ['the forwarded StatefulSet, namespace unset', 'StatefulSet', undefined],
    ['the forwarded StatefulSet, namespace empty', 'StatefulSet', ''],
    ['a Deployment that forwards nothing, namespace unset', 'Deployment', undefined],
  ])('Pulumi refuses %s (before: its ConfigMap and kill switch went to default)', async (_n, kind, namespace) => {
    const gateway = new tw.VpnGateway('gw', props);
    const error = thrown(() => new k8s.apps.v1[kind]('qbittorrent', noNamespace(kind, namespace), { transformations: [gateway.routeTransform()] }));
    expect((error as { problems?: unknown }).problems).toEqual(refusal(kind));
    await settle();
  });

  it('cdk8s differs: it reads the chart\'s namespace (visible at synth), so the forwarded StatefulSet is routed into media', () => {
    const objects = cdk8sObjects((chart) => new Cdk8sVpnGateway(chart, 'gw', props).route(new ApiObject(chart, 'qbittorrent', { apiVersion: 'apps/v1', kind: 'StatefulSet', ...noNamespace('StatefulSet') })), 'media');
    const route = objects.find((o) => (o as { metadata: { name: string } }).metadata.name === 'qbittorrent-vpn-route') as { metadata: { namespace: string }; data: Record<string, string> };
    expect(route.metadata.namespace).toBe('media');
    expect(route.data['nat.conf']).toContain('\nqbittorrent 5\n');
  });
});

describe('VpnGateway with slskd: both adapters put slskd\'s VPN environment on the same container', () => {
  const props = { ...gatewayFor('protonvpn'), portForwarding: { app: 'slskd' as const, workload: 'slskd', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } };
  const slskd = (containers: { name: string; image: string; env?: { name: string; value: string }[] }[]) => ({
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'slskd', namespace: 'media' },
    spec: { selector: { matchLabels: { app: 'slskd' } }, template: { metadata: { labels: { app: 'slskd' } }, spec: { containers } } },
  });
  it.each([
    ['a container without env', [{ name: 'slskd', image: 'slskd/slskd:0.26.0' }], undefined],
    ['env of its own, slskd second', [{ name: 'exporter', image: 'e' }, { name: 'slskd', image: 'slskd/slskd:0.26.0', env: [{ name: 'SLSKD_SLSK_USERNAME', value: 'me' }] }], 'slskd'],
  ])('%s', async (_n, containers, appContainer) => {
    const p = { ...props, portForwarding: { ...props.portForwarding, ...(appContainer ? { appContainer } : {}) } };
    const fromCdk8s = cdk8sObjects((chart) => {
      new Cdk8sVpnGateway(chart, 'gw', p).route(new ApiObject(chart, 'slskd', slskd(structuredClone(containers))));
    });
    const fromPulumi = await pulumiObjects(seen, () => {
      const gateway = new tw.VpnGateway('gw', p);
      const { apiVersion: _a, kind: _k, ...args } = slskd(structuredClone(containers));
      new k8s.apps.v1.StatefulSet('slskd', args, { transformations: [gateway.routeTransform()] });
      return gateway;
    });
    expect(sortObjects(fromPulumi.map((r) => ({ ...r.inputs, apiVersion: r.inputs.apiVersion ?? 'apps/v1', kind: r.inputs.kind ?? 'StatefulSet' })))).toEqual(sortObjects(fromCdk8s));
    const routed = fromCdk8s.find((o) => o.kind === 'StatefulSet' && (o.metadata as { name: string }).name === 'slskd') as unknown as { spec: { template: { spec: { containers: { name: string; env?: { name: string; valueFrom?: unknown }[] }[] } } } };
    const cs = routed.spec.template.spec.containers;
    expect(cs.map((c) => c.name)).toEqual([...containers.map((c) => c.name), 'vpn-route-sidecar']);
    const app = cs.find((c) => c.name === 'slskd')!;
    expect(app.env!.map((e) => e.name)).toEqual([...(appContainer ? ['SLSKD_SLSK_USERNAME'] : []), 'SLSKD_VPN', 'SLSKD_VPN_PORT_FORWARDING', 'SLSKD_VPN_GLUETUN_URL', 'SLSKD_VPN_GLUETUN_API_KEY']);
    expect(app.env!.find((e) => e.name === 'SLSKD_VPN_GLUETUN_API_KEY')!.valueFrom).toEqual({ secretKeyRef: { name: 'gluetun-control', key: 'api-key' } });
    expect(cs.filter((c) => c.name !== 'slskd').every((c) => !(c.env ?? []).some((e) => e.name.startsWith('SLSKD_VPN')))).toBe(true);
  });
});

describe('EgressSteering: the same objects from both adapters', () => {
  it.each([['prod', prodSteering()], ['wireguard', wireguardSteering()]])('%s', async (_n, props) => {
    const fromCdk8s = cdk8sObjects((chart) => new Cdk8sEgressSteering(chart, 'steer', props), 'a-chart-namespace');
    const fromPulumi = await pulumiObjects(seen, () => new tw.EgressSteering('steer', props));
    expect(fromPulumi.map((r) => r.parent)).toEqual(fromPulumi.map(() => 'tunnelwright:index:EgressSteering'));
    expect(sortObjects(fromPulumi.map((r) => r.inputs))).toEqual(sortObjects(fromCdk8s));
    expect(fromPulumi.map((r) => r.type).sort()).toEqual(fromCdk8s.map(typeToken).sort());
  });
});

describe('EgressProbe: the same objects from both adapters', () => {
  it.each([
    ['through a gateway', gatewayProbe()],
    ['for a steering class', { ...gatewayProbe(), via: { egressSteering: {} } }],
    ['for a steering class, over IPv6 too', { ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true, vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'] }],
  ])('%s', async (_n, props) => {
    const fromCdk8s = cdk8sObjects((chart) => new Cdk8sEgressProbe(chart, 'probe', props));
    const fromPulumi = await pulumiObjects(seen, () => new tw.EgressProbe('probe', props));
    expect(fromPulumi.map((r) => r.parent)).toEqual(fromPulumi.map(() => 'tunnelwright:index:EgressProbe'));
    expect(sortObjects(fromPulumi.map((r) => r.inputs))).toEqual(sortObjects(fromCdk8s));
    expect(fromPulumi.map((r) => r.type).sort()).toEqual(fromCdk8s.map(typeToken).sort());
  });

  it('both refuse an IPv6 probe of a steering class without an IPv6 range', () => {
    const props = { ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true };
    const message = 'vpnCidrs: expected an IPv6 range in vpnCidrs with ipv6 (the tunnel\'s IPv6 egress range, such as 2a03:1b20::/32)';
    expect(() => cdk8sObjects((chart) => new Cdk8sEgressProbe(chart, 'probe', props))).toThrow(message);
    expect(() => new tw.EgressProbe('probe6', props)).toThrow(message);
  });
});

describe('the Pulumi registry', () => {
  it('refuses a second gateway with the same VXLAN id in a cluster before it registers anything', async () => {
    const before = seen.length;
    new tw.VpnGateway('us', { ...gatewayFor('nordvpn'), name: 'us' });
    expect(() => new tw.VpnGateway('eu', { ...gatewayFor('mullvad'), name: 'eu' })).toThrow('eu:vxlanId: VXLAN id 42 (the default) in cluster "default" is already claimed by us:vxlanId: set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own');
    await settle();
    expect(seen.slice(before).some((r) => r.name === 'eu' || r.name.startsWith('eu-'))).toBe(false);
  });

  it('marks no output secret when nothing secret is embedded', async () => {
    const steering = new tw.EgressSteering('steer', prodSteering());
    expect(await pulumi.isSecret(steering.cloudConfig)).toBe(false);
    expect(await pulumi.isSecret(steering.ignition)).toBe(false);
  });
});
