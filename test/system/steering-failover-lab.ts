import * as fs from 'node:fs';
import * as path from 'node:path';
import { EgressSteeringProps, generateKeyPair, HostPlan, planEgressSteering } from '../../src';
import { FAILOVER_AGENT_PATH } from '../../src/render/egress-steering-failover';
import { activeLabel } from '../../src/model/egress-steering-failover';
import { withSetting } from '../helpers/host-tools';
import { inPod, Pod, PodFile, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { must, sh, tmpdir } from './tools';

/**
 * EgressSteering failover in network namespaces: two gateway "node" pods (their synthesized host files, the kill
 * switch, wg-quick over wireguard-go with the library's PostUp, and the failover agent run as its unit runs it), a
 * VPN server with one WireGuard interface per gateway and the destination behind it, the Lease and labels held in
 * test/helpers/kube-api-stand-in.py (409 on a stale resourceVersion) reached by the real kubectl over the WAN, and a
 * client node whose route to the destination follows the active label as Cilium's does:
 * - on the client's node, the gateway is the first node by name whose labels match the policy's nodeSelector, none
 *   is a drop (pkg/egressgateway manager.go onChangeNodeLocked sorts by name; policy.go regenerateGatewayConfig takes
 *   the first match, else GatewayNotFoundIPv4), replayed as `ip route replace <dst> via <gateway>` or a blackhole;
 * - on the gateway, Cilium masquerades to the egress IP and looks the route up from it
 *   (bpf/lib/egress_gateway.h, egress_gw_fib_lookup_and_redirect: fib_lookup_v4(ctx, …, egress_ip, daddr)), which the
 *   library's `from <tunnel address> lookup 51821` answers; replayed as `iif lan0 lookup 51821` and a source NAT to
 *   the tunnel address on tun0.
 *
 *   client (pod 10.42.0.5) ─ lan ─ gw-1 / gw-2 ─ eth0 ─ WAN bridge 198.18.0.0/24 (API 198.18.0.3; leak counter)
 *                                                         └─ VPN server 198.18.0.2: one interface per gateway ─ destination 203.0.113.10
 */
export const DEST = '203.0.113.10';
export const API = '198.18.0.3';
export type Node = 'gw-1' | 'gw-2';
export const NODES: Node[] = ['gw-1', 'gw-2'];
export const LABEL = activeLabel('vpn-egress');

/** The tools the lab needs (for describeWithTools). */
export const STEERING_FAILOVER_LAB_TOOLS = ['wg', 'wg-quick', 'wireguard-go', 'nft', 'ip', 'python3', 'nsenter', 'unshare', 'kubectl', 'curl'];
export const ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go', WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' };

export interface SteeringFailoverLabOptions {
  /** Names the lab's namespaces, WireGuard interfaces and directory (with TW_LAB_NS_PREFIX and the PID). */
  readonly tag: string;
  /** Printed before the figures (`results`) after the lab. */
  readonly title: string;
  /** More files in each gateway node pod (stand-ins a test needs). */
  readonly nodeFiles?: Record<string, PodFile>;
}

/**
 * Sets the lab up (beforeAll) and down (afterAll) in the calling describe block; returns its parts and helpers.
 * The lab's own figures go to `results` (printed after it; FAILOVER_LAB_RESULTS=<file> writes them as JSON).
 */
export function steeringFailoverLab(o: SteeringFailoverLabOptions) {
  // TW_LAB_NS_PREFIX: a prefix of the runner's own for the namespaces (several people share the machine).
  const id = `${process.env.TW_LAB_NS_PREFIX ?? ''}${o.tag}${process.pid % 10000}`;
  const NS = { inet: `${id}-inet`, vpn: `${id}-vpn`, cli: `${id}-cli`, gw1: `${id}-gw1`, gw2: `${id}-gw2` };
  const GW = {
    'gw-1': { ns: NS.gw1, wan: '198.18.0.11', lan: '10.99.1.2', cliLan: '10.99.1.1', tunnel: '10.2.0.2', server: `${o.tag}${process.pid % 10000}a`, port: 51820 },
    'gw-2': { ns: NS.gw2, wan: '198.18.0.12', lan: '10.99.2.2', cliLan: '10.99.2.1', tunnel: '10.2.0.3', server: `${o.tag}${process.pid % 10000}b`, port: 51821 },
  } as const;
  const dir = tmpdir(`${o.tag}-lab-`);
  const inNs = (n: string, cmd: string, timeout = 30_000) => sh(`ip netns exec ${n} bash -c ${quote(cmd)}`, { timeout, env: ENV });
  const server = { 'gw-1': generateKeyPair(), 'gw-2': generateKeyPair() };
  const keys = { 'gw-1': generateKeyPair(), 'gw-2': generateKeyPair() };
  const props: EgressSteeringProps = {
    gatewayNode: 'gw-1',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/etc/wireguard/keys/vpn.key' }, peer: { publicKey: server['gw-1'].publicKey, endpoint: '198.18.0.2:51820' } },
    failover: {
      standbys: [{ node: 'gw-2', tunnel: { type: 'wireguard', address: '10.2.0.3/32', privateKeyFrom: { file: '/etc/wireguard/keys/vpn-2.key' }, peer: { publicKey: server['gw-2'].publicKey, endpoint: '198.18.0.2:51821' } } }],
      // The lab's seconds: checks every second, the shortest lease the model admits with them (1 s + 6 API calls × 2 s
      // < 14 s); the default 3 checks each way.
      checkIntervalSeconds: 1, leaseDurationSeconds: 14, probeUrl: `http://${DEST}:8080/probe`,
    },
    kubeconfigFrom: { file: '/etc/tunnelwright/kubeconfig' },
    acknowledge: ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages'],
  };
  const plan = planEgressSteering(props);
  const hostOf = (n: Node): HostPlan => plan.hosts.find((h) => h.node === n)!;
  const pods: Partial<Record<Node, Pod>> = {};
  const pod = (n: Node) => pods[n]!;
  const execLine = (host: HostPlan, unit: string) => /^ExecStart=(.+)$/m.exec(host.units.find((u) => u.name === unit)!.content!)![1];
  const objects = (): Record<string, { metadata: { labels?: Record<string, string> }; spec?: { holderIdentity?: string } }> => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, 'objects.json'), 'utf8'));
    } catch {
      return {};
    }
  };
  const holder = () => objects()['leases/kube-system/vpn-egress-gateway']?.spec?.holderIdentity;
  const labelled = () => NODES.filter((n) => objects()[`ciliumnodes//${n}`]?.metadata.labels?.[LABEL] === 'true');
  const leaked = () => Number(/packets (\d+)/.exec(inNs(NS.inet, 'nft list counter inet wan leaked').stdout)?.[1] ?? NaN);

  const startAgent = (n: Node, overrides: Record<string, string> = {}) => {
    let text = hostOf(n).files.find((f) => f.path === FAILOVER_AGENT_PATH)!.content;
    for (const [k, v] of Object.entries(overrides)) text = withSetting(text, k, v);
    must(inPod(pod(n), `pkill -9 -f '^/bin/sh ${FAILOVER_AGENT_PATH}'; cat > ${FAILOVER_AGENT_PATH} <<'EOF'\n${text}\nEOF\nchmod 755 ${FAILOVER_AGENT_PATH}; true`), 'agent file');
    startInPod(pod(n), `exec ${FAILOVER_AGENT_PATH}`, 'agent.log', { HOME: '/root' });
  };

  beforeAll(() => {
    fs.writeFileSync(path.join(dir, 'wan.nft'), [
      // vpn-class packets on the WAN outside the tunnel: the pod's (10.42/16) or the tunnels' addresses as source, or
      // the destination, which the WAN reaches only through the VPN server's tunnels.
      'table inet wan {', '  counter leaked {}', '  chain prerouting {', '    type filter hook prerouting priority -300;',
      `    ip saddr { 10.42.0.0/16, 10.2.0.0/24 } counter name "leaked"`, `    ip daddr ${DEST} counter name "leaked"`, '  }', '}', ''].join('\n'));
    fs.writeFileSync(path.join(dir, 'echo.py'), [
      'import http.server', 'class H(http.server.BaseHTTPRequestHandler):', '    def log_message(self, *a): pass',
      '    def do_GET(self):', '        b = self.client_address[0].encode()', '        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)',
      `http.server.ThreadingHTTPServer(("${DEST}", 8080), H).serve_forever()`, ''].join('\n'));
    const setup = [
      ...Object.values(NS).map((n) => `ip netns add ${n} && ip -n ${n} link set lo up`),
      `ip -n ${NS.inet} link add br0 type bridge && ip -n ${NS.inet} addr add ${API}/24 dev br0 && ip -n ${NS.inet} addr add 198.18.0.1/24 dev br0 && ip -n ${NS.inet} link set br0 up`,
      `ip link add eth0 netns ${NS.vpn} type veth peer name pv netns ${NS.inet} && ip -n ${NS.inet} link set pv master br0 up && ip -n ${NS.vpn} addr add 198.18.0.2/24 dev eth0 && ip -n ${NS.vpn} link set eth0 up`,
      `ip -n ${NS.vpn} addr add ${DEST}/32 dev lo`,
      ...NODES.map((n, i) => [
        `ip link add eth0 netns ${GW[n].ns} type veth peer name p${i} netns ${NS.inet} && ip -n ${NS.inet} link set p${i} master br0 up && ip -n ${GW[n].ns} addr add ${GW[n].wan}/24 dev eth0 && ip -n ${GW[n].ns} link set eth0 up`,
        `ip link add lan0 netns ${GW[n].ns} type veth peer name lan${i} netns ${NS.cli} && ip -n ${GW[n].ns} addr add ${GW[n].lan}/24 dev lan0 && ip -n ${GW[n].ns} link set lan0 up && ip -n ${NS.cli} addr add ${GW[n].cliLan}/24 dev lan${i} && ip -n ${NS.cli} link set lan${i} up`,
        `ip -n ${GW[n].ns} route add 10.42.0.0/16 via ${GW[n].cliLan}`,
        // A node's default route is by the WAN: what escapes the tunnel would leave there (and be counted).
        `ip -n ${GW[n].ns} route add default via 198.18.0.1`,
        `ip netns exec ${GW[n].ns} sysctl -qw net.ipv4.ip_forward=1`,
      ].join(' && ')),
      `ip -n ${NS.cli} addr add 10.42.0.5/32 dev lo && ip -n ${NS.cli} route add blackhole ${DEST}/32`,
      `ip netns exec ${NS.inet} nft -f ${dir}/wan.nft`,
    ].join(' && ');
    must(sh(setup, { timeout: 60_000 }), 'namespaces');
    // The VPN server: one interface per gateway (each its own key), the destination behind them.
    for (const n of NODES) {
      fs.writeFileSync(path.join(dir, `${GW[n].server}.key`), `${server[n].privateKey}\n`, { mode: 0o600 });
      must(inNs(NS.vpn, `wireguard-go ${GW[n].server} && wg set ${GW[n].server} private-key ${dir}/${GW[n].server}.key listen-port ${GW[n].port} peer ${keys[n].publicKey} allowed-ips ${GW[n].tunnel}/32 && ip link set ${GW[n].server} up && ip route add ${GW[n].tunnel}/32 dev ${GW[n].server}`), `VPN server ${GW[n].server}`);
    }
    must(sh(`ip netns exec ${NS.vpn} setsid python3 ${dir}/echo.py </dev/null >${dir}/echo.log 2>&1 & echo ok`), 'destination');
    must(sh(`ip netns exec ${NS.inet} env HOST=${API} PORT=6443 setsid python3 ${path.join(__dirname, '../helpers/kube-api-stand-in.py')} ${dir} kube-system/vpn-egress-gateway gw-1 gw-2 </dev/null >${dir}/api.log 2>&1 & echo ok`), 'API stand-in');
    must(sh(`for i in $(seq 50); do [ -e ${dir}/port ] && exit 0; sleep 0.1; done; exit 1`), 'API listening');
    const kubeconfig = `apiVersion: v1\nkind: Config\nclusters: [{name: s, cluster: {server: "http://${API}:6443"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: s, user: u}}]\ncurrent-context: c\n`;
    for (const n of NODES) {
      const host = hostOf(n);
      const files = Object.fromEntries(host.files.map((f) => [f.path, { content: f.content, mode: f.mode }]));
      const keyPath = n === 'gw-1' ? '/etc/wireguard/keys/vpn.key' : '/etc/wireguard/keys/vpn-2.key';
      pods[n] = startPod(dir, n, GW[n].ns, n, { ...files, ...o.nodeFiles, [keyPath]: { content: `${keys[n].privateKey}\n`, mode: 0o600 }, '/etc/tunnelwright/kubeconfig': { content: kubeconfig, mode: 0o600 } });
      must(inPod(pod(n), execLine(host, 'tunnelwright-killswitch.service')), `${n} kill switch`);
      for (const u of host.units.filter((x) => x.name.startsWith('tunnelwright-secret-'))) must(inPod(pod(n), execLine(host, u.name)), `${n} ${u.name}`);
      must(inPod(pod(n), 'wg-quick up tun0', { env: ENV, timeout: 60_000 }), `${n} wg-quick up`);
      // Cilium on the gateway: what arrives for the destination is masqueraded to the egress IP and routed from it.
      must(inPod(pod(n), `ip rule add iif lan0 lookup 51821 priority 5000 && nft add table ip esl && nft add chain ip esl post '{ type nat hook postrouting priority srcnat; }' && nft add rule ip esl post oifname tun0 ip saddr 10.42.0.0/16 snat to ${GW[n].tunnel}`), `${n} Cilium's redirect`);
      must(inPod(pod(n), `for i in $(seq 30); do curl -fsS --interface tun0 --max-time 2 http://${DEST}:8080/ && exit 0; sleep 0.5; done; exit 1`), `${n} tunnel answers`);
    }
    // Cilium on the client's node: the route follows the label (first labelled CiliumNode by name; none: drop).
    fs.writeFileSync(path.join(dir, 'cilium.sh'), [
      '#!/bin/bash', 'last=',
      'while :; do',
      `  gw=$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(next((n for n in sorted(["gw-1","gw-2"]) if o.get("ciliumnodes//"+n,{}).get("metadata",{}).get("labels",{}).get(sys.argv[2])=="true"), "drop"))' ${dir}/objects.json ${LABEL} 2>/dev/null || echo drop)`,
      '  if [ "$gw" != "$last" ]; then',
      `    case $gw in gw-1) ip route replace ${DEST}/32 via ${GW['gw-1'].lan} src 10.42.0.5 ;; gw-2) ip route replace ${DEST}/32 via ${GW['gw-2'].lan} src 10.42.0.5 ;; *) ip route replace blackhole ${DEST}/32 ;; esac`,
      '    echo "$(date +%s.%N) $gw" >> ' + `${dir}/cilium.log`, '    last=$gw', '  fi', '  sleep 0.2', 'done', ''].join('\n'), { mode: 0o755 });
    must(sh(`ip netns exec ${NS.cli} setsid ${dir}/cilium.sh </dev/null >/dev/null 2>&1 & echo ok`), 'Cilium stand-in');
    // The steered pod: a request every 0.2 s, its outcome and the tunnel address the destination saw.
    fs.writeFileSync(path.join(dir, 'client.sh'), `#!/bin/bash\nwhile :; do t=$(date +%s.%N); if r=$(curl -fsS --max-time 1 --interface 10.42.0.5 http://${DEST}:8080/ 2>/dev/null); then echo "$t ok $r"; else echo "$t fail"; fi >> ${dir}/client.log; sleep 0.2; done\n`, { mode: 0o755 });
    must(sh(`ip netns exec ${NS.cli} setsid ${dir}/client.sh </dev/null >/dev/null 2>&1 & echo ok`), 'client');
    for (const n of NODES) startAgent(n);
  }, 240_000);

  afterAll(() => {
    process.stdout.write(`${o.title}: ${JSON.stringify(results)}\n`);
    // FAILOVER_LAB_RESULTS=<file>: the figures as JSON, for the docs' table.
    if (process.env.FAILOVER_LAB_RESULTS) fs.writeFileSync(process.env.FAILOVER_LAB_RESULTS, JSON.stringify(results, null, 1));
    for (const n of NODES) if (pods[n]) stopPod(pods[n]!);
    for (const n of Object.values(NS)) sh(`ip netns pids ${n} | xargs -r kill -9; ip netns del ${n} 2>/dev/null`);
  });

  const results: Record<string, unknown>[] = [];
  const now = () => Date.now() / 1000;
  const wait = (what: string, cond: () => boolean, seconds = 60) => {
    for (let i = 0; i < seconds * 5; i++) {
      if (cond()) return;
      sh('sleep 0.2');
    }
    throw new Error(`timed out waiting for ${what}; agents:\n${NODES.map((n) => podLog(pod(n), 'agent.log').slice(-1500)).join('\n---\n')}`);
  };
  /** The client's requests since `t0`: how many failed, and when the first one answered through `tunnel`. */
  const requests = (t0: number, tunnel: string) => {
    const lines = fs.readFileSync(path.join(dir, 'client.log'), 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')).filter(([t]) => Number(t) >= t0);
    const first = lines.find(([, r, a]) => r === 'ok' && a === tunnel);
    const until = first ? Number(first[0]) : Infinity;
    return { switchSeconds: first ? Number((until - t0).toFixed(2)) : NaN, lost: lines.filter(([t, r]) => r === 'fail' && Number(t) < until).length, sent: lines.length };
  };
  const active = () => holder() as Node;
  const other = (n: Node): Node => (n === 'gw-1' ? 'gw-2' : 'gw-1');
  // A link set down loses its routes: up again, the route to the gateway's tunnel address is put back.
  const serverLink = (n: Node, up: boolean) => must(inNs(NS.vpn, up ? `ip link set ${GW[n].server} up && ip route replace ${GW[n].tunnel}/32 dev ${GW[n].server}` : `ip link set ${GW[n].server} down`), 'server link');
  const steady = () => wait('one holder, labelled, and the client through it', () => {
    const h = holder();
    return h !== undefined && labelled().join() === h && requests(now() - 1.5, GW[h as Node].tunnel).sent > 0 && requests(now() - 1.5, GW[h as Node].tunnel).lost === 0;
  });

  return { props, NS, GW, dir, inNs, hostOf, pod, execLine, objects, holder, labelled, leaked, startAgent, results, now, wait, requests, active, other, serverLink, steady };
}
