import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The failover agent (src/render/vpn-gateway/failover-agent.sh) run as its container runs it, at unit speed: busybox sh and
 * busybox's applets (the image's), the real curl, against the Lease/pod API stand-in (test/helpers/lease-api-stand-in.js,
 * which answers 409 on a stale resourceVersion as kube-apiserver does). `ip` is a stand-in that keeps each link's state
 * in a file and records every call; the tunnel's health is a file that curl reads (present: healthy).
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
function startAgent(me: string, peer: string, env: Record<string, string> = {}): { home: string; healthy(on: boolean): void; link(): string; output(): string } {
  const home = path.join(dir, `${me}-${n}`);
  fs.mkdirSync(path.join(home, 'sa'), { recursive: true });
  fs.writeFileSync(path.join(home, 'sa', 'token'), TOKEN);
  fs.writeFileSync(path.join(home, 'link'), 'up'); // pod-gateway's gateway_init.sh left vxlan0 up
  const child = spawn('/usr/bin/busybox', ['sh', AGENT], {
    env: {
      PATH: bin, HOME: home, API_URL: `http://127.0.0.1:${port}`, SA_DIR: path.join(home, 'sa'), HEALTH_URL: `file://${home}/health`,
      STATE_DIR: path.join(home, 'state'), IP_STATE: path.join(home, 'link'), IP_CALLS: path.join(home, 'ip.calls'),
      POD_NAME: me, PEER_POD: peer, NAMESPACE: 'vpn', LEASE: 'gw', PERIOD: '1', LEASE_SECONDS: '6', ACQUIRE_AFTER: '3', RELEASE_AFTER: '2', ...env,
    },
    stdio: ['ignore', fs.openSync(path.join(home, 'out'), 'a'), fs.openSync(path.join(home, 'out'), 'a')],
  });
  agents.push(child);
  return {
    home,
    healthy: (on) => { if (on) fs.writeFileSync(path.join(home, 'health'), 'ok'); else fs.rmSync(path.join(home, 'health'), { force: true }); },
    link: () => fs.readFileSync(path.join(home, 'link'), 'utf8').trim(),
    output: () => fs.readFileSync(path.join(home, 'out'), 'utf8'),
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

beforeAll(() => {
  if (!hasBusybox) return;
  fs.mkdirSync(bin);
  for (const applet of ['busybox', 'sh', 'cat', 'cut', 'sed', 'head', 'date', 'mkdir', 'mv', 'sleep', 'printf', 'echo', 'rm', 'kill']) fs.symlinkSync('/usr/bin/busybox', path.join(bin, applet));
  fs.symlinkSync(spawnSync('sh', ['-c', 'command -v curl'], { encoding: 'utf8' }).stdout.trim(), path.join(bin, 'curl'));
  // ip: `ip link set <link> up|down` as busybox's ip does it, on a link whose state is a file.
  fs.writeFileSync(path.join(bin, 'ip'), '#!/bin/sh\necho "$*" >>"$IP_CALLS"\n[ "$1 $2" = "link set" ] || exit 1\n[ -f "$IP_STATE" ] || { echo "Cannot find device \\"$3\\"" >&2; exit 1; }\necho "$4" >"$IP_STATE"\n', { mode: 0o755 });
});

afterEach(() => {
  for (const a of agents.splice(0)) a.kill('SIGKILL');
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
});
