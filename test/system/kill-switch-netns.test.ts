import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planKillSwitch } from '../../src';
import { KILL_SWITCH_NFT_PATH, KILL_SWITCH_TABLE } from '../../src/render/kill-switch';
import { describeWithTools, must, sh, tmpdir } from './tools';

/**
 * A client ("pod", 10.42.0.5), a gateway host with a WAN interface and a WireGuard tunnel to a VPN server, an
 * "internet" namespace that routes and hosts the target 203.0.113.1, and the VPN server, which masquerades. The
 * gateway loads the table KillSwitch generated. Leaks are counted on the WAN side, in the internet namespace.
 */
describeWithTools('the host kill switch fails closed on a real network stack', ['nft', 'ip', 'ping', 'wg', 'wireguard-go', 'python3'], () => {
  const id = process.pid % 10000;
  const [client, gw, inet, vpn, foreign] = ['client', 'gw', 'inet', 'vpn', 'fx'].map((n) => `twks${id}-${n}`);
  const tun = `twks${id}t`;
  const vpnTun = `twks${id}v`;
  const dir = tmpdir('tw-ks-');
  const target = '203.0.113.1';
  const gwKey = generateKeyPair();
  const vpnKey = generateKeyPair();
  fs.writeFileSync(path.join(dir, 'gw.key'), gwKey.privateKey, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'vpn.key'), vpnKey.privateKey, { mode: 0o600 });

  const plan = planKillSwitch({
    selector: { app: 'client' },
    namespace: 'default',
    allowCidrs: ['10.42.0.0/16'],
    host: { node: 'gw', wanInterface: 'wan0', tunnelInterface: tun, tunnelCidrs: ['10.99.0.2/32'], podCidrs: ['10.42.0.0/24'] },
  });
  const table = plan.hosts[0].files.find((f) => f.path === KILL_SWITCH_NFT_PATH)!.content;

  const wgUp = (ns: string, iface: string, key: string, args: string) =>
    `ip netns exec ${ns} setsid sh -c 'wireguard-go -f ${iface} >/dev/null 2>&1 &'; for i in $(seq 50); do ip netns exec ${ns} wg show ${iface} >/dev/null 2>&1 && break; sleep 0.1; done; ip netns exec ${ns} wg set ${iface} private-key ${path.join(dir, key)} ${args}`;
  const tunnelUp = () =>
    sh([
      wgUp(gw, tun, 'gw.key', `peer ${vpnKey.publicKey} endpoint 198.18.2.2:51820 allowed-ips 0.0.0.0/0 persistent-keepalive 1`),
      `ip -n ${gw} addr add 10.99.0.2/32 dev ${tun}`,
      `ip -n ${gw} link set ${tun} up`,
      `ip -n ${gw} route add default dev ${tun} table 100`,
    ].join(' && '));
  const tunnelDown = (how: 'delete' | 'link-down') =>
    how === 'delete'
      ? sh(`ip -n ${gw} link del ${tun}; for i in $(seq 50); do ip -n ${gw} link show ${tun} >/dev/null 2>&1 || exit 0; sleep 0.1; done; exit 1`)
      : sh(`ip -n ${gw} link set ${tun} down`);
  const linkUp = () => sh(`ip -n ${gw} link set ${tun} up && ip -n ${gw} route replace default dev ${tun} table 100`);
  const counter = (ns: string, family: string, tbl: string, name: string): number => {
    const r = sh(`ip netns exec ${ns} nft list counter ${family} ${tbl} ${name}`);
    return Number(/packets (\d+)/.exec(r.stdout)?.[1] ?? NaN);
  };
  const leaks = () => counter(inet, 'inet', 'wan_watch', 'leaked');
  const pingFromClient = (count = 1) => sh(`ip netns exec ${client} ping -c${count} -i0.2 -W1 ${target}`);

  beforeAll(() => {
    fs.writeFileSync(path.join(dir, 'killswitch.nft'), table);
    // The WAN side: count every packet from the gateway's WAN to the target (a leak, while the tests send only
    // pod- and tunnel-sourced traffic), and the VPN server's masquerade.
    fs.writeFileSync(path.join(dir, 'inet.nft'), 'table inet wan_watch {\n\tcounter leaked {\n\t}\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tiifname "i-gw" ip daddr 203.0.113.1 counter name "leaked"\n\t}\n}\n');
    fs.writeFileSync(path.join(dir, 'vpn.nft'), 'table ip nat {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\toifname "v-inet" masquerade\n\t}\n}\n');
    must(sh([
      ...[client, gw, inet, vpn, foreign].map((n) => `ip netns add ${n} && ip -n ${n} link set lo up`),
      // A client outside the pod CIDRs whose traffic the gateway source-NATs to the tunnel address (as Cilium's egress
      // gateway does): after NAT it is tunnel-sourced, which only the postrouting rule sees.
      `ip link add f0 netns ${foreign} type veth peer name f-gw netns ${gw}`,
      `ip -n ${foreign} addr add 10.50.0.5/24 dev f0 && ip -n ${foreign} link set f0 up && ip -n ${foreign} route add default via 10.50.0.1`,
      `ip -n ${gw} addr add 10.50.0.1/24 dev f-gw && ip -n ${gw} link set f-gw up && ip -n ${gw} rule add from 10.50.0.0/24 lookup 100`,
      `ip netns exec ${gw} nft add table ip twnat && ip netns exec ${gw} nft add chain ip twnat post '{ type nat hook postrouting priority srcnat; }' && ip netns exec ${gw} nft add rule ip twnat post ip saddr 10.50.0.0/24 snat to 10.99.0.2`,
      `ip link add c0 netns ${client} type veth peer name c-gw netns ${gw}`,
      `ip link add wan0 netns ${gw} type veth peer name i-gw netns ${inet}`,
      `ip link add v-inet netns ${vpn} type veth peer name i-vpn netns ${inet}`,
      `ip -n ${client} addr add 10.42.0.5/24 dev c0 && ip -n ${client} link set c0 up && ip -n ${client} route add default via 10.42.0.1`,
      `ip -n ${gw} addr add 10.42.0.1/24 dev c-gw && ip -n ${gw} link set c-gw up`,
      `ip -n ${gw} addr add 198.18.1.2/24 dev wan0 && ip -n ${gw} link set wan0 up && ip -n ${gw} route add default via 198.18.1.1`,
      `ip netns exec ${gw} sysctl -qw net.ipv4.ip_forward=1`,
      `ip -n ${gw} rule add from 10.42.0.0/24 lookup 100 && ip -n ${gw} rule add from 10.99.0.2 lookup 100`,
      `ip -n ${inet} addr add 198.18.1.1/24 dev i-gw && ip -n ${inet} link set i-gw up`,
      `ip -n ${inet} addr add 198.18.2.1/24 dev i-vpn && ip -n ${inet} link set i-vpn up`,
      `ip -n ${inet} addr add ${target}/32 dev lo && ip netns exec ${inet} sysctl -qw net.ipv4.ip_forward=1`,
      `ip netns exec ${inet} nft -f ${path.join(dir, 'inet.nft')}`,
      `ip -n ${vpn} addr add 198.18.2.2/24 dev v-inet && ip -n ${vpn} link set v-inet up && ip -n ${vpn} route add default via 198.18.2.1`,
      `ip netns exec ${vpn} sysctl -qw net.ipv4.ip_forward=1 && ip netns exec ${vpn} nft -f ${path.join(dir, 'vpn.nft')}`,
      wgUp(vpn, vpnTun, 'vpn.key', `listen-port 51820 peer ${gwKey.publicKey} allowed-ips 10.99.0.2/32,10.42.0.0/24`),
      `ip -n ${vpn} addr add 10.99.0.1/32 dev ${vpnTun} && ip -n ${vpn} link set ${vpnTun} up`,
      `ip -n ${vpn} route add 10.42.0.0/24 dev ${vpnTun} && ip -n ${vpn} route add 10.99.0.2/32 dev ${vpnTun}`,
      // The generated table, loaded before the tunnel exists (as its unit orders it before the network).
      `ip netns exec ${gw} nft -f ${path.join(dir, 'killswitch.nft')}`,
    ].join(' && ')), 'namespace setup');
    must(tunnelUp(), 'tunnel up');
  });

  afterAll(() => {
    for (const n of [client, gw, inet, vpn, foreign]) sh(`ip netns pids ${n} | xargs -r kill; sleep 0.2; ip netns del ${n}`);
  });

  it('with the tunnel up, pod traffic leaves by the tunnel and none by the WAN', () => {
    expect(sh(`for t in $(seq 10); do ip netns exec ${client} ping -c1 -W1 ${target} >/dev/null && exit 0; done; exit 1`).status).toBe(0);
    expect(pingFromClient(5).status).toBe(0);
    expect(counter(gw, 'inet', KILL_SWITCH_TABLE, 'pods_via_tunnel')).toBeGreaterThanOrEqual(5);
    expect(leaks()).toBe(0);
  });

  it('with the tunnel down or flapping (six cycles), zero packets reach the WAN and the drop counters move', () => {
    const podDrops = counter(gw, 'inet', KILL_SWITCH_TABLE, 'pods_via_wan_dropped');
    const tunnelDrops = counter(gw, 'inet', KILL_SWITCH_TABLE, 'tunnel_via_wan_dropped');
    const results: string[] = [];
    for (let cycle = 0; cycle < 6; cycle++) {
      const how = cycle % 2 === 0 ? 'delete' : 'link-down';
      must(tunnelDown(how), `tunnel down (${how})`);
      results.push(`cycle ${cycle} ${how}: pod ping ${pingFromClient(3).status === 0 ? 'got through' : 'blocked'}`);
      if (how === 'link-down') {
        // The address stays while the link is down: traffic bound to it falls back to the main table's WAN route.
        results.push(`cycle ${cycle}: tunnel-sourced ping ${sh(`ip netns exec ${gw} ping -c2 -i0.2 -W1 -I 10.99.0.2 ${target}`).status === 0 ? 'got through' : 'blocked'}`);
        must(linkUp(), 'link up');
      } else {
        must(tunnelUp(), 'tunnel up');
      }
      results.push(`cycle ${cycle}: back up ${sh(`for t in $(seq 10); do ip netns exec ${client} ping -c1 -W1 ${target} >/dev/null && exit 0; done; exit 1`).status === 0 ? 'ok' : 'broken'}`);
    }
    expect(results).toEqual([0, 1, 2, 3, 4, 5].flatMap((c) => [
      `cycle ${c} ${c % 2 === 0 ? 'delete' : 'link-down'}: pod ping blocked`,
      ...(c % 2 === 1 ? [`cycle ${c}: tunnel-sourced ping blocked`] : []),
      `cycle ${c}: back up ok`,
    ]));
    expect(leaks()).toBe(0);
    expect(counter(gw, 'inet', KILL_SWITCH_TABLE, 'pods_via_wan_dropped') - podDrops).toBeGreaterThanOrEqual(18);
    expect(counter(gw, 'inet', KILL_SWITCH_TABLE, 'tunnel_via_wan_dropped') - tunnelDrops).toBeGreaterThanOrEqual(6);
  });

  it('leaves node-originated traffic not sourced from the tunnel untouched', () => {
    const before = ['tunnel_via_wan_dropped', 'pods_via_wan_dropped', 'masqueraded_via_wan_dropped'].map((c) => counter(gw, 'inet', KILL_SWITCH_TABLE, c));
    expect(sh(`ip netns exec ${gw} ping -c3 -i0.2 -W1 ${target}`).status).toBe(0);
    expect(leaks()).toBe(3);
    expect(['tunnel_via_wan_dropped', 'pods_via_wan_dropped', 'masqueraded_via_wan_dropped'].map((c) => counter(gw, 'inet', KILL_SWITCH_TABLE, c))).toEqual(before);
  });

  it('with the tunnel up, tunnel-sourced traffic leaves by the tunnel (its accept rule lets it)', () => {
    const before = counter(gw, 'inet', KILL_SWITCH_TABLE, 'tunnel_via_tunnel');
    expect(sh(`for t in $(seq 5); do ip netns exec ${gw} ping -c1 -W1 -I 10.99.0.2 ${target} >/dev/null && exit 0; done; exit 1`).status).toBe(0);
    expect(counter(gw, 'inet', KILL_SWITCH_TABLE, 'tunnel_via_tunnel') - before).toBeGreaterThanOrEqual(1);
  });

  /**
   * Traffic each drop rule stands in front of, with the tunnel's link down (its address stays). The node's own
   * tunnel-sourced traffic meets two rules: the output-hook drop, and behind it the post-NAT drop (the same source
   * address on the WAN); the control removes both, and removing the first alone must move the second's counter.
   */
  const probes: [string, string, () => void, string | undefined][] = [
    ['pods_via_wan_dropped', 'a pod\'s traffic', () => void pingFromClient(2), undefined],
    ['tunnel_via_wan_dropped', 'the node\'s traffic from the tunnel address', () => void sh(`ip netns exec ${gw} ping -c2 -i0.2 -W1 -I 10.99.0.2 ${target}`), 'masqueraded_via_wan_dropped'],
    ['masqueraded_via_wan_dropped', 'forwarded traffic source-NATed to the tunnel address', () => void sh(`ip netns exec ${foreign} ping -c2 -i0.2 -W1 ${target}`), undefined],
  ];
  /** The chain and handle of every rule counting into `name`, from one listing of the table. */
  const rulesCounting = (name: string) => {
    const found: { chain: string; handle: string }[] = [];
    let chain = '';
    for (const l of sh(`ip netns exec ${gw} nft -a list table inet ${KILL_SWITCH_TABLE}`).stdout.split('\n')) {
      chain = /^\s*chain (\S+) \{/.exec(l)?.[1] ?? chain;
      const m = new RegExp(`counter name "${name}".* # handle (\\d+)$`).exec(l);
      if (m) found.push({ chain, handle: m[1] });
    }
    return found;
  };

  /** A TCP service on a namespace: it appends the peer address of each connection it accepts to `file`. */
  const SERVICE = 'import socket,sys\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.bind((sys.argv[1],int(sys.argv[2])))\ns.listen(8)\nwhile True:\n  c,a=s.accept()\n  open(sys.argv[3],"a").write(a[0]+"\\n")\n  c.sendall(b"hi")\n  c.close()';
  const CONNECT = 'import socket,sys\ns=socket.socket()\ns.settimeout(2)\nif len(sys.argv)>3: s.bind((sys.argv[3],0))\ns.connect((sys.argv[1],int(sys.argv[2])))\nprint(s.recv(2).decode())';
  const serve = (ns: string, bind: string, port: number) => {
    const file = path.join(dir, `accepted-${ns}-${port}`);
    fs.writeFileSync(file, '');
    fs.writeFileSync(path.join(dir, 'service.py'), SERVICE);
    must(sh(`ip netns exec ${ns} setsid python3 ${path.join(dir, 'service.py')} ${bind} ${port} ${file} </dev/null >/dev/null 2>&1 & sleep 0.5`), `service on ${ns}:${port}`);
    return () => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  };
  const connect = (ns: string, to: string, port: number, from?: string) => {
    fs.writeFileSync(path.join(dir, 'connect.py'), CONNECT);
    return sh(`ip netns exec ${ns} python3 ${path.join(dir, 'connect.py')} ${to} ${port} ${from ?? ''}`).status === 0;
  };
  const inbound: Record<string, number> = {};
  afterAll(() => process.stdout.write(`host kill switch, connections from the VPN side accepted by the node's services: ${JSON.stringify(inbound)}\n`));

  it('a connection the VPN side opens to the node through the tunnel is dropped, and the node\'s own connection out through the tunnel gets its replies; controls: without the drop rule the VPN side connects, and a port in tunnelInboundPorts is let in', () => {
    // The node's service on every address (as node-exporter binds), and a service on the VPN side for the node to reach.
    const accepted = serve(gw, '0.0.0.0', 18089);
    const acceptedOut = serve(vpn, '10.99.0.1', 18091);
    const drops = counter(gw, 'inet', KILL_SWITCH_TABLE, 'tunnel_inbound_dropped');
    for (let i = 0; i < 3; i++) connect(vpn, '10.99.0.2', 18089);
    inbound['from the VPN side, 3 tries'] = accepted();
    inbound['drop counter moved by'] = counter(gw, 'inet', KILL_SWITCH_TABLE, 'tunnel_inbound_dropped') - drops;
    expect(connect(gw, '10.99.0.1', 18091, '10.99.0.2')).toBe(true);
    inbound['the node\'s own connection out, accepted on the VPN side'] = acceptedOut();
    // Control: the same without the drop rule.
    for (const { chain, handle } of rulesCounting('tunnel_inbound_dropped')) must(sh(`ip netns exec ${gw} nft delete rule inet ${KILL_SWITCH_TABLE} ${chain} handle ${handle}`), 'delete the drop');
    connect(vpn, '10.99.0.2', 18089);
    inbound['control: without the drop rule, 1 try'] = accepted() - inbound['from the VPN side, 3 tries'];
    // A forwarded port (tunnelInboundPorts) is let in, and only it.
    const ported = planKillSwitch({ selector: { app: 'client' }, namespace: 'default', allowCidrs: ['10.42.0.0/16'], host: { node: 'gw', wanInterface: 'wan0', tunnelInterface: tun, tunnelCidrs: ['10.99.0.2/32'], podCidrs: ['10.42.0.0/24'], tunnelInboundPorts: [18090] } });
    fs.writeFileSync(path.join(dir, 'ported.nft'), ported.hosts[0].files.find((f) => f.path === KILL_SWITCH_NFT_PATH)!.content);
    must(sh(`ip netns exec ${gw} nft -f ${path.join(dir, 'ported.nft')}`), 'the table with a forwarded port');
    const acceptedPort = serve(gw, '0.0.0.0', 18090);
    connect(vpn, '10.99.0.2', 18090);
    connect(vpn, '10.99.0.2', 18089);
    inbound['tunnelInboundPorts [18090]: to 18090'] = acceptedPort();
    inbound['tunnelInboundPorts [18090]: to 18089'] = accepted() - inbound['from the VPN side, 3 tries'] - inbound['control: without the drop rule, 1 try'];
    must(sh(`ip netns exec ${gw} nft -f ${path.join(dir, 'killswitch.nft')}`), 'reload the table');
    expect(inbound).toEqual({
      'from the VPN side, 3 tries': 0, 'drop counter moved by': expect.any(Number), 'the node\'s own connection out, accepted on the VPN side': 1,
      'control: without the drop rule, 1 try': 1, 'tunnelInboundPorts [18090]: to 18090': 1, 'tunnelInboundPorts [18090]: to 18089': 0,
    });
    expect(inbound['drop counter moved by']).toBeGreaterThanOrEqual(3);
  });

  it.each(probes)('%s stops %s; control: without it (and any rule behind it) the traffic reaches the WAN', (rule, _what, send, behind) => {
    must(sh(`ip -n ${gw} link set ${tun} down`), 'link down');
    const deleteRule = (name: string) => {
      for (const { chain, handle } of rulesCounting(name)) must(sh(`ip netns exec ${gw} nft delete rule inet ${KILL_SWITCH_TABLE} ${chain} handle ${handle}`), `delete ${name}`);
    };
    const leakedBy = () => {
      const before = leaks();
      send();
      return leaks() - before;
    };
    try {
      const withRule = leakedBy();
      deleteRule(rule);
      const behindBefore = behind ? counter(gw, 'inet', KILL_SWITCH_TABLE, behind) : 0;
      const withoutRule = leakedBy();
      const caughtBehind = behind ? counter(gw, 'inet', KILL_SWITCH_TABLE, behind) - behindBefore > 0 : false;
      if (behind) deleteRule(behind);
      const withoutEither = behind ? leakedBy() : withoutRule;
      const leakedPastFirst = behind ? withoutRule : 0; // with a rule behind it, removing the first alone leaks nothing
      expect({ rule, withRule, leakedPastFirst, caughtBehind, leakedWithout: withoutEither > 0 }).toEqual({ rule, withRule: 0, leakedPastFirst: 0, caughtBehind: behind !== undefined, leakedWithout: true });
    } finally {
      must(sh(`ip netns exec ${gw} nft -f ${path.join(dir, 'killswitch.nft')}`), 'reload the table');
      must(linkUp(), 'link up');
    }
  });

  it('would have leaked without the table (the test can fail)', () => {
    must(sh(`ip netns exec ${gw} nft delete table inet ${KILL_SWITCH_TABLE}`), 'delete table');
    must(tunnelDown('delete'), 'tunnel down');
    const before = leaks();
    expect(pingFromClient(2).status).not.toBe(0); // no reply: the target answers 10.42.0.5, which it cannot route
    expect(leaks() - before).toBe(2);
  });
});
