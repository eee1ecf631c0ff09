import { podLog, inPod } from './pods';
import { describeWithTools, must, secondsUntilTrue, sh } from './tools';
import { failoverLabTools, vpnGatewayFailoverLab } from './vpn-gateway-failover-lab';

/**
 * VpnGateway failover (issue 43) over WireGuard, in the lab of vpn-gateway-failover-lab.ts: two gateway pods with
 * pod-gateway's scripts, a wireguard-go tunnel of its own key each, the library's failover agent, the Lease stand-in
 * and a routed client with qBittorrent and the port-sync sidecar.
 */
describeWithTools('VpnGateway failover: two gateways, one Lease, pod-gateway\'s clients', failoverLabTools('wireguard'), () => {
  const lab = vpnGatewayFailoverLab('wireguard', { prefix: 'vgf', app: true });
  const { ns, gw, keys, pods, figures, runs, RUNS, PORTS, agentRendered, uptime, entries, holder, requests, leaked, peerOff, qbtPort, listening, startAgent, stopAgent, baseline, measure } = lab;

  it('the far end drops the holder\'s tunnel (its interface stays up): it fences, the standby takes the role, the client moves; 0 packets leave by the WAN', () => {
    // Each run's figures are checked in farEndDrops; the runs happened, none leaked. One run by default: the port test
    // below makes the switch the other way (CI's time; FAILOVER_LAB_RUNS=5 for the docs' figures).
    expect(lab.farEndDrops('far end drops the holder', 1).map((r) => r.leakedPackets)).toEqual(Array(lab.runs(1)).fill(0));
  }, 600_000);

  it('the far end drops the holder\'s tunnel while gluetun\'s health server still answers 200 (between its checks): the probe through the tunnel moves the role; control: without the probe it stays', () => {
    const stuck = (on: boolean) => { for (const g of ['a', 'b'] as const) inPod(pods[g]!, on ? 'touch /tmp/health-stuck' : 'rm -f /tmp/health-stuck'); };
    try {
      for (let run = 0; run < runs(1); run += 1) {
        const r = measure('far end drops the holder, health server stays OK', (h) => { stuck(true); peerOff(h); });
        stuck(false);
        expect(r.switchSeconds).not.toBeNull();
        expect(r.switchSeconds!).toBeLessThan(40);
        expect(r.leakedPackets).toBe(0);
        expect(podLog(pods[r.h]!, 'agent.log')).toContain(`no answer through ${agentRendered.PROBE_INTERFACE}`);
      }
      // Control: the same fault with PROBE_URL empty (probeUrl: false): gluetun's health server alone keeps the role.
      const [h0] = baseline();
      for (const g of [h0, h0 === 'a' ? 'b' : 'a'] as const) { stopAgent(g); startAgent(g, { PROBE_URL: '' }); }
      const c = measure('control: no probe, far end drops the holder, health server stays OK', (h) => { stuck(true); peerOff(h); }, { limit: 40, expectSwitch: false });
      expect(c.switchSeconds).toBeNull();
      expect(holder()).toBe(gw[c.h].pod);
      expect(c.leakedPackets).toBe(0);
    } finally {
      stuck(false);
      for (const g of ['a', 'b'] as const) { stopAgent(g); startAgent(g); }
    }
  }, 600_000);

  it('the port reaches the app after a switch: qBittorrent listens on the new holder\'s forwarded port (its API, ss -ltn); control: the old port before', () => {
    const [h0] = baseline();
    // Before: the holder's port, which port-sync set from the holder's control server.
    expect(secondsUntilTrue(() => qbtPort() === PORTS[h0], 30)).toBeLessThan(30);
    expect(listening().has(PORTS[h0])).toBe(true);
    const r = measure('far end drops the holder (port forwarding)', (h) => peerOff(h));
    expect(r.switchSeconds).not.toBeNull();
    const t = secondsUntilTrue(() => qbtPort() === PORTS[r.sb], 30);
    expect(t).toBeLessThan(30);
    expect(listening().has(PORTS[r.sb])).toBe(true);
    expect(listening().has(PORTS[r.h])).toBe(false);
    figures.push({ fault: 'port follows the holder', from: PORTS[r.h], to: PORTS[r.sb], secondsAfterSwitch: Number.isNaN(t) ? null : Number(t.toFixed(1)) });
  }, 300_000);

  it('the holder\'s node freezes (agent stopped, links down): the standby takes the role when the Lease expires and unlabels it; 0 leaks', () => {
    for (let run = 0; run < runs(1); run += 1) {
      const r = measure('holder frozen', (h) => {
        inPod(pods[h]!, 'pkill -STOP -f "[f]ailover-agent.sh"; true');
        sh(`ip -n ${ns.node} link set ${gw[h].veth} down`);
      });
      inPod(pods[r.h]!, 'pkill -CONT -f "[f]ailover-agent.sh"; true');
      expect(r.switchSeconds).not.toBeNull();
      expect(r.leakedPackets).toBe(0);
      expect(entries().filter((e) => e.op === 'endpoints').at(-1)!.active).toEqual([gw[r.sb].pod]);
    }
  }, 600_000);

  it('the holder cut off from the API: it fences itself before the standby may take the Lease; the client moves; 0 leaks', () => {
    for (let run = 0; run < runs(1); run += 1) {
      const r = measure('holder cut off from the API', (h) => { must(inPod(pods[h]!, 'iptables -I OUTPUT -d 10.96.0.1 -j DROP'), 'cut the holder off'); });
      expect(r.switchSeconds).not.toBeNull();
      expect(r.leakedPackets).toBe(0);
      expect(podLog(pods[r.h]!, 'agent.log')).toMatch(/fenced: (the watchdog|lease not renewed)/);
    }
  }, 600_000);

  it('flaps of the holder\'s tunnel (its path to the VPN server down 3 s, 6 s apart): the role stays; control: without hysteresis it moves', () => {
    const count = RUNS > 1 ? 5 : 3;
    const flaps = (tag: string, untilMoved = false) => {
      const [h] = baseline();
      const t0 = uptime();
      const leak0 = leaked();
      const moved = () => entries().filter((e) => e.op === 'holder' && e.t > t0 && e.to !== '').length;
      // A flap: the holder's path to the VPN server drops for 3 s (its WireGuard session survives, as a short outage
      // of the provider's or the node's network leaves it).
      for (let i = 0; i < count && !(untilMoved && moved() > 0); i += 1) {
        must(inPod(pods[h]!, 'iptables -I OUTPUT -o eth0 -p udp --dport 51820 -j DROP'), 'flap down');
        sh('sleep 3');
        must(inPod(pods[h]!, 'iptables -D OUTPUT -o eth0 -p udp --dport 51820 -j DROP'), 'flap up');
        sh('sleep 6');
      }
      const r = { fault: `${count} flaps (${tag})`, roleMoves: moved(), leakedPackets: leaked() - leak0 };
      figures.push(r);
      return r;
    };
    for (let run = 0; run < runs(1); run += 1) {
      const withHysteresis = flaps('RELEASE_AFTER 3');
      expect(withHysteresis.roleMoves).toBe(0);
      expect(withHysteresis.leakedPackets).toBe(0);
    }
    stopAgent('a');
    stopAgent('b');
    startAgent('a', { RELEASE_AFTER: '1', ACQUIRE_AFTER: '1' });
    startAgent('b', { RELEASE_AFTER: '1', ACQUIRE_AFTER: '1' });
    try {
      const without = flaps('control: RELEASE_AFTER 1, ACQUIRE_AFTER 1', true);
      expect(without.roleMoves).toBeGreaterThanOrEqual(1);
      expect(without.leakedPackets).toBe(0);
    } finally {
      stopAgent('a');
      stopAgent('b');
      startAgent('a');
      startAgent('b');
    }
  }, 900_000);

  it('both tunnels down: nobody holds the role, every request fails, 0 packets leave by the WAN', () => {
    for (let run = 0; run < runs(1); run += 1) {
      const r = measure('both tunnels down', () => { peerOff('a'); peerOff('b'); }, { limit: 20, expectSwitch: false });
      expect(r.switchSeconds).toBeNull();
      expect(r.leakedPackets).toBe(0);
      expect(holder()).toBe('');
      const t = uptime();
      expect(requests().filter((q) => q.t > t - 15).every((q) => q.r === 'FAIL')).toBe(true);
    }
  }, 600_000);

  it('control: without the fence (the agent cannot take vxlan0 down) the client stays on the dead holder', () => {
    const [h, sb] = baseline();
    stopAgent(h);
    startAgent(h, { FENCE_LINK: 'vgf-no-such-link' });
    // The agent now neither takes vxlan0 down nor up: it stays up, as without a fence.
    must(inPod(pods[h]!, 'ip link set vxlan0 up'), 'vxlan0 up');
    try {
      const r = measure('control: no fence, far end drops the holder', (x) => peerOff(x), { limit: 35, expectSwitch: false });
      expect(r.h).toBe(h); // the restarted agent renewed its own Lease
      expect(r.switchSeconds).toBeNull();
      expect(holder()).toBe(gw[sb].pod); // the role moved, the client did not
      expect(r.leakedPackets).toBe(0);
    } finally {
      stopAgent(h);
      startAgent(h);
      // The real agent fences a pod without the role again.
      if (holder() !== gw[h].pod) must(inPod(pods[h]!, 'for i in $(seq 50); do ip link show vxlan0 | grep -q "state DOWN" && exit 0; sleep 0.1; done; exit 1'), 'fenced again');
    }
  }, 300_000);
  // Last: after it the standby's tunnel no longer carried the routed client's requests in the CI rehearsal (the
  // frozen-holder case after it failed, and every case after that one), though the standby's own probe through the
  // tunnel answered. The cause (found in the OpenVPN lab): the kernel drops every route through tun0, table 51820's
  // default too, when tun0's last IPv4 address goes (the `ip addr del` below); the probe and the health ping, bound to
  // tun0, pass without a route. The route is put back below; the case stays last.
  it('control: the standby on the holder\'s WireGuard key (what the model refuses) makes requests through the holder fail; with its own key none do', () => {
    const window = 20;
    const failsIn = (from: number) => requests().filter((q) => q.t > from && q.t <= from + window && q.r === 'FAIL').length;
    const [h, sb] = baseline();
    // With its own key: the same window, nothing fails.
    const t1 = uptime();
    sh(`sleep ${window}`);
    const own = { requests: requests().filter((q) => q.t > t1 && q.t <= t1 + window).length, failed: failsIn(t1) };
    // The standby's tunnel on the holder's key and address (the provider assigns addresses per key).
    must(inPod(pods[sb]!, `echo ${keys[h].privateKey} > /tmp/wg-shared.key && wg set tun0 private-key /tmp/wg-shared.key && ip addr del ${gw[sb].tunnel}/32 dev tun0 && ip addr add ${gw[h].tunnel}/32 dev tun0 && ip route replace default dev tun0 table 51820`), 'shared key');
    const t2 = uptime();
    const leak0 = leaked();
    try {
      sh(`sleep ${window}`);
    } finally {
      must(inPod(pods[sb]!, `wg set tun0 private-key /tmp/wg.key && ip addr del ${gw[h].tunnel}/32 dev tun0 && ip addr add ${gw[sb].tunnel}/32 dev tun0 && ip route replace default dev tun0 table 51820`), 'own key again');
    }
    const shared = { requests: requests().filter((q) => q.t > t2 && q.t <= t2 + window).length, failed: failsIn(t2), leakedPackets: leaked() - leak0 };
    figures.push({ fault: `shared key, ${window} s`, ownKey: own, sharedKey: shared });
    expect(own.failed).toBeLessThanOrEqual(1);
    expect(shared.failed).toBeGreaterThanOrEqual(3);
    expect(shared.leakedPackets).toBe(0);
  }, 300_000);

});
