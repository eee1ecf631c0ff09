/**
 * The port-sync script run as its container runs it, against stand-ins that answer as each supported app version does
 * (test/helpers/port-sync-stand-ins.py, every answer cited to the app's source at its tag): what the app ends up with
 * (its listen port, random_port), how many logins it saw, and what port-sync's metrics say. The real Debian apps
 * (qbittorrent-nox 4.5, transmission 3, deluged 2.0) are driven by test/system/vpn-gateway-port-sync*.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startSyncLab, SyncLab, SyncLabOptions } from '../helpers/port-sync-lab';
import { describeWithTools, tmpdir } from '../system/tools';

const FORWARDED = 41234;
const labs: SyncLab[] = [];
afterEach(async () => {
  while (labs.length) await labs.pop()!.stop();
});

async function lab(o: SyncLabOptions): Promise<SyncLab> {
  const l = await startSyncLab(tmpdir('tw-ps-'), { forwarded: FORWARDED, ...o });
  labs.push(l);
  return l;
}

/** Five refused logins from elsewhere (the user's browser through kubectl port-forward arrives from 127.0.0.1 too): qBittorrent bans the address. */
async function banFromElsewhere(l: SyncLab): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await fetch(`http://127.0.0.1:${l.ports.app}/api/v2/auth/login`, { method: 'POST', body: 'username=admin&password=guess', headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Connection': 'close' } });
  }
}

const qbt = { app: 'qbittorrent', appCredentialsSecret: { name: 'qbt' } };
const trm = { app: 'transmission', appCredentialsSecret: { name: 'trm' } };
const dlg = { app: 'deluge', appCredentialsSecret: { name: 'dlg' } };

describeWithTools('port-sync against each app version\'s answers', ['busybox', 'curl', 'python3'], () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['qbittorrent-4.6', qbt, '200 Ok.'],
    ['qbittorrent-5.0', qbt, '200 Ok.'],
    ['qbittorrent-5.1', qbt, '200 Ok.'],
    ['qbittorrent-5.2', qbt, '204 No Content'],
    ['transmission-3', trm, '409, then 200'],
    ['transmission-4', trm, '409, then 200'],
    ['deluge-2.0', dlg, 'auth.login true'],
    ['deluge-2.1', dlg, 'auth.login true'],
  ])('%s: a good login (%s) is one login, the listen port is set at the first check, no error is counted', async (standIn, pf) => {
    const l = await lab({ standIn, portForwarding: pf });
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_last_success_timestamp_seconds > 0)).toBe(true);
    expect(l.listenPort()).toBe(FORWARDED);
    expect(l.metrics()).toMatchObject({ tunnelwright_port_forward_forwarded_port: FORWARDED, tunnelwright_port_forward_app_listen_port: FORWARDED, tunnelwright_port_forward_errors_total: 0, tunnelwright_port_forward_login_refused: 0 });
    // Logged in once: the session (cookie, or Transmission's session id) is kept for the checks after.
    await new Promise((r) => setTimeout(r, 600));
    expect(l.logins().filter((r) => r.what !== 'already')).toHaveLength(standIn.startsWith('transmission') ? 0 : 1);
    expect(l.log).toMatch(new RegExp(`^port-sync: app listens on 6881, the VPN forwards ${FORWARDED}: setting it\\n$`));
  });

  it.each<[string, Record<string, unknown>]>([
    ['qbittorrent-5.1', qbt],
    ['qbittorrent-5.2', qbt],
    ['transmission-3', trm],
    ['deluge-2.1', dlg],
  ])('%s with a wrong password: one login in 15 periods (qBittorrent bans at 5), counted and said; a new Secret value logs in', async (standIn, pf) => {
    const l = await lab({ standIn, portForwarding: pf, mounted: { password: 'wrong' } });
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_login_refused === 1)).toBe(true);
    // 15 periods of 0.2 s
    await new Promise((r) => setTimeout(r, 3000));
    const refused = l.requests().filter((r) => r.what === 'refused');
    expect(refused).toHaveLength(1);
    expect(l.requests().filter((r) => r.what === 'banned')).toEqual([]);
    expect(l.metrics().tunnelwright_port_forward_errors_total).toBeGreaterThanOrEqual(8);
    expect(l.metrics().tunnelwright_port_forward_bans_total).toBe(0);
    expect(l.listenPort()).toBe(6881);
    expect(l.log).toContain('these credentials are not sent again');
    expect(l.log.split('\n').filter((line) => line.includes('these credentials are not sent again'))).toHaveLength(1);
    // The kubelet updates the mounted Secret: the next period logs in with it and sets the port.
    l.mount('app-password', 's3cret "pass\\word');
    expect(await l.until(() => l.listenPort() === FORWARDED)).toBe(true);
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_login_refused === 0)).toBe(true);
  });

  it('qbittorrent-5.2 with an API key: no login at all; a wrong key is said once and not retried as a login', async () => {
    const withKey = { app: 'qbittorrent', appApiKeySecret: { name: 'qbt-key' } };
    const good = await lab({ standIn: 'qbittorrent-5.2', appApiKey: 'qbt-api-k3y', portForwarding: withKey });
    expect(await good.until(() => good.listenPort() === FORWARDED)).toBe(true);
    expect(good.logins()).toEqual([]);
    const bad = await lab({ standIn: 'qbittorrent-5.2', appApiKey: 'qbt-api-k3y', mounted: { apiKey: 'not-it' }, portForwarding: withKey });
    expect(await bad.until(() => bad.metrics().tunnelwright_port_forward_login_refused === 1)).toBe(true);
    expect(bad.log).toContain('qBittorrent refused the API key (403 with it)');
    expect(bad.logins()).toEqual([]);
  });

  it('qbittorrent-5.1 already banning the address: counted as a ban and tried again only after BAN_BACKOFF', async () => {
    const l = await lab({ standIn: 'qbittorrent-5.1', portForwarding: qbt, banBackoff: '2', forwarded: 0 });
    await banFromElsewhere(l);
    l.setForwarded(FORWARDED);
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_bans_total === 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 1000));
    // One try in the second after the ban (periods of 0.2 s), then the next after BAN_BACKOFF (2 s).
    expect(l.requests().filter((r) => r.what === 'banned')).toHaveLength(1);
    expect(await l.until(() => l.requests().filter((r) => r.what === 'banned').length === 2, 3)).toBe(true);
    expect(l.log).toContain('the app banned this address: next try in 2 s');
  });

  it('a port forwarded anew while the app bans the address reaches the metrics at the next period, not after BAN_BACKOFF', async () => {
    const l = await lab({ standIn: 'qbittorrent-5.1', portForwarding: qbt, banBackoff: '60', forwarded: 0 });
    await banFromElsewhere(l);
    l.setForwarded(FORWARDED);
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_bans_total === 1)).toBe(true);
    expect(l.metrics().tunnelwright_port_forward_forwarded_port).toBe(FORWARDED);
    // The VPN reconnects with another port during the ban: the metrics say so within a few periods (0.2 s), so
    // VPNForwardedPortNotListening can fire; the app is not asked again (one banned try in all).
    l.setForwarded(FORWARDED + 1);
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_forwarded_port === FORWARDED + 1, 3)).toBe(true);
    expect(l.requests().filter((r) => r.what === 'banned')).toHaveLength(1);
  });

  it('deluge: random_port is turned off with the port (Deluge picks a random port at every start while it is on)', async () => {
    const l = await lab({ standIn: 'deluge-2.0', portForwarding: dlg });
    expect(l.randomPort()).toBe('true');
    expect(await l.until(() => l.listenPort() === FORWARDED)).toBe(true);
    expect(l.randomPort()).toBe('false');
  });

  it('follows a port change within a period or two, and writes nothing while gluetun forwards none', async () => {
    const l = await lab({ standIn: 'qbittorrent-5.2', portForwarding: qbt, forwarded: 0 });
    await new Promise((r) => setTimeout(r, 1000));
    expect(l.requests()).toEqual([]);
    expect(l.metrics()).toMatchObject({ tunnelwright_port_forward_forwarded_port: 0, tunnelwright_port_forward_errors_total: 0 });
    l.setForwarded(42345);
    expect(await l.until(() => l.listenPort() === 42345, 3)).toBe(true);
    l.setForwarded(43456);
    expect(await l.until(() => l.listenPort() === 43456, 3)).toBe(true);
  });

  it('a forwarded port the pod serves (qBittorrent\'s own Web UI port 8080) is never given to the app; control: the next port is', async () => {
    const l = await lab({ standIn: 'qbittorrent-5.2', portForwarding: qbt, forwarded: 8080 });
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_errors_total >= 2)).toBe(true);
    expect(l.listenPort()).toBe(6881);
    expect(l.requests()).toEqual([]);
    expect(l.log).toContain('port-sync: the VPN forwards port 8080, which this pod serves itself (8080,9808): the app keeps its port');
    l.setForwarded(8081);
    expect(await l.until(() => l.listenPort() === 8081)).toBe(true);
  });

  // Forwarded connections arrive on vxlan0 at the workload's fixed address (172.16.0.5 with the default network).
  it.each<[string, string, string, number]>([
    ['qbittorrent-5.2', 'eth0', '', 1],
    ['qbittorrent-4.6', 'eth0', '', 1],
    ['qbittorrent-5.2', 'tun0', '', 1],
    ['qbittorrent-5.2', '', '10.244.0.3', 1],
    ['qbittorrent-5.2', '', '::', 1],
    ['qbittorrent-5.2', 'vxlan0', '10.244.0.3', 1],
    ['qbittorrent-5.2', '', '', 0],
    ['qbittorrent-4.6', '', '', 0],
    ['qbittorrent-5.2', 'vxlan0', '', 0],
    ['qbittorrent-5.2', '', '0.0.0.0', 0],
    ['qbittorrent-5.2', 'vxlan0', '172.16.0.5', 0],
  ])('%s bound to interface "%s", address "%s": app_bound_elsewhere %d, the port set either way', async (standIn, iface, address, bound) => {
    const dir = tmpdir('tw-ps-bind-');
    fs.writeFileSync(path.join(dir, 'network_interface'), iface);
    fs.writeFileSync(path.join(dir, 'interface_address'), address);
    const l = await startSyncLab(dir, { forwarded: FORWARDED, standIn, portForwarding: qbt });
    labs.push(l);
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_last_success_timestamp_seconds > 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 600)); // periods after the first
    expect(l.listenPort()).toBe(FORWARDED);
    expect(l.metrics()).toMatchObject({ tunnelwright_port_forward_app_bound_elsewhere: bound, tunnelwright_port_forward_errors_total: 0 });
    // One error line, at the first period that saw it: not one every period.
    expect(l.log.split('\n').filter((line) => line.startsWith('port-sync: error: qBittorrent listens only on'))).toHaveLength(bound);
  });

  it('a binding changed at run time: the metric follows, the error is logged once and its end once', async () => {
    const l = await lab({ standIn: 'qbittorrent-5.2', portForwarding: qbt });
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_last_success_timestamp_seconds > 0)).toBe(true);
    expect(l.metrics().tunnelwright_port_forward_app_bound_elsewhere).toBe(0);
    fs.writeFileSync(l.file('network_interface'), 'eth0');
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_app_bound_elsewhere === 1)).toBe(true);
    expect(l.log).toContain('port-sync: error: qBittorrent listens only on interface "eth0", address "any"');
    expect(l.log).toContain('at 172.16.0.5 and never reach it');
    fs.writeFileSync(l.file('network_interface'), '');
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_app_bound_elsewhere === 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 600));
    expect(l.log.match(/port-sync: error: qBittorrent listens only on/g)).toHaveLength(1);
    expect(l.log.match(/now lets forwarded connections reach it/g)).toHaveLength(1);
  });

  it('app command: COMMAND runs with PORT set to the forwarded port', async () => {
    const out = path.join(tmpdir('tw-ps-cmd-'), 'port');
    const l = await lab({ standIn: 'qbittorrent-5.2', portForwarding: { app: 'command', command: `echo "port=$PORT" > ${out}` } });
    expect(await l.until(() => fs.readFileSync(out, 'utf8') === `port=${FORWARDED}\n`)).toBe(true);
    expect(await l.until(() => l.metrics().tunnelwright_port_forward_app_listen_port === FORWARDED)).toBe(true);
  });
});
