import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planEgressSteering } from '../../src';
import { WG_HANDSHAKE_METRIC, WG_HANDSHAKE_PATH } from '../../src/render/egress-steering';
import { describeWithTools, must, sh } from './tools';

/**
 * The handshake script as synthesized, run against a real wireguard-go interface in a network namespace, and its
 * file read by promtool's own exposition-format parser (the same parser node-exporter's textfile collector uses).
 * One peer has completed a handshake with a wireguard-go peer in a second namespace, one never has (0).
 */
describeWithTools('EgressSteering WireGuard handshake metric: the textfile script against wireguard-go', ['wg', 'wireguard-go', 'ip', 'promtool'], () => {
  const id = `twh${process.pid % 10000}`;
  const ns = { gw: `${id}-gw`, peer: `${id}-peer` };
  // A fixed name: a random suffix looks like a token to the props' secret check.
  const dir = `/tmp/tw-handshake-${id}`;
  const textfile = path.join(dir, 'textfile');
  const gw = generateKeyPair();
  const peer = generateKeyPair();
  const silent = generateKeyPair();
  const iface = `${id}wg`;
  // The peer's own name: wireguard-go's control socket (/var/run/wireguard/<name>.sock) is not per namespace.
  const peerIface = `${id}pw`;
  const inNs = (n: string, cmd: string) => sh(`ip netns exec ${n} bash -c '${cmd.replace(/'/g, "'\\''")}'`, { env: { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' } });
  const script = () => {
    const host = planEgressSteering({
      gatewayNode: 'gw-1',
      clusterCidrs: ['10.42.0.0/16'],
      monitoring: { textfileDirectory: textfile },
      tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/etc/wireguard/keys/vpn.key' }, peer: { publicKey: peer.publicKey, endpoint: '198.18.0.2:51820' } },
    }).hosts[0];
    // The script names the plan's interface (tun0); here it is this test's own.
    return host.files.find((f) => f.path === WG_HANDSHAKE_PATH)!.content.replace(/^IFACE=.*$/m, `IFACE=${iface}`);
  };

  beforeAll(() => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'gw.key'), gw.privateKey);
    fs.writeFileSync(path.join(dir, 'peer.key'), peer.privateKey);
    fs.writeFileSync(path.join(dir, 'handshake'), script(), { mode: 0o755 });
    must(sh([
      `ip netns add ${ns.gw} && ip netns add ${ns.peer}`,
      `ip link add ${id}a netns ${ns.gw} type veth peer name ${id}b netns ${ns.peer}`,
      `ip -n ${ns.gw} addr add 198.18.0.1/24 dev ${id}a && ip -n ${ns.gw} link set ${id}a up && ip -n ${ns.gw} link set lo up`,
      `ip -n ${ns.peer} addr add 198.18.0.2/24 dev ${id}b && ip -n ${ns.peer} link set ${id}b up && ip -n ${ns.peer} link set lo up`,
    ].join(' && ')), 'namespaces');
    must(inNs(ns.peer, `wireguard-go ${peerIface} && wg set ${peerIface} private-key ${dir}/peer.key listen-port 51820 peer ${gw.publicKey} allowed-ips 10.2.0.2/32 && ip addr add 10.2.0.1/32 dev ${peerIface} && ip link set ${peerIface} up && ip route add 10.2.0.2/32 dev ${peerIface}`), 'peer');
    must(inNs(ns.gw, `wireguard-go ${iface} && wg set ${iface} private-key ${dir}/gw.key peer ${peer.publicKey} endpoint 198.18.0.2:51820 allowed-ips 10.2.0.1/32 peer ${silent.publicKey} allowed-ips 10.9.0.0/24 && ip addr add 10.2.0.2/32 dev ${iface} && ip link set ${iface} up && ip route add 10.2.0.1/32 dev ${iface}`), 'gateway');
    must(inNs(ns.gw, 'ping -c 3 -W 2 10.2.0.1'), 'handshake');
  });

  afterAll(() => {
    sh(`ip -n ${ns.gw} link del ${iface}; ip -n ${ns.peer} link del ${peerIface}; ip netns del ${ns.gw}; ip netns del ${ns.peer}`);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes one sample per peer, the handshake as Unix seconds (0: never), that promtool accepts; the interface gone: no sample', () => {
    const before = Math.floor(Date.now() / 1000);
    // Quiet: awk's error (a broken program) would be on stderr.
    expect(must(inNs(ns.gw, `${dir}/handshake`), 'script').stderr).toBe('');
    const file = path.join(textfile, `tunnelwright_wireguard_${iface}.prom`);
    const text = fs.readFileSync(file, 'utf8');
    expect(fs.readdirSync(textfile)).toEqual([`tunnelwright_wireguard_${iface}.prom`]);
    const lint = sh(`promtool check metrics < ${file}`);
    expect(lint.output).toBe('');
    expect(lint.status).toBe(0);
    const samples = Object.fromEntries([...text.matchAll(new RegExp(`^${WG_HANDSHAKE_METRIC}\\{interface="${iface}",public_key="([^"]+)"\\} (\\d+)$`, 'gm'))].map((m) => [m[1], Number(m[2])]));
    expect(Object.keys(samples).sort()).toEqual([peer.publicKey, silent.publicKey].sort());
    expect(samples[silent.publicKey]).toBe(0);
    expect(samples[peer.publicKey]).toBeGreaterThan(before - 60);
    // Control: the interface gone, the file holds no sample (VPNTunnelDown reports that case).
    must(inNs(ns.gw, `ip link del ${iface}`), 'del');
    must(inNs(ns.gw, `${dir}/handshake`), 'script without the interface');
    expect(fs.readFileSync(file, 'utf8')).not.toContain(`${WG_HANDSHAKE_METRIC}{`);
  });
});
