import * as pulumi from '@pulumi/pulumi';
import { nordvpnGateway, qbittorrentKillSwitch } from '../helpers/fixtures';
import { recordRequests, recordResources, settle, valueOf } from '../helpers/pulumi';

const seen = recordResources();
const requests = recordRequests();
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');
const k8s = require('@pulumi/kubernetes') as typeof import('@pulumi/kubernetes');

const deployment = (namespace = 'media') => ({
  metadata: { name: 'qbittorrent', namespace },
  spec: {
    selector: { matchLabels: { app: 'qbittorrent' } },
    template: { metadata: { labels: { app: 'qbittorrent' } }, spec: { containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] } },
  },
});

class Apps extends pulumi.ComponentResource {
  public constructor(name: string, opts?: pulumi.ComponentResourceOptions) {
    super('test:index:Apps', name, {}, opts);
  }
}

const urnOf = (r: pulumi.Resource) => valueOf(r.urn);
const providerRef = async (p: pulumi.ProviderResource) => `${await urnOf(p)}::${await valueOf(p.id)}`;
let warn: jest.SpyInstance;

beforeEach(() => {
  tw.resetRegistry();
  seen.length = 0;
  requests.length = 0;
  warn = jest.spyOn(pulumi.log, 'warn').mockImplementation(() => Promise.resolve());
});
afterEach(() => warn.mockRestore());

/** The pod-security and duplicate-kill-switch lines logged, as one string each. */
const warned = (): string[] => warn.mock.calls.map((c) => String(c[0]));

describe('Pulumi routeTransform(): the route\'s objects follow their workload', () => {
  it('take the workload\'s parent, the provider it inherits from that parent and its dependsOn; the gateway\'s own objects keep the gateway\'s provider (control)', async () => {
    const gatewayCluster = new k8s.Provider('gateway-cluster', {});
    const appsCluster = new k8s.Provider('apps-cluster', {});
    const gateway = new tw.VpnGateway('gw', nordvpnGateway(), { provider: gatewayCluster });
    const ns = new k8s.core.v1.Namespace('media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }, { provider: appsCluster, transformations: [tw.registerNamespaces()] });
    const apps = new Apps('apps', { providers: [appsCluster] });
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { parent: apps, dependsOn: [ns], transformations: [gateway.routeTransform()] });
    await settle();
    const byName = (n: string) => requests.find((r) => r.name === n)!;
    const routeObjects = ['gw-configmap-media-qbittorrent-vpn-route', 'gw-networkpolicy-media-qbittorrent-vpn-kill-switch'];
    for (const name of routeObjects) {
      expect(byName(name).parent).toBe(await urnOf(apps));
      expect(byName(name).provider).toBe(await providerRef(appsCluster));
      expect(byName(name).dependencies).toEqual([await urnOf(ns)]);
      // Their former parent, as an alias: a stack made before keeps them.
      expect(byName(name).aliases).toEqual([{ parentUrn: await urnOf(gateway) }]);
    }
    // The workload itself, as the mocks saw it: the same parent, provider and dependencies, and after the route's
    // ConfigMap, which its pods read at start (the provider replaces a changed ConfigMap: delete, then create).
    const urnNamed = (n: string) => expect.stringMatching(new RegExp(`^urn:pulumi:.*::${n}$`));
    expect(byName('qbittorrent')).toMatchObject({ parent: await urnOf(apps), provider: await providerRef(appsCluster), dependencies: [await urnOf(ns), urnNamed('gw-configmap-media-qbittorrent-vpn-route')] });
    // The gateway after its settings ConfigMap; its Service and ConfigMap after nothing (control).
    expect(byName('gw-deployment-vpn-gateway-vpn-gateway')).toMatchObject({ parent: await urnOf(gateway), provider: await providerRef(gatewayCluster), dependencies: [urnNamed('gw-configmap-vpn-gateway-vpn-gateway-settings')] });
    expect(byName('gw-service-vpn-gateway-vpn-gateway').dependencies).toEqual([]);
    expect(byName('gw-configmap-vpn-gateway-vpn-gateway-settings').dependencies).toEqual([]);
    expect(warned()).toEqual([]);
  });

  it.each<[string, (ns: InstanceType<typeof k8s.core.v1.Namespace>) => pulumi.CustomResourceOptions['dependsOn']]>([
    ['one resource', (ns) => ns],
    ['an Output of a list', (ns) => pulumi.output([ns])],
    ['nothing', () => undefined],
  ])('the workload waits for the route\'s ConfigMap besides its own dependsOn given as %s', async (_, given) => {
    const gateway = new tw.VpnGateway('gw', nordvpnGateway());
    const ns = new k8s.core.v1.Namespace('media', { metadata: { name: 'media' } });
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { dependsOn: given(ns), transformations: [gateway.routeTransform()] });
    await settle();
    const own = given(ns) === undefined ? [] : [await urnOf(ns)];
    expect(requests.find((r) => r.name === 'qbittorrent')!.dependencies).toEqual([...own, expect.stringMatching(/::gw-configmap-media-qbittorrent-vpn-route$/)]);
  });

  it('take the workload\'s own provider when it names one, and no parent when it has none', async () => {
    const gatewayCluster = new k8s.Provider('gateway-cluster', {});
    const appsCluster = new k8s.Provider('apps-cluster', {});
    const gateway = new tw.VpnGateway('gw', nordvpnGateway(), { provider: gatewayCluster });
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { provider: appsCluster, transformations: [gateway.routeTransform()] });
    await settle();
    const cm = requests.find((r) => r.name === 'gw-configmap-media-qbittorrent-vpn-route')!;
    expect(cm).toMatchObject({ parent: '', provider: await providerRef(appsCluster), dependencies: [], aliases: [{ parentUrn: await urnOf(gateway) }] });
    expect(seen.map((r) => r.name)).toContain('gw-networkpolicy-media-qbittorrent-vpn-kill-switch');
  });
});

const NEED = 'the routed Deployment media/qbittorrent at Pod Security level privileged (container vpn-route-init adds NET_ADMIN, NET_RAW)';

describe('Pulumi Pod Security: the program\'s Namespaces, declared through registerNamespaces()', () => {
  it.each([
    ['declared with the level the routed pods need', { 'pod-security.kubernetes.io/enforce': 'privileged' }, []],
    ['declared with a level that rejects them', { 'pod-security.kubernetes.io/enforce': 'baseline' }, ['gw:routeTransform(qbittorrent): namespace media enforces baseline, which rejects the routed Deployment media/qbittorrent (container vpn-route-init adds NET_ADMIN, NET_RAW): label it pod-security.kubernetes.io/enforce=privileged']],
    ['declared without an enforce label', { team: 'media' }, ['gw:routeTransform(qbittorrent): namespace media sets no enforce level: the cluster\'s default decides whether the routed Deployment media/qbittorrent is admitted (it needs privileged: container vpn-route-init adds NET_ADMIN, NET_RAW); label it pod-security.kubernetes.io/enforce=privileged']],
    ['not declared (the control: the warning as before)', undefined, [`gw:routeTransform(qbittorrent): namespace media is not in this app: it must admit ${NEED}; label it pod-security.kubernetes.io/enforce=privileged`]],
  ])('a routed workload\'s namespace %s', async (_n, labels, expected) => {
    if (labels) new k8s.core.v1.Namespace('media', { metadata: { name: 'media', labels } }, { transformations: [tw.registerNamespaces()] });
    const gateway = new tw.VpnGateway('gw', nordvpnGateway());
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { transformations: [gateway.routeTransform()] });
    await settle();
    expect(warned()).toEqual(expected);
  });

  it('a Namespace without the transformation is not seen (the control on registerNamespaces), nor one declared after the workload', async () => {
    new k8s.core.v1.Namespace('media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
    const gateway = new tw.VpnGateway('gw', nordvpnGateway());
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { transformations: [gateway.routeTransform()] });
    new k8s.apps.v1.Deployment('sonarr', { ...deployment('downloads'), metadata: { name: 'sonarr', namespace: 'downloads' } }, { transformations: [gateway.routeTransform()] });
    new k8s.core.v1.Namespace('downloads', { metadata: { name: 'downloads', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }, { transformations: [tw.registerNamespaces()] });
    await settle();
    expect(warned()).toEqual([
      `gw:routeTransform(qbittorrent): namespace media is not in this app: it must admit ${NEED}; label it pod-security.kubernetes.io/enforce=privileged`,
      'gw:routeTransform(sonarr): namespace downloads is not in this app: it must admit the routed Deployment downloads/sonarr at Pod Security level privileged (container vpn-route-init adds NET_ADMIN, NET_RAW); label it pod-security.kubernetes.io/enforce=privileged',
    ]);
    expect([...tw.declaredNamespaces().keys()]).toEqual(['vpn-gateway', 'downloads']);
  });

  it('a parent\'s transformations cover its Namespaces; the gateway\'s own namespace, left to the program (createNamespace: false), is read the same way', async () => {
    const apps = new Apps('apps', { transformations: [tw.registerNamespaces()] });
    new k8s.core.v1.Namespace('vpn', { metadata: { name: 'vpn-gateway', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }, { parent: apps });
    new k8s.core.v1.Namespace('media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }, { parent: apps });
    const gateway = new tw.VpnGateway('gw', { ...nordvpnGateway(), createNamespace: false });
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { transformations: [gateway.routeTransform()] });
    // Control: a second gateway in a namespace nobody declares warns.
    new tw.VpnGateway('gw2', { ...nordvpnGateway(), name: 'gw2', namespace: 'vpn-two', vxlanId: 43, createNamespace: false });
    await settle();
    expect(warned()).toHaveLength(1);
    expect(warned()[0]).toMatch(/^gw2:.*namespace vpn-two is not in this app: it must admit /);
  });
});

describe('a KillSwitch that duplicates the one a route writes', () => {
  const lanOnly = { selector: { app: 'qbittorrent' }, namespace: 'media', allowCidrs: ['10.1.0.0/16', '10.152.183.0/24', '192.168.1.0/24'] };
  const message = 'lan-only:selector: this KillSwitch selects the pods of media/qbittorrent, which gw routes and already fences with its kill switch media/qbittorrent-vpn-kill-switch: policies add up, so this one can only widen what those pods may reach; remove it or narrow its selector, or acknowledge \'duplicate-kill-switch\' if you mean both';
  it.each([
    ['declared after the route', lanOnly, 'after', [message]],
    ['declared before the route', lanOnly, 'before', [message]],
    ['acknowledged', { ...lanOnly, acknowledge: ['duplicate-kill-switch' as const] }, 'after', []],
    ['in another namespace (control)', { ...lanOnly, namespace: 'downloads' }, 'after', []],
    ['selecting a label the routed pods lack (control)', { ...lanOnly, selector: { app: 'qbittorrent', tier: 'lan' } }, 'after', []],
  ])('%s', async (_n, props, when, expected) => {
    new k8s.core.v1.Namespace('media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }, { transformations: [tw.registerNamespaces()] });
    if (when === 'before') new tw.KillSwitch('lan-only', props);
    const gateway = new tw.VpnGateway('gw', nordvpnGateway());
    new k8s.apps.v1.Deployment('qbittorrent', deployment(), { transformations: [gateway.routeTransform()] });
    if (when === 'after') new tw.KillSwitch('lan-only', props);
    await settle();
    expect(warned()).toEqual(expected);
  });

  it('refuses an unknown acknowledgement', () => {
    expect(() => new tw.KillSwitch('ks', { ...qbittorrentKillSwitch(), host: undefined, acknowledge: ['duplicate' as never] })).toThrow('acknowledge[0]');
  });
});
