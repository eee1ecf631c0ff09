import { planWireguardOverlayNode, WireguardOverlayNodeProps } from '../../src';
import { siteA } from '../helpers/fixtures';
import { describeWithTools, must, run, sh } from './tools';

/**
 * The IPv6 half of the kube-router SNAT table (audit3-26 F5), replayed in network namespaces.
 *
 * kube-router v2.1.0 builds an ip6ip6 tunnel per IPv6 peer (`tun-` + hash, network_routes_controller.go:832) with no
 * address and routes the peer's pod CIDR `dev <tun> src <node IPv6>` (:675-690). This kernel has no ip6tnl, so the
 * tunnel is an address-less veth named `tun-abc` (`addrgenmode none`) whose far end is the pod; wg0 is a veth carrying
 * the overlay address (no WireGuard: only the source the masquerade picks is under test). kube-proxy's ip6tables nat
 * rules for a NodePort are reduced to the mark, the DNAT and KUBE-POSTROUTING (`--xor-mark`, `MASQUERADE
 * --random-fully`), loaded with ip6tables-restore (nft backend). Layout: the underlay is a ULA (eth0 fd00:1::1/64)
 * that shares a longer prefix with the pod (fd00::1002 in k0s's dual-stack example CIDR fd00::/108) than the overlay's
 * fd10::1/64 does, so IPv6 source selection (RFC 6724 rule 8) takes the underlay. Not replayed: the encapsulation
 * itself, WireGuard, BGP. The pod counts the source of each datagram that reaches it.
 */
describeWithTools('kube-proxy\'s IPv6 masquerade into a kube-router tunnel: the plan\'s ip6 SNAT table', ['ip', 'nft', 'ip6tables-restore', 'python3'], () => {
  const P = `t26f${process.pid % 100000}`;
  const ns = { c: `${P}-c`, n: `${P}-n`, p: `${P}-p` };
  const UL = 'fd00:1::';
  const OV = 'fd10::';
  const POD = 'fd00::1002';
  const SENDS = 5;
  const props = { ...siteA(), k0sConfig: { network: { dualStack: { enabled: true, IPv6podCIDR: 'fd00::/108' } } }, wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', `${OV}1/64`] }] } as WireguardOverlayNodeProps;
  const nft = planWireguardOverlayNode(props).hosts[0].files.find((f) => f.path === '/etc/tunnelwright/wg0-kube-router-snat.nft')!.content;
  const kubeProxy = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    ':KUBE-POSTROUTING - [0:0]',
    `-A PREROUTING -d ${UL}1/128 -p udp --dport 30080 -j MARK --or-mark 0x4000`,
    `-A PREROUTING -d ${UL}1/128 -p udp --dport 30080 -j DNAT --to-destination [${POD}]:8080`,
    '-A POSTROUTING -j KUBE-POSTROUTING',
    '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
    '-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000',
    '-A KUBE-POSTROUTING -j MASQUERADE --random-fully',
    'COMMIT',
    '',
  ].join('\n');
  const podCounters = [
    `add table ip6 ${P}`,
    `add counter ip6 ${P} overlay`,
    `add counter ip6 ${P} underlay`,
    `add chain ip6 ${P} in { type filter hook input priority 0; }`,
    `add rule ip6 ${P} in ip6 saddr ${OV}1 udp dport 8080 counter name overlay`,
    `add rule ip6 ${P} in ip6 saddr ${UL}1 udp dport 8080 counter name underlay`,
  ].join('\n');
  const counter = (name: string) => (JSON.parse(must(sh(`ip netns exec ${ns.p} nft -j list counter ip6 ${P} ${name}`), name).stdout) as { nftables: { counter?: { packets: number } }[] }).nftables.find((e) => e.counter)!.counter!.packets;

  beforeAll(() => {
    const dad = 'sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0';
    must(sh([
      ...Object.values(ns).map((n) => `ip netns add ${n} && ip -n ${n} link set lo up && ip netns exec ${n} ${dad}`),
      `ip netns exec ${ns.n} sysctl -qw net.ipv6.conf.all.forwarding=1`,
      `ip link add ${P}c netns ${ns.c} type veth peer name eth0 netns ${ns.n}`,
      `ip -n ${ns.n} link add wg0 type veth peer name wg0p`,
      `ip -n ${ns.n} link set wg0p up`,
      `ip link add ${P}p netns ${ns.p} type veth peer name tun-abc netns ${ns.n}`,
      `ip -n ${ns.n} link set tun-abc addrgenmode none`,
      `ip -n ${ns.c} addr add ${UL}9/64 dev ${P}c nodad`,
      `ip -n ${ns.c} link set ${P}c up`,
      `ip -n ${ns.n} addr add ${UL}1/64 dev eth0 nodad`,
      `ip -n ${ns.n} link set eth0 up`,
      `ip -n ${ns.n} addr add ${OV}1/64 dev wg0 nodad`,
      `ip -n ${ns.n} link set wg0 up`,
      `ip -n ${ns.n} link set tun-abc up`,
      `ip -n ${ns.n} -6 route add ${POD}/128 dev tun-abc src ${OV}1`,
      `ip -n ${ns.n} -6 neigh add ${POD} lladdr $(ip -n ${ns.p} -br link show ${P}p | awk '{print $3}') dev tun-abc nud permanent`,
      `ip -n ${ns.p} addr add ${POD}/128 dev ${P}p nodad`,
      `ip -n ${ns.p} link set ${P}p up`,
      `ip -n ${ns.p} -6 route add ${UL}/64 dev ${P}p`,
      `ip -n ${ns.p} -6 route add ${OV}/64 dev ${P}p`,
      `ip netns exec ${ns.p} nft -f - <<'EOF'\n${podCounters}\nEOF`,
    ].join(' && ')), 'namespaces');
    must(run('ip', ['netns', 'exec', ns.n, 'ip6tables-restore'], { input: kubeProxy }), 'kube-proxy rules');
    // Neighbour discovery between the client and the node first (a datagram queued behind it may be dropped).
    must(sh(`for t in $(seq 20); do ip netns exec ${ns.c} ping -6 -c1 -W1 ${UL}1 >/dev/null && exit 0; sleep 0.2; done; exit 1`), 'client → node');
  });
  afterAll(() => {
    for (const n of Object.values(ns)) sh(`ip netns del ${n} 2>/dev/null`);
  });

  /** New flows (a new source port each) from the client to the NodePort; what the pod counted. */
  const send = (firstPort: number) => {
    must(sh(`ip netns exec ${ns.p} nft reset counters table ip6 ${P} >/dev/null`), 'reset');
    must(sh(`ip netns exec ${ns.c} python3 -c "
import socket
for i in range(${SENDS}):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(('${UL}9', ${firstPort} + i)); s.sendto(b'tw', ('${UL}1', 30080)); s.close()"`), 'client');
    sh('sleep 0.3');
    return { overlay: counter('overlay'), underlay: counter('underlay') };
  };

  it('the plan (its ip6 table loaded): every new flow reaches the pod from the overlay address', () => {
    expect(nft).toContain(`snat ip6 to ${OV}1\n`);
    must(sh(`ip netns exec ${ns.n} nft -f - <<'EOF'\n${nft}\nEOF`), 'the plan\'s table');
    try {
      expect(send(41000)).toEqual({ overlay: SENDS, underlay: 0 });
    } finally {
      sh(`ip netns exec ${ns.n} nft delete table ip6 tunnelwright-wg0-kube-router; ip netns exec ${ns.n} nft delete table ip tunnelwright-wg0-kube-router`);
    }
  });

  it('control: without it (kube-proxy\'s MASQUERADE alone) source selection takes the ULA underlay', () => {
    expect(send(42000)).toEqual({ overlay: 0, underlay: SENDS });
  });
});
