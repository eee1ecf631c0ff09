import * as fc from 'fast-check';
import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import { CONFIG_HASH_ANNOTATION, configMapsHash, KubeObject, planEgressConformance, planEgressProbe, planRoute, planVpnGateway, ROUTE_CONFIG_HASH_ENV } from '../../src';
import { withConfigHashes } from '../../src/render/config-hash';
import { gatewayFor, gatewayProbe, homelabConformance, nordvpnGateway } from '../helpers/fixtures';
import { runs } from '../helpers/runs';

type Template = { metadata?: { annotations?: Record<string, string> }; spec: { initContainers?: { name: string; env?: { name: string; value?: string }[] }[]; volumes?: { configMap?: { name: string } }[] } };
const templates = (objects: readonly KubeObject[]) => objects.filter((o) => o.kind === 'Deployment').map((o) => ({ name: o.metadata.name, template: (o as unknown as { spec: { template: Template } }).spec.template }));
/** The pod template as it was before the hash: no annotation, no hash variable on the route's init container. */
const withoutHash = (t: Template) => {
  const c = JSON.parse(JSON.stringify(t)) as Template;
  if (c.metadata?.annotations) delete c.metadata.annotations[CONFIG_HASH_ANNOTATION];
  if (c.metadata?.annotations && Object.keys(c.metadata.annotations).length === 0) delete c.metadata.annotations;
  for (const i of c.spec.initContainers ?? []) {
    i.env = (i.env ?? []).filter((e) => e.name !== ROUTE_CONFIG_HASH_ENV);
    if (i.env.length === 0) delete i.env;
  }
  return JSON.stringify(c);
};
const configMaps = (objects: readonly KubeObject[]) => JSON.stringify(objects.filter((o) => o.kind === 'ConfigMap'));
const routed = (props: Parameters<typeof planRoute>[0]) => {
  const r = planRoute(props, { namespace: 'media', podLabels: { app: 'sonarr' }, name: 'sonarr' });
  return [...r.objects, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'sonarr', namespace: 'media' }, spec: { template: { spec: { initContainers: [r.initContainer], volumes: [r.volume] } } } } as KubeObject];
};

// Each change below alters only what a ConfigMap holds: without the hash the Deployment (or the routed workload) would
// keep the same pod template, so its controller would roll nothing and the pods would go on with what they read at start.
describe('a ConfigMap change rolls the pods that read it', () => {
  it.each<[string, () => readonly KubeObject[], () => readonly KubeObject[]]>([
    ['VpnGateway, vxlanId 42 -> 43 (settings.sh)', () => planVpnGateway(nordvpnGateway()).objects, () => planVpnGateway({ ...nordvpnGateway(), vxlanId: 43 }).objects],
    ['VpnGateway, dnssec off (settings.sh)', () => planVpnGateway(nordvpnGateway()).objects, () => planVpnGateway({ ...nordvpnGateway(), dnssec: false }).objects],
    ['a route, the gateway\'s vxlanId 42 -> 43 (the client settings.sh)', () => routed(nordvpnGateway()), () => routed({ ...nordvpnGateway(), vxlanId: 43 })],
    ['EgressProbe, vpnCidrs (blackbox.yml)', () => planEgressProbe(gatewayProbe()).objects, () => planEgressProbe({ ...gatewayProbe(), vpnCidrs: ['185.236.204.0/22'] }).objects],
    ['EgressConformance, the gateway\'s vxlanId (its vpn probe\'s route)', () => planEgressConformance(homelabConformance()).objects, () => planEgressConformance({ ...homelabConformance(), vpnGateways: [{ gateway: { ...nordvpnGateway(), vxlanId: 43 }, probeNamespace: 'media' }] }).objects],
  ])('%s: the pod template changes; control: without the hash it does not', (_, before, after) => {
    const [a, b] = [before(), after()];
    expect(configMaps(a)).not.toBe(configMaps(b));
    const changed = templates(a).filter((t, i) => withoutHash(t.template) === withoutHash(templates(b)[i].template) && JSON.stringify(t.template) !== JSON.stringify(templates(b)[i].template));
    // At least one workload reads the changed ConfigMap, and every such workload rolls only because of the hash.
    expect(changed.length).toBeGreaterThan(0);
    // The same props twice: the same templates (no rollout on a mere re-synth).
    expect(JSON.stringify(templates(before()))).toBe(JSON.stringify(templates(a)));
  });

  it('the gateway\'s annotation is the SHA-256 of the one ConfigMap its pod mounts, and a route\'s variable that of its client settings', () => {
    const objects = planVpnGateway(nordvpnGateway()).objects;
    const settings = objects.find((o) => o.kind === 'ConfigMap')! as unknown as IConfigMap;
    // The hash of that ConfigMap (configMapsHash's own properties are below), not of another one of the plan.
    expect(templates(objects)[0].template.metadata!.annotations![CONFIG_HASH_ANNOTATION]).toBe(configMapsHash([settings]));
    expect(configMapsHash([settings])).not.toBe(configMapsHash([{ ...settings, data: {} }]));
    const r = planRoute(nordvpnGateway(), { namespace: 'media', podLabels: { app: 'sonarr' }, name: 'sonarr' });
    expect(r.initContainer.env).toEqual([{ name: ROUTE_CONFIG_HASH_ENV, value: configMapsHash([r.objects[0] as unknown as IConfigMap]) }]);
  });

  it('the port-forwarding workload\'s variable covers port-sync\'s ConfigMap too (its script is read at start as well)', () => {
    const props = { ...gatewayFor('protonvpn'), portForwarding: { app: 'qbittorrent' as const, workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } };
    const r = planRoute(props, { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent', kind: 'StatefulSet' });
    const maps = r.objects.filter((o) => o.kind === 'ConfigMap') as unknown as IConfigMap[];
    expect(maps.map((m) => m.metadata!.name)).toEqual(['qbittorrent-vpn-route', 'qbittorrent-vpn-port-sync']);
    // The hash of both maps, once (beside it the init script's own values, FORWARDED_POD and FORWARDED_WORKLOAD).
    expect(r.initContainer.env!.filter((e) => e.name === ROUTE_CONFIG_HASH_ENV)).toEqual([{ name: ROUTE_CONFIG_HASH_ENV, value: configMapsHash(maps) }]);
    expect(configMapsHash(maps)).not.toBe(configMapsHash([maps[0]]));
  });
});

describe('EgressProbe: the hash on every exporter pod gives away no WAN address', () => {
  const hashes = (wanIps: string[]) => templates(planEgressProbe({ ...gatewayProbe(), wanIps }).objects).map((t) => t.template.metadata!.annotations![CONFIG_HASH_ANNOTATION]);
  it('two probes that differ only in wanIps carry the same hashes (blackbox.yml is hashed with a documentation address in their place)', () => {
    const home = hashes(['203.0.113.7']);
    expect(home.every((h) => /^[0-9a-f]{64}$/.test(h))).toBe(true);
    expect(hashes(['198.51.100.23'])).toEqual(home);
    // Control: the blackbox.yml the exporter reads does hold the address, so an unredacted hash would follow it.
    const config = (wanIps: string[]) => planEgressProbe({ ...gatewayProbe(), wanIps }).objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'egress-probe-config')! as unknown as IConfigMap;
    expect(config(['203.0.113.7']).data!['blackbox.yml']).toContain('203\\.0\\.113\\.7');
    expect(configMapsHash([config(['203.0.113.7'])])).not.toBe(configMapsHash([config(['198.51.100.23'])]));
  });

  it('nor the WAN range of dnsLeak.leakedCidrs (your ISP\'s resolvers, your WAN range)', () => {
    const leak = (leakedCidrs: string[]) => planEgressProbe({ ...gatewayProbe(), dnsLeak: { leakedCidrs, tunnelCidrs: ['10.2.0.0/24'] } }).objects;
    const hashOf = (objects: readonly KubeObject[]) => templates(objects).map((t) => t.template.metadata!.annotations![CONFIG_HASH_ANNOTATION]);
    expect(hashOf(leak(['198.51.100.0/24']))).toEqual(hashOf(leak(['203.0.113.0/24'])));
    // Control: the exporter's config differs.
    expect(configMaps(leak(['198.51.100.0/24']))).not.toBe(configMaps(leak(['203.0.113.0/24'])));
  });
});

describe('withConfigHashes', () => {
  const cm = (name: string, namespace: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data }) as KubeObject;
  const workload = (kind: string, volumes: unknown[], annotations?: Record<string, string>) => ({ apiVersion: 'apps/v1', kind, metadata: { name: 'w', namespace: 'a' }, spec: { template: { metadata: { labels: { app: 'w' }, ...(annotations ? { annotations } : {}) }, spec: { containers: [], volumes } } } }) as KubeObject;
  const hashOf = (o: KubeObject) => (o as unknown as { spec: { template: Template } }).spec.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];

  it.each(['Deployment', 'StatefulSet', 'DaemonSet'])('%s: hashes the ConfigMaps it mounts in its namespace (configMap and projected volumes), keeps its own annotations', (kind) => {
    const mine = cm('mine', 'a', { k: 'v' });
    const projected = cm('proj', 'a', { p: '1' });
    const [w] = withConfigHashes([workload(kind, [{ name: 'c', configMap: { name: 'mine' } }, { name: 'p', projected: { sources: [{ configMap: { name: 'proj' } }] } }], { keep: 'me' }), mine, projected, cm('mine', 'b', { other: 'ns' }), cm('unmounted', 'a', { x: 'y' })]);
    expect(hashOf(w)).toBe(configMapsHash([mine, projected] as unknown as IConfigMap[]));
    expect((w as unknown as { spec: { template: Template } }).spec.template.metadata!.annotations!.keep).toBe('me');
  });

  it('leaves a workload that mounts no ConfigMap of the plan, and every other kind, as given (the same object)', () => {
    // `elsewhere` is a Secret of the plan, not a ConfigMap: the volume names no ConfigMap here.
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'elsewhere', namespace: 'a' } } as KubeObject;
    const given = [workload('Deployment', [{ name: 'c', configMap: { name: 'elsewhere' } }]), workload('Job', [{ name: 'c', configMap: { name: 'mine' } }]), cm('mine', 'a', {}), secret];
    const out = withConfigHashes(given);
    out.forEach((o, i) => expect(o).toBe(given[i]));
  });

  it('matches a ConfigMap and a workload that both leave their namespace to the tool that applies them (the same one)', () => {
    const map = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mine' }, data: { k: 'v' } } as KubeObject;
    const w = { ...workload('Deployment', [{ name: 'c', configMap: { name: 'mine' } }]), metadata: { name: 'w' } } as KubeObject;
    const [out] = withConfigHashes([w, map]);
    expect(hashOf(out)).toBe(configMapsHash([map as unknown as IConfigMap]));
    // Control: had the workload not found its ConfigMap, it would carry no hash at all (the case above).
    expect(hashOf(out)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the hash ignores the order of ConfigMaps and of their keys, and changes with any name, namespace, key or value', () => {
    const entry = fc.tuple(fc.string({ minLength: 1 }), fc.string());
    const maps = fc.uniqueArray(fc.record({ name: fc.string({ minLength: 1 }), data: fc.uniqueArray(entry, { selector: ([k]) => k, minLength: 1, maxLength: 4 }) }), { selector: (m) => m.name, minLength: 1, maxLength: 4 });
    fc.assert(fc.property(maps, fc.nat(), fc.string({ minLength: 1 }), (ms, pick, extra) => {
      const build = (list: typeof ms) => list.map((m) => ({ metadata: { name: m.name, namespace: 'a' }, data: Object.fromEntries(m.data) }) as IConfigMap);
      const h = configMapsHash(build(ms));
      expect(configMapsHash(build([...ms].reverse().map((m) => ({ ...m, data: [...m.data].reverse() }))))).toBe(h);
      const i = pick % ms.length;
      // Each kind of edit on its own, to one map: a key added, a value changed, a key renamed, the map renamed, the
      // map moved to another namespace. A hash that ignored any one of them would pass the others.
      const edit = (f: (m: IConfigMap) => IConfigMap) => build(ms).map((m, j) => (j === i ? f(m) : m));
      const added = edit((m) => ({ ...m, data: { ...m.data, [`${extra}\u0000`]: '' } }));
      expect(configMapsHash(added)).not.toBe(h);
      const [k, v] = ms[i].data[0];
      expect(configMapsHash(edit((m) => ({ ...m, data: { ...m.data, [k]: `${v}${extra}` } })))).not.toBe(h);
      const renamedKey = `${k}\u0001`;
      expect(configMapsHash(edit((m) => ({ ...m, data: Object.fromEntries(Object.entries(m.data!).map(([a, b]) => [a === k ? renamedKey : a, b])) })))).not.toBe(h);
      expect(configMapsHash(edit((m) => ({ ...m, metadata: { ...m.metadata, name: `${m.metadata!.name}\u0001` } })))).not.toBe(h);
      expect(configMapsHash(edit((m) => ({ ...m, metadata: { ...m.metadata, namespace: 'b' } })))).not.toBe(h);
    }), { numRuns: runs(200) });
  });
});
