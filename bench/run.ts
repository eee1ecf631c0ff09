/**
 * `npm run bench` (SPEC §7): synthesizes large topologies and prints one JSON line per case:
 * { case, nodes, ms, floorMs, ratio, bytes, peakRssMb }. The floor is the time to serialize the same final objects
 * (cloud-config documents with the same YAML serializer, Ignition configs with JSON.stringify), measured in the same
 * process; ratio = ms / floorMs. Each case runs in its own process so peak RSS is its own.
 */
import { spawnSync } from 'node:child_process';
import { stringify } from 'yaml';
import { applyRoute, KubeObject, planRoute, planVpnGateway, planWireguardMesh, renderHostArtefacts, VpnGatewayProps, WireguardMeshProps } from '../src';
import { CLOUD_CONFIG_YAML, cloudConfigDocument } from '../src/host/cloud-init';
import { renderIgnition } from '../src/host/ignition';

const CASES: Record<string, number> = { 'mesh-full-100': 100, 'mesh-full-500': 500, 'mesh-full-1000': 1000, 'vpn-gateways-50': 50 };
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

/** A full mesh of n nodes: every node dialable, keys derived deterministically (public keys only). */
export function meshProps(n: number): WireguardMeshProps {
  return {
    network: '10.64.0.0/16',
    listenPort: 51820,
    nodes: Array.from({ length: n }, (_, i) => {
      const key = Buffer.alloc(32);
      key.writeUInt32BE(i + 1, 28);
      return {
        node: `node-${i}`,
        address: `10.64.${Math.floor((i + 1) / 250)}.${((i + 1) % 250) + 1}`,
        publicKey: key.toString('base64'),
        privateKeyFrom: { file: '/run/keys/wg0.key' },
        endpoint: `198.18.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      };
    }),
  };
}

function time<T>(fn: () => T): { ms: number; value: T } {
  const t0 = process.hrtime.bigint();
  const value = fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

/** n gateways (one cluster each would also do: here unique VXLAN ids), each routing one workload. */
export function gatewayProps(n: number): VpnGatewayProps[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `vpn-${i}`,
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    nodeCidrs: ['192.168.1.0/24'],
    vpnProvider: 'mullvad',
    wireguardPrivateKeySecret: { name: `mullvad-${i}` },
    wireguardAddresses: [`10.66.${i}.2/32`],
    serverCountries: ['Switzerland'],
    vxlanId: 100 + i,
  }));
}

const WORKLOAD = {
  apiVersion: 'apps/v1', kind: 'Deployment',
  spec: { replicas: 1, selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'app', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] } } },
};

/** Plans n gateways and routes one workload through each: the final Kubernetes objects. */
function gatewayObjects(all: VpnGatewayProps[]): KubeObject[] {
  const out: KubeObject[] = [];
  all.forEach((g, i) => {
    out.push(...planVpnGateway(g).objects);
    const route = planRoute(g, { namespace: 'media', podLabels: { app: `app-${i}` }, name: `app-${i}` });
    out.push(...route.objects, { ...WORKLOAD, metadata: { name: `app-${i}`, namespace: 'media' }, spec: { ...WORKLOAD.spec, template: { ...WORKLOAD.spec.template, spec: applyRoute(WORKLOAD.spec.template.spec, route) } } });
  });
  return out;
}

function runGateways(name: string, n: number): void {
  const all = gatewayProps(n);
  gatewayObjects(gatewayProps(5)).map((o) => stringify(o));
  let best = Infinity;
  let floor = Infinity;
  let bytes = 0;
  for (let r = 0; r < RUNS * 5; r++) {
    const full = time(() => gatewayObjects(all).map((o) => stringify(o)).join('---\n'));
    best = Math.min(best, full.ms);
    bytes = Buffer.byteLength(full.value);
    const objects = gatewayObjects(all);
    const ser = time(() => objects.map((o) => stringify(o)).join('---\n'));
    floor = Math.min(floor, ser.ms);
  }
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(`${JSON.stringify({ case: name, nodes: n, ms: Math.round(best), floorMs: Math.round(floor), ratio: Number((best / floor).toFixed(3)), bytes, peakRssMb })}\n`);
}

function runCase(name: string): void {
  const n = CASES[name];
  if (name.startsWith('vpn-gateways')) return runGateways(name, n);
  const props = meshProps(n);
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
  // Warm up the code paths on a small mesh.
  const warm = planWireguardMesh(meshProps(20));
  for (const h of warm.hosts) renderHostArtefacts(h);
  let best = Infinity;
  let floor = Infinity;
  let bytes = 0;
  for (let r = 0; r < RUNS; r++) {
    gc();
    // Everything a user writes out: both formats for every node (the artefacts render lazily, so read them here).
    const full = time(() => {
      const plan = planWireguardMesh(props);
      const texts = plan.hosts.flatMap((h) => {
        const a = renderHostArtefacts(h);
        return [a.cloudConfig, a.ignitionJson];
      });
      return { plan, texts };
    });
    best = Math.min(best, full.ms);
    bytes = full.value.texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
    // The floor: the same final objects, serialized with the same serializers.
    const docs = full.value.plan.hosts.map((h) => cloudConfigDocument(h));
    const igns = full.value.plan.hosts.map((h) => renderIgnition(h));
    gc();
    const ser = time(() => {
      let total = 0;
      for (const d of docs) total += `#cloud-config\n${stringify(d, CLOUD_CONFIG_YAML)}`.length;
      for (const i of igns) total += JSON.stringify(i).length;
      return total;
    });
    floor = Math.min(floor, ser.ms);
  }
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(`${JSON.stringify({ case: name, nodes: n, ms: Math.round(best), floorMs: Math.round(floor), ratio: Number((best / floor).toFixed(3)), bytes, peakRssMb })}\n`);
}

function main(): void {
  const only = process.argv[2];
  if (only) return runCase(only);
  let failed = 0;
  for (const name of Object.keys(CASES)) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=64', '-r', 'ts-node/register/transpile-only', __filename, name], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) failed++;
  }
  process.exit(failed === 0 ? 0 : 1);
}

if (require.main === module) main();
