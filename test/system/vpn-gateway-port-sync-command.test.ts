import * as fs from 'node:fs';
import * as path from 'node:path';
import { planRoute, VpnGatewayProps } from '../../src';
import { ControlServerStandIn, startControlServerStandIn } from './pods';
import { describeWithTools, must, secondsUntilTrue, sh, tmpdir, which } from './tools';

/**
 * The `command` escape hatch, run: the library's port-sync script with the environment it renders for
 * `app: 'command'`, under busybox sh with busybox's applets first on PATH (the sidecar image's userland), against a
 * stand-in for gluetun's control server (`GET /v1/portforward` → `{"port":N}`, 401 without the key). The command writes
 * `$PORT` into a file, which is what the test reads as "the app's port".
 */
describeWithTools('port-sync runs the command escape hatch with each forwarded port', ['ip', 'curl', 'python3', 'ss', 'busybox'], () => {
  const netns = `p25-${process.pid}-cmd`;
  const dir = tmpdir('tw-command-');
  const KEY = 'k-' + process.pid.toString(36) + 'c7';
  const portFile = path.join(dir, 'app', 'listen-port');
  // Fails (writes nothing) until the app is "ready": a failed command is retried next period, not recorded as done.
  const COMMAND = `[ -e ${dir}/app/ready ] && printf '%s\\n' "$PORT" > ${portFile}.tmp && mv ${portFile}.tmp ${portFile} && echo "$PORT" >> ${dir}/app/runs`;
  const props: VpnGatewayProps = {
    clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12'], nodeCidrs: ['192.168.77.0/24'],
    vpnProvider: 'protonvpn', wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' }, serverCountries: ['Switzerland'],
    portForwarding: { app: 'command', command: COMMAND, workload: 'soulseek', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' }, syncPeriodSeconds: 1 },
  };
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'soulseek' }, name: 'soulseek', kind: 'StatefulSet' });
  const script = (route.objects.find((o) => o.metadata.name === 'soulseek-vpn-port-sync') as unknown as { data: Record<string, string> }).data['port-sync.sh'];
  const env = Object.fromEntries(route.extraContainers.find((c) => c.name === 'vpn-port-sync')!.env!.map((e) => [e.name, e.value ?? '']));
  const inNs = (cmd: string) => sh(`ip netns exec ${netns} bash -c '${cmd.replace(/'/g, "'\\''")}'`);
  const pids: Record<string, string> = {};
  const start = (name: string, cmd: string) => {
    pids[name] = must(inNs(`${cmd} >>${dir}/${name}.log 2>&1 & echo $!`), name).stdout.trim();
  };
  const stop = (name: string) => sh(`kill ${pids[name]} 2>/dev/null; while kill -0 ${pids[name]} 2>/dev/null; do sleep 0.1; done`);
  let ctl: ControlServerStandIn;
  const forwardedIs = (port: number) => ctl.forwardedIs(port);
  const appPort = () => (fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, 'utf8').trim()) : undefined);
  const runs = () => (fs.existsSync(path.join(dir, 'app', 'runs')) ? fs.readFileSync(path.join(dir, 'app', 'runs'), 'utf8').trim().split('\n').map(Number) : []);
  const secondsUntil = (port: number, limit = 20) => secondsUntilTrue(() => appPort() === port, limit);
  const startSync = (extra = '', file = 'port-sync.sh', name = 'sync') => start(name, `env -i PATH=${dir}/bin APP=${env.APP} COMMAND="$(cat ${dir}/command)" GLUETUN_URL=http://127.0.0.1:8000 GLUETUN_API_KEY_FILE=${dir}/key ` +
    `PERIOD=${env.PERIOD} WORK=${dir}/work METRICS_FILE=${dir}/work/metrics METRICS_PORT=0 ${extra} busybox sh ${dir}/${file}`);
  const figures: Record<string, unknown> = {};

  beforeAll(() => {
    must(sh(`ip netns add ${netns} && ip netns exec ${netns} ip link set lo up`), 'netns');
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.mkdirSync(path.join(dir, 'app'));
    for (const applet of ['sh', 'sed', 'grep', 'cat', 'head', 'tr', 'printf', 'mkdir', 'chmod', 'dirname', 'mv', 'date', 'sleep', 'rm', 'env', 'sha256sum', 'echo', 'timeout', 'setsid', '[']) fs.symlinkSync(which('busybox')!, path.join(dir, 'bin', applet));
    fs.symlinkSync(which('busybox')!, path.join(dir, 'bin', 'busybox'));
    fs.symlinkSync(which('curl')!, path.join(dir, 'bin', 'curl'));
    fs.writeFileSync(path.join(dir, 'port-sync.sh'), script);
    fs.writeFileSync(path.join(dir, 'command'), env.COMMAND);
    fs.writeFileSync(path.join(dir, 'key'), KEY);
    ctl = startControlServerStandIn(netns, dir, KEY);
  }, 60_000);

  afterAll(() => {
    for (const name of Object.keys(pids).reverse()) stop(name);
    ctl?.stop();
    sh(`ip netns pids ${netns} | xargs -r kill -9; ip netns del ${netns}`);
    process.stdout.write(`command port-sync figures: ${JSON.stringify(figures)}\n`);
  });

  it('renders the command into the sidecar, with no app URL or login', () => {
    expect(env).toMatchObject({ APP: 'command', COMMAND, PERIOD: '1' });
    expect(env.APP_URL).toBeUndefined();
  });

  it('start-up with port 0: the command is not run, nothing is written', () => {
    fs.writeFileSync(path.join(dir, 'app', 'ready'), '');
    startSync();
    sh('sleep 3');
    expect(appPort()).toBeUndefined();
    expect(runs()).toEqual([]);
  });

  it('runs the command once per forwarded port: P, then P2 after a reconnect through port 0', () => {
    forwardedIs(41234);
    figures.toP = { to: 41234, seconds: secondsUntil(41234) };
    sh('sleep 2');
    expect(runs()).toEqual([41234]); // once, not every period
    forwardedIs(0);
    sh('sleep 2');
    expect(appPort()).toBe(41234); // port 0 during the reconnect: not run
    forwardedIs(42345);
    figures.toP2 = { from: 41234, to: 42345, seconds: secondsUntil(42345) };
    expect(runs()).toEqual([41234, 42345]);
    // The log says what port-sync knows: the command's last success, not the app's port.
    expect(fs.readFileSync(path.join(dir, 'sync.log'), 'utf8')).toContain('port-sync: COMMAND last succeeded with 41234 (the app is not asked), the VPN forwards 42345: running COMMAND\n');
    for (const k of ['toP', 'toP2'] as const) expect((figures[k] as { seconds: number }).seconds).toBeLessThan(20);
  });

  it('a command that fails is run again next period until it succeeds; control: without the sync a change is not applied', () => {
    fs.rmSync(path.join(dir, 'app', 'ready'));
    forwardedIs(43456);
    sh('sleep 3');
    expect(appPort()).toBe(42345); // the command failed (app not ready): nothing written
    fs.writeFileSync(path.join(dir, 'app', 'ready'), '');
    figures.afterFailureToP3 = { to: 43456, seconds: secondsUntil(43456) };
    expect(appPort()).toBe(43456);
    expect(runs()).toEqual([41234, 42345, 43456]);

    stop('sync');
    forwardedIs(44567);
    sh('sleep 3');
    expect(appPort()).toBe(43456);
    figures.withoutSyncAfter3s = appPort();
    startSync();
    figures.toP4AfterSyncStart = { to: 44567, seconds: secondsUntil(44567) };
    expect(appPort()).toBe(44567);
    expect(fs.readFileSync(path.join(dir, 'sync.log'), 'utf8')).not.toContain(KEY);
  });

  it('a key gluetun refuses (401, as after a rotation) is logged as refused, not as "did not answer"', () => {
    const log = () => fs.readFileSync(path.join(dir, 'sync.log'), 'utf8');
    expect(log()).not.toContain('refused the API key');
    fs.writeFileSync(path.join(dir, 'key'), 'rotated-' + KEY);
    const refused = secondsUntilTrue(() => log().includes('refused the API key'));
    fs.writeFileSync(path.join(dir, 'key'), KEY);
    expect(refused).toBeLessThan(30);
    expect(log()).toContain('port-sync: gluetun refused the API key (401): after changing controlApiKeySecret\'s value, restart the gateway, then this pod');
    expect(log()).not.toContain('did not answer');
    expect(log()).not.toContain(KEY);
    expect(appPort()).toBe(44567);
  });

  it('an app restart that forgets the port is not repaired (as documented): the command is not run again and the metric keeps the port it set; restarting the sidecar runs it', () => {
    const metrics = () => fs.readFileSync(path.join(dir, 'work', 'metrics'), 'utf8');
    expect(metrics()).toContain('# HELP tunnelwright_port_forward_app_listen_port With APP=command, the port the command last succeeded with (the app itself is not asked; 0: none yet).\n');
    const before = runs();
    fs.rmSync(portFile); // the app restarted on its default port: the port the command gave it is gone
    sh('sleep 3');
    expect([appPort(), runs()]).toEqual([undefined, before]);
    expect(metrics()).toContain('tunnelwright_port_forward_app_listen_port{app="command"} 44567\n');
    expect(metrics()).toContain('tunnelwright_port_forward_forwarded_port{app="command"} 44567\n');
    // Control: a restarted sidecar (a pod restart) starts from no port and runs the command again.
    stop('sync');
    startSync();
    figures.afterSidecarRestart = { to: 44567, seconds: secondsUntil(44567) };
    expect(runs()).toEqual([...before, 44567]);
  });

  it('a command that hangs is stopped after COMMAND_TIMEOUT and the loop goes on (metrics written, errors counted); control: without the timeout the loop freezes', () => {
    const metrics = () => fs.readFileSync(path.join(dir, 'work', 'metrics'), 'utf8');
    const errorsNow = () => Number(/tunnelwright_port_forward_errors_total\{app="command"\} (\d+)/.exec(metrics())![1]);
    const log = () => fs.readFileSync(path.join(dir, 'sync.log'), 'utf8');
    expect(script).toContain('PORT=$1 setsid sh -c "$COMMAND" &');
    stop('sync');
    // Hangs for 45678 (an API that never answers), works for any other port.
    fs.writeFileSync(path.join(dir, 'command'), `[ "$PORT" = 45678 ] && exec sleep 1000; ${env.COMMAND}`);
    forwardedIs(45678);
    startSync('COMMAND_TIMEOUT=2');
    // Two overruns in a row: the loop went on after the first.
    expect(secondsUntilTrue(() => fs.existsSync(path.join(dir, 'work', 'metrics')) && errorsNow() >= 2)).toBeLessThan(30);
    expect(log()).toContain('port-sync: COMMAND did not finish within 2 s with PORT=45678: stopped, retried next period\n');
    expect(metrics()).toContain('tunnelwright_port_forward_forwarded_port{app="command"} 45678\n');
    // What VPNForwardedPortCommandFailing reads: this sidecar's command has not succeeded yet.
    expect(metrics()).toContain('tunnelwright_port_forward_app_listen_port{app="command"} 0\n');
    // The VPN moves on: the next period runs the command with the new port.
    forwardedIs(46789);
    figures.afterHangToP6 = { to: 46789, seconds: secondsUntil(46789) };
    expect(appPort()).toBe(46789);
    stop('sync');

    // Control: the same script without the watchdog blocks inside the hung command; the metrics stay frozen.
    const noWatchdog = script.replace(/\n {4}# shellcheck disable=SC2016[\s\S]*?command-watchdog[^\n]*\n/, '\n');
    expect(noWatchdog).not.toContain('command-watchdog');
    fs.writeFileSync(path.join(dir, 'port-sync-no-timeout.sh'), noWatchdog);
    forwardedIs(45678);
    startSync('COMMAND_TIMEOUT=2', 'port-sync-no-timeout.sh', 'control');
    sh('sleep 3');
    const frozen = metrics();
    forwardedIs(47890);
    sh('sleep 5');
    expect(metrics()).toBe(frozen);
    expect(appPort()).toBe(46789);
    figures.hangWithoutTimeout = 'metrics frozen for 5 s while 47890 was forwarded';
    stop('control');
    sh(`ip netns pids ${netns} | xargs -r ps -o pid=,args= -p | awk '/sleep 1000/ {print $1}' | xargs -r kill`);
    fs.writeFileSync(path.join(dir, 'command'), env.COMMAND);
  }, 60_000);

  it('an overrunning compound command is stopped whole (no process left to apply a stale port late); a command exiting 143 itself is a failure, not a timeout; control: without setsid the sh -c alone is stopped', () => {
    const log = () => fs.readFileSync(path.join(dir, 'sync.log'), 'utf8');
    /** Processes in the lab's netns whose command line is exactly `sleep 1000`. */
    const sleepers = () => Number(must(sh(`ip netns pids ${netns} | xargs -r ps -o args= -p | grep -cx 'sleep 1000' || true`), 'ps').stdout.trim());
    const late = path.join(dir, 'app', 'late');
    stop('sync');
    // A compound command (sleep, then write): timeout(1) stops only the sh -c and leaves the sleep to write later.
    fs.writeFileSync(path.join(dir, 'command'), `[ "$PORT" = 45678 ] && { sleep 1000; echo "$PORT" >> ${late}; exit 0; }; [ "$PORT" = 45679 ] && exit 143; ${env.COMMAND}`);
    forwardedIs(45678);
    fs.writeFileSync(path.join(dir, 'sync.log'), '');
    startSync('COMMAND_TIMEOUT=2');
    const overrun = 'port-sync: COMMAND did not finish within 2 s with PORT=45678: stopped, retried next period\n';
    expect(secondsUntilTrue(() => log().split(overrun).length > 2)).toBeLessThan(30); // two overruns
    // Between runs (the next one starts within PERIOD) at most the running one's sleep is there, never one per run.
    expect(sleepers()).toBeLessThanOrEqual(1);
    forwardedIs(45679);
    expect(secondsUntilTrue(() => log().includes('port-sync: COMMAND failed (exit 143) with PORT=45679: retried next period\n'))).toBeLessThan(30);
    expect(log()).not.toContain('within 2 s with PORT=45679');
    stop('sync');
    sh('sleep 3');
    expect(sleepers()).toBe(0);
    expect(fs.existsSync(late)).toBe(false);

    // Control: the same script where the image has no setsid falls back to timeout(1), says so, and leaves the
    // compound command's sleep behind, one per run.
    fs.unlinkSync(path.join(dir, 'bin', 'setsid'));
    try {
      forwardedIs(45678);
      fs.writeFileSync(path.join(dir, 'control.log'), '');
      startSync('COMMAND_TIMEOUT=2', 'port-sync.sh', 'control');
      // Two timeouts, each leaving its sleep: the first run's sleep is still there while the second runs.
      const leftBehind = secondsUntilTrue(() => sleepers() >= 2);
      stop('control');
      expect(fs.readFileSync(path.join(dir, 'control.log'), 'utf8')).toContain('port-sync: no setsid in this image: an overrunning COMMAND is stopped, but what it started may go on running\n');
      expect(leftBehind).toBeLessThan(30);
      expect(sleepers()).toBeGreaterThanOrEqual(2);
    } finally {
      fs.symlinkSync(which('busybox')!, path.join(dir, 'bin', 'setsid'));
      sh(`ip netns pids ${netns} | xargs -r ps -o pid=,args= -p | awk '$2 == "sleep" && $3 == 1000 {print $1}' | xargs -r kill`);
      fs.writeFileSync(path.join(dir, 'command'), env.COMMAND);
    }
    figures.compoundOverrun = 'no sleep left after the TERM; without setsid: one per run';
  }, 60_000);
});
