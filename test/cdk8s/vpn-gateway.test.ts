import { Construct } from 'constructs';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiObject, Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { ValidationError } from '../../src';
import { App, VpnGateway } from '../../src/cdk8s';
import { nordvpnGateway } from '../helpers/fixtures';
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
      'ConfigMap media/qbittorrent-vpn-route',
      'NetworkPolicy media/qbittorrent-vpn-kill-switch',
      'Deployment media/qbittorrent',
    ]);
    const spec = objects[6].spec!.template!.spec as { initContainers: { name: string }[]; containers: { name: string }[]; dnsPolicy: string; volumes: { name: string }[] };
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
    const routed = (chart.toJson() as { kind: string; metadata: { name: string }; spec: { template: { spec: { initContainers: { name: string }[] } } } }[]).find((o) => o.kind === 'Deployment' && o.metadata.name.startsWith('media-sonarr'))!;
    expect(routed.spec.template.spec.initContainers.map((c) => c.name)).toEqual(['vpn-route-init']);
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
      { path: 'vpn/eu:wireguardPrivateKeySecret', code: 'claimed-twice', message: 'WireGuard key vpn-gateway/nordvpn-wireguard (a key used by two gateways steals the session) is already claimed by vpn/us:wireguardPrivateKeySecret' },
    ]);
    expect(fs.readdirSync(a.outdir)).toEqual([]);
  });

  it('accepts the same VXLAN id in two clusters', () => {
    const a = app();
    const chart = new Chart(a, 'vpn');
    new VpnGateway(chart, 'dev', { ...nordvpnGateway(), cluster: 'dev' });
    new VpnGateway(chart, 'prod', { ...nordvpnGateway(), cluster: 'prod' });
    expect(a.checkHosts().problems).toEqual([]);
  });
});
