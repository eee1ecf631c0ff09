import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFERRED_ENDPOINT_PREFIX, WG_ENDPOINTS_SCRIPT, WG_RELOAD_SCRIPT } from '../../src/host/wireguard-reload';

/**
 * The endpoints script under bash, over simulated time, against a `wg` and a `getent` on PATH that play an interface
 * and its resolver: names resolve from a DNS table that changes over time; the node sends to the peer every round
 * (unless the link is idle), and the peer answers (a handshake, bytes received) only while the endpoint is the
 * address it really answers at. `date` and `sleep` on PATH read and advance a clock file, so an hour of the script's
 * life runs in seconds; the run ends when the clock passes its limit. Every lookup is recorded with its time.
 */
const KEY = Buffer.alloc(32, 9).toString('base64');
/** When the simulated clock starts (2023-11-14). */
const T0 = 1_700_000_000;
const NAME = 'd.example.net';

interface Sim {
  /** `when host ip` lines: from time `when`, `host` resolves to `ip` (none: it does not resolve). */
  readonly dns?: string[];
  /** `when ip:port` lines: from time `when`, the peer answers at this address (none: nowhere). */
  readonly live?: string[];
  /** The peer's endpoint when the script starts (one learnt by roaming, say). @default '(none)' */
  readonly endpoint?: string;
  /** The node sends nothing to the peer (an idle link without keepalive). */
  readonly idle?: boolean;
  /** The peer's packets reach this node (bytes received), but no handshake completes: its answers are lost. */
  readonly answersLost?: boolean;
  /** `when ip`: from time `when`, the host has no route to `ip` (sends to it fail, so nothing is counted sent). */
  readonly noRoute?: string[];
  /** The node sends nothing before this time (an idle link), then sends every round. */
  readonly sendingFrom?: number;
  /** A reload sets the peer's endpoint to this while its name is being looked up (outside the lock). */
  readonly setDuringLookup?: string;
  /** The interface's fwmark (wg-quick sets one for a /0 in AllowedIPs, with policy routing through the interface). */
  readonly fwmark?: number;
  /** A data packet arrives at this time, and the node answers it with WireGuard's keepalive 10 s later. */
  readonly dataAt?: number;
  /** The config cannot be read (missing). */
  readonly noConfig?: boolean;
  /** A lookup takes 3 s. */
  readonly slowLookup?: boolean;
  /** The config lists the peer, but the interface does not have it. */
  readonly notOnInterface?: boolean;
  /** Another process (a reload) holds the lock for 1 s from the lookup on. */
  readonly lockHeldDuringLookup?: boolean;
  /** A reload removes the peer while its name is being looked up (outside the lock). */
  readonly removedDuringLookup?: boolean;
  /** `[from, to)`: the interface is gone (`wg-quick down`) in this time. */
  readonly gone?: readonly [number, number];
  /** The simulated seconds the script runs for. */
  readonly seconds: number;
  readonly env?: Record<string, string>;
  readonly args?: string[];
  /** How many more peers the interface has (a large mesh). */
  readonly morePeers?: number;
  readonly script?: string;
}

interface SimRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** `time host` per lookup of the name. */
  readonly lookups: string[];
  /** The peer's endpoint as the interface has it at the end. */
  readonly endpoint: string;
  /** `wg set` created the peer again after it was removed. */
  readonly readded: boolean;
  /** `released` when the lock's other holder let go, `set` per `wg set`, in order. */
  readonly order: string[];
}

function simulate(sim: Sim): SimRun {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-endpoints-'));
  try {
    const f = (n: string) => path.join(dir, n);
    const more = sim.morePeers ?? 0;
    // The clock reads as wall-clock time does (a handshake never made is 0, as wg shows it); tables and results are
    // in seconds from the start.
    const table = (lines: readonly string[] = []) => lines.map((l) => l.replace(/^\d+/, (t) => String(T0 + Number(t)))).map((l) => `${l}\n`).join('');
    fs.writeFileSync(f('clock'), `${T0}\n`);
    fs.writeFileSync(f('dns'), table(sim.dns));
    fs.writeFileSync(f('live'), table(sim.live));
    fs.writeFileSync(f('noroute'), table(sim.noRoute));
    fs.writeFileSync(f('endpoint'), `${sim.endpoint ?? '(none)'}\n`);
    fs.writeFileSync(f('handshake'), '0\n');
    fs.writeFileSync(f('transfer'), '0 0\n');
    fs.writeFileSync(f('lookups'), '');
    // Fakes in the shell alone (no cat or awk), dash where they need nothing of bash's (it starts in about two thirds
    // of bash's time, and they run several times a round): a simulated hour is 360 rounds of the script.
    fs.writeFileSync(f('date'), `#!/bin/sh\nread -r t < ${f('clock')}; echo "$t"\n`, { mode: 0o755 });
    fs.writeFileSync(f('sleep'), [
      '#!/bin/sh',
      `read -r t < ${f('clock')}; t=$((t + $1)); echo "$t" > ${f('clock')}`,
      `if [ "$t" -gt ${T0 + sim.seconds} ]; then kill -TERM "$PPID"; fi`,
    ].join('\n'), { mode: 0o755 });
    // The value a time table (`when value…` lines) holds now: its latest line whose time has come, for a key or for all.
    const holds = 'holds() { local when k v r=""; while read -r when k v; do if [ "$when" -le "$now" ] && { [ -z "${2:-}" ] || [ "$k" = "$2" ]; }; then r="$k $v"; fi; done < "$1"; echo "$r"; }';
    fs.writeFileSync(f('getent'), [
      '#!/bin/sh',
      `read -r now < ${f('clock')}`,
      holds,
      `echo "$now $2" >> ${f('lookups')}`,
      sim.removedDuringLookup ? `touch ${f('removed')}` : '',
      sim.slowLookup ? '/bin/sleep 3' : '',
      sim.setDuringLookup ? `echo ${sim.setDuringLookup} > ${f('endpoint')}` : '',
      `ips=$(holds ${f('dns')} "$2"); ips=\${ips#* }`,
      'if [ -z "$ips" ] || [ "$ips" = none ]; then exit 2; fi',
      // As glibc's getent prints getaddrinfo's list: each address three times (one per socket type), in order.
      'for ip in $ips; do printf \'%s STREAM %s\\n%s DGRAM\\n%s RAW\\n\' "$ip" "$2" "$ip" "$ip"; done',
      sim.lockHeldDuringLookup ? `(flock 9; touch ${f('held')}; /bin/sleep 1; echo released >> ${f('order')}) 9>${f('lock')} >/dev/null 2>&1 & while [ ! -e ${f('held')} ]; do /bin/sleep 0.05; done` : '',
    ].join('\n'), { mode: 0o755 });
    // `ip route get ADDRESS`: a route out of eth0, or none (exit 2, as iproute2 on ENETUNREACH).
    fs.writeFileSync(f('ip'), [
      '#!/bin/sh',
      `read -r now < ${f('clock')}`,
      // As iproute2: an address in brackets or with a zone is no address.
      'case $3 in *[][%]*) echo "Error: any valid prefix is expected rather than \"$3\"." >&2; exit 1 ;; esac',
      // `when ip [self]`: from `when`, no route to `ip` (self: a route through the interface itself).
      `while read -r when a how; do if [ "$when" -le "$now" ] && [ "$a" = "$3" ]; then`,
      '  if [ "$how" = self ]; then echo "$3 dev wg0 table main src 10.10.0.1 uid 0"; exit 0; fi',
      '  echo "RTNETLINK answers: Network is unreachable" >&2; exit 2',
      `fi; done < ${f('noroute')}`,
      // wg-quick's policy routing of a /0 interface: a packet without the interface's fwmark goes through it.
      sim.fwmark ? `if [ "$4 $5" != "mark ${sim.fwmark}" ]; then echo "$3 dev wg0 table ${sim.fwmark} src 10.10.0.1 uid 0"; exit 0; fi` : '',
      'echo "$3 dev eth0 src 198.18.0.1 uid 0"; echo "    cache"',
    ].join('\n'), { mode: 0o755 });
    fs.writeFileSync(f('wg'), [
      '#!/bin/bash',
      `read -r now < ${f('clock')}`,
      holds,
      `read -r endpoint < ${f('endpoint')}`,
      sim.gone ? `if [ "$now" -ge ${T0 + sim.gone[0]} ] && [ "$now" -lt ${T0 + sim.gone[1]} ]; then echo "Unable to access interface: No such device" >&2; exit 1; fi` : '',
      'if [ "$1 $3" = "show latest-handshakes" ]; then',
      // Each round: the node sends (unless idle); the peer answers while the endpoint is where it answers.
      `  live=$(holds ${f('live')}); live=\${live% }`,
      `  read -r rx tx < ${f('transfer')}`,
      // Bytes are counted sent only when the send succeeds (a route to the endpoint), as the kernel and wireguard-go count.
      `  routed=yes; while read -r when a; do if [ "$when" -le "$now" ] && [ "$a:51820" = "$endpoint" ]; then routed=; fi; done < ${f('noroute')}`,
      sim.idle ? '' : `  if [ -n "$routed" ] && [ "$endpoint" != "(none)" ] && [ "$now" -ge ${T0 + (sim.sendingFrom ?? 0)} ]; then tx=$((tx + 148)); fi`,
      `  if [ -z "${sim.idle ? 'idle' : ''}" ] && [ "$now" -ge ${T0 + (sim.sendingFrom ?? 0)} ] && [ -n "$live" ] && [ "$live" = "$endpoint" ]; then echo "$now" > ${f('handshake')}; rx=$((rx + 92)); fi`,
      sim.answersLost ? '  rx=$((rx + 148))' : '',
      // One data packet received at `dataAt` (its session's handshake then), and WireGuard's keepalive 10 s later.
      sim.dataAt !== undefined ? `  if [ "$now" = ${T0 + sim.dataAt} ]; then rx=$((rx + 124)); echo "$now" > ${f('handshake')}; fi; if [ "$now" = ${T0 + sim.dataAt + 10} ]; then tx=$((tx + 32)); fi` : '',
      `  echo "$rx $tx" > ${f('transfer')}`,
      `  read -r handshake < ${f('handshake')}`,
      sim.notOnInterface ? '' : `  printf '%s\\t%s\\n' "${KEY}" "$handshake"`,
      `  for ((i = 0; i < ${more}; i++)); do printf 'peer-%s-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx=\\t0\\n' "$i"; done`,
      '  exit 0',
      'fi',
      `if [ "$1 $3" = "show endpoints" ]; then [ -e ${f('removed')} ] || printf '%s\\t%s\\n' "${KEY}" "$endpoint"; exit 0; fi`,
      `if [ "$1 $3" = "show fwmark" ]; then echo ${sim.fwmark ?? 'off'}; exit 0; fi`,
      `if [ "$1 $3" = "show transfer" ]; then read -r rx tx < ${f('transfer')}; printf '%s\\t%s\\t%s\\n' "${KEY}" "$rx" "$tx"; exit 0; fi`,
      `if [ "$1 $3" = "show peers" ]; then [ -e ${f('removed')} ] || [ -n "${sim.notOnInterface ? 'no' : ''}" ] || echo "${KEY}"; for ((i = 0; i < ${more}; i++)); do echo "peer-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx="; done; exit 0; fi`,
      'if [ "$1 $3 $5" = "set peer endpoint" ] && [ "$4" = "' + KEY + '" ]; then',
      // As the kernel and wireguard-go do: a peer that is not there is created, without allowed IPs.
      `  if [ -e ${f('removed')} ]; then echo "$6" > ${f('re-added')}; fi`,
      `  echo set >> ${f('order')}`,
      `  echo "$6" > ${f('endpoint')}`,
      '  exit 0',
      'fi',
      'echo "unexpected: wg $*" >&2; exit 2',
    ].join('\n'), { mode: 0o755 });
    fs.writeFileSync(f('wg0.conf'), `[Interface]\nAddress = 10.10.0.1/24\n\n[Peer]\nPublicKey = ${KEY}\n${DEFERRED_ENDPOINT_PREFIX}${NAME}:51820\nAllowedIPs = 10.10.0.4/32\n`);
    fs.writeFileSync(f('wg-endpoints'), sim.script ?? WG_ENDPOINTS_SCRIPT, { mode: 0o755 });
    if (sim.noConfig) fs.rmSync(f('wg0.conf'));
    const r = spawnSync('bash', [f('wg-endpoints'), ...(sim.args ?? []), 'wg0', f('wg0.conf')], {
      encoding: 'utf8', env: { ...process.env, ...sim.env, WG_LOCK: f('lock'), PATH: `${dir}:${process.env.PATH}` }, timeout: 120_000,
    });
    const lookups = fs.readFileSync(f('lookups'), 'utf8').split('\n').filter(Boolean).map((l) => l.replace(/^\d+/, (t) => String(Number(t) - T0)));
    if (sim.lockHeldDuringLookup) spawnSync('flock', [f('lock'), 'true']); // the holder has let go
    // A run without --once lives until the clock's end stops it: any other end is the script dying.
    if (!sim.args?.includes('--once') && r.signal !== 'SIGTERM') throw new Error(`wg-endpoints ended (${r.status}, ${r.signal}) before the clock did:\n${r.stderr}`);
    const readded = fs.existsSync(f('re-added'));
    const order = fs.existsSync(f('order')) ? fs.readFileSync(f('order'), 'utf8').split('\n').filter(Boolean) : [];
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, lookups, endpoint: fs.readFileSync(f('endpoint'), 'utf8').trim(), readded, order };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const HOUR = 3600;
const times = (r: SimRun) => r.lookups.map((t) => Number(t.split(' ')[0]));
const ours = (text: string) => text.split('\n').filter((l) => l.startsWith('wg-endpoints:'));
/** The backoff's times from `t0`: 10, 20, 40, 80, 160 s, then 300 s, up to `end`. */
const backoffFrom = (t0: number, end: number) => {
  const out = [t0];
  for (let w = 10; out[out.length - 1] + w <= end; w = Math.min(w * 2, 300)) out.push(out[out.length - 1] + w);
  return out;
};
/** The failing rule of before this fix: the handshake's age alone, as contrib/reresolve-dns has it. */
const AGE = 'failing=0\n      if [ $((now - ${handshake[$key]})) -gt "$stale" ]; then\n';
const ageAlone = WG_ENDPOINTS_SCRIPT.replace(AGE, 'failing=0\n      if [ $((now - ${handshake[$key]})) -gt "$stale" ]; then failing=1; fi\n      if false; then\n');

describe('wg-endpoints --once', () => {
  it.each([
    ['resolves', 0, [`0 ${NAME} 198.18.0.2`], '198.18.0.2:51820'],
    ['does not resolve', 1, [], '(none)'],
  ])('tries a name that %s once, and exits %i', (_what, status, dns, endpoint) => {
    const r = simulate({ dns, seconds: HOUR, args: ['--once'] });
    expect(r).toMatchObject({ status, endpoint, lookups: [`0 ${NAME}`] });
  });

  it('fails, saying so, when the config cannot be read, so that its unit restarts it (control: without the check, a silent success)', () => {
    const r = simulate({ seconds: 0, args: ['--once'], noConfig: true });
    expect(r.status).toBe(1);
    expect(ours(r.stderr)).toEqual([expect.stringMatching(/^wg-endpoints: wg0: cannot read \/.*\/wg0\.conf$/)]);
    const check = 'if [ ! -r "$conf" ]; then echo "wg-endpoints: $iface: cannot read $conf" >&2; exit 1; fi\n';
    expect(WG_ENDPOINTS_SCRIPT).toContain(check);
    expect(simulate({ seconds: 0, args: ['--once'], noConfig: true, script: WG_ENDPOINTS_SCRIPT.replace(check, '') })).toMatchObject({ status: 0 });
  });

  it('exits 2 when the interface is gone, and says why', () => {
    const r = simulate({ dns: [`0 ${NAME} 198.18.0.2`], seconds: HOUR, args: ['--once'], gone: [0, 10] });
    expect(r).toMatchObject({ status: 2, lookups: [] });
    expect(ours(r.stderr)).toEqual(['wg-endpoints: wg0: Unable to access interface: No such device']);
  });
});

describe('wg-endpoints on an interface with many peers', () => {
  it('sets the endpoint of a listed peer however long the peer list', () => {
    const r = simulate({ dns: [`0 ${NAME} 198.18.0.2`], seconds: 0, args: ['--once'], morePeers: 100_000 });
    expect(r.status).toBe(0);
    expect(r.endpoint).toBe('198.18.0.2:51820');
    expect(r.stdout).toBe(`wg-endpoints: wg0: peer ${KEY} at ${NAME}:51820 (198.18.0.2:51820)\n`);
  });
});

describe('wg-endpoints over its life', () => {
  it('tries a name that never resolves after 10, 20, 40, 80 and 160 s, then every 300 s: 16 tries in an hour (control: without the doubling, 361)', () => {
    const r = simulate({ seconds: HOUR });
    expect(times(r)).toEqual(backoffFrom(0, HOUR));
    expect(times(r)).toHaveLength(16);
    expect(ours(r.stderr)).toHaveLength(16);
    expect(ours(r.stderr)[0]).toBe(`wg-endpoints: wg0: ${NAME}:51820 does not resolve yet: peer ${KEY} has no endpoint; next try in 10 s`);
    expect(ours(r.stderr)[15]).toContain('; next try in 300 s');
    const flat = simulate({ seconds: HOUR, env: { WG_ENDPOINTS_MAX_INTERVAL: '10' } });
    expect(flat.lookups).toHaveLength(361);
  });

  it('sets a name once it resolves, within the wait it had reached', () => {
    const r = simulate({ dns: [`1000 ${NAME} 198.18.0.2`], live: ['0 198.18.0.2:51820'], seconds: 1300 });
    expect(times(r)).toEqual([0, 10, 30, 70, 150, 310, 610, 910, 1210]);
    expect(r.endpoint).toBe('198.18.0.2:51820');
    expect(ours(r.stdout)).toEqual([`wg-endpoints: wg0: peer ${KEY} at ${NAME}:51820 (198.18.0.2:51820)`]);
  });

  it('does not resolve a name again while its peer answers', () => {
    const r = simulate({ dns: [`0 ${NAME} 198.18.0.2`], live: ['0 198.18.0.2:51820'], seconds: 1200 });
    expect(r.lookups).toEqual([`0 ${NAME}`]);
    expect(ours(r.stdout)).toHaveLength(1);
    expect(ours(r.stderr)).toEqual([]);
  });

  it('keeps an endpoint learnt by roaming on an idle link, however old its handshake (control: by the handshake\'s age alone it is overwritten with the stale DNS answer)', () => {
    const roamed = { dns: [`0 ${NAME} 198.18.0.2`], live: ['0 198.18.0.3:51820'], endpoint: '198.18.0.3:51820', idle: true, seconds: 1200 };
    const r = simulate(roamed);
    expect(r).toMatchObject({ endpoint: '198.18.0.3:51820', lookups: [], stderr: '' });
    expect(ageAlone).not.toBe(WG_ENDPOINTS_SCRIPT);
    const before = simulate({ ...roamed, script: ageAlone });
    expect(before.endpoint).toBe('198.18.0.2:51820');
  });

  it('keeps the endpoint of a peer whose packets arrive while no handshake completes: roaming put it where they come from (control: with bytes received not counted, it is overwritten)', () => {
    const lost = { dns: [`0 ${NAME} 198.18.0.2`], endpoint: '198.18.0.3:51820', answersLost: true, seconds: 1200 };
    expect(simulate(lost)).toMatchObject({ endpoint: '198.18.0.3:51820', lookups: [] });
    const received = 'if [ "$r" != "${rx_last[$key]:-}" ]; then';
    expect(WG_ENDPOINTS_SCRIPT).toContain(received);
    expect(simulate({ ...lost, script: WG_ENDPOINTS_SCRIPT.replace(received, 'if [ -z "${tx_base[$key]:-}" ]; then') }).endpoint).toBe('198.18.0.2:51820');
  });

  it('does not look up the name of a peer the config lists and the interface does not have', () => {
    expect(simulate({ dns: [`0 ${NAME} 198.18.0.2`], seconds: 600, notOnInterface: true })).toMatchObject({ lookups: [], endpoint: '(none)' });
  });

  it('dials a peer at its new address once its name moves and it stops answering, and says so once (control: never failing, it is lost)', () => {
    const move = { dns: [`0 ${NAME} 198.18.0.2`, `600 ${NAME} 198.18.0.9`], live: ['0 198.18.0.2:51820', '600 198.18.0.9:51820'], seconds: 1200 };
    const r = simulate(move);
    expect(r.endpoint).toBe('198.18.0.9:51820');
    // The last handshake at the old address is at 590 (rounds every 10 s); older than 180 s at 780.
    expect(times(r)).toEqual([0, 780]);
    expect(ours(r.stdout)).toEqual([
      `wg-endpoints: wg0: peer ${KEY} at ${NAME}:51820 (198.18.0.2:51820)`,
      `wg-endpoints: wg0: peer ${KEY} at ${NAME}:51820 (198.18.0.9:51820): 198.18.0.2:51820 was not answering`,
    ]);
    const never = simulate({ ...move, env: { WG_ENDPOINTS_STALE: String(10 * HOUR) } });
    expect(never).toMatchObject({ endpoint: '198.18.0.2:51820', lookups: [`0 ${NAME}`] });
  });

  it('resolves the name of a peer that stopped answering at the same address after the same doubling waits, and says so once', () => {
    const r = simulate({ dns: [`0 ${NAME} 198.18.0.2`], live: ['0 198.18.0.2:51820', '600 none'], seconds: 1800 });
    expect(times(r)).toEqual([0, 780, 790, 810, 850, 930, 1090, 1390, 1690]);
    expect(r.endpoint).toBe('198.18.0.2:51820');
    expect(ours(r.stdout)).toHaveLength(1);
    expect(ours(r.stderr)).toEqual([`wg-endpoints: wg0: peer ${KEY} at 198.18.0.2:51820 is not answering: resolving ${NAME}:51820 again`]);
  });

  it('keeps the endpoint it has while the name stops resolving, and backs off from 10 s again', () => {
    // Resolves from 100 s (set at 150, after four failures), then not from 600 s, when the peer also moves.
    const r = simulate({ dns: [`100 ${NAME} 198.18.0.2`, `600 ${NAME} none`], live: ['0 198.18.0.2:51820', '600 198.18.0.9:51820'], seconds: 900 });
    expect(r.endpoint).toBe('198.18.0.2:51820');
    expect(times(r)).toEqual([0, 10, 30, 70, 150, 780, 790, 810, 850]);
    expect(ours(r.stderr).slice(4, 6)).toEqual([
      `wg-endpoints: wg0: peer ${KEY} at 198.18.0.2:51820 is not answering: resolving ${NAME}:51820 again`,
      `wg-endpoints: wg0: ${NAME}:51820 does not resolve: peer ${KEY} keeps 198.18.0.2:51820; next try in 10 s`,
    ]);
  });

  it('says once that the interface is gone, waits for it, and goes on', () => {
    const r = simulate({ dns: [`0 ${NAME} 198.18.0.2`, `400 ${NAME} 198.18.0.9`], live: ['0 198.18.0.2:51820', '400 198.18.0.9:51820'], gone: [300, 600], seconds: 1000 });
    expect(ours(r.stderr)).toEqual([
      'wg-endpoints: wg0: Unable to access interface: No such device; waiting for the interface',
      `wg-endpoints: wg0: peer ${KEY} at 198.18.0.2:51820 is not answering: resolving ${NAME}:51820 again`,
    ]);
    expect(r.endpoint).toBe('198.18.0.9:51820');
  });

  it('never brings back a peer a reload removed while its name was looked up (control: without the check under the lock, it is created again)', () => {
    const check = '[ "$current" = "$was" ] && ';
    const race = { dns: [`0 ${NAME} 198.18.0.2`], seconds: 0, args: ['--once'], removedDuringLookup: true };
    expect(simulate(race)).toMatchObject({ readded: false, lookups: [`0 ${NAME}`] });
    expect(WG_ENDPOINTS_SCRIPT).toContain(check);
    expect(simulate({ ...race, script: WG_ENDPOINTS_SCRIPT.replace(check, '') })).toMatchObject({ readded: true });
  });
});

describe('wg-endpoints beside a reload, a route and a lost answer', () => {
  it('leaves alone an endpoint a reload set while the name was looked up (control: without the check under the lock, overwritten)', () => {
    const reload = { dns: [`0 ${NAME} 198.18.0.2`], seconds: 0, args: ['--once'], setDuringLookup: '192.0.2.3:51820' };
    expect(simulate(reload).endpoint).toBe('192.0.2.3:51820');
    expect(simulate({ ...reload, script: WG_ENDPOINTS_SCRIPT.replace('[ "$current" = "$was" ] && ', '') }).endpoint).toBe('198.18.0.2:51820');
  });

  it('resolves again the name of a peer whose address lost its route, where nothing is counted sent (control: by unanswered bytes alone, never)', () => {
    const cut = { dns: [`0 ${NAME} 198.18.0.2`, `600 ${NAME} 198.18.0.9`], live: ['0 198.18.0.2:51820', '600 198.18.0.9:51820'], noRoute: ['600 198.18.0.2'], seconds: 1200 };
    const r = simulate(cut);
    expect(r.endpoint).toBe('198.18.0.9:51820');
    expect(times(r)).toEqual([0, 780]);
    expect(WG_ENDPOINTS_SCRIPT).toContain('          failing=${noroute[$key]}\n');
    expect(simulate({ ...cut, script: WG_ENDPOINTS_SCRIPT.replace('          failing=${noroute[$key]}\n', '') }).endpoint).toBe('198.18.0.2:51820');
  });

  it('keeps an endpoint learnt by roaming when one answer is lost for 20 s after a long idle (control: judged on one round, overwritten)', () => {
    const lost = { dns: [`0 ${NAME} 198.18.0.2`], live: ['0 198.18.0.3:51820', '600 none', '620 198.18.0.3:51820'], endpoint: '198.18.0.3:51820', sendingFrom: 600, seconds: 1200 };
    expect(simulate(lost)).toMatchObject({ endpoint: '198.18.0.3:51820', lookups: [] });
    expect(simulate({ ...lost, env: { WG_ENDPOINTS_QUIET: '0' } }).endpoint).toBe('198.18.0.2:51820');
  });
});

describe('wg-endpoints tells a failing link from a quiet one', () => {
  const roamedIdle = { dns: [`0 ${NAME} 198.18.0.2`], endpoint: '198.18.0.3:51820', idle: true, seconds: 700 };

  it('keeps a roamed endpoint after the keepalive it sends, unanswered by design, to a packet it received (control: with any byte counted, overwritten)', () => {
    const quiet = { ...roamedIdle, dataAt: 200 };
    expect(simulate(quiet)).toMatchObject({ endpoint: '198.18.0.3:51820', lookups: [] });
    expect(WG_ENDPOINTS_SCRIPT).toContain(' -gt 32 ]');
    expect(simulate({ ...quiet, script: WG_ENDPOINTS_SCRIPT.replace(' -gt 32 ]', ' -gt 0 ]') }).endpoint).toBe('198.18.0.2:51820');
  });

  it('resolves again the name of an idle peer whose address lost its route, and says why (control: without the route check, never)', () => {
    const cut = { ...roamedIdle, noRoute: ['600 198.18.0.3'] };
    const r = simulate(cut);
    expect(r.endpoint).toBe('198.18.0.2:51820');
    expect(times(r)[0]).toBeGreaterThanOrEqual(600);
    expect(times(r)[0]).toBeLessThanOrEqual(630);
    expect(ours(r.stderr)).toEqual([`wg-endpoints: wg0: peer ${KEY} at 198.18.0.3:51820 has no route: resolving ${NAME}:51820 again`]);
    expect(simulate({ ...cut, script: WG_ENDPOINTS_SCRIPT.replace('routable "$was" || noroute[$key]=1', ':') }).endpoint).toBe('198.18.0.3:51820');
  });

  it.each([
    ['an IPv6 address', '[2001:db8::3]:51820'],
    ['a link-local IPv6 address with its zone', '[fe80::3%eth0]:51820'],
  ])('asks for the route to %s as an address iproute2 takes', (_what, endpoint) => {
    expect(simulate({ ...roamedIdle, endpoint, seconds: 100 })).toMatchObject({ endpoint, lookups: [] });
  });

  it('counts a route through the interface itself as none (control: without that case, kept)', () => {
    const self = { ...roamedIdle, noRoute: ['600 198.18.0.3 self'] };
    expect(simulate(self).endpoint).toBe('198.18.0.2:51820');
    const pattern = ' | *" dev $iface "*) return 1';
    expect(WG_ENDPOINTS_SCRIPT).toContain(pattern);
    expect(simulate({ ...self, script: WG_ENDPOINTS_SCRIPT.replace(pattern, ') return 1') }).endpoint).toBe('198.18.0.3:51820');
  });

  it('asks for the route as the interface\'s own packets are routed, with its fwmark (control: without the mark, overwritten)', () => {
    const marked = { ...roamedIdle, fwmark: 51820 };
    expect(simulate(marked)).toMatchObject({ endpoint: '198.18.0.3:51820', lookups: [] });
    const withMark = 'set -- mark "$mark"';
    expect(WG_ENDPOINTS_SCRIPT).toContain(withMark);
    expect(simulate({ ...marked, script: WG_ENDPOINTS_SCRIPT.replace(withMark, 'set --') }).endpoint).toBe('198.18.0.2:51820');
  });

  it('while a peer fails, dials the next address of its name: IPv6 first, then IPv4 (control: always the first, never)', () => {
    const dual = { dns: [`0 ${NAME} 2001:db8::2 198.18.0.2`], live: ['0 198.18.0.2:51820'], seconds: 300 };
    const r = simulate(dual);
    expect(r.endpoint).toBe('198.18.0.2:51820');
    expect(ours(r.stdout)[0]).toBe(`wg-endpoints: wg0: peer ${KEY} at ${NAME}:51820 ([2001:db8::2]:51820)`);
    expect(simulate({ ...dual, script: WG_ENDPOINTS_SCRIPT.replace('print list[(i + 1) % n]', 'print list[i]') }).endpoint).toBe('[2001:db8::2]:51820');
  });

  it('gives up a lookup after WG_ENDPOINTS_LOOKUP_TIMEOUT seconds (control: without the limit, it waits)', () => {
    const slow = { dns: [`0 ${NAME} 198.18.0.2`], seconds: 0, args: ['--once'], slowLookup: true, env: { WG_ENDPOINTS_LOOKUP_TIMEOUT: '1' } };
    expect(simulate(slow)).toMatchObject({ status: 1, endpoint: '(none)' });
    const limit = 'timeout "$lookup_timeout" getent';
    expect(WG_ENDPOINTS_SCRIPT).toContain(limit);
    expect(simulate({ ...slow, script: WG_ENDPOINTS_SCRIPT.replace(limit, 'getent') })).toMatchObject({ status: 0, endpoint: '198.18.0.2:51820' });
  });
});

describe('wg-endpoints sets what the name resolves to', () => {
  it.each([
    ['an IPv4 address', '198.18.0.2', '198.18.0.2:51820'],
    ['an IPv6 address, in brackets', '2001:db8::2', '[2001:db8::2]:51820'],
    ['the first of several addresses, as wg takes the first of getaddrinfo\'s', '2001:db8::2 198.18.0.2', '[2001:db8::2]:51820'],
  ])('%s', (_what, addresses, endpoint) => {
    expect(simulate({ dns: [`0 ${NAME} ${addresses}`], seconds: 0, args: ['--once'] })).toMatchObject({ status: 0, endpoint });
  });

  it('sets the endpoint only once the lock is free (control: without taking it, at once)', () => {
    const held = { dns: [`0 ${NAME} 198.18.0.2`], seconds: 0, args: ['--once'], lockHeldDuringLookup: true };
    expect(simulate(held).order).toEqual(['released', 'set']);
    expect(WG_ENDPOINTS_SCRIPT).toContain('\n    flock 9 || continue\n');
    expect(simulate({ ...held, script: WG_ENDPOINTS_SCRIPT.replace('\n    flock 9 || continue\n', '\n') }).order).toEqual(['set', 'released']);
  });
});

describe('wg-reload and wg-endpoints share a lock', () => {
  /** wg-reload run while another process holds the lock for a while: the order in which the two finish. */
  function reloadWhileLocked(script: string): string[] {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-reload-lock-'));
    try {
      const f = (n: string) => path.join(dir, n);
      fs.writeFileSync(f('wg-quick'), "#!/bin/bash\nprintf '[Interface]\\nListenPort = 51820\\n'\n", { mode: 0o755 });
      fs.writeFileSync(f('wg'), `#!/bin/bash\nif [ "$1" = syncconf ]; then echo syncconf >> ${f('order')}; fi\n`, { mode: 0o755 });
      fs.writeFileSync(f('wg0.conf'), '[Interface]\nListenPort = 51820\n');
      fs.writeFileSync(f('wg-reload'), script, { mode: 0o755 });
      // The holder takes the lock, says so, keeps it 1 s, and notes its release; wg-reload starts once it is held.
      const r = spawnSync('bash', ['-c', `(flock 9; touch ${f('held')}; sleep 1; echo released >> ${f('order')}) 9>${f('lock')} &
        while [ ! -e ${f('held')} ]; do sleep 0.05; done; WG_LOCK=${f('lock')} bash ${f('wg-reload')} wg0 ${f('wg0.conf')}; wait`], {
        encoding: 'utf8', env: { ...process.env, PATH: `${dir}:${process.env.PATH}` }, timeout: 30_000,
      });
      expect(r.status).toBe(0);
      return fs.readFileSync(f('order'), 'utf8').split('\n').filter(Boolean);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it('wg-reload syncs the config only once the lock is free (control: without taking it, at once)', () => {
    expect(reloadWhileLocked(WG_RELOAD_SCRIPT)).toEqual(['released', 'syncconf']);
    expect(WG_RELOAD_SCRIPT).toContain('\nflock 9\n');
    expect(reloadWhileLocked(WG_RELOAD_SCRIPT.replace('\nflock 9\n', '\n'))).toEqual(['syncconf', 'released']);
  });
});
