import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planRoute, planVpnGateway, VpnGatewayProps } from '../../src';
import { inPod, Pod, PodFile, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { describeWithTools, must, secondsUntilTrue, sh, tmpdir, VENDOR_DIR } from './tools';

const PG = path.join(VENDOR_DIR, 'pod-gateway-v1.13.0');
const AGENT = path.resolve(__dirname, '../../src/render/vpn-gateway/failover-agent.sh');
const STAND_IN = path.resolve(__dirname, '../helpers/lease-api-stand-in.js');

/**
 * VpnGateway failover (issue 43), in network namespaces: two gateway pods, each with pod-gateway's own scripts
 * (../shared/vendor, unchanged), a real wireguard-go tunnel of its own key to one VPN server, and the library's
 * failover agent (src/render/vpn-gateway/failover-agent.sh) run as its container runs it; one routed client running pod-gateway's
 * client_init.sh / client_sidecar.sh; the Lease and the pods' labels in a stand-in API (409 on a stale
 * resourceVersion) that, as the endpoint controller and CoreDNS do, makes the gateway's name resolve to the pod
 * labelled active.
 *
 *   client 10.244.0.3 ──vxlan──▶ gateway A 10.244.0.2 ─tun0─┐
 *                     ──vxlan──▶ gateway B 10.244.0.4 ─tun0─┴─▶ VPN server 198.18.0.2 (A exits as .2, B as .4) ─▶ echo .3
 *   node: bridge, kube-dns stand-in 10.96.0.10, API stand-in 10.96.0.1:443, NAT to its WAN (counted: nothing but tunnel traffic may leave)
 *
 * gluetun cannot run here: its tunnel, fwmark routing, firewall and health server are stood in (each step cited).
 */
describeWithTools('VpnGateway failover: two gateways, one Lease, pod-gateway\'s clients', [
  'ip', 'wg', 'wireguard-go', 'iptables', 'dnsmasq', 'dig', 'udhcpc', 'route', 'killall', 'inotifywait', 'ping', 'python3', 'nft', 'nsenter', 'unshare', 'node', 'curl', 'busybox',
  'qbittorrent-nox', 'ss',
  path.join(PG, 'bin', 'gateway_init.sh'),
], () => {
  const ns = { node: 'vgf-node', inet: 'vgf-inet', vpn: 'vgf-vpn', a: 'vgf-gwa', b: 'vgf-gwb', client: 'vgf-cl' };
  const dir = tmpdir('vgf-lab-');
  const TOKEN = 'vgf-lab-token-8c2f';
  const serverKey = generateKeyPair();
  const keys = { a: generateKeyPair(), b: generateKeyPair() }; // a key each: a hot standby cannot share one
  const gw = {
    a: { pod: 'vpn-gateway-a-0', ip: '10.244.0.2', tunnel: '10.2.0.2', exit: '198.18.0.2', veth: 'pod0' },
    b: { pod: 'vpn-gateway-b-0', ip: '10.244.0.4', tunnel: '10.2.0.3', exit: '198.18.0.4', veth: 'pod1' },
  } as const;
  const props: VpnGatewayProps = {
    clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12'],
    nodeCidrs: ['192.168.77.0/24'],
    vpnProvider: 'custom',
    vpnEndpointIp: '198.18.0.2',
    vpnEndpointPort: 51820,
    wireguardPublicKey: serverKey.publicKey,
    wireguardPrivateKeySecret: { name: 'vpn-wireguard' },
    wireguardAddresses: ['10.2.0.2/32'],
    dnsAddress: '10.2.0.1',
    dnssec: false,
    // The agent's probe through the tunnel: the echo server on the far side of the VPN server.
    standby: { wireguardPrivateKeySecret: { name: 'vpn-wireguard-b' }, wireguardAddresses: ['10.2.0.3/32'], probeUrl: 'http://198.18.0.3:8080/' },
  };
  const gateway = planVpnGateway(props);
  type Env = { name: string; value?: string }[];
  const agentRendered = Object.fromEntries(((gateway.objects.find((o) => o.kind === 'StatefulSet') as unknown as { spec: { template: { spec: { containers: { name: string; env: Env }[] } } } })
    .spec.template.spec.containers.find((c) => c.name === 'failover-agent')!.env).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
  /**
   * The routed app of the port-forwarding labs (vpn-gateway-port-sync.test.ts): Debian's qBittorrent with the library's
   * port-sync sidecar, its environment as route() renders it for a gateway with port forwarding (GLUETUN_URL is the
   * gateway's VXLAN address, which both members have: after a switch it is the new holder's).
   */
  const API_KEY = crypto.randomBytes(18).toString('base64url');
  const QBT_PASSWORD = crypto.randomBytes(12).toString('base64url');
  const PORTS = { a: 41234, b: 42345 } as const; // what each member's provider session forwards
  const pfProps: VpnGatewayProps = {
    ...(({ vpnEndpointIp: _i, vpnEndpointPort: _p, wireguardPublicKey: _k, ...rest }) => rest)(props), vpnProvider: 'protonvpn', serverCountries: ['Switzerland'],
    portForwarding: { app: 'qbittorrent', workload: 'web', workloadNamespace: 'default', controlApiKeySecret: { name: 'gluetun-control' }, appCredentialsSecret: { name: 'qbittorrent-webui' }, syncPeriodSeconds: 2 },
  };
  const pfRoute = planRoute(pfProps, { namespace: 'default', podLabels: { app: 'web' }, name: 'web', kind: 'StatefulSet' });
  const syncData = (pfRoute.objects.find((o) => o.metadata.name === 'web-vpn-port-sync') as unknown as { data: Record<string, string> }).data;
  const syncEnv = Object.fromEntries(pfRoute.extraContainers.find((c) => c.name === 'vpn-port-sync')!.env!.map((e) => [e.name, e.value ?? '']));
  const gatewayData = (gateway.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data;
  const route = planRoute(props, { namespace: 'default', podLabels: { app: 'web' }, name: 'web', kind: 'Deployment' });
  const routeData = (route.objects[0] as unknown as { data: Record<string, string> }).data;
  const gatewayName = /^GATEWAY_NAME="([^"]+)"/m.exec(routeData['settings.sh'])![1];
  const vendor = (p: string) => fs.readFileSync(path.join(PG, p), 'utf8');
  const scripts = Object.fromEntries(['gateway_init.sh', 'gateway_sidecar.sh', 'client_init.sh', 'client_sidecar.sh', 'copy_resolv.sh'].map((s) => [`/usr/bin/${s}`, { content: vendor(`bin/${s}`), mode: 0o755 }]));
  const image: Record<string, PodFile> = { ...scripts, '/default_config/settings.sh': { content: vendor('config/settings.sh') } };
  const pods: Partial<Record<'a' | 'b' | 'client', Pod>> = {};
  const figures: Record<string, unknown>[] = [];
  /**
   * Runs of each switch: by default 2 of the far-end drop and 1 of each other fault, so the lab stays within CI's
   * budget (~4 min); FAILOVER_LAB_RUNS=N runs each N times (each flap run with five flaps in place of three) for the docs' figures.
   */
  const RUNS = Number(process.env.FAILOVER_LAB_RUNS ?? 0);
  const runs = (byDefault: number) => (RUNS > 0 ? RUNS : byDefault);

  const inNs = (n: string, cmd: string, timeout = 30_000) => sh(`ip netns exec ${n} bash -c ${quote(cmd)}`, { env: { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' }, timeout });
  const uptime = () => Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  type Entry = { t: number; op: string; from?: string; to?: string; active?: string[] };
  const entries = (): Entry[] => fs.readFileSync(path.join(dir, 'api.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Entry);
  const holder = () => entries().filter((e) => e.op === 'holder').at(-1)?.to ?? '';
  /** The client's requests, one a line: "<uptime> <source the echo server saw | FAIL>". */
  const requests = () => podLog(pods.client!, 'requests.log').split('\n').filter(Boolean).map((l) => { const [t, r] = l.split(' '); return { t: Number(t), r }; });
  /** Packets that left the node's WAN other than WireGuard to the VPN server (counted where they would leave). */
  const leaked = () => Number(/packets (\d+)/.exec(inNs(ns.node, 'nft list counter inet vgfwan leak').stdout)?.[1] ?? NaN);
  /** What leaked, if anything: source . destination . protocol . port (for the figures). */
  const leakedWhat = () => (/elements = \{([^}]*)\}/.exec(inNs(ns.node, 'nft list set inet vgfwan seen').stdout)?.[1] ?? '').trim();
  const waitFor = (pred: () => boolean, seconds: number, what: string) => {
    const t0 = Date.now();
    while (Date.now() - t0 < seconds * 1000) {
      try { if (pred()) return (Date.now() - t0) / 1000; } catch { /* not yet */ }
      sh('sleep 0.2');
    }
    const tail = (p: Pod | undefined, log: string) => (p ? podLog(p, log).slice(-1500) : '(no pod)');
    const file = (f: string) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), 'utf8').slice(-1500) : '(none)');
    throw new Error(`${what}: not within ${seconds} s\nA agent: ${tail(pods.a, 'agent.log')}\nB agent: ${tail(pods.b, 'agent.log')}\nA health: ${tail(pods.a, 'health.log')}\n` +
      `client: ${tail(pods.client, 'client.log')}\napi.out: ${file('api.out')}\napi.log: ${file('api.log')}\nwg: ${inNs(ns.vpn, 'wg show wgs').stdout}`);
  };

  const peerOn = (g: 'a' | 'b') => must(inNs(ns.vpn, `wg set wgs peer ${keys[g].publicKey} allowed-ips ${gw[g].tunnel}/32`), `peer ${g}`);
  const peerOff = (g: 'a' | 'b') => must(inNs(ns.vpn, `wg set wgs peer ${keys[g].publicKey} remove`), `peer ${g} off`);
  const healthy = (g: 'a' | 'b') => inPod(pods[g]!, 'curl -fsS -m 2 -o /dev/null http://127.0.0.1:9999/').status === 0;

  /** gluetun, as far as failover depends on it: tun0 with its fwmark routing, its firewall, its health server. */
  const gluetunStandIn = (g: 'a' | 'b') => [
    'wireguard-go tun0',
    `echo ${keys[g].privateKey} > /tmp/wg.key`,
    `wg set tun0 private-key /tmp/wg.key fwmark 51820 peer ${serverKey.publicKey} endpoint 198.18.0.2:51820 allowed-ips 0.0.0.0/0 persistent-keepalive 5`,
    `ip addr add ${gw[g].tunnel}/32 dev tun0`,
    'ip link set tun0 mtu 1320 up',
    'ip route add default dev tun0 table 51820',
    'ip rule add not fwmark 51820 table 51820 priority 101',
    // internal/firewall (v3.41.1): INPUT DROP but loopback, established and the links that existed at start; loopback
    // output accepted; VPN endpoint out by eth0 (pod-gateway's OUTPUT rules below already allow the rest).
    'iptables -P INPUT DROP',
    'iptables -A INPUT -i lo -j ACCEPT',
    'iptables -A INPUT -m state --state ESTABLISHED,RELATED -j ACCEPT',
    'iptables -A INPUT -i vxlan0 -j ACCEPT',
    'iptables -I OUTPUT -o lo -j ACCEPT',
    'iptables -I OUTPUT -o eth0 -d 198.18.0.2 -p udp --dport 51820 -j ACCEPT',
    // then /iptables/post-rules.txt (the library's file, run line by line as gluetun does).
    'while read -r rule; do [ -n "$rule" ] && $rule; done < /iptables/post-rules.txt',
  ].join(' && ');
  /**
   * gluetun's health server on :9999 answers 500 while its check through the tunnel fails (internal/healthcheck at
   * v3.41.1); the stand-in checks on each request: one ping of the VPN server's tunnel address through tun0. gluetun's
   * own check runs once a minute with retries of up to 120 s (internal/healthcheck/checker.go:89-175), so its server
   * answers 200 for up to 180 s after a silent death: the "stuck" file holds the stand-in there.
   */
  const healthStandIn = [
    'import http.server, os, subprocess',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    // Between two of gluetun's checks its server answers what the last one found: /tmp/health-stuck stands for that window.
    '        ok = os.path.exists("/tmp/health-stuck") or subprocess.run(["ping", "-c1", "-W1", "-I", "tun0", "10.2.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0',
    '        self.send_response(200 if ok else 500); self.end_headers()',
    '    def log_message(self, *a): pass',
    'http.server.HTTPServer(("127.0.0.1", 9999), H).serve_forever()',
  ].join('\n');

  /**
   * gluetun's control server as far as port-sync depends on it: GET /v1/portforward with the API key -> {"port":N}, the
   * port this member's provider session forwards; else 401 (internal/server/middlewares/auth at v3.41.1). On the
   * gateway's VXLAN address, as HTTP_CONTROL_SERVER_ADDRESS renders it.
   */
  const controlStandIn = (port: number) => [
    'import http.server, json',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    `        if self.path.split("?")[0] != "/v1/portforward" or self.headers.get("X-API-Key") != ${JSON.stringify(API_KEY)}:`,
    '            self.send_response(401); self.end_headers(); return',
    `        self.send_response(200); self.end_headers(); self.wfile.write(json.dumps({"port": ${port}}).encode())`,
    '    def log_message(self, *a): pass',
    `http.server.ThreadingHTTPServer((${JSON.stringify(syncEnv.GLUETUN_URL.replace(/^http:\/\/|:\d+$/g, ''))}, ${Number(/:(\d+)$/.exec(syncEnv.GLUETUN_URL)![1])}), H).serve_forever()`,
  ].join('\n');
  /** qBittorrent's configuration as a user leaves it: WebUI on loopback with a password, listen port 6881. */
  const qbtConf = () => {
    const salt = crypto.randomBytes(16);
    const hash = crypto.pbkdf2Sync(QBT_PASSWORD, salt, 100000, 64, 'sha512');
    return [
      '[LegalNotice]', 'Accepted=true', '',
      '[BitTorrent]', 'Session\\Port=6881', 'Session\\DHTEnabled=false', 'Session\\LSDEnabled=false', 'Session\\PeXEnabled=false', '',
      '[Preferences]', 'Connection\\UPnP=false', 'WebUI\\Address=127.0.0.1', 'WebUI\\Port=8080', 'WebUI\\Username=admin',
      `WebUI\\Password_PBKDF2="@ByteArray(${salt.toString('base64')}:${hash.toString('base64')})"`, '',
    ].join('\n');
  };
  /** qBittorrent's own API: its listen port. */
  const qbtPort = () => {
    const r = inPod(pods.client!, `curl -s -c /tmp/t.jar --data-urlencode username=admin --data-urlencode password=${QBT_PASSWORD} http://127.0.0.1:8080/api/v2/auth/login >/dev/null && curl -s -b /tmp/t.jar http://127.0.0.1:8080/api/v2/app/preferences`);
    return Number(/"listen_port":(\d+)/.exec(r.stdout)?.[1] ?? NaN);
  };
  /** The TCP ports listening in the app's network namespace (ss -ltn). */
  const listening = () => new Set([...inPod(pods.client!, 'ss -Hltn').stdout.matchAll(/\S+:(\d+)\s/g)].map((m) => Number(m[1])));

  const agentEnv = (g: 'a' | 'b', extra: Record<string, string> = {}) => ({
    API_URL: 'http://10.96.0.1:443', POD_NAME: gw[g].pod, PEER_POD: gw[g === 'a' ? 'b' : 'a'].pod, NAMESPACE: 'vpn-gateway', LEASE: 'vpn-gateway',
    PERIOD: '1', ACQUIRE_AFTER: '3', RELEASE_AFTER: '3', LEASE_SECONDS: '8', PROBE_URL: agentRendered.PROBE_URL, PROBE_INTERFACE: agentRendered.PROBE_INTERFACE, ...extra,
  });
  const startAgent = (g: 'a' | 'b', extra: Record<string, string> = {}) => startInPod(pods[g]!, 'busybox sh /usr/local/bin/failover-agent.sh', 'agent.log', agentEnv(g, extra));
  const stopAgent = (g: 'a' | 'b') => inPod(pods[g]!, 'pkill -9 -f "[f]ailover-agent.sh"; true');

  beforeAll(() => {
    fs.writeFileSync(path.join(dir, 'echo.py'), [
      'import http.server',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    def do_GET(self):',
      '        self.send_response(200); self.end_headers(); self.wfile.write(self.client_address[0].encode())',
      '    def log_message(self, *a): pass',
      'http.server.ThreadingHTTPServer(("198.18.0.3", 8080), H).serve_forever()',
    ].join('\n'));
    fs.writeFileSync(path.join(dir, 'hosts'), '');
    fs.writeFileSync(path.join(dir, 'api.json'), JSON.stringify({
      listen: { host: '10.96.0.1', port: 443 }, token: TOKEN, namespace: 'vpn-gateway', lease: 'vpn-gateway', roleLabel: 'tunnelwright.io/role',
      pods: { [gw.a.pod]: gw.a.ip, [gw.b.pod]: gw.b.ip }, serviceName: gatewayName, hostsFile: path.join(dir, 'hosts'), dnsPidFile: path.join(dir, 'kdns.pid'), log: path.join(dir, 'api.log'),
    }));
    const setup = [
      ...Object.values(ns).map((n) => `ip netns add ${n} && ip -n ${n} link set lo up`),
      `ip -n ${ns.inet} link add br0 type bridge && ip -n ${ns.inet} addr add 198.18.0.3/24 dev br0 && ip -n ${ns.inet} link set br0 up`,
      `ip link add wan0 netns ${ns.node} type veth peer name nodewan netns ${ns.inet} && ip -n ${ns.inet} link set nodewan master br0 up`,
      `ip link add wan0 netns ${ns.vpn} type veth peer name vpnwan netns ${ns.inet} && ip -n ${ns.inet} link set vpnwan master br0 up`,
      `ip -n ${ns.node} addr add 198.18.0.1/24 dev wan0 && ip -n ${ns.node} link set wan0 up`,
      `ip -n ${ns.vpn} addr add 198.18.0.2/24 dev wan0 && ip -n ${ns.vpn} addr add 198.18.0.4/24 dev wan0 && ip -n ${ns.vpn} link set wan0 up`,
      `ip -n ${ns.node} link add br0 type bridge && ip -n ${ns.node} addr add 10.244.0.1/24 dev br0 && ip -n ${ns.node} link set br0 up`,
      `ip netns exec ${ns.node} sysctl -qw net.ipv4.ip_forward=1`,
      `ip netns exec ${ns.node} iptables -t nat -A POSTROUTING -s 10.244.0.0/16 -o wan0 -j MASQUERADE`,
      `ip -n ${ns.node} addr add 10.96.0.10/32 dev lo && ip -n ${ns.node} addr add 10.96.0.1/32 dev lo`,
      ...([[ns.a, gw.a.ip, 'pod0'], [ns.client, '10.244.0.3', 'pod2'], [ns.b, gw.b.ip, 'pod1']] as const).flatMap(([n, ip, veth]) => [
        `ip link add eth0 netns ${n} type veth peer name ${veth} netns ${ns.node}`,
        `ip -n ${ns.node} link set ${veth} master br0 up`,
        `ip -n ${n} addr add ${ip}/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.244.0.1`,
      ]),
      // The VPN server: one peer a key, NAT of each peer to its own exit address (the echo server tells them apart).
      `ip netns exec ${ns.vpn} sysctl -qw net.ipv4.ip_forward=1`,
      `ip netns exec ${ns.vpn} env WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 wireguard-go wgs >/dev/null 2>&1`,
      `echo ${serverKey.privateKey} > ${dir}/server.key`,
      `ip netns exec ${ns.vpn} wg set wgs private-key ${dir}/server.key listen-port 51820`,
      `ip -n ${ns.vpn} addr add 10.2.0.1/24 dev wgs && ip -n ${ns.vpn} link set wgs up`,
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s ${gw.a.tunnel} -o wan0 -j SNAT --to-source ${gw.a.exit}`,
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s ${gw.b.tunnel} -o wan0 -j SNAT --to-source ${gw.b.exit}`,
      // Counted where it would leave: every packet out of the node's WAN that is not WireGuard to the VPN server and
      // comes from a pod (its source before the node's masquerade: this chain runs before srcnat), by address and port;
      // IPv6 (the node's own neighbour discovery) counted apart.
      `ip netns exec ${ns.node} nft -f - <<'NFT'\ntable inet vgfwan {\n  counter leak {}\n  counter node6 {}\n  set seen { type ipv4_addr . ipv4_addr . inet_proto . inet_service; flags dynamic; }\n` +
      `  chain out { type filter hook postrouting priority -50; oifname "wan0" ip daddr 198.18.0.2 udp dport 51820 accept; oifname "wan0" meta nfproto ipv6 counter name "node6" accept; ` +
      `oifname "wan0" ip saddr { 10.244.0.0/16, 172.16.0.0/24 } add @seen { ip saddr . ip daddr . meta l4proto . th dport } counter name "leak"; }\n}\nNFT`,
    ].join(' && ');
    must(sh(setup, { timeout: 60_000 }), 'namespaces');
    peerOn('a');
    peerOn('b');
    must(sh(`ip netns exec ${ns.inet} setsid python3 ${dir}/echo.py </dev/null >${dir}/echo.out 2>&1 & ` +
      `ip netns exec ${ns.node} dnsmasq --keep-in-foreground --no-hosts --no-resolv --bind-interfaces --listen-address=10.96.0.10 --pid-file=${dir}/kdns.pid ` +
      `--addn-hosts=${dir}/hosts --local-ttl=0 --user=root </dev/null >${dir}/kdns.log 2>&1 & ` +
      `ip netns exec ${ns.node} setsid node ${STAND_IN} ${dir}/api.json </dev/null >${dir}/api.out 2>&1 & ` +
      `for i in $(seq 100); do [ -f ${dir}/api.log.ready ] && [ -f ${dir}/kdns.pid ] && exit 0; sleep 0.1; done; cat ${dir}/api.out; exit 1`), 'servers');

    for (const g of ['a', 'b'] as const) {
      const pod = startPod(dir, `gateway-${g}`, ns[g], gw[g].pod, {
        ...image,
        '/config/settings.sh': { content: gatewayData['settings.sh'] },
        '/config/nat.conf': { content: gatewayData['nat.conf'] },
        '/iptables/post-rules.txt': { content: gatewayData['post-rules.txt'] },
        '/etc/resolv.conf': { content: 'nameserver 10.96.0.10\n' },
        '/etc/dnsmasq.conf': { content: 'conf-dir=/etc/dnsmasq.d/,*.conf\n' },
        '/etc/dnsmasq.d/.keep': { content: '' },
        '/usr/local/bin/inotifyd': { content: '#!/bin/sh\nprog=$1; file=${2%%:*}\nwhile inotifywait -qq -e modify,attrib,close_write "$file"; do "$prog"; done\n', mode: 0o755 },
        '/usr/local/bin/failover-agent.sh': { content: fs.readFileSync(AGENT, 'utf8'), mode: 0o755 },
        '/usr/local/bin/health.py': { content: healthStandIn },
        '/usr/local/bin/control.py': { content: controlStandIn(PORTS[g]) },
        '/var/run/secrets/kubernetes.io/serviceaccount/token': { content: TOKEN },
      });
      pods[g] = pod;
      must(inPod(pod, 'gateway_init.sh'), `gateway_init.sh ${g}`);
      must(inPod(pod, gluetunStandIn(g)), `gluetun stand-in ${g}`);
      startInPod(pod, 'gateway_sidecar.sh', 'sidecar.log');
      startInPod(pod, 'python3 /usr/local/bin/health.py', 'health.log');
      startInPod(pod, 'exec python3 /usr/local/bin/control.py', 'control.log');
    }
    // A first: it holds the role before B starts.
    waitFor(() => healthy('a') && healthy('b'), 30, 'both tunnels healthy');
    startAgent('a');
    waitFor(() => holder() === gw.a.pod, 20, 'A holds the role');
    startAgent('b');

    pods.client = startPod(dir, 'client', ns.client, 'web-6d5f7c9b8-x2k4q', {
      ...image,
      '/config/settings.sh': { content: routeData['settings.sh'] },
      '/config/nat.conf': { content: routeData['nat.conf'] },
      '/etc/resolv.conf': { content: 'nameserver 10.96.0.10\n' },
      '/port-sync/port-sync.sh': { content: syncData['port-sync.sh'], mode: 0o555 },
    });
    const k8s = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    must(inPod(pods.client, 'client_init.sh', { env: k8s, timeout: 60_000 }), 'client_init.sh');
    // kubelet restarts the sidecar container when client_init.sh fails in it (set -e): a loop stands in, 1 s apart.
    startInPod(pods.client, 'while :; do client_sidecar.sh; sleep 1; done', 'client.log', k8s);
    startInPod(pods.client, 'while :; do r=$(curl -s --max-time 1 http://198.18.0.3:8080/); echo "$(cut -d" " -f1 /proc/uptime) ${r:-FAIL}" >>/tmp/requests.log; sleep 0.5; done', 'requests.out');
    waitFor(() => requests().some((q) => q.r === gw.a.exit), 20, 'the client egresses through A');
    // qBittorrent and its port-sync sidecar (the sidecar's projected Secret files; the pod's /run is a tmpfs).
    must(inPod(pods.client, `mkdir -p /run/port-sync-secrets && cd /run/port-sync-secrets && printf %s ${API_KEY} > gluetun-api-key && printf %s admin > app-username && printf %s ${QBT_PASSWORD} > app-password`), 'secrets');
    must(inPod(pods.client, `mkdir -p /tmp/qbt/qBittorrent/config && echo ${Buffer.from(qbtConf()).toString('base64')} | base64 -d > /tmp/qbt/qBittorrent/config/qBittorrent.conf`), 'qbt conf');
    startInPod(pods.client, 'exec qbittorrent-nox --profile=/tmp/qbt', 'qbt.log', { HOME: '/tmp/qbt' });
    must(inPod(pods.client, 'for i in $(seq 150); do curl -s -o /dev/null http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1'), 'qbittorrent-nox');
    const env = Object.entries({ ...syncEnv, METRICS_PORT: '0' }).map(([k, v]) => `${k}=${quote(v)}`).join(' ');
    startInPod(pods.client, `exec env ${env} /bin/sh /port-sync/port-sync.sh`, 'sync.log');
  }, 240_000);

  afterAll(() => {
    process.stdout.write(`vpn-gateway failover figures: ${JSON.stringify(figures, null, 1)}\nleaked (source . destination . protocol . port): ${leakedWhat() || 'none'}; node IPv6 out of the WAN: ${inNs(ns.node, 'nft list counter inet vgfwan node6').stdout.match(/packets \d+/)?.[0] ?? '?'}\n`);
    for (const p of [pods.client, pods.a, pods.b]) if (p) stopPod(p);
    for (const n of Object.values(ns)) sh(`ip netns pids ${n} | xargs -r kill -9; ip netns del ${n} 2>/dev/null`);
  });

  /** The member that holds the role now. */
  const holding = (): 'a' | 'b' => (holder() === gw.b.pod ? 'b' : 'a');
  /**
   * Back to the baseline: both tunnels up, one of them the holder (whichever: the role is not moved back, which would
   * cost a second switch per run), the client through it. Returns [holder, standby].
   */
  const baseline = (): ['a' | 'b', 'a' | 'b'] => {
    peerOn('a');
    peerOn('b');
    sh(`ip -n ${ns.node} link set ${gw.a.veth} up; ip -n ${ns.node} link set ${gw.b.veth} up`);
    for (const g of ['a', 'b'] as const) inPod(pods[g]!, 'iptables -D OUTPUT -d 10.96.0.1 -j DROP 2>/dev/null; true');
    waitFor(() => healthy('a') && healthy('b'), 60, 'both tunnels healthy again');
    waitFor(() => holder() !== '', 40, 'a holder');
    const h = holding();
    waitFor(() => requests().slice(-3).every((q) => q.r === gw[h].exit) && requests().length >= 3, 60, `the client through the holder ${h}`);
    return [h, h === 'a' ? 'b' : 'a'];
  };

  /**
   * Injects a fault into the holder (called H below; the other is S) at the client's last request, then: seconds until
   * the first request through S, requests lost, leaks.
   */
  const measure = (fault: string, inject: (h: 'a' | 'b', s: 'a' | 'b') => void, opts: { limit?: number; expectSwitch?: boolean } = {}) => {
    const [h, sb] = baseline();
    const leak0 = leaked();
    const t0 = uptime();
    inject(h, sb);
    const limit = opts.limit ?? 60;
    let switched = NaN;
    try {
      waitFor(() => requests().some((q) => q.t > t0 && q.r === gw[sb].exit), limit, `${fault}: the client egresses through the standby ${sb}`);
      switched = requests().find((q) => q.t > t0 && q.r === gw[sb].exit)!.t - t0;
    } catch (e) {
      if (opts.expectSwitch !== false) throw e;
    }
    const after = requests().filter((q) => q.t > t0 && (Number.isNaN(switched) || q.t <= t0 + switched));
    const lost = after.filter((q) => q.r === 'FAIL').length;
    const result = { fault: `${fault} (holder ${h})`, switchSeconds: Number.isNaN(switched) ? null : Number(switched.toFixed(1)), requestsLost: lost, afterFaultThroughHolder: after.filter((q) => q.r === gw[h].exit).length, leakedPackets: leaked() - leak0, holders: entries().filter((e) => e.op === 'holder' && e.t > t0).map((e) => e.to) };
    figures.push(result);
    return { ...result, h, sb };
  };

  it('the far end drops the holder\'s tunnel (its interface stays up): it fences, the standby takes the role, the client moves; 0 packets leave by the WAN', () => {
    for (let run = 0; run < runs(2); run += 1) {
      const r = measure('far end drops the holder', (h) => peerOff(h));
      expect(r.switchSeconds).not.toBeNull();
      expect(r.switchSeconds!).toBeLessThan(40);
      expect(r.leakedPackets).toBe(0);
      expect(r.holders).toEqual(['', gw[r.sb].pod]); // released by the holder, taken by the standby: never two at once
    }
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
  // tunnel answered; the cause is not found (stop 51's note).
  it('control: the standby on the holder\'s WireGuard key (what the model refuses) makes requests through the holder fail; with its own key none do', () => {
    const window = 20;
    const failsIn = (from: number) => requests().filter((q) => q.t > from && q.t <= from + window && q.r === 'FAIL').length;
    const [h, sb] = baseline();
    // With its own key: the same window, nothing fails.
    const t1 = uptime();
    sh(`sleep ${window}`);
    const own = { requests: requests().filter((q) => q.t > t1 && q.t <= t1 + window).length, failed: failsIn(t1) };
    // The standby's tunnel on the holder's key and address (the provider assigns addresses per key).
    must(inPod(pods[sb]!, `echo ${keys[h].privateKey} > /tmp/wg-shared.key && wg set tun0 private-key /tmp/wg-shared.key && ip addr del ${gw[sb].tunnel}/32 dev tun0 && ip addr add ${gw[h].tunnel}/32 dev tun0`), 'shared key');
    const t2 = uptime();
    const leak0 = leaked();
    try {
      sh(`sleep ${window}`);
    } finally {
      must(inPod(pods[sb]!, `wg set tun0 private-key /tmp/wg.key && ip addr del ${gw[h].tunnel}/32 dev tun0 && ip addr add ${gw[sb].tunnel}/32 dev tun0`), 'own key again');
    }
    const shared = { requests: requests().filter((q) => q.t > t2 && q.t <= t2 + window).length, failed: failsIn(t2), leakedPackets: leaked() - leak0 };
    figures.push({ fault: `shared key, ${window} s`, ownKey: own, sharedKey: shared });
    expect(own.failed).toBeLessThanOrEqual(1);
    expect(shared.failed).toBeGreaterThanOrEqual(3);
    expect(shared.leakedPackets).toBe(0);
  }, 300_000);

});
