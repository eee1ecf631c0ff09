import { inPod } from './pods';
import { describeWithTools, sh } from './tools';
import { failoverLabTools, vpnGatewayFailoverLab } from './vpn-gateway-failover-lab';

/**
 * VpnGateway failover (issue 43) over OpenVPN, in the lab of vpn-gateway-failover-lab.ts: the two gateways' tunnels are
 * real OpenVPN sessions (Debian's openvpn run as gluetun runs its client by default: as root, so without persist-tun,
 * and stopped with SIGKILL; one server that names sessions by user), a login each (standby.openvpnCredentialsSecret). The controls show why the model refuses the holder's login for the standby
 * (shared-credential) unless sharedOpenvpnLogin says the provider allows several sessions per login: on a server
 * without duplicate-cn the standby's connect closes the holder's session (OpenVPN 2.6.22 src/openvpn/multi.c:1363
 * multi_delete_dup, called at :2548-2550), and each reconnect of one closes the other's.
 */
describeWithTools('VpnGateway failover over OpenVPN: a login each, one Lease, pod-gateway\'s clients', failoverLabTools('openvpn'), () => {
  const lab = vpnGatewayFailoverLab('openvpn', { prefix: 'ovs', app: false });
  const { pods, figures, gw, uptime, entries, requests, leaked, baseline, waitFor, startVpnServer, startVpnClient, stopVpnClient, vpnSessions, dir } = lab;

  /** The server restarted (with or without duplicate-cn), then A's client, then B's with `bLogin`: A has .2, B .3. */
  const restartVpn = (o: { duplicateCn: boolean; bLogin: 'a' | 'b' }) => {
    for (const g of ['a', 'b'] as const) stopVpnClient(g);
    startVpnServer({ duplicateCn: o.duplicateCn });
    startVpnClient('a', 'a');
    startVpnClient('b', o.bLogin);
    // The restart may have cost the holder the role (3 failed checks, 1 s apart): wait until the role has settled, a
    // holder that has not changed for 6 s, so that the next baseline does not read a holder that is about to go.
    sh('sleep 6');
    waitFor(() => { const last = entries().filter((e) => e.op === 'holder').at(-1); return last !== undefined && last.to !== '' && uptime() - last.t > 6; }, 60, 'the role settled after the restart');
  };
  const window = 30;
  /** The routed client's requests in the `window` seconds after `from`: how many, how many failed, and leaks. */
  const countFrom = (from: number, leak0: number) => {
    const inWindow = requests().filter((q) => q.t > from && q.t <= from + window);
    return { requests: inWindow.length, failed: inWindow.filter((q) => q.r === 'FAIL').length, leakedPackets: leaked() - leak0 };
  };
  /** Both tunnels healthy and the client through the holder, then `window` s of requests after `act`. */
  const overWindow = (act: (h: 'a' | 'b', s: 'a' | 'b') => void) => {
    const [h, s] = baseline();
    const leak0 = leaked();
    const t0 = uptime();
    act(h, s);
    sh(`sleep ${Math.max(0, window - (uptime() - t0))}`);
    return countFrom(t0, leak0);
  };

  it('the far end drops the holder\'s tunnel (tun0 stays up, the session too): it fences, the standby takes the role, the client moves; 0 packets leave by the WAN', () => {
    // Each run's figures are checked in farEndDrops; the runs happened, none leaked.
    expect(lab.farEndDrops('OpenVPN: far end drops the holder').map((r) => r.leakedPackets)).toEqual(Array(lab.runs(2)).fill(0));
  }, 600_000);

  it('control: with its own login the standby\'s tunnel costs the holder nothing (requests over 30 s)', () => {
    const own = overWindow(() => undefined);
    figures.push({ fault: `OpenVPN, own logins, ${window} s`, ...own });
    expect(own.requests).toBeGreaterThanOrEqual(20);
    expect(own.failed).toBeLessThanOrEqual(1);
    expect(own.leakedPackets).toBe(0);
  }, 300_000);

  it('gluetun\'s stop (SIGKILL) takes tun0 away and leaves the standby\'s session and pool address at the server until the server\'s ping-restart (20 s); control: a client that exits on SIGTERM tells the server (explicit-exit-notify), which drops both at once', () => {
    const [, s] = baseline();
    const { user } = lab.logins[s];
    /** Stops s's client by `stop`: whether tun0 went with it, and how long the server kept its session (status file, 1 s). */
    const held = (signal: string, stop: () => void) => {
      waitFor(() => vpnSessions().some((v) => v.user === user && v.address === gw[s].tunnel), 10, `the server lists ${user}'s session at ${gw[s].tunnel}`);
      const t0 = uptime();
      stop();
      const tunGone = inPod(pods[s]!, 'ip link show tun0').status !== 0;
      const sessionAfterStop = vpnSessions().filter((v) => v.user === user).map((v) => v.address);
      waitFor(() => !vpnSessions().some((v) => v.user === user), 60, `the server drops ${user}'s session after ${signal}`);
      const seconds = Number((uptime() - t0).toFixed(1));
      const serverSaid = sh(`grep -F '${user}/' ${dir}/ovpn-server.log | tail -n 2 | sed 's|^.*${user}/[^ ]* ||'`).stdout.trim().split('\n');
      return { seconds, tunGone, sessionAfterStop, serverSaid };
    };
    const term = held('SIGTERM', () => stopVpnClient(s, 'TERM'));
    startVpnClient(s, s);
    // The lab's stop, as gluetun's: SIGKILL.
    const kill = held('the lab\'s stop', () => stopVpnClient(s));
    startVpnClient(s, s);
    figures.push({ fault: `OpenVPN, the standby's client stopped (${s})`, sigterm: term, sigkill: kill });
    expect([term.tunGone, kill.tunGone]).toEqual([true, true]);
    // SIGKILL: the session and its address stay past the stop, until the server's ping-restart (2 × 10 s, counted from
    // the client's last ping, 2 s apart: 18-20 s, and the status file's second).
    expect(kill.sessionAfterStop).toEqual([gw[s].tunnel]);
    expect(kill.seconds).toBeGreaterThanOrEqual(15);
    expect(kill.seconds).toBeLessThan(40);
    // SIGTERM: the client's exit notification (it waits 1 s for it), then the server ends the session 5 s later
    // (its scheduled_exit_interval, 5 by default in OpenVPN's options.c): ~6 s, not ~20.
    expect(term.seconds).toBeLessThan(12);
  }, 300_000);

  it('control: the standby on the holder\'s login (what the model refuses), on a server without duplicate-cn: the holder\'s requests fail', () => {
    try {
      const shared = overWindow((h, s) => startVpnClient(s, h));
      figures.push({ fault: `OpenVPN, the standby on the holder's login, no duplicate-cn, ${window} s`, ...shared });
      expect(shared.failed).toBeGreaterThanOrEqual(3);
      expect(shared.leakedPackets).toBe(0);
    } finally {
      restartVpn({ duplicateCn: false, bLogin: 'b' });
    }
  }, 300_000);

  it('control: the standby on the holder\'s login on a server with duplicate-cn (a provider that allows several sessions per login, sharedOpenvpnLogin): none fail', () => {
    try {
      restartVpn({ duplicateCn: true, bLogin: 'a' });
      const dup = overWindow(() => undefined);
      figures.push({ fault: `OpenVPN, one login for both, duplicate-cn, ${window} s`, ...dup });
      expect(dup.requests).toBeGreaterThanOrEqual(20);
      expect(dup.failed).toBeLessThanOrEqual(1);
      expect(dup.leakedPackets).toBe(0);
    } finally {
      restartVpn({ duplicateCn: false, bLogin: 'b' });
    }
  }, 300_000);
});
