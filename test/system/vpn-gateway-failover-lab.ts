import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planRoute, planVpnGateway, VpnGatewayProps } from '../../src';
import { gluetunTunnelStandIn, inPod, INOTIFYD_STAND_IN, Pod, PodFile, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { labNetwork, labVpnServer, must, sh, tmpdir, VENDOR_DIR } from './tools';

const PG = path.join(VENDOR_DIR, 'pod-gateway-v1.13.0');
const AGENT = path.resolve(__dirname, '../../src/render/vpn-gateway/failover-agent.sh');
const STAND_IN = path.resolve(__dirname, '../helpers/lease-api-stand-in.js');

/** The VPN the lab's two gateways tunnel over: wireguard-go (a key each) or OpenVPN (a login each). */
export type LabTunnel = 'wireguard' | 'openvpn';

/** The tools a lab of that tunnel needs (for describeWithTools). */
export function failoverLabTools(tunnel: LabTunnel): string[] {
  return [
    'ip', 'iptables', 'dnsmasq', 'dig', 'udhcpc', 'route', 'killall', 'inotifywait', 'ping', 'python3', 'nft', 'nsenter', 'unshare', 'node', 'curl', 'busybox', 'ss',
    ...(tunnel === 'wireguard' ? ['wg', 'wireguard-go', 'qbittorrent-nox'] : ['openvpn', 'openssl']),
    path.join(PG, 'bin', 'gateway_init.sh'),
  ];
}

/**
 * VpnGateway failover (issue 43), in network namespaces: two gateway pods, each with pod-gateway's own scripts
 * (../shared/vendor, unchanged), a real tunnel of its own credential to one VPN server (wireguard-go with a key each,
 * or OpenVPN with a login each), and the library's failover agent (src/render/vpn-gateway/failover-agent.sh) run as its
 * container runs it; one routed client running pod-gateway's client_init.sh / client_sidecar.sh; the Lease and the
 * pods' labels in a stand-in API (409 on a stale resourceVersion) that, as the endpoint controller and CoreDNS do,
 * makes the gateway's name resolve to the pod labelled active.
 *
 *   client 10.244.0.3 ──vxlan──▶ gateway A 10.244.0.2 ─tun0─┐
 *                     ──vxlan──▶ gateway B 10.244.0.4 ─tun0─┴─▶ VPN server 198.18.0.2 (A exits as .2, B as .4) ─▶ echo .3
 *   node: bridge, kube-dns stand-in 10.96.0.10, API stand-in 10.96.0.1:443, NAT to its WAN (counted: nothing but tunnel traffic may leave)
 *
 * gluetun cannot run here: its tunnel, fwmark routing, firewall and health server are stood in (each step cited).
 * Call it inside a `describe`: it registers the lab's beforeAll/afterAll and returns what the cases use. `prefix`
 * names the lab's network namespaces; `app` adds qBittorrent with the port-sync sidecar to the routed client.
 */
export function vpnGatewayFailoverLab(tunnel: LabTunnel, o: { prefix: string; app: boolean }) {
  // TW_LAB_NS_PREFIX: a prefix of the runner's own for the namespaces and the directory (several people share the machine).
  const p = `${process.env.TW_LAB_NS_PREFIX ?? ''}${o.prefix}`;
  const ns = { node: `${p}-node`, inet: `${p}-inet`, vpn: `${p}-vpn`, a: `${p}-gwa`, b: `${p}-gwb`, client: `${p}-cl` };
  const dir = tmpdir(`${p}-lab-`);
  const TOKEN = 'vgf-lab-token-8c2f';
  const serverKey = generateKeyPair();
  const keys = { a: generateKeyPair(), b: generateKeyPair() }; // a key each: a hot standby cannot share one
  /** OpenVPN: a login each (the server's users file); the standby's own, or the holder's for the controls. */
  const logins = { a: { user: 'user-a', password: crypto.randomBytes(12).toString('base64url') }, b: { user: 'user-b', password: crypto.randomBytes(12).toString('base64url') } };
  const gw = {
    a: { pod: 'vpn-gateway-a-0', ip: '10.244.0.2', tunnel: '10.2.0.2', exit: '198.18.0.2', veth: 'pod0' },
    b: { pod: 'vpn-gateway-b-0', ip: '10.244.0.4', tunnel: '10.2.0.3', exit: '198.18.0.4', veth: 'pod1' },
  } as const;
  const wireguardProps: VpnGatewayProps = {
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
    // The agent's probe through the tunnel: the echo server on the far side of the VPN server. One server for both
    // (the lab's one wireguard-go server), as a self-hosted endpoint would be: warned standby-same-server, acknowledged.
    standby: { wireguardPrivateKeySecret: { name: 'vpn-wireguard-b' }, wireguardAddresses: ['10.2.0.3/32'], probeUrl: 'http://198.18.0.3:8080/' },
    acknowledge: ['standby-same-server'],
  };
  // OpenVPN: tunnelwright offers no custom OpenVPN, so a provider's; gluetun would pick its server, the lab's is 198.18.0.2.
  const { vpnEndpointIp: _i, vpnEndpointPort: _p, wireguardPublicKey: _k, wireguardPrivateKeySecret: _s, wireguardAddresses: _a, ...common } = wireguardProps;
  const props: VpnGatewayProps = tunnel === 'wireguard' ? wireguardProps : {
    ...common, vpnProvider: 'nordvpn', vpnType: 'openvpn', serverCountries: ['Switzerland'], openvpnCredentialsSecret: { name: 'vpn-openvpn' },
    standby: { openvpnCredentialsSecret: { name: 'vpn-openvpn-b' }, probeUrl: 'http://198.18.0.3:8080/' },
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
    ...(({ vpnEndpointIp: _i, vpnEndpointPort: _p, wireguardPublicKey: _k, ...rest }) => rest)(wireguardProps), vpnProvider: 'protonvpn', serverCountries: ['Switzerland'],
    // Both members in Switzerland (ProtonVPN's servers there, picked at random: broad, not warned).
    portForwarding: { app: 'qbittorrent', workload: 'web', workloadNamespace: 'default', controlApiKeySecret: { name: 'gluetun-control' }, appCredentialsSecret: { name: 'qbittorrent-webui' }, syncPeriodSeconds: 2 },
  };
  const pfRoute = planRoute(pfProps, { namespace: 'default', podLabels: { app: 'web' }, name: 'web', kind: 'StatefulSet' });
  const syncData = (pfRoute.objects.find((o) => o.metadata.name === 'web-vpn-port-sync') as unknown as { data: Record<string, string> }).data;
  const syncEnv = Object.fromEntries(pfRoute.extraContainers.find((c) => c.name === 'vpn-port-sync')!.env!.map((e) => [e.name, e.value ?? '']));
  const gatewayData = (gateway.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data;
  const route = planRoute(props, { namespace: 'default', podLabels: { app: 'web' }, name: 'web', kind: 'Deployment' });
  const routeData = (route.objects[0] as unknown as { data: Record<string, string> }).data;
  const gatewayName = /^GATEWAY_NAME="([^"]+)"/m.exec(routeData['settings.sh'])![1];
  /** The VPN server's port, as the gateway's settings give it to pod-gateway's firewall (VPN_TRAFFIC_PORT). */
  const vpnPort = Number(/^VPN_TRAFFIC_PORT="(\d+)"/m.exec(gatewayData['settings.sh'])![1]);
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
  const wan = `${o.prefix}wan`; // an nft table's name (no '-')
  /** Packets that left the node's WAN other than the tunnel's own to the VPN server (counted where they would leave). */
  const leaked = () => Number(/packets (\d+)/.exec(inNs(ns.node, `nft list counter inet ${wan} leak`).stdout)?.[1] ?? NaN);
  /** What leaked, if anything: source . destination . protocol . port (for the figures). */
  const leakedWhat = () => (/elements = \{([^}]*)\}/.exec(inNs(ns.node, `nft list set inet ${wan} seen`).stdout)?.[1] ?? '').trim();
  const waitFor = (pred: () => boolean, seconds: number, what: string) => {
    const t0 = Date.now();
    while (Date.now() - t0 < seconds * 1000) {
      try { if (pred()) return (Date.now() - t0) / 1000; } catch { /* not yet */ }
      sh('sleep 0.2');
    }
    const tail = (p: Pod | undefined, log: string) => (p ? podLog(p, log).slice(-1500) : '(no pod)');
    const file = (f: string) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), 'utf8').slice(-1500) : '(none)');
    throw new Error(`${what}: not within ${seconds} s\nA agent: ${tail(pods.a, 'agent.log')}\nB agent: ${tail(pods.b, 'agent.log')}\nA health: ${tail(pods.a, 'health.log')}\n` +
      `client: ${tail(pods.client, 'client.log')}\napi.out: ${file('api.out')}\napi.log: ${file('api.log')}\nVPN server: ${vpnState()}\n` +
      `requests: ${tail(pods.client, 'requests.log').slice(-600)}${tunnel === 'openvpn' ? `\nA openvpn: ${tail(pods.a, 'openvpn.log').slice(-800)}\nB openvpn: ${tail(pods.b, 'openvpn.log').slice(-800)}` : ''}`);
  };

  /** The VPN server's view, for a failure's message. */
  const vpnState = () => (tunnel === 'wireguard' ? inNs(ns.vpn, 'wg show wgs').stdout : sh(`tail -n 30 ${dir}/ovpn-server.log`).stdout);
  /**
   * The far end carries (peerOn) or drops (peerOff) a gateway's tunnel while its interface stays up. WireGuard: the
   * server adds or removes the gateway's peer. OpenVPN: the server drops every packet to or from the gateway's tunnel
   * address at its tun device (its session, and its keepalives over UDP, go on: the client never notices by itself).
   */
  const dropRules = (g: 'a' | 'b') => [`INPUT -i tuns -s ${gw[g].tunnel} -j DROP`, `FORWARD -s ${gw[g].tunnel} -j DROP`, `FORWARD -d ${gw[g].tunnel} -j DROP`];
  const peerOn = (g: 'a' | 'b') => must(inNs(ns.vpn, tunnel === 'wireguard' ? `wg set wgs peer ${keys[g].publicKey} allowed-ips ${gw[g].tunnel}/32`
    : dropRules(g).map((r) => `while iptables -D ${r} 2>/dev/null; do :; done`).join('; ')), `peer ${g}`);
  const peerOff = (g: 'a' | 'b') => must(inNs(ns.vpn, tunnel === 'wireguard' ? `wg set wgs peer ${keys[g].publicKey} remove`
    : dropRules(g).map((r) => `iptables -I ${r}`).join(' && ')), `peer ${g} off`);
  const healthy = (g: 'a' | 'b') => inPod(pods[g]!, 'curl -fsS -m 2 -o /dev/null http://127.0.0.1:9999/').status === 0;

  /**
   * gluetun, as far as failover depends on it: tun0 with its fwmark routing, its firewall, its health server. For
   * OpenVPN gluetun names the interface VPN_INTERFACE too, tun0 by default (internal/configuration/settings/openvpn.go
   * :312, :401 at v3.41.1; written as `dev` into its config, internal/provider/utils/openvpn.go:65); its client takes the
   * server's redirect-gateway where the stand-in routes by fwmark as the WireGuard one does: either way everything
   * but the tunnel's own packets goes into tun0. The OpenVPN client itself is started by `startVpnClient`.
   */
  const gluetunStandIn = (g: 'a' | 'b') => [
    // OpenVPN: no tun0 until the client makes it (startVpnClient): gluetun runs OpenVPN as root, so without persist-tun.
    ...gluetunTunnelStandIn(tunnel === 'wireguard' ? { privateKey: keys[g].privateKey, serverPublicKey: serverKey.publicKey, address: `${gw[g].tunnel}/32`, mtu: 1320 } : { openvpn: true }),
    // internal/firewall (v3.41.1), the rest: loopback output accepted; VPN endpoint out by eth0 (pod-gateway's OUTPUT
    // rules below already allow the rest).
    'iptables -I OUTPUT -o lo -j ACCEPT',
    `iptables -I OUTPUT -o eth0 -d 198.18.0.2 -p udp --dport ${vpnPort} -j ACCEPT`,
    // then /iptables/post-rules.txt (the library's file, run line by line as gluetun does).
    'while read -r rule; do [ -n "$rule" ] && $rule; done < /iptables/post-rules.txt',
  ].join(' && ');

  /**
   * The OpenVPN server: user and password checked by a script (`auth-user-pass-verify` via-file), sessions named by
   * user (`username-as-common-name`), no client certificate; the pool gives the first session .2, the next .3 (each
   * login keeps its address: the pool remembers the common name). Without `duplicate-cn` a second session of one
   * login closes the first (OpenVPN 2.6.22 src/openvpn/multi.c:1363 multi_delete_dup, called at :2548-2550); with it
   * (a provider that allows several sessions per login) both stay. Its certificate is made at test time (openssl).
   */
  const startVpnServer = (o2: { duplicateCn: boolean }) => must(sh([
    `[ -f ${dir}/ovpn-server.pid ] && kill $(cat ${dir}/ovpn-server.pid) 2>/dev/null; for i in $(seq 50); do [ -e /proc/$(cat ${dir}/ovpn-server.pid 2>/dev/null || echo none) ] || break; sleep 0.1; done; rm -f ${dir}/ovpn-server.pid ${dir}/ovpn-server.log ${dir}/ovpn-status`,
    `ip netns exec ${ns.vpn} openvpn --mode server --tls-server --proto udp --local 198.18.0.2 --port ${vpnPort} --dev tuns --dev-type tun --topology subnet ` +
      `--ifconfig 10.2.0.1 255.255.255.0 --ifconfig-pool ${gw.a.tunnel} ${gw.b.tunnel} 255.255.255.0 --push "topology subnet" --keepalive 2 10 --explicit-exit-notify 1 ` +
      `--status ${dir}/ovpn-status 1 --status-version 2 ` +
      `--ca ${dir}/ovpn-ca.crt --cert ${dir}/ovpn-ca.crt --key ${dir}/ovpn-ca.key --dh none --verify-client-cert none --username-as-common-name ` +
      `--script-security 2 --auth-user-pass-verify ${dir}/ovpn-verify.sh via-file${o2.duplicateCn ? ' --duplicate-cn' : ''} --daemon --log ${dir}/ovpn-server.log --writepid ${dir}/ovpn-server.pid`,
    `for i in $(seq 50); do grep -q "Initialization Sequence Completed" ${dir}/ovpn-server.log 2>/dev/null && exit 0; sleep 0.1; done; cat ${dir}/ovpn-server.log; exit 1`,
  ].join('\n')), 'OpenVPN server');
  /**
   * Stops gateway g's OpenVPN client as gluetun stops it: SIGKILL (its process is an exec.CommandContext, whose
   * cancel is os.Process.Kill: internal/openvpn/start.go:35 at v3.41.1), so the `explicit-exit-notify` in its config
   * never reaches the server, which keeps the session and its pool address until its own ping-restart (20 s here,
   * twice the pushed 10 s); tun0 goes with the process (no persist-tun). `TERM`: a client that exits by itself
   * (the control of the stale-session test). Returns once the process and tun0 are gone.
   */
  const stopVpnClient = (g: 'a' | 'b', signal: 'KILL' | 'TERM' = 'KILL') => must(inPod(pods[g]!, `pkill -${signal} -x openvpn; ` +
    'for i in $(seq 100); do pgrep -x openvpn >/dev/null || ip link show tun0 >/dev/null 2>&1 || exit 0; sleep 0.1; done; exit 1'), `OpenVPN client ${g} stopped (${signal})`);
  /**
   * (Re)starts gateway g's OpenVPN client with `login`'s user and password as gluetun runs it by default (as root,
   * OPENVPN_PROCESS_USER=root: Dockerfile:93, internal/configuration/settings/openvpn.go:313 at v3.41.1): UDP with
   * `explicit-exit-notify`, and no `persist-tun`, which gluetun writes only for another user
   * (internal/provider/utils/openvpn.go:156-157, :161-165); an old client is stopped first (stopVpnClient: SIGKILL).
   * Waits for its tunnel address and route. `--mark 51820`: its own UDP bypasses table 51820 (the stand-in's routing).
   * Without persist-tun each connect, and each ping-restart, makes a new tun0, and the kernel drops every route through
   * the old one (table 51820's too); gluetun's client adds the server's redirect-gateway routes at each connect, the
   * lab's `--up` (/etc/openvpn-lab/up.sh) puts table 51820's back. Without it forwarded traffic has no route into tun0
   * (and the FORWARD policy drops it), while the health ping and the agent's probe, bound to tun0, still pass.
   */
  const startVpnClient = (g: 'a' | 'b', login: 'a' | 'b') => {
    stopVpnClient(g);
    must(inPod(pods[g]!, `umask 077; printf '%s\\n%s\\n' ${logins[login].user} ${logins[login].password} > /tmp/login`), 'login file');
    startInPod(pods[g]!, `exec openvpn --client --dev tun0 --dev-type tun --proto udp --remote 198.18.0.2 ${vpnPort} --nobind --ca /etc/openvpn-lab/ca.crt ` +
      '--auth-user-pass /tmp/login --auth-retry nointeract --route-nopull --explicit-exit-notify --mark 51820 --script-security 2 --up /etc/openvpn-lab/up.sh --verb 3', 'openvpn.log');
    waitFor(() => /inet 10\.2\.0\.\d/.test(inPod(pods[g]!, 'ip -4 addr show tun0').stdout) && /dev tun0/.test(inPod(pods[g]!, 'ip route show table 51820').stdout), 30, `OpenVPN client ${g} connected`);
  };
  /** The VPN server's sessions (its status file, written each second): common name and pool address of each. */
  const vpnSessions = () => [...(fs.existsSync(path.join(dir, 'ovpn-status')) ? fs.readFileSync(path.join(dir, 'ovpn-status'), 'utf8') : '')
    .matchAll(/^CLIENT_LIST,([^,]+),[^,]*,([^,]*),/gm)].map((m) => ({ user: m[1], address: m[2] }));
  /** The address the VPN server gave gateway g's tunnel. */
  const tunnelAddress = (g: 'a' | 'b') => /inet (10\.2\.0\.\d+)/.exec(inPod(pods[g]!, 'ip -4 addr show tun0').stdout)?.[1];
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
    if (tunnel === 'openvpn') {
      must(sh(`cd ${dir} && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ovpn-ca.key -out ovpn-ca.crt -subj /CN=${p}-vpn-server -days 2`), 'certificate');
      fs.writeFileSync(path.join(dir, 'ovpn-users'), Object.values(logins).map((l) => `${l.user} ${l.password}\n`).join(''), { mode: 0o600 });
      // auth-user-pass-verify via-file: the file holds the user and the password, one a line; exit 0 accepts.
      fs.writeFileSync(path.join(dir, 'ovpn-verify.sh'), `#!/bin/sh\nu=$(sed -n 1p "$1"); p=$(sed -n 2p "$1"); grep -qxF "$u $p" ${dir}/ovpn-users\n`, { mode: 0o755 });
    }
    const setup = [
      ...Object.values(ns).map((n) => `ip netns add ${n} && ip -n ${n} link set lo up`),
      ...labNetwork(ns, [[ns.a, gw.a.ip, 'pod0'], [ns.client, '10.244.0.3', 'pod2'], [ns.b, gw.b.ip, 'pod1']], { vpnAddresses: ['198.18.0.2', '198.18.0.4'], nodeLoopback: ['10.96.0.10', '10.96.0.1'] }),
      // The VPN server: one peer a key (WireGuard), one session a login (OpenVPN, started below); NAT of each tunnel
      // address to its own exit address (the echo server tells them apart).
      ...(tunnel === 'wireguard' ? labVpnServer(ns.vpn, dir, serverKey.privateKey) : [`ip netns exec ${ns.vpn} sysctl -qw net.ipv4.ip_forward=1`]),
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s ${gw.a.tunnel} -o wan0 -j SNAT --to-source ${gw.a.exit}`,
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s ${gw.b.tunnel} -o wan0 -j SNAT --to-source ${gw.b.exit}`,
      // Counted where it would leave: every packet out of the node's WAN that is not the tunnel's own to the VPN server and
      // comes from a pod (its source before the node's masquerade: this chain runs before srcnat), by address and port;
      // IPv6 (the node's own neighbour discovery) counted apart.
      `ip netns exec ${ns.node} nft -f - <<'NFT'\ntable inet ${wan} {\n  counter leak {}\n  counter node6 {}\n  set seen { type ipv4_addr . ipv4_addr . inet_proto . inet_service; flags dynamic; }\n` +
      `  chain out { type filter hook postrouting priority -50; oifname "wan0" ip daddr 198.18.0.2 udp dport ${vpnPort} accept; oifname "wan0" meta nfproto ipv6 counter name "node6" accept; ` +
      `oifname "wan0" ip saddr { 10.244.0.0/16, 172.16.0.0/24 } add @seen { ip saddr . ip daddr . meta l4proto . th dport } counter name "leak"; }\n}\nNFT`,
    ].join(' && ');
    must(sh(setup, { timeout: 60_000 }), 'namespaces');
    if (tunnel === 'wireguard') {
      peerOn('a');
      peerOn('b');
    } else {
      startVpnServer({ duplicateCn: false });
    }
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
        ...INOTIFYD_STAND_IN,
        '/usr/local/bin/failover-agent.sh': { content: fs.readFileSync(AGENT, 'utf8'), mode: 0o755 },
        '/usr/local/bin/health.py': { content: healthStandIn },
        '/usr/local/bin/control.py': { content: controlStandIn(PORTS[g]) },
        '/var/run/secrets/kubernetes.io/serviceaccount/token': { content: TOKEN },
        ...(tunnel === 'openvpn' ? {
          '/etc/openvpn-lab/ca.crt': { content: fs.readFileSync(path.join(dir, 'ovpn-ca.crt'), 'utf8') },
          // openvpn --up runs it after each tun0 it makes, with tun0's name first.
          '/etc/openvpn-lab/up.sh': { content: '#!/bin/sh\nexec ip route replace default dev "$1" table 51820\n', mode: 0o755 },
        } : {}),
      });
      pods[g] = pod;
      must(inPod(pod, 'gateway_init.sh'), `gateway_init.sh ${g}`);
      must(inPod(pod, gluetunStandIn(g)), `gluetun stand-in ${g}`);
      startInPod(pod, 'gateway_sidecar.sh', 'sidecar.log');
      startInPod(pod, 'python3 /usr/local/bin/health.py', 'health.log');
      startInPod(pod, 'exec python3 /usr/local/bin/control.py', 'control.log');
      // Each its own login, A first: the pool gives A .2 and B .3, the addresses the server's NAT expects.
      if (tunnel === 'openvpn') startVpnClient(g, g);
    }
    if (tunnel === 'openvpn') for (const g of ['a', 'b'] as const) if (tunnelAddress(g) !== gw[g].tunnel) throw new Error(`OpenVPN gave ${g} ${tunnelAddress(g)}, not ${gw[g].tunnel}`);
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
    if (!o.app) return;
    // qBittorrent and its port-sync sidecar (the sidecar's projected Secret files; the pod's /run is a tmpfs).
    must(inPod(pods.client, `mkdir -p /run/port-sync-secrets && cd /run/port-sync-secrets && printf %s ${API_KEY} > gluetun-api-key && printf %s admin > app-username && printf %s ${QBT_PASSWORD} > app-password`), 'secrets');
    must(inPod(pods.client, `mkdir -p /tmp/qbt/qBittorrent/config && echo ${Buffer.from(qbtConf()).toString('base64')} | base64 -d > /tmp/qbt/qBittorrent/config/qBittorrent.conf`), 'qbt conf');
    startInPod(pods.client, 'exec qbittorrent-nox --profile=/tmp/qbt', 'qbt.log', { HOME: '/tmp/qbt' });
    must(inPod(pods.client, 'for i in $(seq 150); do curl -s -o /dev/null http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1'), 'qbittorrent-nox');
    const env = Object.entries({ ...syncEnv, METRICS_PORT: '0' }).map(([k, v]) => `${k}=${quote(v)}`).join(' ');
    startInPod(pods.client, `exec env ${env} /bin/sh /port-sync/port-sync.sh`, 'sync.log');
  }, 240_000);

  afterAll(() => {
    process.stdout.write(`vpn-gateway failover figures: ${JSON.stringify(figures, null, 1)}\nleaked (source . destination . protocol . port): ${leakedWhat() || 'none'}; node IPv6 out of the WAN: ${inNs(ns.node, `nft list counter inet ${wan} node6`).stdout.match(/packets \d+/)?.[0] ?? '?'}\n`);
    for (const pod of [pods.client, pods.a, pods.b]) if (pod) stopPod(pod);
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
  /**
   * The far end drops the holder's tunnel while its interface stays up, `runs(byDefault)` times: each switch within 40 s,
   * 0 packets out of the WAN, the role released by the holder and then taken by the standby (never two at once).
   */
  const farEndDrops = (fault: string, byDefault = 2) => {
    const results: ReturnType<typeof measure>[] = [];
    for (let run = 0; run < runs(byDefault); run += 1) {
      const r = measure(fault, (h) => peerOff(h));
      results.push(r);
      expect(r.switchSeconds).not.toBeNull();
      expect(r.switchSeconds!).toBeLessThan(40);
      expect(r.leakedPackets).toBe(0);
      expect(r.holders).toEqual(['', gw[r.sb].pod]);
    }
    return results;
  };
  return {
    farEndDrops, ns, dir, gw, keys, pods, figures, runs, RUNS, PORTS, agentRendered,
    inNs, uptime, entries, holder, holding, requests, leaked, waitFor, peerOn, peerOff, healthy, qbtPort, listening,
    startAgent, stopAgent, baseline, measure, startVpnServer, startVpnClient, stopVpnClient, vpnSessions, tunnelAddress, logins,
  };
}
