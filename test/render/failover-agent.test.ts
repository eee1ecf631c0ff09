import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { planVpnGateway } from '../../src';
import { nordvpnGateway } from '../helpers/fixtures';

/**
 * The failover agent (src/render/vpn-gateway/failover-agent.sh) run as its container runs it, at unit speed: busybox sh and
 * busybox's applets (the image's), the real curl, against the Lease/pod API stand-in (test/helpers/lease-api-stand-in.js,
 * which answers 409 on a stale resourceVersion as kube-apiserver does). `ip` is a stand-in that keeps vxlan0's state
 * in a file and records every call, and shows a link (`ip link show dev NAME`) from the file IP_LINKS/NAME, its flags as
 * busybox's ip prints them, or refuses as busybox's does when that file is gone (the link deleted); gluetun's health
 * server is a file that curl reads (present: 200).
 */
const AGENT = path.resolve(__dirname, '../../src/render/vpn-gateway/failover-agent.sh');
const STAND_IN = path.resolve(__dirname, '../helpers/lease-api-stand-in.js');
const TOKEN = 'vgf-unit-token-5e1d2c';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vgf-agent-'));
const bin = path.join(dir, 'bin');

const hasBusybox = spawnSync('busybox', ['true']).status === 0;
const maybe = hasBusybox ? describe : describe.skip;

type Entry = { t: number; op: string; method?: string; ua?: string; from?: string; to?: string; pod?: string; labels?: Record<string, string>; active?: string[]; holder?: string };

let api: ChildProcess;
let port = 0;
let n = 0;
let apiDir = '';
const agents: ChildProcess[] = [];

function startApi(extra: Record<string, unknown> = {}): void {
  n += 1;
  apiDir = path.join(dir, `api${n}`);
  fs.mkdirSync(apiDir);
  const log = path.join(apiDir, 'api.log');
  fs.writeFileSync(path.join(apiDir, 'config.json'), JSON.stringify({
    listen: { host: '127.0.0.1', port: 0 }, token: TOKEN, namespace: 'vpn', lease: 'gw', roleLabel: 'tunnelwright.io/role',
    pods: { 'gw-a-0': '10.0.0.2', 'gw-b-0': '10.0.0.4' }, serviceName: 'gw.vpn.svc.cluster.local', log, ...extra,
  }));
  api = spawn('node', [STAND_IN, path.join(apiDir, 'config.json')], { stdio: 'ignore' });
  const t0 = Date.now();
  while (!fs.existsSync(`${log}.ready`)) {
    if (Date.now() - t0 > 10_000) throw new Error('the API stand-in did not start');
    spawnSync('sleep', ['0.05']);
  }
  port = Number(fs.readFileSync(`${log}.ready`, 'utf8'));
}

const entries = (): Entry[] => fs.readFileSync(path.join(apiDir, 'api.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Entry);
const holderChanges = () => entries().filter((e) => e.op === 'holder');
const activeSets = () => entries().filter((e) => e.op === 'endpoints').map((e) => e.active!);

/** Starts the agent of pod `me`; its files (health, links, calls, output) are under <dir>/<me>. */
/**
 * tun0's flags as busybox's ip prints them: up, down (`ip link set tun0 down`), a TUN kept by persist-tun whose process
 * is gone. Seen with busybox 1.35 in a network namespace: wireguard-go running and OpenVPN 2.6.14 running (even with no
 * peer) print the `up` flags; a persistent TUN (`ip tuntap add`) set up with no process prints `no-carrier`'s; after
 * wireguard-go was killed, or OpenVPN (no persist-tun) got SIGTERM, "ip: can't find device 'tun0'".
 */
const TUN_FLAGS = { up: 'POINTOPOINT,MULTICAST,NOARP,UP,LOWER_UP', down: 'POINTOPOINT,MULTICAST,NOARP', 'no-carrier': 'NO-CARRIER,POINTOPOINT,MULTICAST,NOARP,UP' } as const;
type Agent = { home: string; healthy(on: boolean): void; tunnel(state: keyof typeof TUN_FLAGS | 'gone'): void; link(): string; output(): string; verdict(): string };

function startAgent(me: string, peer: string, env: Record<string, string> = {}): Agent {
  const home = path.join(dir, `${me}-${n}`);
  fs.mkdirSync(path.join(home, 'sa'), { recursive: true });
  fs.mkdirSync(path.join(home, 'links'), { recursive: true });
  fs.writeFileSync(path.join(home, 'sa', 'token'), TOKEN);
  fs.writeFileSync(path.join(home, 'link'), 'up'); // pod-gateway's gateway_init.sh left vxlan0 up
  fs.writeFileSync(path.join(home, 'links', 'tun0'), TUN_FLAGS.up); // gluetun's tunnel is up
  fs.writeFileSync(path.join(home, 'links', 'lo'), 'LOOPBACK,UP,LOWER_UP');
  const child = spawn('/usr/bin/busybox', ['sh', AGENT], {
    env: {
      PATH: bin, HOME: home, API_URL: `http://127.0.0.1:${port}`, SA_DIR: path.join(home, 'sa'), HEALTH_URL: `file://${home}/health`,
      STATE_DIR: path.join(home, 'state'), IP_STATE: path.join(home, 'link'), IP_CALLS: path.join(home, 'ip.calls'), IP_LINKS: path.join(home, 'links'),
      POD_NAME: me, PEER_POD: peer, NAMESPACE: 'vpn', LEASE: 'gw', PERIOD: '1', LEASE_SECONDS: '6', ACQUIRE_AFTER: '3', RELEASE_AFTER: '2', ...env,
    },
    stdio: ['ignore', fs.openSync(path.join(home, 'out'), 'a'), fs.openSync(path.join(home, 'out'), 'a')],
    // Its own process group: killing the agent kills its watchdog and a curl under way too, as a container's end does.
    detached: true,
  });
  agents.push(child);
  return {
    home,
    healthy: (on) => { if (on) fs.writeFileSync(path.join(home, 'health'), 'ok'); else fs.rmSync(path.join(home, 'health'), { force: true }); },
    tunnel: (state) => { if (state === 'gone') fs.rmSync(path.join(home, 'links', 'tun0'), { force: true }); else fs.writeFileSync(path.join(home, 'links', 'tun0'), TUN_FLAGS[state]); },
    link: () => fs.readFileSync(path.join(home, 'link'), 'utf8').trim(),
    output: () => fs.readFileSync(path.join(home, 'out'), 'utf8'),
    verdict: () => fs.readFileSync(path.join(home, 'state', 'verdict'), 'utf8'),
  };
}

/** Seconds until pred holds (polled every 0.1 s), NaN after limit. */
function until(pred: () => boolean, limit = 20): number {
  const t0 = Date.now();
  for (;;) {
    try { if (pred()) return (Date.now() - t0) / 1000; } catch { /* not yet */ }
    if (Date.now() - t0 > limit * 1000) return NaN;
    spawnSync('sleep', ['0.1']);
  }
}
const wait = (s: number) => spawnSync('sleep', [String(s)]);
/** Kills an agent and every process it started (its process group, when it has one of its own). */
const killAll = (a: ChildProcess) => {
  try { process.kill(-a.pid!, 'SIGKILL'); } catch { a.kill('SIGKILL'); }
};

/** The failover-agent container's readinessProbe as the plan emits it. */
const readinessCommand = (): string[] => {
  type C = { name: string; readinessProbe?: { exec?: { command: string[] } } };
  const sts = planVpnGateway({ ...nordvpnGateway(), standby: { wireguardPrivateKeySecret: { name: 'b' } } }).objects.find((o) => o.kind === 'StatefulSet') as unknown as { spec: { template: { spec: { containers: C[] } } } };
  return sts.spec.template.spec.containers.find((c) => c.name === 'failover-agent')!.readinessProbe!.exec!.command;
};
/** Runs the readinessProbe's command as the kubelet would in the agent's container (busybox), on the verdict at `file`: its exit code. */
const probeExit = (file: string): number => {
  const [sh, ...args] = readinessCommand();
  expect(sh).toBe('/bin/sh');
  return spawnSync('/usr/bin/busybox', ['sh', ...args], { env: { PATH: bin, VERDICT: file }, stdio: 'ignore' }).status!;
};
/** `ip link show dev tun0` calls so far: one per check that got past gluetun's health server. */
const showCalls = (a: { home: string }) => (fs.existsSync(path.join(a.home, 'ip.calls')) ? fs.readFileSync(path.join(a.home, 'ip.calls'), 'utf8').split('\n').filter((l) => l === 'link show dev tun0').length : 0);

beforeAll(() => {
  if (!hasBusybox) return;
  fs.mkdirSync(bin);
  for (const applet of ['busybox', 'sh', 'cat', 'cut', 'sed', 'head', 'date', 'mkdir', 'mv', 'sleep', 'printf', 'echo', 'rm', 'kill']) fs.symlinkSync('/usr/bin/busybox', path.join(bin, applet));
  fs.symlinkSync(spawnSync('sh', ['-c', 'command -v curl'], { encoding: 'utf8' }).stdout.trim(), path.join(bin, 'curl'));
  // ip: `ip link set <link> up|down` as busybox's ip does it, on a link whose state is a file; `ip link show dev <link>`
  // prints the link's first line as busybox's ip does, or its error (exit 2, as busybox 1.35's) for a link that does not exist.
  fs.writeFileSync(path.join(bin, 'ip'), [
    '#!/bin/sh',
    'echo "$*" >>"$IP_CALLS"',
    'if [ "$1 $2 $3" = "link show dev" ]; then',
    '  [ -f "${IP_LINKS:-/nonexistent}/$4" ] || { echo "ip: can\'t find device \'$4\'" >&2; exit 2; }',
    '  echo "7: $4: <$(cat "$IP_LINKS/$4")> mtu 1420 qdisc noqueue state UNKNOWN qlen 500"',
    '  echo "    link/none "',
    '  exit 0',
    'fi',
    '[ "$1 $2" = "link set" ] || exit 1',
    '[ -f "$IP_STATE" ] || { echo "Cannot find device \\"$3\\"" >&2; exit 1; }',
    'echo "$4" >"$IP_STATE"',
    '',
  ].join('\n'), { mode: 0o755 });
});

afterEach(() => {
  for (const a of agents.splice(0)) killAll(a);
  api?.kill('SIGKILL');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

maybe('the failover agent', () => {
  it('a healthy pod takes the role only after ACQUIRE_AFTER healthy checks in a row; control: an unhealthy one never', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    expect(until(() => a.link() === 'down', 5)).not.toBeNaN(); // fenced from the start
    wait(4);
    expect(holderChanges()).toEqual([]); // control: no health, no role
    a.healthy(true);
    const took = until(() => holderChanges().length === 1, 10);
    // Three checks one period apart: the first at once, the third two periods later.
    expect(took).toBeGreaterThanOrEqual(1.8);
    expect(holderChanges()[0]).toMatchObject({ from: '', to: 'gw-a-0' });
    expect(until(() => a.link() === 'up', 5)).not.toBeNaN();
    expect(until(() => JSON.stringify(activeSets().at(-1)) === '["gw-a-0"]', 5)).not.toBeNaN();
  });

  it.each([
    ['as the API server answers it (pretty-printed for a curl User-Agent)', {}],
    ['when the API pretty-prints for every client (?pretty=true)', { pretty: true }],
  ])('the agent takes the Lease %s: its own User-Agent on every request, whitespace after the colon read', (_, extra) => {
    startApi(extra);
    const a = startAgent('gw-a-0', 'gw-b-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    // Renewals: each PUT carries the resourceVersion just read, so none is refused.
    expect(until(() => entries().filter((e) => e.op === 'renew').length >= 2, 10)).not.toBeNaN();
    expect(entries().filter((e) => e.op === 'conflict')).toEqual([]);
    const requests = entries().filter((e) => e.op === 'request');
    expect(new Set(requests.map((e) => e.method))).toEqual(new Set(['GET', 'PUT', 'PATCH']));
    expect(new Set(requests.map((e) => e.ua))).toEqual(new Set(['tunnelwright-failover-agent']));
  });

  it.each([
    ['10.96.0.1', '443', 'https://10.96.0.1:443/'],
    ['fd00:10:96::1', '6443', 'https://[fd00:10:96::1]:6443/'],
  ])('without API_URL the agent calls the API at KUBERNETES_SERVICE_HOST %s and _PORT %s, never by name', (host, p, url) => {
    // A curl that records its arguments and answers as for an unreachable server (the pod's resolv.conf is gluetun's).
    const rec = path.join(dir, `bin-rec-${p}`);
    fs.mkdirSync(rec);
    for (const f of fs.readdirSync(bin)) if (f !== 'curl') fs.symlinkSync(path.join(bin, f), path.join(rec, f));
    fs.writeFileSync(path.join(rec, 'curl'), '#!/bin/sh\necho "$*" >>"$CURL_CALLS"\nprintf 000\nexit 7\n', { mode: 0o755 });
    const home = path.join(dir, `rec-${p}`);
    fs.mkdirSync(home);
    const calls = path.join(home, 'curl.calls');
    const child = spawn('/usr/bin/busybox', ['sh', AGENT], {
      env: {
        PATH: rec, CURL_CALLS: calls, KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: p, SA_DIR: path.join(home, 'sa'),
        STATE_DIR: path.join(home, 'state'), IP_STATE: path.join(home, 'link'), IP_CALLS: path.join(home, 'ip.calls'),
        POD_NAME: 'gw-a-0', PEER_POD: 'gw-b-0', NAMESPACE: 'vpn', LEASE: 'gw', PERIOD: '1',
      },
      stdio: 'ignore',
    });
    agents.push(child);
    expect(until(() => fs.readFileSync(calls, 'utf8').includes('/leases/gw'), 10)).not.toBeNaN();
    const apiCalls = fs.readFileSync(calls, 'utf8').split('\n').filter((l) => l.includes('/apis/') || l.includes('/api/v1/'));
    expect(apiCalls.length).toBeGreaterThan(0);
    for (const c of apiCalls) expect(c.split(' ').at(-1)!.startsWith(url)).toBe(true);
  });

  it('two healthy pods: exactly one holds the role, the other stays fenced, the name never resolves to two', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    const b = startAgent('gw-b-0', 'gw-a-0');
    a.healthy(true);
    b.healthy(true);
    expect(until(() => holderChanges().length >= 1, 10)).not.toBeNaN();
    wait(6);
    expect(holderChanges()).toHaveLength(1);
    const holder = holderChanges()[0].to;
    const [held, other] = holder === 'gw-a-0' ? [a, b] : [b, a];
    expect(held.link()).toBe('up');
    expect(other.link()).toBe('down');
    expect(activeSets().every((s) => s.length <= 1)).toBe(true);
    expect(activeSets().at(-1)).toEqual([holder]);
  });

  it('the holder whose tunnel fails fences before it frees the Lease, the standby takes over, and no failback follows', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    const b = startAgent('gw-b-0', 'gw-a-0');
    b.healthy(true);
    wait(4);
    a.healthy(false);
    expect(until(() => holderChanges().some((h) => h.to === 'gw-b-0'), 15)).not.toBeNaN();
    expect(a.link()).toBe('down');
    // The release (holder → "") was written after a's link went down: a's last ip call before it is "down".
    expect(holderChanges().map((h) => `${h.from}>${h.to}`)).toEqual(['>gw-a-0', 'gw-a-0>', '>gw-b-0']);
    expect(until(() => b.link() === 'up', 5)).not.toBeNaN();
    a.healthy(true);
    wait(6);
    expect(holderChanges().at(-1)!.to).toBe('gw-b-0'); // no failback to a healthy-again a
    expect(a.link()).toBe('down');
    expect(activeSets().every((s) => s.length <= 1)).toBe(true);
  });

  it.each([
    ['with the probe through the tunnel (PROBE_URL)', true],
    ['control: without it (gluetun\'s health server only)', false],
  ])('gluetun\'s health server stays OK while the tunnel gives no answer: %s', (_: string, withProbe: boolean) => {
    startApi();
    // The probe as the pod runs it (curl --interface), out of a link that exists here, to a URL that answers while its
    // file exists: the far end of the tunnel, which stops answering.
    const probe = path.join(dir, `probe-${n}`);
    fs.writeFileSync(probe, 'ok');
    const a = startAgent('gw-a-0', 'gw-b-0', withProbe ? { PROBE_URL: `file://${probe}`, PROBE_INTERFACE: 'lo' } : {});
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    fs.rmSync(probe);
    // RELEASE_AFTER 2 checks 1 s apart: released within a few seconds, or (control) held for the whole window.
    const released = until(() => holderChanges().at(-1)?.to === '', 8);
    expect(Number.isNaN(released)).toBe(!withProbe);
    expect(a.output().includes('no answer through lo')).toBe(withProbe);
    // Released only after the fence (the link is down before the Lease is free); the control's link is not asserted:
    // on a loaded machine a slow API call may let its watchdog fence it, which is not what this control is about.
    expect(withProbe ? a.link() : 'down').toBe('down');
  });

  it('one of several probe URLs answering is enough (one operator\'s outage is not a dead tunnel); control: none answering takes nothing', () => {
    startApi();
    const gone = path.join(dir, `gone-${n}`);
    const up = path.join(dir, `up-${n}`);
    const a = startAgent('gw-a-0', 'gw-b-0', { PROBE_URL: `file://${gone} file://${up}`, PROBE_INTERFACE: 'lo' });
    a.healthy(true);
    wait(5);
    expect(holderChanges()).toEqual([]);
    fs.writeFileSync(up, 'ok');
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
  });

  it('a pod whose probe fails never takes a free role; with an answer it does', () => {
    startApi();
    const probe = path.join(dir, `probe-${n}`);
    const a = startAgent('gw-a-0', 'gw-b-0', { PROBE_URL: `file://${probe}`, PROBE_INTERFACE: 'lo' });
    a.healthy(true);
    wait(5);
    expect(holderChanges()).toEqual([]);
    fs.writeFileSync(probe, 'ok');
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
  });

  it('the holder re-asserts its own label on every renewal: removed by hand (kubectl label), it is back within a period', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && JSON.stringify(activeSets().at(-1)) === '["gw-a-0"]', 10)).not.toBeNaN();
    // `kubectl label pod gw-a-0 tunnelwright.io/role-`: a merge patch with null, as kubectl sends it.
    const unlabel = () => spawnSync('curl', ['-s', '-X', 'PATCH', '-H', `Authorization: Bearer ${TOKEN}`, '-H', 'Content-Type: application/merge-patch+json',
      '--data-binary', '{"metadata":{"labels":{"tunnelwright.io/role":null}}}', `http://127.0.0.1:${port}/api/v1/namespaces/vpn/pods/gw-a-0`]);
    for (let i = 0; i < 2; i += 1) {
      unlabel();
      const removed = until(() => JSON.stringify(activeSets().at(-1)) === '[]', 5);
      expect(removed).not.toBeNaN();
      // PERIOD 1 s: back at the next renewal (a period, plus the renewal's own calls on a loaded machine).
      expect(until(() => JSON.stringify(activeSets().at(-1)) === '["gw-a-0"]', 3)).toBeLessThan(2.5);
    }
    expect(holderChanges()).toHaveLength(1); // the Lease never moved
    expect(a.link()).toBe('up');
  });

  it('a write on a stale resourceVersion gets 409: the agent reads again and fences instead of overwriting', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    // Another client's write lands between a's next read and its renewal: the renewal carries the old version.
    spawnSync('curl', ['-s', '-X', 'POST', '--data-binary', JSON.stringify({ holderIdentity: 'gw-b-0', leaseDurationSeconds: 6 }), `http://127.0.0.1:${port}/_interleave`]);
    expect(until(() => a.link() === 'down', 5)).not.toBeNaN();
    wait(2);
    expect(holderChanges().at(-1)!.to).toBe('gw-b-0'); // never overwritten back
    expect(entries().some((e) => e.op === 'conflict' && e.holder === 'gw-a-0')).toBe(true);
  });

  it('a holder cut off from the API fences itself before the Lease can expire for the standby', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    const lastRenew = () => entries().filter((e) => e.op === 'renew' || e.op === 'holder').at(-1)!.t;
    api.kill('SIGSTOP'); // the API hangs: requests time out
    const t0 = Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    const fencedAfter = until(() => a.link() === 'down', 10);
    api.kill('SIGCONT');
    expect(fencedAfter).not.toBeNaN();
    // LEASE_SECONDS 6, RENEW_MARGIN 2 periods: down within 4 s (+1 s watchdog tick) of the last renewal.
    expect(t0 + fencedAfter - lastRenew()).toBeLessThan(6);
    expect(a.output()).not.toContain(TOKEN);
  });
  it('a standby cut off from the API is not ready (it could not take the role; Ready would let a drain evict the holder); ready again once it reads the Lease', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0', 10)).not.toBeNaN();
    const b = startAgent('gw-b-0', 'gw-a-0');
    b.healthy(true);
    const bReady = () => probeExit(path.join(b.home, 'state', 'verdict')) === 0;
    expect(until(bReady, 10)).not.toBeNaN();
    // Control: with the API answering, a healthy standby stays ready (LEASE_SECONDS 6 and more).
    for (let i = 0; i < 8; i += 1) { expect(bReady()).toBe(true); wait(1); }
    api.kill('SIGSTOP'); // the API hangs for both: requests time out
    try {
      expect(until(() => !bReady(), 15)).not.toBeNaN();
    } finally {
      api.kill('SIGCONT');
    }
    expect(b.output()).toMatch(/not ready: no Lease read for \d+ s/);
    expect(b.verdict().startsWith('unhealthy ')).toBe(true);
    expect(until(bReady, 10)).not.toBeNaN();
    expect(b.output()).toContain('the API answers again');
  });

  it('the verdict turns healthy after ACQUIRE_AFTER good checks and unhealthy after RELEASE_AFTER bad ones; the readinessProbe follows it', () => {
    startApi();
    // A standby's view (no peer to take from, and no Lease needed for the verdict): 4 to acquire, 3 to release.
    const a = startAgent('gw-a-0', 'gw-b-0', { ACQUIRE_AFTER: '4', RELEASE_AFTER: '3' });
    a.healthy(true);
    a.tunnel('gone');
    const verdictFile = path.join(a.home, 'state', 'verdict');
    expect(until(() => a.verdict().startsWith('unhealthy '), 5)).not.toBeNaN();
    expect(probeExit(verdictFile)).not.toBe(0);
    // Never healthy: said once, after RELEASE_AFTER failed checks (the runbook's first step reads it).
    expect(until(() => a.output().includes('verdict: unhealthy (3 checks: tun0 is gone or down)'), 10)).not.toBeNaN();
    const up0 = showCalls(a);
    a.tunnel('up');
    expect(until(() => a.verdict().startsWith('healthy '), 10)).not.toBeNaN();
    // Good checks between the link coming back and the verdict: 4 (5 when a check was under way at the switch).
    expect(showCalls(a) - up0).toBeGreaterThanOrEqual(4);
    expect(showCalls(a) - up0).toBeLessThanOrEqual(5);
    expect(probeExit(verdictFile)).toBe(0);
    const down0 = showCalls(a);
    a.tunnel('gone');
    expect(until(() => a.verdict().startsWith('unhealthy '), 10)).not.toBeNaN();
    expect(showCalls(a) - down0).toBeGreaterThanOrEqual(3);
    expect(showCalls(a) - down0).toBeLessThanOrEqual(4);
    expect(probeExit(verdictFile)).not.toBe(0);
  });

  it('one bad check does not flip a healthy verdict; the probe passes throughout', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0', { RELEASE_AFTER: '3' });
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    const verdictFile = path.join(a.home, 'state', 'verdict');
    const c0 = showCalls(a);
    a.tunnel('gone');
    expect(until(() => showCalls(a) > c0, 5)).not.toBeNaN(); // one check saw it gone
    a.tunnel('up');
    const bad = showCalls(a) - c0;
    for (let i = 0; i < 30; i += 1) { expect(probeExit(verdictFile)).toBe(0); spawnSync('sleep', ['0.1']); }
    // 1 bad check (2 when a second ran before the link came back): fewer than RELEASE_AFTER.
    expect(bad).toBeLessThan(3);
    expect(a.verdict().startsWith('healthy ')).toBe(true);
    expect(holderChanges()).toHaveLength(1);
  });

  it('the readinessProbe fails on a verdict the agent stopped refreshing (a hung loop), and passes again when it goes on', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0', { VERDICT_TTL: '3' });
    a.healthy(true);
    const verdictFile = path.join(a.home, 'state', 'verdict');
    expect(until(() => probeExit(verdictFile) === 0, 10)).not.toBeNaN();
    const agent = agents.at(-1)!;
    agent.kill('SIGSTOP');
    try {
      expect(until(() => probeExit(verdictFile) !== 0, 8)).not.toBeNaN();
      expect(a.verdict().startsWith('healthy ')).toBe(true); // what it says is still healthy: only its age failed it
    } finally {
      agent.kill('SIGCONT');
    }
    expect(until(() => probeExit(verdictFile) === 0, 8)).not.toBeNaN();
  });

  it.each([
    ['the probe command on no verdict file at all (a pod whose agent has not checked yet)', null],
    ['a verdict line without its expiry', 'healthy\n'],
    ['an unhealthy verdict', `unhealthy ${Number.MAX_SAFE_INTEGER}\n`],
    ['control: a healthy verdict that has not expired', `healthy ${Number.MAX_SAFE_INTEGER}\n`],
  ])('readinessProbe: %s', (name, text) => {
    const file = path.join(dir, `verdict-${name.length}`);
    if (text === null) fs.rmSync(file, { force: true }); else fs.writeFileSync(file, text);
    expect(probeExit(file) === 0).toBe(name.startsWith('control'));
  });

  it.each([
    ['deleted (OpenVPN exited: its tun0 goes with its process)', 'gone' as const],
    ['down', 'down' as const],
    ['up without carrier (a TUN kept by persist-tun whose process is gone)', 'no-carrier' as const],
  ])('gluetun\'s health server still answers 200 and no probe URL is set, the tunnel interface %s: the holder releases the role and is not ready', (_, state) => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0'); // no PROBE_URL: probeUrl false
    const b = startAgent('gw-b-0', 'gw-a-0');
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    b.healthy(true);
    expect(until(() => probeExit(path.join(b.home, 'state', 'verdict')) === 0, 10)).not.toBeNaN();
    a.tunnel(state);
    expect(until(() => holderChanges().some((h) => h.to === 'gw-b-0'), 15)).not.toBeNaN();
    expect(holderChanges().map((h) => `${h.from}>${h.to}`)).toEqual(['>gw-a-0', 'gw-a-0>', '>gw-b-0']);
    expect(a.link()).toBe('down');
    expect(a.verdict().startsWith('unhealthy ')).toBe(true);
    expect(a.output()).toMatch(/verdict: unhealthy \(\d+ checks: tun0 is gone or down\)/);
    expect(probeExit(path.join(a.home, 'state', 'verdict'))).not.toBe(0);
    expect(probeExit(path.join(b.home, 'state', 'verdict'))).toBe(0);
    expect(activeSets().every((x) => x.length <= 1)).toBe(true);
  });

  it('a restarted agent container goes on from its verdict (the emptyDir outlives it) and keeps the role; a new pod of the same name gives the Lease up until its own checks pass', () => {
    startApi();
    const a = startAgent('gw-a-0', 'gw-b-0', { LEASE_SECONDS: '30' });
    a.healthy(true);
    expect(until(() => holderChanges().at(-1)?.to === 'gw-a-0' && a.link() === 'up', 10)).not.toBeNaN();
    const env = { LEASE_SECONDS: '30' };
    // The container is killed (no release) and restarted: the same home, so the same state dir, its verdict healthy.
    killAll(agents.pop()!);
    const renewals = () => entries().filter((e) => e.op === 'renew').length;
    const r0 = renewals();
    const again = startAgent('gw-a-0', 'gw-b-0', env);
    expect(again.home).toBe(a.home);
    expect(until(() => renewals() >= r0 + 3 && again.link() === 'up', 10)).not.toBeNaN();
    expect(holderChanges()).toHaveLength(1); // kept: never released
    // The pod is replaced (a new emptyDir): its first check finds the Lease its own and an unproven tunnel.
    killAll(agents.pop()!);
    const fresh = startAgent('gw-a-0', 'gw-b-0', { ...env, STATE_DIR: path.join(a.home, 'state-new-pod') });
    fresh.healthy(true);
    expect(until(() => holderChanges().length >= 3, 15)).not.toBeNaN();
    expect(holderChanges().map((h) => `${h.from}>${h.to}`)).toEqual(['>gw-a-0', 'gw-a-0>', '>gw-a-0']);
  });
});
