/**
 * port-sync as its container runs it, at unit speed: the script from the rendered ConfigMap, started by busybox sh (the
 * image's sh) with the rendered container's environment, against the stand-ins of gluetun's control server and of
 * one app version (port-sync-stand-ins.py, each line cited there). Only paths and addresses are moved: the secrets
 * directory and /tmp into a directory of the test's own, 172.16.0.1:8000 and the app's 127.0.0.1 port to the
 * stand-ins' ports, the metrics port to one given (0: none), and PERIOD to `period` (the model's minimum is 1 s).
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { planRoute, VpnGatewayProps } from '../../src';
import { which } from '../system/tools';
import { gatewayFor } from './fixtures';

const STAND_INS = path.join(__dirname, 'port-sync-stand-ins.py');

export interface SyncLabOptions {
  /** The stand-in: qbittorrent-4.6 | -5.0 | -5.1 | -5.2, transmission-3 | -4, deluge-2.0 | -2.1 (or none for command). */
  standIn: string;
  /** portForwarding props beyond the fixture's (app, appCredentialsSecret, command …). */
  portForwarding: Record<string, unknown>;
  /** The credentials the app holds, and those mounted for port-sync (by default the same). */
  appUser?: string;
  appPassword?: string;
  appApiKey?: string;
  mounted?: { username?: string; password?: string; apiKey?: string };
  forwarded?: number;
  period?: string;
  metricsPort?: number;
  banBackoff?: string;
}

export interface Request {
  path: string;
  status: number;
  what: string;
}

export class SyncLab {
  readonly dir: string;
  private readonly procs: ChildProcess[] = [];
  /** What port-sync wrote to stderr (its log) and stdout. */
  log = '';
  private standInOutput = '';
  env: Record<string, string> = {};
  ports = { gluetun: 0, app: 0 };

  constructor(dir: string) {
    this.dir = dir;
  }

  file(name: string): string {
    return path.join(this.dir, name);
  }

  requests(): Request[] {
    if (!fs.existsSync(this.file('requests'))) return [];
    return fs.readFileSync(this.file('requests'), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Request);
  }

  logins(): Request[] {
    return this.requests().filter((r) => ['ok', 'refused', 'banned', 'login ok', 'already'].includes(r.what));
  }

  listenPort(): number {
    return Number(fs.readFileSync(this.file('listen_port'), 'utf8'));
  }

  randomPort(): string {
    return fs.readFileSync(this.file('random_port'), 'utf8');
  }

  /** The metrics file port-sync writes: sample name (labels dropped) → value. */
  metrics(): Record<string, number> {
    const text = fs.existsSync(this.file('work/metrics')) ? fs.readFileSync(this.file('work/metrics'), 'utf8') : '';
    return Object.fromEntries(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => [l.split(/[{ ]/)[0], Number(l.split(' ').pop())]));
  }

  setForwarded(port: number): void {
    fs.writeFileSync(this.file('forwarded'), String(port));
  }

  /** A new value of a mounted secret, as the kubelet updates a projected Secret volume (a new file renamed in). */
  mount(name: 'app-username' | 'app-password' | 'app-api-key', value: string): void {
    fs.writeFileSync(this.file(`secrets/.${name}`), value);
    fs.renameSync(this.file(`secrets/.${name}`), this.file(`secrets/${name}`));
  }

  /** Polls `pred` every 50 ms for up to `seconds`: true once it held. */
  async until(pred: () => boolean, seconds = 10): Promise<boolean> {
    const end = Date.now() + seconds * 1000;
    for (;;) {
      try {
        if (pred()) return true;
      } catch {
        // not yet
      }
      if (Date.now() > end) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  started(proc: ChildProcess, into: 'log' | 'standInOutput'): void {
    this.procs.push(proc);
    proc.stdout!.on('data', (d: Buffer) => { this[into] += d.toString(); });
    proc.stderr!.on('data', (d: Buffer) => { this[into] += d.toString(); });
  }

  /** Stops every process the lab started (each leads a process group of its own: the script's sleeps and nc too). */
  async stop(): Promise<void> {
    for (const p of this.procs) {
      if (p.exitCode === null && p.pid) {
        try {
          process.kill(-p.pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
    for (const p of this.procs) {
      p.stdout?.destroy();
      p.stderr?.destroy();
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  standInLog(): string {
    return this.standInOutput;
  }
}

/** The props of a routed qBittorrent-like workload with port forwarding to `pf.app`. */
export function labProps(pf: Record<string, unknown>): VpnGatewayProps {
  return {
    ...gatewayFor('protonvpn'),
    portForwarding: { workload: 'seeder', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' }, ...pf },
  } as VpnGatewayProps;
}

/** The port-sync container and its script, as planRoute renders them for `props`. */
export function renderedSync(props: VpnGatewayProps): { script: string; command: string[]; env: Record<string, string> } {
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'seeder' }, name: 'seeder', kind: 'StatefulSet' });
  const cm = route.objects.find((o) => o.metadata.name === 'seeder-vpn-port-sync') as unknown as { data: Record<string, string> };
  const c = route.extraContainers.find((x) => x.name === 'vpn-port-sync')!;
  return { script: cm.data['port-sync.sh'], command: c.command!, env: Object.fromEntries(c.env!.map((e) => [e.name, e.value ?? ''])) };
}

export async function startSyncLab(dir: string, o: SyncLabOptions): Promise<SyncLab> {
  const lab = new SyncLab(dir);
  const user = o.appUser ?? 'admin';
  const password = o.appPassword ?? 's3cret "pass\\word';
  fs.mkdirSync(lab.file('secrets'), { recursive: true });
  fs.mkdirSync(lab.file('port-sync'));
  fs.writeFileSync(lab.file('gluetun-key'), 'gluetun-k3y');
  fs.writeFileSync(lab.file('secrets/gluetun-api-key'), 'gluetun-k3y\n');
  if (o.forwarded !== undefined) lab.setForwarded(o.forwarded);
  const mounted = { username: user, password, apiKey: o.appApiKey, ...o.mounted };

  if (o.standIn !== 'none') {
    const standIn = spawn('python3', [STAND_INS, dir, o.standIn, user, password, o.appApiKey ?? ''], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    lab.started(standIn, 'standInOutput');
    if (!(await lab.until(() => fs.existsSync(lab.file('ports'))))) throw new Error(`stand-ins did not start: ${lab.standInLog()}`);
    const ports = Object.fromEntries(fs.readFileSync(lab.file('ports'), 'utf8').trim().split('\n').map((l) => l.split(' ')));
    lab.ports = { gluetun: Number(ports.gluetun), app: Number(ports.app) };
  }

  const sync = renderedSync(labProps(o.portForwarding));
  fs.writeFileSync(lab.file('port-sync/port-sync.sh'), sync.script, { mode: 0o555 });
  const moved: Record<string, string> = {};
  for (const [k, v] of Object.entries(sync.env)) {
    let value = v.replace('/run/port-sync-secrets', lab.file('secrets')).replace('/tmp/port-sync', lab.file('work'));
    if (k === 'GLUETUN_URL') value = `http://127.0.0.1:${lab.ports.gluetun}`;
    if (k === 'APP_URL') value = value.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${lab.ports.app}`);
    moved[k] = value;
  }
  for (const [key, file] of [['username', 'app-username'], ['password', 'app-password'], ['apiKey', 'app-api-key']] as const) {
    const value = mounted[key];
    if (value !== undefined) fs.writeFileSync(lab.file(`secrets/${file}`), `${value}\n`);
  }
  lab.env = {
    ...moved,
    PERIOD: o.period ?? '0.2',
    METRICS_PORT: String(o.metricsPort ?? 0),
    WORK: lab.file('work'),
    ...(o.banBackoff ? { BAN_BACKOFF: o.banBackoff } : {}),
  };
  // The container's command with the script moved: ['/bin/sh', '/port-sync/port-sync.sh'], run by busybox's sh.
  expect(sync.command).toEqual(['/bin/sh', '/port-sync/port-sync.sh']);
  // The image's userland: busybox's applets and curl, nothing else on PATH (a tool the script needs that busybox
  // lacks fails here as it would in the container).
  const bin = lab.file('bin');
  fs.mkdirSync(bin);
  const busybox = which('busybox')!;
  for (const applet of spawnSync(busybox, ['--list'], { encoding: 'utf8' }).stdout.split('\n').filter((a) => /^[a-z0-9_.-]+$/.test(a))) fs.symlinkSync(busybox, path.join(bin, applet));
  fs.symlinkSync(busybox, path.join(bin, 'busybox'));
  fs.symlinkSync(which('curl')!, path.join(bin, 'curl'));
  const proc = spawn(busybox, ['sh', lab.file('port-sync/port-sync.sh')], {
    detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: bin, ...lab.env },
  });
  lab.started(proc, 'log');
  return lab;
}
