/**
 * `npm run bench` (SPEC §7): synthesizes large topologies and prints one JSON line per case:
 * { case, nodes, ms, floorMs, ratio, bytes, peakRssMb }. The floor is the time to serialize the same final objects
 * (cloud-config documents with the same YAML serializer, Ignition configs with JSON.stringify), measured in the same
 * process; ratio = ms / floorMs. Each case runs in its own process so peak RSS is its own.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { Chart } from 'cdk8s';
import * as ts from 'typescript';
import { parseAllDocuments, stringify } from 'yaml';
import {
  applyRoute, KubeObject, planKillSwitch, planRoute, planVpnGateway, planWireguardMesh, validateEgressProbe,
  validateEgressSteering, validateKillSwitch, validateVpnGateway, validateWireguardMesh, validateWireguardOverlayNode, VpnGatewayProps, WireguardMeshProps, wireguardConfigs,
} from '../src';
import { App, WireguardMesh } from '../src/cdk8s';
import { CLOUD_CONFIG_YAML, cloudConfigDocument } from '../src/host/cloud-init';
import { gatewayProbe, nordvpnGateway, numberedKey, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh } from '../test/helpers/fixtures';
import { renderIgnition } from '../src/host/ignition';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);

/** A full mesh of n nodes: every node dialable, keys derived deterministically (public keys only). */
export function meshProps(n: number): WireguardMeshProps {
  return {
    network: '10.64.0.0/16',
    listenPort: 51820,
    nodes: Array.from({ length: n }, (_, i) => ({
      node: `node-${i}`,
      address: `10.64.${Math.floor((i + 1) / 250)}.${((i + 1) % 250) + 1}`,
      publicKey: numberedKey(i),
      privateKeyFrom: { file: '/run/keys/wg0.key' },
      installK0s: {},
      endpoint: `198.18.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    })),
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
  process.stdout.write(`${JSON.stringify({ case: name, nodes: n, ms: Math.round(best), floorMs: Math.round(floor), ratio: Number((best / floor).toFixed(3)), bytes, peakRssMb: peakRss() })}\n`);
}

/** The median of a list of numbers. */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const line = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const peakRss = () => Math.round(process.resourceUsage().maxRSS / 1024);

/**
 * What a user runs: tunnelwright's cdk8s App with the mesh, synthesized to disk (manifests, then each node's
 * user-data, ignition.json and wg0.conf, one node at a time). Returns the output folder.
 */
function appSynth(props: WireguardMeshProps): string {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-app-'));
  const app = new App({ outdir });
  new WireguardMesh(new Chart(app, 'overlay'), 'mesh', props);
  app.synth();
  return outdir;
}

/** The output's bytes, then the folder removed (after the clock stops: removal is not synthesis). */
function bytesAndRemove(outdir: string): number {
  const bytes = dirBytes(path.join(outdir, 'hosts'));
  fs.rmSync(outdir, { recursive: true, force: true });
  return bytes;
}

function appRun(props: WireguardMeshProps): { ms: number; bytes: number } {
  let outdir = '';
  const { ms } = time(() => {
    outdir = appSynth(props);
  });
  return { ms, bytes: bytesAndRemove(outdir) };
}

/** The App alone in its process: the time of each run, the bytes written and the process's peak RSS. */
function runApp(n: number): void {
  const props = meshProps(n);
  // The App's warnings (every node's user-data is over 16 KiB) are formatted and written as usual, to nowhere.
  process.stderr.write = (() => true) as typeof process.stderr.write;
  const times: number[] = [];
  let bytes = 0;
  for (let r = 0; r < RUNS; r++) {
    const run = appRun(props);
    times.push(run.ms);
    bytes = run.bytes;
  }
  line({ times, bytes, peakRssMb: peakRss() });
}

/**
 * The floor: the same final bytes, made by the same serializers from the final objects (each node's cloud-config
 * document, Ignition config and interface config, built before the clock starts), written to the same files.
 */
type FloorNode = { node: string; doc: unknown; ignition: unknown; confs: (readonly [string, string])[] };

function floorNodes(n: number): FloorNode[] {
  const plan = planWireguardMesh(meshProps(n));
  return plan.hosts.map((h) => ({ node: h.node, doc: cloudConfigDocument(h), ignition: renderIgnition(h), confs: wireguardConfigs(h).map((c) => [c.name, c.content] as const) }));
}

function floorRun(nodes: FloorNode[]): string {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-floor-'));
  for (const x of nodes) {
    const dir = path.join(outdir, 'hosts', x.node);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'user-data'), `#cloud-config\n${stringify(x.doc, CLOUD_CONFIG_YAML)}`);
    fs.writeFileSync(path.join(dir, 'ignition.json'), `${JSON.stringify(x.ignition, undefined, 2)}\n`);
    for (const [file, text] of x.confs) fs.writeFileSync(path.join(dir, file), text);
  }
  return outdir;
}

/** GC pauses as V8 reports them (perf_hooks 'gc' entries), to tell a run's own work from its collector's. */
const gcPauses: { start: number; ms: number }[] = [];

/**
 * Runs fn; its wall time and the GC time inside it (entries are delivered after fn returns: hence async). Then
 * removes the folder fn wrote, off the clock.
 */
async function timedWithGc(fn: () => string): Promise<{ ms: number; gcMs: number }> {
  const t0 = performance.now();
  const outdir = fn();
  const t1 = performance.now();
  await new Promise((r) => setTimeout(r, 20));
  const gcMs = gcPauses.filter((g) => g.start >= t0 && g.start < t1).reduce((a, g) => a + g.ms, 0);
  bytesAndRemove(outdir);
  return { ms: t1 - t0, gcMs };
}

/**
 * The timing pair: App and floor alternate in one process (one warm-up each, not counted), so disk and CPU noise on
 * a shared machine falls on both sides of the ratio alike. Every run is reported, with its GC time.
 */
async function runPair(n: number): Promise<void> {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcPauses.push({ start: e.startTime, ms: e.duration });
  }).observe({ entryTypes: ['gc'] });
  const props = meshProps(n);
  process.stderr.write = (() => true) as typeof process.stderr.write;
  const app: { ms: number; gcMs: number }[] = [];
  const floor: { ms: number; gcMs: number }[] = [];
  // The floor's objects are built before its clock starts and dropped before each App run, so neither side carries
  // the other's heap.
  const appOnce = () => timedWithGc(() => appSynth(props));
  const floorOnce = async () => {
    const nodes = floorNodes(n);
    return timedWithGc(() => floorRun(nodes));
  };
  // Between runs: a full GC, and the previous run's dirty pages written back (sync), so no run pays the writeback of
  // the one before it.
  const settle = () => {
    (global as { gc?: () => void }).gc?.();
    spawnSync('sync');
  };
  await appOnce();
  settle();
  await floorOnce();
  for (let r = 0; r < RUNS; r++) {
    settle();
    app.push(await appOnce());
    settle();
    floor.push(await floorOnce());
  }
  line({ app: app.map((x) => x.ms), floor: floor.map((x) => x.ms), appGc: app.map((x) => x.gcMs), floorGc: floor.map((x) => x.gcMs) });
}

/**
 * Where the time per byte goes as a node's files grow: each stage of the first 60 nodes of an n-node mesh, in ns per
 * output byte (documents, YAML, Ignition, JSON, interface configs; writes to the temp folder's disk and to tmpfs).
 */
function runStages(n: number): void {
  const plan = planWireguardMesh(meshProps(n));
  const t: Record<string, number> = { documents: 0, yaml: 0, ignition: 0, json: 0, configs: 0, writeDisk: 0, writeTmpfs: 0 };
  let bytes = 0;
  const dirs = { writeDisk: fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-stages-')), writeTmpfs: fs.existsSync('/dev/shm') ? fs.mkdtempSync('/dev/shm/tw-bench-stages-') : undefined };
  const clock = <T>(key: string, fn: () => T): T => {
    const r = time(fn);
    t[key] += r.ms;
    return r.value;
  };
  plan.hosts.slice(0, 60).forEach((h, i) => {
    const doc = clock('documents', () => cloudConfigDocument(h));
    const userData = clock('yaml', () => `#cloud-config\n${stringify(doc, CLOUD_CONFIG_YAML)}`);
    const ignition = clock('ignition', () => renderIgnition(h));
    const json = clock('json', () => `${JSON.stringify(ignition, undefined, 2)}\n`);
    const conf = clock('configs', () => wireguardConfigs(h)[0].content);
    bytes += Buffer.byteLength(userData) + Buffer.byteLength(json) + Buffer.byteLength(conf);
    for (const key of ['writeDisk', 'writeTmpfs'] as const) {
      const dir = dirs[key];
      if (dir === undefined) continue;
      clock(key, () => [userData, json, conf].forEach((text, j) => fs.writeFileSync(path.join(dir, `${i}-${j}`), text, { encoding: 'utf8' })));
    }
  });
  for (const dir of Object.values(dirs)) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  line({ bytesPerNode: Math.round(bytes / 60), nsPerByte: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Number(((v * 1e6) / bytes).toFixed(2))])) });
}

/** Validation alone (no rendering) of a full mesh: its growth with n must stay near n log n. */
function runValidation(n: number): void {
  const props = meshProps(n);
  validateWireguardMesh(meshProps(50));
  const times: number[] = [];
  for (let r = 0; r < RUNS * 3; r++) times.push(time(() => validateWireguardMesh(props)).ms);
  line({ times, peakRssMb: peakRss() });
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) total += e.isDirectory() ? dirBytes(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).size;
  return total;
}

/** Runs one part of a case in its own process (its own heap, its own peak RSS) and returns its JSON line. */
function child(part: string, n: number): Record<string, number | number[]> {
  const r = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=64', '-r', 'ts-node/register/transpile-only', __filename, part, String(n)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`bench ${part} ${n} failed`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, number | number[]>;
}

function meshCase(name: string, n: number): Record<string, unknown> {
  const app = child('app', n); // peak RSS and bytes: the App alone in its process
  const pair = child('pair', n);
  const [appMs, floorMs, appGc, floorGc] = [pair.app, pair.floor, pair.appGc, pair.floorGc] as number[][];
  const best = (xs: number[]) => xs.indexOf(Math.min(...xs));
  const [a, f] = [best(appMs), best(floorMs)];
  const bytes = app.bytes as number;
  const round = (x: number, d = 3) => Number(x.toFixed(d));
  return {
    case: name, nodes: n, ms: Math.round(appMs[a]), floorMs: Math.round(floorMs[f]), ratio: round(appMs[a] / floorMs[f]),
    ratioMedian: round(median(appMs) / median(floorMs)), bytes, peakRssMb: app.peakRssMb,
    runs: { ms: appMs.map((x) => round(x, 1)), floorMs: floorMs.map((x) => round(x, 1)), gcMs: appGc.map((x) => round(x, 1)), floorGcMs: floorGc.map((x) => round(x, 1)) },
    // The share of each best run spent in V8's collector, and the time per byte of both sides.
    gcShare: round(appGc[a] / appMs[a]), floorGcShare: round(floorGc[f] / floorMs[f]),
    nsPerByte: round((appMs[a] * 1e6) / bytes, 2), floorNsPerByte: round((floorMs[f] * 1e6) / bytes, 2),
  };
}

/**
 * What a user waits for (SPEC §7, issue 30): whole processes, timed from outside, interleaved with their floors and
 * repeated (USER_RUNS, default 7), medians compared.
 * - import: `node -e "require('<entry>')"` against the same for the entry's framework (`cdk8s`, `@pulumi/pulumi`;
 *   the pure core against a bare `node -e 0`). The entries resolve to the compiled `lib/` (the package's exports).
 * - each cdk8s example: its main.ts transpiled once (what ts-node would hand node), run with CDK8S_OUTDIR set, against
 *   a floor that starts node, loads cdk8s and writes the same files with the same bytes.
 */
const USER_RUNS = Number(process.env.USER_RUNS ?? 7);
const ROOT = path.resolve(__dirname, '..');
/** The cdk8s CLI the project pins (cdk8s-cli), as `npx cdk8s` runs it. */
const CDK8S_CLI = path.join(ROOT, 'node_modules', 'cdk8s-cli', 'bin', 'cdk8s');

function wallMs(args: string[], cwd: string, env: Record<string, string> = {}): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false', ...env } });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`bench: node ${args.join(' ')} failed in ${cwd}: ${r.stderr.slice(0, 500)}`);
  return ms;
}

/** Runs a and b alternately (one warm-up each, not counted); their medians and the ratio. */
function interleaved(a: () => number, b: () => number): { ms: number; floorMs: number; ratio: number; runs: { ms: number[]; floorMs: number[] } } {
  a();
  b();
  const [as, bs]: number[][] = [[], []];
  for (let r = 0; r < USER_RUNS; r++) {
    as.push(a());
    bs.push(b());
  }
  const [ma, mb] = [median(as), median(bs)];
  const round = (x: number) => Number(x.toFixed(1));
  return { ms: round(ma), floorMs: round(mb), ratio: Number((ma / mb).toFixed(3)), runs: { ms: as.map(round), floorMs: bs.map(round) } };
}

function filesUnder(dir: string, base = dir): [string, string][] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(full, base) : [[path.relative(base, full), fs.readFileSync(full, 'utf8')] as [string, string]];
  });
}

function userCases(emit: (o: Record<string, unknown>) => void): void {
  // lib/ as the package ships it: tsc, then zod bundled into lib/zod.js (`npm run compile` runs both).
  const compiled = spawnSync('npx', ['projen', 'compile'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (compiled.status !== 0) throw new Error('bench: compiling lib/ failed');
  const imports: [string, string, string][] = [
    ['import-tunnelwright', "require('tunnelwright')", '0'],
    ['import-tunnelwright-cdk8s', "require('tunnelwright/cdk8s')", "require('cdk8s')"],
    ['import-tunnelwright-pulumi', "require('tunnelwright/pulumi')", "require('@pulumi/pulumi')"],
  ];
  for (const [name, code, floor] of imports) {
    emit({ case: name, floor, ...interleaved(() => wallMs(['-e', code], ROOT), () => wallMs(['-e', floor], ROOT)), peakRssMb: null, bytes: 0 });
  }
  for (const example of ['homelab', 'two-gateways', 'vpn-gateway', 'wireguard-overlay']) {
    const dir = path.join(ROOT, 'examples', example);
    const main = path.join(dir, '.bench-main.js');
    const floor = path.join(dir, '.bench-floor.js');
    const cdk8sFloor = path.join(dir, '.bench-floor-cdk8s.js');
    const appFloor = path.join(dir, '.bench-floor-app.js');
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), `tw-bench-${example}-`));
    try {
      fs.writeFileSync(main, ts.transpileModule(fs.readFileSync(path.join(dir, 'main.ts'), 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } }).outputText);
      /** One whole-process run of `script` into a fresh outdir, in ms. */
      const runOf = (script: string) => () => {
        fs.rmSync(outdir, { recursive: true, force: true });
        return wallMs([script], dir, { CDK8S_OUTDIR: outdir });
      };
      const synth = runOf(main);
      synth();
      const files = filesUnder(outdir);
      const bytes = files.reduce((n, [, text]) => n + Buffer.byteLength(text), 0);
      fs.writeFileSync(floor, [
        "require('cdk8s');",
        "const fs = require('node:fs'), path = require('node:path');",
        `const files = ${JSON.stringify(files)};`,
        'for (const [f, text] of files) { const p = path.join(process.env.CDK8S_OUTDIR, f); fs.mkdirSync(path.dirname(p), { recursive: true }); fs.writeFileSync(p, text); }',
      ].join('\n'));
      const floorRun = runOf(floor);
      // A second floor: cdk8s itself synthesizing the same final manifests (one ApiObject per document, one Chart
      // per manifest file) and the host files written as bytes: what any cdk8s app of these objects costs, its
      // serializer included, so the ratio against it is what tunnelwright adds.
      const manifests = files.filter(([f]) => f.endsWith('.k8s.yaml')).map(([f, text]) => [f.replace(/\.k8s\.yaml$/, ''), parseAllDocuments(text).map((d) => d.toJSON())] as const);
      fs.writeFileSync(cdk8sFloor, [
        "const { App, Chart, ApiObject } = require('cdk8s');",
        "const fs = require('node:fs'), path = require('node:path');",
        `const manifests = ${JSON.stringify(manifests)};`,
        `const others = ${JSON.stringify(files.filter(([f]) => !f.endsWith('.k8s.yaml')))};`,
        'const app = new App({ outdir: process.env.CDK8S_OUTDIR });',
        'for (const [chart, docs] of manifests) { const c = new Chart(app, chart); docs.forEach((d, i) => new ApiObject(c, `o${i}`, d)); }',
        'app.synth();',
        'for (const [f, text] of others) { const p = path.join(process.env.CDK8S_OUTDIR, f); fs.mkdirSync(path.dirname(p), { recursive: true }); fs.writeFileSync(p, text); }',
      ].join('\n'));
      const cdk8sFloorRun = runOf(cdk8sFloor);
      // A third floor: the second one, loading also what the example itself imports besides tunnelwright (its own
      // workloads' cdk8s-plus-28): the same app without tunnelwright, so the ratio against it is tunnelwright's alone.
      const own = [...fs.readFileSync(path.join(dir, 'main.ts'), 'utf8').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]).filter((m) => !m.startsWith('tunnelwright') && m !== 'cdk8s');
      fs.writeFileSync(appFloor, [...own.map((m) => `require(${JSON.stringify(m)});`), fs.readFileSync(cdk8sFloor, 'utf8')].join('\n'));
      const appFloorRun = runOf(appFloor);
      emit({ case: `synth-example-${example}`, files: files.length, bytes, ...interleaved(synth, floorRun), peakRssMb: null });
      emit({ case: `synth-example-${example}-vs-cdk8s`, files: files.length, bytes, ...interleaved(synth, cdk8sFloorRun), peakRssMb: null });
      emit({ case: `synth-example-${example}-vs-app`, files: files.length, bytes, imports: own, ...interleaved(synth, appFloorRun), peakRssMb: null });
      // The same app without tunnelwright against the first floor: the ratio the example would have if tunnelwright
      // cost nothing (cdk8s's serializer and the example's own imports alone), the least the first case can reach.
      emit({ case: `synth-example-${example}-without-tunnelwright`, files: files.length, bytes, imports: own, ...interleaved(appFloorRun, floorRun), peakRssMb: null });
      // The user's own command (issue 42): `cdk8s synth` through the CLI, which runs the app as the example's
      // cdk8s.yaml says (`npx ts-node --transpile-only main.ts`), against the same CLI running the same app without
      // tunnelwright (the third floor, as TypeScript under ts-node): the ratio is tunnelwright's share of what the user
      // waits for, the CLI's own start and ts-node's included on both sides.
      const appFloorTs = path.join(dir, '.bench-floor-app.ts');
      fs.writeFileSync(appFloorTs, fs.readFileSync(appFloor, 'utf8'));
      try {
        const cli = (app?: string) => () => {
          fs.rmSync(outdir, { recursive: true, force: true });
          return wallMs([CDK8S_CLI, 'synth', '--output', outdir, ...(app ? ['--app', app] : [])], dir, { CDK8S_OUTDIR: outdir });
        };
        emit({ case: `cdk8s-synth-${example}`, command: 'cdk8s synth', files: files.length, bytes, ...interleaved(cli(), cli('npx ts-node --transpile-only .bench-floor-app.ts')), peakRssMb: null });
      } finally {
        fs.rmSync(appFloorTs, { force: true });
      }
    } finally {
      for (const f of [main, floor, cdk8sFloor, appFloor, outdir]) fs.rmSync(f, { recursive: true, force: true });
    }
  }
}

/**
 * The timed bound that test/model/bad-input.test.ts used to assert (issue 30 moved it here: a timed test fails on a
 * loaded machine): every public validate entry point (each plan entry point validates first), each top-level prop of its fixture (and the props
 * themselves) replaced by each of the hostile inputs that cost the most (a 1 MB string, 10 000 CIDRs, 10 000 empty
 * objects), timed in this process. The slowest call of each kind against its bound: 1 s, or 30 s for a 10 000-item list.
 */
function badInputWorst(): Record<string, unknown> {
  const entries: [string, () => unknown, (i: unknown) => unknown][] = [
    ['validateWireguardOverlayNode', siteA, validateWireguardOverlayNode], ['validateWireguardMesh', threeNodeMesh, validateWireguardMesh],
    ['validateKillSwitch', qbittorrentKillSwitch, validateKillSwitch], ['validateVpnGateway', nordvpnGateway, validateVpnGateway],
    ['validateEgressSteering', prodSteering, validateEgressSteering], ['validateEgressProbe', gatewayProbe, validateEgressProbe],
  ];
  const huge: [string, () => unknown, number][] = [
    ['1 MB string', () => 'x'.repeat(1_000_000), 1000],
    ['10 000 CIDRs', () => Array.from({ length: 10_000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`), 30_000],
    ['10 000 objects', () => Array.from({ length: 10_000 }, () => ({})), 30_000],
  ];
  const worst: Record<string, { ms: number; at: string; boundMs: number }> = {};
  let calls = 0;
  for (const [name, fixture, call] of entries) {
    const base = fixture() as Record<string, unknown>;
    for (const key of [undefined, ...Object.keys(base)]) {
      for (const [kind, value, boundMs] of huge) {
        const input = key === undefined ? value() : { ...base, [key]: value() };
        const { ms } = time(() => {
          try {
            return call(input);
          } catch {
            return undefined; // a ValidationError; that it is one is the test's
          }
        });
        calls++;
        if (!worst[kind] || ms > worst[kind].ms) worst[kind] = { ms: Number(ms.toFixed(1)), at: `${name} ${key ?? '(props)'}`, boundMs };
      }
    }
  }
  return { case: 'bad-input-worst', calls, worst, withinBounds: Object.values(worst).every((w) => w.ms < w.boundMs), floorMs: null, ratio: null, bytes: 0, peakRssMb: null };
}

/** The machine a run came from (the first line of every results file). */
function machine(): Record<string, unknown> {
  const git = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  return {
    case: 'machine', cpu: os.cpus()[0]?.model.trim(), cpus: os.cpus().length, memMb: Math.round(os.totalmem() / 2 ** 20), node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`, commit: git.stdout.trim(), started: new Date().toISOString(), loadavg: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
}

/**
 * The hostile inputs (test/hostile-input.test.ts asserts what they answer): each one's median time through the
 * core, the answer a plan or a ValidationError. `BENCH_CASES=hostile npm run bench` runs this case alone.
 */
function hostileCase(): Record<string, unknown> {
  const cidrs = Array.from({ length: 10_000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
  const gateway = gatewayProps(1)[0];
  const hub: WireguardMeshProps = { ...meshProps(500), topology: { hub: 'node-0' } };
  const inputs: Record<string, () => unknown> = {
    'kill-switch-allowCidrs-10000': () => planKillSwitch({ selector: { app: 'x' }, namespace: 'media', allowCidrs: cidrs }),
    'kill-switch-selector-constructor-key': () => planKillSwitch({ selector: JSON.parse('{"constructor": "x", "__proto__": "y"}') as Record<string, string>, namespace: 'media', allowCidrs: ['10.42.0.0/16'] }),
    'vpn-gateway-clusterCidrs-10000': () => validateVpnGateway({ ...gateway, clusterCidrs: cidrs }),
    'egress-steering-10000-enforced-not-steered': () => validateEgressSteering({ gatewayNode: 'gw', clusterCidrs: ['10.42.0.0/16'], namespaces: Array.from({ length: 10_000 }, (_, i) => `ns-${i}`), enforceLabels: { namespaces: Array.from({ length: 10_000 }, (_, i) => `other-${i}`) } }),
    'mesh-hub-500': () => planWireguardMesh(hub),
  };
  const ms: Record<string, number> = {};
  for (const [name, run] of Object.entries(inputs)) {
    const times = Array.from({ length: RUNS }, () => time(() => {
      try {
        run();
      } catch (e) {
        if ((e as Error).name !== 'ValidationError') throw e;
      }
    }).ms);
    ms[name] = Number(median(times).toFixed(1));
  }
  return { case: 'hostile-input', ms: Math.max(...Object.values(ms)), floorMs: null, ratio: null, bytes: 0, peakRssMb: null, inputs: ms };
}

const MESHES: Record<string, number> = { 'mesh-full-100': 100, 'mesh-full-500': 500, 'mesh-full-1000': 1000 };
const VALIDATIONS = [250, 500, 1000];

function main(): void {
  const [part, n] = [process.argv[2], Number(process.argv[3])];
  if (part === 'app') return runApp(n);
  if (part === 'pair') return void runPair(n);
  if (part === 'validate') return runValidation(n);
  if (part === 'stages') return runStages(n);
  if (part === 'gateways') return runGateways('vpn-gateways-50', n);
  if (part === 'bad-input') return void line(badInputWorst());
  const lines: Record<string, unknown>[] = [];
  // Every line carries the 1-minute load average when its case ended: the ratios are taken within one run, but a
  // loaded machine widens them, so a reader can tell a quiet run from a busy one.
  const emit = (o: Record<string, unknown>) => {
    const withLoad = { ...o, load1: Number(os.loadavg()[0].toFixed(2)) };
    lines.push(withLoad);
    line(withLoad);
  };
  emit(machine());
  if (process.env.BENCH_CASES === 'hostile') return void emit(hostileCase());
  // `BENCH_CASES=mesh-full-1000` (or another mesh): that mesh case alone, for a loaded machine's 15-minute slots.
  const mesh = MESHES[process.env.BENCH_CASES ?? ''];
  if (mesh) return void emit(meshCase(process.env.BENCH_CASES!, mesh));
  userCases(emit);
  if (process.env.BENCH_CASES === 'user') {
    if (process.env.BENCH_RESULTS) fs.writeFileSync(process.env.BENCH_RESULTS, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    return;
  }
  for (const [name, nodes] of Object.entries(MESHES)) emit(meshCase(name, nodes));
  const gw = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', __filename, 'gateways', '50'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  emit(JSON.parse(gw.stdout.trim()) as Record<string, unknown>);
  emit(badInputWorst());
  emit(hostileCase());
  for (const v of VALIDATIONS) {
    const r = child('validate', v);
    const ms = median(r.times as number[]);
    const peers = v * (v - 1);
    emit({ case: `validate-mesh-${v}`, nodes: v, ms: Number(ms.toFixed(2)), floorMs: null, ratio: null, bytes: 0, peakRssMb: r.peakRssMb, nsPerPeerLogPeer: Number(((ms * 1e6) / (peers * Math.log2(peers))).toFixed(3)) });
  }
  for (const n of [500, 1000]) emit({ case: `stages-mesh-${n}`, nodes: n, ...child('stages', n) });
  // Time per output byte across the mesh sizes: flat within ±20 % is the target. The floor's own spread is printed
  // beside it: what the shared serializers and the machine add to both sides alike (the stages cases say which).
  const spread = (key: string) => {
    const per = lines.filter((l) => typeof l[key] === 'number').map((l) => l[key] as number);
    const mid = median(per);
    return { per, pct: Number((Math.max(...per.map((p) => Math.abs(p - mid) / mid)) * 100).toFixed(1)) };
  };
  const [own, floorSpread] = [spread('nsPerByte'), spread('floorNsPerByte')];
  const ratios = lines.filter((l) => typeof l.ratio === 'number' && String(l.case).startsWith('mesh-full-')).map((l) => l.ratioMedian as number);
  emit({ case: 'summary', nsPerByte: own.per, spreadPct: own.pct, floorNsPerByte: floorSpread.per, floorSpreadPct: floorSpread.pct, ratiosOk: ratios.every((r) => r <= 1.25) });
  if (process.env.BENCH_RESULTS) fs.writeFileSync(process.env.BENCH_RESULTS, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
}

if (require.main === module) main();
