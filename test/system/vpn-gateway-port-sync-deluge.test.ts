import * as fs from 'node:fs';
import * as path from 'node:path';
import { planRoute, VpnGatewayProps } from '../../src';
import { ControlServerStandIn, startControlServerStandIn, waitUntilListening } from './pods';
import { describeWithTools, must, secondsUntilTrue, sh, tmpdir } from './tools';

/**
 * port-sync against Debian's real Deluge 2.0.3 (`deluged` + `deluge-web`, JSON-RPC at /json), in a network
 * namespace of its own: the library's script with the environment the library renders for `app: 'deluge'`, and a
 * stand-in for gluetun's control server (`GET /v1/portforward` → `{"port":N}`, 401 without the key) on loopback.
 * This is not the pod-gateway datapath lab (vpn-gateway-port-sync.test.ts proves the path to the port for
 * qBittorrent); it proves what the sidecar does to Deluge.
 */
describeWithTools('port-sync keeps Deluge\'s listen port equal to the forwarded port', ['ip', 'deluged', 'deluge-web', 'curl', 'python3', 'ss', 'busybox'], () => {
  const netns = `tw25b-${process.pid % 10000}-dl`;
  const dir = tmpdir('tw-deluge-');
  const KEY = 'k-' + process.pid.toString(36) + 'x9';
  const PASSWORD = 'deluge'; // deluge-web's default Web UI password (web.conf pwd_sha1 of "deluge" with its salt)
  const props: VpnGatewayProps = {
    clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12'], nodeCidrs: ['192.168.77.0/24'],
    vpnProvider: 'protonvpn', wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' }, serverCountries: ['Switzerland'],
    portForwarding: { app: 'deluge', workload: 'deluge', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' }, appCredentialsSecret: { name: 'deluge-web' }, syncPeriodSeconds: 1 },
  };
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'deluge' }, name: 'deluge', kind: 'StatefulSet' });
  const script = (route.objects.find((o) => o.metadata.name === 'deluge-vpn-port-sync') as unknown as { data: Record<string, string> }).data['port-sync.sh'];
  const env = Object.fromEntries(route.extraContainers.find((c) => c.name === 'vpn-port-sync')!.env!.map((e) => [e.name, e.value ?? '']));
  const inNs = (cmd: string) => sh(`ip netns exec ${netns} bash -c '${cmd.replace(/'/g, "'\\''")}'`);
  const pids: string[] = [];
  const start = (name: string, cmd: string) => {
    const r = must(inNs(`${cmd} >${dir}/${name}.log 2>&1 & echo $!`), name);
    pids.push(r.stdout.trim());
    return r.stdout.trim();
  };
  let ctl: ControlServerStandIn;
  const forwardedIs = (port: number) => ctl.forwardedIs(port);
  /** One JSON-RPC call of our own to Deluge's Web UI (its own session cookie, the body from a file). */
  const rpc = (method: string, params: unknown[]) => {
    fs.writeFileSync(path.join(dir, 'q.json'), JSON.stringify({ method, params, id: 1 }));
    return inNs(`curl -s -b ${dir}/t.jar -c ${dir}/t.jar -H "Content-Type: application/json" --data @${dir}/q.json http://127.0.0.1:8112/json`).stdout;
  };
  /** Deluge's own API: the daemon's listen_ports, through a login of our own. */
  const delugePorts = (): number[] => {
    rpc('auth.login', [PASSWORD]);
    const m = /"result":\s*\[(\d+),\s*(\d+)\]/.exec(rpc('core.get_config_value', ['listen_ports']));
    return m ? [Number(m[1]), Number(m[2])] : [];
  };
  const secondsUntil = (port: number, limit = 20) => secondsUntilTrue(() => delugePorts()[0] === port, limit);
  const listening = (port: number) => inNs(`ss -Hltn "sport = :${port}"`).stdout.includes(`:${port}`);
  let sync = '';
  const startSync = () => {
    sync = start('sync', `env APP=${env.APP} APP_URL=${env.APP_URL} GLUETUN_URL=http://127.0.0.1:8000 GLUETUN_API_KEY_FILE=${dir}/key APP_PASSWORD_FILE=${dir}/pw PERIOD=${env.PERIOD} WORK=${dir}/work METRICS_FILE=${dir}/work/metrics METRICS_PORT=0 sh ${dir}/port-sync.sh`);
  };
  const stopSync = () => sh(`kill ${sync}; while kill -0 ${sync} 2>/dev/null; do sleep 0.1; done`);
  const figures: Record<string, unknown> = {};

  beforeAll(() => {
    must(sh(`ip netns add ${netns} && ip netns exec ${netns} ip link set lo up`), 'netns');
    fs.writeFileSync(path.join(dir, 'port-sync.sh'), script);
    fs.writeFileSync(path.join(dir, 'key'), KEY);
    fs.writeFileSync(path.join(dir, 'pw'), PASSWORD + '\n');
    // deluged and deluge-web each make the config directory and the `auth` file when missing, and each truncates
    // and rewrites `auth` (Debian's 2.0.3: deluge/configmanager.py:53-56, deluge/common.py:1153-1189). The directory
    // exists first, and the Web UI starts once the daemon listens, so neither races the other's first write.
    fs.mkdirSync(path.join(dir, 'conf'));
    start('deluged', `HOME=${dir} deluged -c ${dir}/conf -d -p 58846 -L warning`);
    waitUntilListening(netns, 'deluged', [58846], { logs: [`${dir}/deluged.log`] });
    start('deluge-web', `HOME=${dir} deluge-web -c ${dir}/conf -d -i 127.0.0.1 -p 8112 -L warning`);
    waitUntilListening(netns, 'deluge-web', [8112], { logs: [`${dir}/deluge-web.log`] });
    ctl = startControlServerStandIn(netns, dir, KEY);
  }, 120_000);

  afterAll(() => {
    for (const pid of pids.reverse()) sh(`kill ${pid} 2>/dev/null`);
    ctl?.stop();
    sh('sleep 0.5');
    sh(`ip netns del ${netns}`);
    process.stdout.write(`deluge port-sync figures: ${JSON.stringify(figures)}\n`);
  });

  it('renders the Web UI URL and only the password for Deluge', () => {
    expect(env).toMatchObject({ APP: 'deluge', APP_URL: 'http://127.0.0.1:8112', APP_PASSWORD_FILE: '/run/port-sync-secrets/app-password' });
    expect(env.APP_USERNAME_FILE).toBeUndefined();
  });

  it('writes nothing while no port is forwarded (Deluge keeps 6881; its Web UI starts attached to no daemon)', () => {
    expect(delugePorts()).toEqual([]); // our own session is not attached to the daemon yet: core.* is unknown
    startSync();
    sh('sleep 3');
    expect(rpc('web.connected', [])).toContain('"result": false');
    expect(fs.readFileSync(path.join(dir, 'conf', 'core.conf'), 'utf8')).toMatch(/"listen_ports": \[\s*6881,\s*6891\s*\]/);
  });

  it('sets the forwarded port, follows a change, and repairs a change it missed once it runs again', () => {
    forwardedIs(41234);
    figures.toP = secondsUntil(41234);
    expect(figures.toP).toBeLessThan(20);
    expect(delugePorts()).toEqual([41234, 41234]);
    expect(rpc('core.get_config_value', ['random_port'])).toContain('"result": false'); // core.conf is saved later
    expect(listening(41234)).toBe(true);
    expect(listening(6881)).toBe(false);

    forwardedIs(0);
    sh('sleep 2');
    expect(delugePorts()).toEqual([41234, 41234]); // port 0 during a reconnect: nothing written
    forwardedIs(42345);
    figures.toP2 = secondsUntil(42345);
    expect(figures.toP2).toBeLessThan(20);
    expect(listening(42345)).toBe(true);
    expect(listening(41234)).toBe(false);

    // Control: without the sync a change is not applied.
    stopSync();
    forwardedIs(43456);
    sh('sleep 4');
    expect(delugePorts()).toEqual([42345, 42345]);
    startSync();
    figures.toP3AfterRestart = secondsUntil(43456);
    expect(figures.toP3AfterRestart).toBeLessThan(20);

    const log = fs.readFileSync(path.join(dir, 'sync.log'), 'utf8');
    expect(log).toContain('app listens on 42345, the VPN forwards 43456: setting it');
    expect(log).not.toContain(KEY);
  });
});
