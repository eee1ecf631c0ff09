import { createHash } from 'node:crypto';
import { Construct } from 'constructs';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiObject, App as CdkApp, Chart, JsonPatch, Testing } from 'cdk8s';
import { parseAllDocuments } from 'yaml';
import * as kplus from 'cdk8s-plus-28';
import { ValidationError } from '../../src';
import { App, KillSwitch, VpnGateway } from '../../src/cdk8s';
import { gatewayFor, nordvpnGateway } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';

const app = () => new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'tw-gw-')) });

function qbittorrent(chart: Chart): ApiObject {
  return new ApiObject(chart, 'qbittorrent', {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'qbittorrent', namespace: 'media' },
    spec: {
      selector: { matchLabels: { app: 'qbittorrent' } },
      template: { metadata: { labels: { app: 'qbittorrent' } }, spec: { initContainers: [{ name: 'fix-perms', image: 'busybox:1.36' }], containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] } },
    },
  });
}

describe('cdk8s VpnGateway', () => {
  it('routes a Deployment: client init container first, sidecar, DNS, settings and kill switch', () => {
    const chart = new Chart(app(), 'media');
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    gateway.route(qbittorrent(chart));
    const objects = chart.toJson() as { kind: string; metadata: { name: string; namespace?: string }; spec?: { template?: { spec: Record<string, unknown> } } }[];
    expect(objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'Namespace undefined/vpn-gateway',
      'ConfigMap vpn-gateway/vpn-gateway-settings',
      'Service vpn-gateway/vpn-gateway',
      'Deployment vpn-gateway/vpn-gateway',
      // The route's objects are the workload's children: written after it, in its chart.
      'Deployment media/qbittorrent',
      'ConfigMap media/qbittorrent-vpn-route',
      'NetworkPolicy media/qbittorrent-vpn-kill-switch',
    ]);
    const spec = objects[4].spec!.template!.spec as { initContainers: { name: string }[]; containers: { name: string }[]; dnsPolicy: string; volumes: { name: string }[] };
    expect(spec.initContainers.map((c) => c.name)).toEqual(['vpn-route-init', 'fix-perms']);
    expect(spec.containers.map((c) => c.name)).toEqual(['qbittorrent', 'vpn-route-sidecar']);
    expect(spec.dnsPolicy).toBe('None');
    expect(spec.volumes.map((v) => v.name)).toEqual(['vpn-gateway-client']);
  });

  it('routes a cdk8s-plus Deployment through its ApiObject', () => {
    const chart = new Chart(app(), 'media', { namespace: 'media' });
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const sonarr = new kplus.Deployment(chart, 'sonarr', { containers: [{ image: 'lscr.io/linuxserver/sonarr:4.0.11', portNumber: 8989, securityContext: { ensureNonRoot: false } }] });
    gateway.route(sonarr);
    const objects = chart.toJson() as { kind: string; metadata: { name: string }; data?: Record<string, string>; spec: { template: { metadata?: { annotations?: Record<string, string> }; spec: { initContainers: { name: string; env?: unknown[] }[] } } } }[];
    const routed = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.startsWith('media-sonarr'))!;
    expect(routed.spec.template.spec.initContainers.map((c) => c.name)).toEqual(['vpn-route-init']);
    // What the pod reads at start, hashed on the route's init container: a changed client ConfigMap rolls Sonarr.
    const client = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-vpn-route'))!;
    expect(routed.spec.template.spec.initContainers[0].env).toEqual([{ name: 'TUNNELWRIGHT_CONFIG_HASH', value: createHash('sha256').update(JSON.stringify([`media/${client.metadata.name}`, Object.entries(client.data!).sort(), []])).digest('hex') }]);
    const gw = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'vpn-gateway')!;
    expect(gw.spec.template.metadata!.annotations!['tunnelwright.dev/config-hash']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses to route a kind that has no pods of its own', () => {
    const chart = new Chart(app(), 'media');
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const cm = new ApiObject(chart, 'cm', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    expect(() => gateway.route(cm)).toThrow('invalid VpnGateway route at media/gateway:\nroute(workload): expected a Deployment, StatefulSet, DaemonSet, received a ConfigMap (media/cm)');
  });

  it.each([
    ['undefined', undefined, 'expected an ApiObject of kind Deployment, StatefulSet, DaemonSet (or a cdk8s-plus workload), received undefined'],
    ['a construct without an ApiObject', 'construct', 'expected an ApiObject of kind Deployment, StatefulSet, DaemonSet (or a cdk8s-plus workload), received a construct without an ApiObject'],
    ['a Deployment without spec', 'nospec', 'expected media/bare to have spec.template.spec.containers: a workload without a pod template cannot be routed'],
  ])('refuses %s with a ValidationError, never a TypeError', (_name, what, message) => {
    const chart = new Chart(app(), 'media');
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const workload = what === 'construct' ? new Construct(chart, 'plain') : what === 'nospec' ? new ApiObject(chart, 'bare', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'bare' } }) : undefined;
    const error = thrown(() => gateway.route(workload as never));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems).toEqual([{ path: 'route(workload)', code: 'workload', message }]);
  });

  it('refuses two gateways with one VXLAN id in a cluster, and one key Secret in two gateways, before writing anything', () => {
    const a = app();
    const chart = new Chart(a, 'vpn');
    new VpnGateway(chart, 'us', { ...nordvpnGateway(), name: 'us', serverCountries: ['United States'] });
    new VpnGateway(chart, 'eu', { ...nordvpnGateway(), name: 'eu' });
    const error = thrown(() => a.synth());
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems).toEqual([
      { path: 'vpn/eu:vxlanId', code: 'claimed-twice', message: 'VXLAN id 42 (the default) in cluster "default" is already claimed by vpn/us:vxlanId: set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' },
      { path: 'vpn/eu:wireguardPrivateKeySecret', code: 'claimed-twice', message: 'WireGuard key vpn-gateway/nordvpn-wireguard (a key used by two gateways steals the session) is already claimed by vpn/us:wireguardPrivateKeySecret: give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' },
    ]);
    expect(fs.readdirSync(a.outdir)).toEqual([]);
  });

  it('control: two gateways, each with a VXLAN id and a key Secret of its own, pass', () => {
    const a = app();
    const chart = new Chart(a, 'vpn');
    new VpnGateway(chart, 'us', { ...nordvpnGateway(), name: 'us', serverCountries: ['United States'] });
    new VpnGateway(chart, 'eu', { ...nordvpnGateway(), name: 'eu', vxlanId: 43, wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-eu' } });
    expect(a.checkHosts().problems).toEqual([]);
  });

  it('accepts the same VXLAN id in two clusters', () => {
    const a = app();
    const chart = new Chart(a, 'vpn');
    new VpnGateway(chart, 'dev', { ...nordvpnGateway(), cluster: 'dev' });
    new VpnGateway(chart, 'prod', { ...nordvpnGateway(), cluster: 'prod' });
    expect(a.checkHosts().problems).toEqual([]);
  });
});

/** The objects of an app's manifests in the order cdk8s writes them (charts in dependency order, then each chart's). */
function written(a: App): string[] {
  return parseAllDocuments(a.synthYaml()).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } }).map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`);
}

const media = (chart: Chart) => new ApiObject(chart, 'media-ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });

describe('route()\'s objects follow their workload', () => {
  /** An app with the gateway, the routed workload, then the Namespace declared last; the workload depends on it when `depend`. */
  const declaredLast = (depend: boolean): string[] => {
    const a = app();
    const chart = new Chart(a, 'media');
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const workload = qbittorrent(chart);
    gateway.route(workload);
    const ns = media(chart);
    if (depend) workload.node.addDependency(ns);
    return written(a);
  };

  it('a dependency on the workload orders its ConfigMap and kill switch after the Namespace (declared last); the gateway\'s own objects stay before it', () => {
    const order = declaredLast(true);
    const at = (o: string) => order.indexOf(o);
    expect(order).toHaveLength(8);
    for (const o of ['Deployment media/qbittorrent', 'ConfigMap media/qbittorrent-vpn-route', 'NetworkPolicy media/qbittorrent-vpn-kill-switch']) expect(at(o)).toBeGreaterThan(at('Namespace /media'));
    // Control on the fix: the gateway's own objects are not under the workload, and stay before the Namespace.
    expect(at('Deployment vpn-gateway/vpn-gateway')).toBeLessThan(at('Namespace /media'));
  });

  it('control: without the dependency, the Namespace declared last is written last', () => {
    const order = declaredLast(false);
    expect(order).toHaveLength(8);
    expect(order[7]).toBe('Namespace /media');
  });

  it('a dependency on a cdk8s-plus Deployment covers the objects route() adds under its ApiObject, and their names stay the core\'s', () => {
    const a = app();
    const chart = new Chart(a, 'media', { namespace: 'media' });
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const sonarr = new kplus.Deployment(chart, 'sonarr', { metadata: { name: 'sonarr' }, podMetadata: { labels: { app: 'sonarr' } }, containers: [{ image: 'lscr.io/linuxserver/sonarr:4.0.11', portNumber: 8989, securityContext: { ensureNonRoot: false } }] });
    gateway.route(sonarr);
    sonarr.node.addDependency(media(chart));
    const order = written(a);
    expect(order.slice(order.indexOf('Namespace media/media'))).toEqual(['Namespace media/media', 'Deployment media/sonarr', 'ConfigMap media/sonarr-vpn-route', 'NetworkPolicy media/sonarr-vpn-kill-switch']);
  });

  it('a Chart.addDependency on the workload\'s chart covers them: they are written into the workload\'s chart, not the gateway\'s', () => {
    const a = app();
    const vpn = new Chart(a, 'vpn');
    const apps = new Chart(a, 'apps');
    const gateway = new VpnGateway(vpn, 'gateway', nordvpnGateway());
    gateway.route(qbittorrent(apps));
    const namespaces = new Chart(a, 'namespaces');
    media(namespaces);
    apps.addDependency(namespaces);
    const kinds = (c: Chart) => Testing.synth(c).map((o: { kind: string; metadata: { name: string } }) => `${o.kind} ${o.metadata.name}`);
    expect(kinds(apps)).toEqual(['Deployment qbittorrent', 'ConfigMap qbittorrent-vpn-route', 'NetworkPolicy qbittorrent-vpn-kill-switch']);
    expect(kinds(vpn)).toEqual(['Namespace vpn-gateway', 'ConfigMap vpn-gateway-settings', 'Service vpn-gateway', 'Deployment vpn-gateway']);
    const order = written(a);
    expect(order.indexOf('Namespace /media')).toBeLessThan(order.indexOf('ConfigMap media/qbittorrent-vpn-route'));
    // Control: without the dependency, the namespaces chart (declared last) is written after the workload's.
    const b = app();
    new VpnGateway(new Chart(b, 'vpn'), 'gateway', nordvpnGateway()).route(qbittorrent(new Chart(b, 'apps')));
    media(new Chart(b, 'namespaces'));
    const unordered = written(b);
    expect(unordered.indexOf('Namespace /media')).toBeGreaterThan(unordered.indexOf('ConfigMap media/qbittorrent-vpn-route'));
  });

  it.each([
    ['through the same gateway', 'gateway', 'invalid VpnGateway route at media/gateway:\nroute(workload): media/qbittorrent is already routed through media/gateway: route a workload once, through one gateway (a second route would add a second client init container and a second kill switch)'],
    ['through another gateway', 'other', 'invalid VpnGateway route at media/other:\nroute(workload): media/qbittorrent is already routed through media/gateway: route a workload once, through one gateway (a second route would add a second client init container and a second kill switch)'],
  ])('refuses a workload routed twice (%s), before patching it again', (_n, second, message) => {
    const chart = new Chart(app(), 'media');
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const other = second === 'gateway' ? gateway : new VpnGateway(chart, 'other', { ...nordvpnGateway(), name: 'other', namespace: 'other-gateway', vxlanId: 43 });
    const workload = qbittorrent(chart);
    gateway.route(workload);
    expect(() => other.route(workload)).toThrow(message);
    const deployment = (chart.toJson() as { kind: string; metadata: { name: string }; spec: { template: { spec: { initContainers: { name: string }[] } } } }[]).find((o) => o.kind === 'Deployment' && o.metadata.name === 'qbittorrent')!;
    expect(deployment.spec.template.spec.initContainers.map((c) => c.name)).toEqual(['vpn-route-init', 'fix-perms']);
  });
});

describe('a KillSwitch that duplicates the one route() writes', () => {
  const lanOnly = { selector: { app: 'qbittorrent' }, namespace: 'media', allowCidrs: ['10.1.0.0/16', '10.152.183.0/24', '192.168.1.0/24'] };
  const message = 'this KillSwitch selects the pods of media/qbittorrent, which media/gateway routes and already fences with its kill switch media/qbittorrent-vpn-kill-switch: policies add up, so this one can only widen what those pods may reach; remove it or narrow its selector, or acknowledge \'duplicate-kill-switch\' if you mean both';
  it.each([
    ['declared after the route', lanOnly, 'after', [{ path: 'media/lan-only:selector', code: 'duplicate-kill-switch', message }]],
    ['declared before the route', lanOnly, 'before', [{ path: 'media/lan-only:selector', code: 'duplicate-kill-switch', message }]],
    ['acknowledged', { ...lanOnly, acknowledge: ['duplicate-kill-switch' as const] }, 'after', []],
    ['in another namespace (control)', { ...lanOnly, namespace: 'downloads' }, 'after', []],
    ['selecting a label the routed pods lack (control)', { ...lanOnly, selector: { app: 'qbittorrent', tier: 'lan' } }, 'after', []],
    ['in another cluster (control)', { ...lanOnly, cluster: 'lab' }, 'after', []],
  ])('%s', (_n, props, when, expected) => {
    const a = app();
    const chart = new Chart(a, 'media');
    media(chart);
    if (when === 'before') new KillSwitch(chart, 'lan-only', props);
    new VpnGateway(chart, 'gateway', nordvpnGateway()).route(qbittorrent(chart));
    if (when === 'after') new KillSwitch(chart, 'lan-only', props);
    expect(a.checkHosts().warnings).toEqual(expected);
  });

  it('synth prints it in the app\'s warnings and still writes the manifests (a warning never stops synth)', () => {
    const a = app();
    const chart = new Chart(a, 'media');
    media(chart);
    new VpnGateway(chart, 'gateway', nordvpnGateway()).route(qbittorrent(chart));
    new KillSwitch(chart, 'lan-only', lanOnly);
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      a.synth();
      expect(stderr.mock.calls.map((c) => String(c[0]))).toEqual([`warning: app:\n  media/lan-only:selector: ${message}\n`]);
    } finally {
      stderr.mockRestore();
    }
    expect(fs.readdirSync(a.outdir)).toEqual(['media.k8s.yaml']);
  });
});

describe('the port-forwarding workload as written, at synth', () => {
  const forwarding = () => gatewayFor('protonvpn');
  /** A chart with the gateway and the forwarded kplus StatefulSet qbittorrent, routed; `after` runs after route(). */
  const build = <A extends CdkApp>(after: (chart: Chart, sts: kplus.StatefulSet) => void, root: A) => {
    const chart = new Chart(root, 'media', { namespace: 'media' });
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
    const gateway = new VpnGateway(chart, 'gw', forwarding());
    const sts = new kplus.StatefulSet(chart, 'qbittorrent', { metadata: { name: 'qbittorrent' }, containers: [{ image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080 }] });
    gateway.route(sts);
    after(chart, sts);
    return root;
  };
  const sts3 = 'as written, after every patch: the port-forwarding workload media/qbittorrent has 3 replicas: they would all take the one fixed VXLAN address and one forwarded port; set replicas to 1';
  const hpa = (at: string) => `the HorizontalPodAutoscaler ${at} scales the port-forwarding workload media/qbittorrent: a second pod could not take the one fixed VXLAN address (its init container refuses any pod but qbittorrent-0) and would never start; remove the autoscaler (the forwarded workload runs one replica)`;
  it.each<[string, (chart: Chart, sts: kplus.StatefulSet) => void, { path: string; code: string; message: string }[]]>([
    ['a replicas patch added after route()', (_c, sts) => ApiObject.of(sts).addJsonPatch(JsonPatch.replace('/spec/replicas', 3)), [{ path: 'media/gw:route(media/qbittorrent/Resource).replicas', code: 'two-pods', message: sts3 }]],
    ['a kplus HorizontalPodAutoscaler on it', (c, sts) => new kplus.HorizontalPodAutoscaler(c, 'hpa', { target: sts, maxReplicas: 3 }), [{ path: 'media/gw:route(media/qbittorrent/Resource).autoscaler', code: 'two-pods', message: hpa('media/hpa/Resource') }]],
    ['an ordinals patch added after route() (before: accepted, the guard expecting qbittorrent-0 of a set that starts qbittorrent-3)', (_c, sts) => ApiObject.of(sts).addJsonPatch(JsonPatch.add('/spec/ordinals', { start: 3 })), [{ path: 'media/gw:route(media/qbittorrent/Resource).ordinals', code: 'changed-after-route', message: 'as written, after every patch: the port-forwarding workload media/qbittorrent has spec.ordinals.start 3, but route() made its vpn-route-init guard for qbittorrent-0: the controller creates only qbittorrent-3, which the guard refuses, so it would never start; call route() after setting ordinals (or do not patch them after route())' }]],
    ['a metadata.name patch added after route() (before: accepted, the guard and nat.conf made for qbittorrent)', (_c, sts) => ApiObject.of(sts).addJsonPatch(JsonPatch.replace('/metadata/name', 'qb')), [{ path: 'media/gw:route(media/qbittorrent/Resource).metadata.name', code: 'changed-after-route', message: 'as written, after every patch: the port-forwarding workload is named media/qb, but route() made its vpn-route-init guard and nat.conf entry for qbittorrent: its pod qb-0 would be refused and never start; call route() after naming the workload (or do not patch metadata.name after route())' }]],
  ])('refuses at app.synth(), before writing anything: %s', (_name, after, problems) => {
    const a = build(after, app());
    const error = thrown(() => a.synth());
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems).toEqual(problems);
    expect(fs.readdirSync(a.outdir)).toEqual([]);
  });

  it('refuses the HPA under cdk8s\'s own App too (the construct\'s validation)', () => {
    const a = build((c, sts) => new kplus.HorizontalPodAutoscaler(c, 'hpa', { target: sts, maxReplicas: 3 }), Testing.app());
    expect(() => a.synth()).toThrow(`media/gw:route(media/qbittorrent/Resource).autoscaler: ${hpa('media/hpa/Resource')}`);
  });

  it('control: an ordinals patch added before route() passes, and its guard is for qbittorrent-3', () => {
    const a = app();
    const chart = new Chart(a, 'media', { namespace: 'media' });
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
    const gateway = new VpnGateway(chart, 'gw', forwarding());
    const sts = new kplus.StatefulSet(chart, 'qbittorrent', { metadata: { name: 'qbittorrent' }, containers: [{ image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080 }] });
    ApiObject.of(sts).addJsonPatch(JsonPatch.add('/spec/ordinals', { start: 3 }));
    const route = gateway.route(sts);
    expect(route.initContainer.env).toContainEqual({ name: 'FORWARDED_POD', value: 'qbittorrent-3' });
    expect(() => a.synth()).not.toThrow();
  });

  it('control: a replicas patch to 1 and an autoscaler of another workload pass', () => {
    const a = build((c, sts) => {
      ApiObject.of(sts).addJsonPatch(JsonPatch.replace('/spec/replicas', 1));
      const sonarr = new kplus.Deployment(c, 'sonarr', { metadata: { name: 'sonarr' }, containers: [{ image: 'lscr.io/linuxserver/sonarr:4', portNumber: 8989 }] });
      new kplus.HorizontalPodAutoscaler(c, 'hpa', { target: sonarr, maxReplicas: 3 });
    }, app());
    expect(() => a.synth()).not.toThrow();
  });
});

describe('a port-forwarding workload no route() matched', () => {
  const notRouted = (seen: string) => [{ path: 'media/gw:portForwarding.workload', code: 'not-routed', message: `the port-forwarding workload media/qbittorrent is not routed through this gateway (${seen}): the forwarded port would reach no pod; route it with route(), giving it metadata.name qbittorrent (cdk8s-plus names an object from its construct path otherwise) in namespace media, or correct portForwarding.workload and workloadNamespace` }];
  const chartOf = (root: CdkApp) => {
    const chart = new Chart(root, 'media', { namespace: 'media' });
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
    return { chart, gateway: new VpnGateway(chart, 'gw', gatewayFor('protonvpn')) };
  };
  const image = 'lscr.io/linuxserver/qbittorrent:5.0.3';
  it.each<[string, (chart: Chart, gateway: VpnGateway) => void, string]>([
    ['a kplus StatefulSet without metadata.name', (c, g) => g.route(new kplus.StatefulSet(c, 'qbittorrent', { containers: [{ image, portNumber: 8080 }] })), 'it routed media/media-qbittorrent-c86ccd60'],
    ['the workload in another namespace', (c, g) => g.route(new kplus.StatefulSet(c, 'qbittorrent', { metadata: { name: 'qbittorrent', namespace: 'downloads' }, containers: [{ image, portNumber: 8080 }] })), 'it routed downloads/qbittorrent'],
    ['nothing routed', () => undefined, 'it routed no workload'],
  ])('is refused at app.synth(): %s', (_name, build, seen) => {
    const a = app();
    const { chart, gateway } = chartOf(a);
    build(chart, gateway);
    const error = thrown(() => a.synth());
    expect((error as ValidationError).problems).toEqual(notRouted(seen));
    expect(fs.readdirSync(a.outdir)).toEqual([]);
  });

  it('under cdk8s\'s own App too', () => {
    const a = Testing.app();
    chartOf(a);
    expect(() => a.synth()).toThrow(`media/gw:portForwarding.workload: ${notRouted('it routed no workload')[0].message}`);
  });

  it('control: with metadata.name qbittorrent it is routed and synth passes', () => {
    const a = app();
    const { chart, gateway } = chartOf(a);
    gateway.route(new kplus.StatefulSet(chart, 'qbittorrent', { metadata: { name: 'qbittorrent' }, containers: [{ image, portNumber: 8080 }] }));
    expect(() => a.synth()).not.toThrow();
  });
});

describe('a VpnGateway warning, and its acknowledgement, through cdk8s', () => {
  const { acknowledge: _a, ...unacknowledged } = gatewayFor('protonvpn');
  const warningsOf = (gw: VpnGateway) => gw.node.metadata.filter((m) => m.type === 'tunnelwright:warning').map((m) => String(m.data));
  it('ProtonVPN port forwarding over WireGuard: in the construct\'s metadata and on stderr, at the key\'s prop', () => {
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let gw: VpnGateway;
    try {
      gw = new VpnGateway(new Chart(app(), 'media'), 'gw', unacknowledged);
      expect(stderr.mock.calls.map((c) => String(c[0])).join('')).toMatch(/^warning: media\/gw:\n {2}wireguardPrivateKeySecret: ProtonVPN .*NAT-PMP.*acknowledge 'protonvpn-wireguard-pmp'\n$/);
    } finally {
      stderr.mockRestore();
    }
    expect(gw.warnings.map((w) => w.code)).toEqual(['protonvpn-wireguard-pmp']);
    expect(warningsOf(gw)).toEqual([expect.stringMatching(/^wireguardPrivateKeySecret: ProtonVPN forwards a port over WireGuard only/)]);
  });

  it('acknowledged: neither in the metadata nor on stderr (the stderr guard fails the test otherwise)', () => {
    const gw = new VpnGateway(new Chart(app(), 'media'), 'gw', { ...unacknowledged, acknowledge: ['protonvpn-wireguard-pmp'] });
    expect(gw.warnings).toEqual([]);
    expect(warningsOf(gw)).toEqual([]);
  });
});
