import * as fs from 'node:fs';
import * as path from 'node:path';
import { planRoute, VpnGatewayProps } from '../../src';
import { ControlServerStandIn, startControlServerStandIn, waitUntilListening } from './pods';
import { describeWithTools, must, secondsUntilTrue, sh, tmpdir, which } from './tools';

/**
 * port-sync against Debian's real Transmission 3.00 (`transmission-daemon`, RPC at /transmission/rpc: HTTP Basic auth,
 * then the X-Transmission-Session-Id 409 handshake, `session-get` / `session-set` `peer-port`), in a network namespace
 * of its own: the library's script with the environment the library renders for `app: 'transmission'`, run by
 * busybox sh with busybox's applets first on PATH (as in the sidecar's Alpine image), and a stand-in for gluetun's
 * control server (`GET /v1/portforward` → `{"port":N}`, 401 without the key) on loopback. The path from the peer to
 * the port is proven for qBittorrent in vpn-gateway-port-sync.test.ts; this proves what the sidecar does to Transmission.
 */
describeWithTools('port-sync keeps Transmission\'s peer port equal to the forwarded port', ['ip', 'transmission-daemon', 'curl', 'python3', 'ss', 'busybox'], () => {
  const netns = `p25-${process.pid}-tr`;
  const dir = tmpdir('tw-transmission-');
  const KEY = 'k-' + process.pid.toString(36) + 'x9';
  const USER = 'tw';
  // A quote, a backslash and a dollar: each would end or change a value in curl's config file unless escaped.
  const PASSWORD = `p"a\\ss$w0rd-${process.pid}`;
  const props: VpnGatewayProps = {
    clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12'], nodeCidrs: ['192.168.77.0/24'],
    vpnProvider: 'protonvpn', wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' }, serverCountries: ['Switzerland'],
    portForwarding: { app: 'transmission', workload: 'transmission', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' }, appCredentialsSecret: { name: 'transmission-rpc' }, syncPeriodSeconds: 1 },
  };
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'transmission' }, name: 'transmission', kind: 'StatefulSet' });
  const script = (route.objects.find((o) => o.metadata.name === 'transmission-vpn-port-sync') as unknown as { data: Record<string, string> }).data['port-sync.sh'];
  const env = Object.fromEntries(route.extraContainers.find((c) => c.name === 'vpn-port-sync')!.env!.map((e) => [e.name, e.value ?? '']));
  const inNs = (cmd: string) => sh(`ip netns exec ${netns} bash -c '${cmd.replace(/'/g, "'\\''")}'`);
  const pids: Record<string, string> = {};
  const start = (name: string, cmd: string) => {
    pids[name] = must(inNs(`${cmd} >>${dir}/${name}.log 2>&1 & echo $!`), name).stdout.trim();
  };
  const stop = (name: string) => sh(`kill ${pids[name]} 2>/dev/null; while kill -0 ${pids[name]} 2>/dev/null; do sleep 0.1; done`);
  let ctl: ControlServerStandIn;
  const forwardedIs = (port: number) => ctl.forwardedIs(port);
  /** One RPC call of our own (its own session id handshake), with the given password. */
  const rpc = (body: object, password = PASSWORD) => {
    fs.writeFileSync(path.join(dir, 'q.json'), JSON.stringify(body));
    fs.writeFileSync(path.join(dir, 'our.curlrc'), `user = "${USER}:${password.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"\n`);
    const call = `curl -s -K ${dir}/our.curlrc -H "X-Transmission-Session-Id: $(cat ${dir}/our-sid 2>/dev/null)" -D ${dir}/our-headers --data @${dir}/q.json http://127.0.0.1:9091/transmission/rpc`;
    let out = inNs(call).stdout;
    if (out.includes('409: Conflict')) {
      const sid = /X-Transmission-Session-Id: (\S+)/i.exec(fs.readFileSync(path.join(dir, 'our-headers'), 'utf8'))![1];
      fs.writeFileSync(path.join(dir, 'our-sid'), sid);
      out = inNs(call).stdout;
    }
    return out;
  };
  /** Transmission's own API: its peer port. */
  const peerPort = () => Number(/"peer-port":(\d+)/.exec(rpc({ method: 'session-get', arguments: { fields: ['peer-port'] } }))?.[1] ?? NaN);
  const secondsUntil = (port: number, limit = 20) => secondsUntilTrue(() => peerPort() === port, limit);
  const listening = (port: number) => inNs(`ss -Hltn "sport = :${port}"`).stdout.includes(`:${port}`);
  /** Transmission's count of failed logins in a row, as its 401 page reports it (our own wrong password adds one). */
  const failedLogins = () => Number(/(\d+) unsuccessful login attempts/.exec(rpc({ method: 'session-get' }, 'wrong'))?.[1] ?? NaN);
  const startDaemon = (peerPortAtStart: number) => {
    start('transmission', `transmission-daemon -f -g ${dir}/conf -w ${dir}/dl -r 127.0.0.1 -p 9091 -t -u ${USER} -v "$(cat ${dir}/pw)" -P ${peerPortAtStart} -M -O -Y`);
    waitUntilListening(netns, 'transmission-daemon', [9091], { logs: [`${dir}/transmission.log`] });
  };
  const startSync = (passwordFile = 'pw', extra = '') => {
    fs.rmSync(path.join(dir, 'work'), { recursive: true, force: true });
    start('sync', `env -i PATH=${dir}/bin APP=${env.APP} APP_URL=${env.APP_URL} GLUETUN_URL=http://127.0.0.1:8000 GLUETUN_API_KEY_FILE=${dir}/key ` +
      `APP_USERNAME_FILE=${dir}/user APP_PASSWORD_FILE=${dir}/${passwordFile} PERIOD=${env.PERIOD} WORK=${dir}/work METRICS_FILE=${dir}/work/metrics METRICS_PORT=0 ${extra} busybox sh ${dir}/port-sync.sh`);
  };
  const metric = (name: string) => Number(new RegExp(`^tunnelwright_port_forward_${name}\\{app="transmission"\\} (\\d+)$`, 'm').exec(fs.readFileSync(path.join(dir, 'work', 'metrics'), 'utf8'))?.[1] ?? NaN);
  const figures: Record<string, unknown> = {};

  beforeAll(() => {
    must(sh(`ip netns add ${netns} && ip netns exec ${netns} ip link set lo up`), 'netns');
    // The sidecar image's userland: busybox applets first, curl beside them.
    fs.mkdirSync(path.join(dir, 'bin'));
    for (const applet of ['sh', 'sed', 'grep', 'cat', 'head', 'tr', 'printf', 'mkdir', 'chmod', 'dirname', 'mv', 'date', 'sleep', 'rm', 'env', 'sha256sum']) fs.symlinkSync(which('busybox')!, path.join(dir, 'bin', applet));
    fs.symlinkSync(which('busybox')!, path.join(dir, 'bin', 'busybox'));
    fs.symlinkSync(which('curl')!, path.join(dir, 'bin', 'curl'));
    fs.writeFileSync(path.join(dir, 'port-sync.sh'), script);
    fs.writeFileSync(path.join(dir, 'key'), KEY);
    fs.writeFileSync(path.join(dir, 'user'), USER + '\n');
    fs.writeFileSync(path.join(dir, 'pw'), PASSWORD + '\n');
    fs.writeFileSync(path.join(dir, 'wrong-pw'), 'not-the-password\n');
    ctl = startControlServerStandIn(netns, dir, KEY);
    startDaemon(51413);
  }, 60_000);

  afterAll(() => {
    for (const name of Object.keys(pids).reverse()) stop(name);
    ctl?.stop();
    sh(`ip netns pids ${netns} | xargs -r kill -9; ip netns del ${netns}`);
    process.stdout.write(`transmission port-sync figures: ${JSON.stringify(figures)}\n`);
  });

  it('renders the RPC URL and the login files for Transmission', () => {
    expect(env).toMatchObject({ APP: 'transmission', APP_URL: 'http://127.0.0.1:9091', APP_USERNAME_FILE: '/run/port-sync-secrets/app-username', APP_PASSWORD_FILE: '/run/port-sync-secrets/app-password' });
  });

  it('writes nothing while no port is forwarded (Transmission keeps 51413)', () => {
    startSync();
    sh('sleep 3');
    expect(peerPort()).toBe(51413);
    expect(listening(51413)).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'sync.log'), 'utf8')).not.toContain('setting it');
  });

  it('sets the forwarded port, follows a change, and repairs a daemon restart that forgot it', () => {
    forwardedIs(41234);
    figures.toP = { from: 51413, to: 41234, seconds: secondsUntil(41234) };
    expect(peerPort()).toBe(41234);
    expect(listening(41234)).toBe(true);
    expect(listening(51413)).toBe(false);
    expect(metric('app_listen_port')).toBe(41234);

    forwardedIs(0);
    sh('sleep 2');
    expect(peerPort()).toBe(41234); // port 0 during a reconnect: nothing written
    forwardedIs(42345);
    figures.toP2 = { from: 41234, to: 42345, seconds: secondsUntil(42345) };
    expect(peerPort()).toBe(42345);
    expect(listening(42345)).toBe(true);
    expect(listening(41234)).toBe(false);

    // The daemon restarts on another port (-P overrides settings.json) and with a new session id: a 409 again.
    stop('transmission');
    startDaemon(51413);
    // The sidecar may repair the port before this first read (its period is 1 s): the daemon reports its own 51413
    // or the forwarded port already, never another (a race with the sync, not a result).
    expect([51413, 42345]).toContain(peerPort());
    figures.restartAt51413 = { to: 42345, seconds: secondsUntil(42345) };
    expect(peerPort()).toBe(42345);
    expect(figures).toMatchObject({ toP: { seconds: expect.any(Number) }, toP2: { seconds: expect.any(Number) }, restartAt51413: { seconds: expect.any(Number) } });
    for (const f of ['toP', 'toP2', 'restartAt51413'] as const) expect((figures[f] as { seconds: number }).seconds).toBeLessThan(20);
  });

  it('control: without the sync a change is not applied; started again, it is', () => {
    stop('sync');
    forwardedIs(43456);
    sh('sleep 4');
    expect(peerPort()).toBe(42345);
    figures.withoutSyncAfter4s = peerPort();
    startSync();
    figures.toP3AfterSyncStart = { to: 43456, seconds: secondsUntil(43456) };
    expect(peerPort()).toBe(43456);
    const log = fs.readFileSync(path.join(dir, 'sync.log'), 'utf8');
    expect(log).toContain('app listens on 42345, the VPN forwards 43456: setting it');
    expect(log).not.toContain(KEY);
    expect(log).not.toContain(PASSWORD);
  });

  it('a wrong password is tried once and not again while the mounted value stays; a new value is; control: without the memory of refused credentials every period climbs toward Transmission\'s lock-out', () => {
    stop('sync');
    expect(failedLogins()).toBe(1); // ours; a successful login (peerPort) resets the count
    peerPort();
    fs.writeFileSync(path.join(dir, 'sync.log'), '');
    fs.copyFileSync(path.join(dir, 'wrong-pw'), path.join(dir, 'mounted-pw'));
    startSync('mounted-pw');
    const refusedLine = 'Transmission refused the RPC username or password (401; 3.00 turns its RPC off after 100 refusals until it is restarted, 4.x with anti-brute-force-enabled): these credentials are not sent again';
    expect(secondsUntilTrue(() => fs.readFileSync(path.join(dir, 'sync.log'), 'utf8').includes(refusedLine))).toBeLessThan(30);
    sh('sleep 4'); // four periods after the refusal: none of them tries again
    const withMemory = failedLogins() - 1;
    expect(withMemory).toBe(1);
    expect(metric('login_refused')).toBe(1);
    // The Secret's value is corrected (the kubelet renames a new file in): the next period logs in and syncs.
    fs.writeFileSync(path.join(dir, 'mounted-pw.new'), PASSWORD + '\n');
    fs.renameSync(path.join(dir, 'mounted-pw.new'), path.join(dir, 'mounted-pw'));
    expect(secondsUntilTrue(() => metric('login_refused') === 0)).toBeLessThan(30);
    stop('sync');
    peerPort();
    // Control: the same script with its memory of refused credentials removed tries again every period.
    fs.writeFileSync(path.join(dir, 'port-sync.sh'), script.replace('creds_refused() {\n', 'creds_refused() {\n  return 1\n'));
    fs.writeFileSync(path.join(dir, 'sync.log'), '');
    startSync('wrong-pw');
    const refusals = () => fs.readFileSync(path.join(dir, 'sync.log'), 'utf8').split(refusedLine).length - 1;
    const toThree = secondsUntilTrue(() => refusals() >= 3);
    stop('sync');
    fs.writeFileSync(path.join(dir, 'port-sync.sh'), script);
    const withoutMemory = failedLogins() - 1;
    expect(toThree).toBeLessThan(30);
    expect(withoutMemory).toBeGreaterThanOrEqual(3);
    figures.failedLogins = { withMemoryIn4sAfterRefusal: withMemory, withoutMemory, withoutMemorySecondsToThree: toThree };
  });

  it('Transmission\'s lock-out after 100 failures (403 to everyone until a restart) counts as a ban and waits BAN_BACKOFF', () => {
    peerPort();
    must(inNs(`for i in $(seq 100); do curl -s -o /dev/null -u ${USER}:wrong http://127.0.0.1:9091/transmission/rpc; done`), 'hundred failures');
    expect(rpc({ method: 'session-get' })).toContain('Too many unsuccessful login attempts');
    startSync();
    expect(secondsUntilTrue(() => metric('bans_total') >= 1)).toBeLessThan(30);
    expect(metric('bans_total')).toBe(1);
    expect(fs.readFileSync(path.join(dir, 'sync.log'), 'utf8')).toContain('the app banned this address: next try in 3600 s');
    stop('sync');
  });
});
