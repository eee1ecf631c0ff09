import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import type * as Kplus28 from 'cdk8s-plus-28';
import { ValidationError } from '../../src';
import { App, VpnGateway } from '../../src/cdk8s';
import { checkKubeObjects } from '../../src/testing';
import { gatewayFor, nordvpnGateway } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';

/**
 * Issue 47: `cdk8s init typescript-app` of cdk8s-cli 2.207.60 brings cdk8s-plus-33 (its templates/typescript-app/
 * package.json), the README's snippets cdk8s-plus-28: route() takes the workloads of either major alike. Both are
 * optional peers; the consumer test (test/system/consumer.test.ts) installs the oldest of each range.
 */
type Kplus = typeof Kplus28;
const MAJORS: [string, Kplus][] = [
  ['cdk8s-plus-28', require('cdk8s-plus-28') as Kplus],
  ['cdk8s-plus-33', require('cdk8s-plus-33') as Kplus],
];

const app = () => new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'tw-kplus-')) });
type Obj = { kind: string; metadata: { name: string; namespace?: string }; spec?: { template?: { spec: { initContainers?: { name: string }[]; containers: { name: string; resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> } }[] } } } };

describe.each(MAJORS)('%s workloads through a VpnGateway', (name, kplus) => {
  it('routes a Deployment: the route\'s init container and sidecar, cdk8s-plus\'s resources kept as quantities, a pod spec kubernetes-models accepts', () => {
    const chart = new Chart(app(), 'media', { namespace: 'media' });
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    const sonarr = new kplus.Deployment(chart, 'sonarr', { metadata: { name: 'sonarr' }, containers: [{ image: 'lscr.io/linuxserver/sonarr:4.0.11', portNumber: 8989, securityContext: { ensureNonRoot: false } }] });
    gateway.route(sonarr);
    const objects = chart.toJson() as Obj[];
    const routed = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'sonarr')!;
    const spec = routed.spec!.template!.spec;
    expect(spec.initContainers!.map((c) => c.name)).toEqual(['vpn-route-init']);
    expect(spec.containers.map((c) => c.name)).toEqual(['main', 'vpn-route-sidecar']);
    // cdk8s-plus's own resources on its container survive the route's patch as text: an L1's toJson() would turn a
    // plain quantity into null (src/cdk8s/vpn-gateway.ts l1Quantities).
    expect(spec.containers[0].resources).toEqual({ limits: { cpu: '1500m', memory: '2048Mi' }, requests: { cpu: '1000m', memory: '512Mi' } });
    expect(checkKubeObjects(objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Service' || o.kind === 'ConfigMap'))).toEqual([]);
    expect(require(`${name}/package.json`).name).toBe(name);
  });

  it('the forwarded StatefulSet: routed and synthesized; a replicas patch after route() is refused (the control)', () => {
    const build = (replicas?: number) => {
      const a = app();
      const chart = new Chart(a, 'media', { namespace: 'media' });
      new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
      const gateway = new VpnGateway(chart, 'gw', gatewayFor('protonvpn'));
      const sts = new kplus.StatefulSet(chart, 'qbittorrent', { metadata: { name: 'qbittorrent' }, containers: [{ image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080, securityContext: { ensureNonRoot: false } }] });
      gateway.route(sts);
      if (replicas !== undefined) ApiObject.of(sts).addJsonPatch(JsonPatch.replace('/spec/replicas', replicas));
      return a;
    };
    const ok = build();
    ok.synth();
    const written = fs.readFileSync(path.join(ok.outdir, 'media.k8s.yaml'), 'utf8');
    expect(written).toContain('name: vpn-route-init');
    const error = thrown(() => build(3).synth());
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems.map((p) => `${p.path} ${p.code}`)).toEqual(['media/gw:route(media/qbittorrent/Resource).replicas two-pods']);
  });
});
