import * as crypto from 'node:crypto';
import * as path from 'node:path';
import { generateKeyPair, planRoute, planVpnGateway, VpnGatewayProps } from '../../src';
import { gatewayPodFiles, gluetunTunnelStandIn, inPod, Pod, podGatewayImage, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { describeWithTools, labNetwork, labVpnServer, must, POD_GATEWAY_DIR, secondsUntilTrue, sh, tmpdir } from './tools';


/**
 * Port forwarding end to end, in the pod-gateway network-namespace lab (the same topology as
 * vpn-gateway-datapath.test.ts), with Debian's real qBittorrent (qbittorrent-nox 4.5.2) in the routed client:
 *
 *   peer 198.18.0.3 ──▶ VPN server 198.18.0.2:P (DNAT, source kept) ──wg──▶ gateway tun0 ──vxlan──▶ client 172.16.0.5:P
 *
 * The stand-in provider "forwards" P by DNATing it on the VPN server and running gluetun's up command with P (and the
 * down command before a new port, as gluetun does: internal/portforward/service/stop.go:33-41). A stand-in for
 * gluetun's control server answers GET /v1/portforward on 172.16.0.1:8000 with the auth file the library's init
 * script wrote (one role, API key). The port-sync sidecar is the library's own script, with the environment the
 * library renders.
 */
describeWithTools('VpnGateway port forwarding reaches qBittorrent, and port-sync keeps its listen port', [
  'ip', 'wg', 'wireguard-go', 'iptables', 'dnsmasq', 'dig', 'udhcpc', 'route', 'killall', 'inotifywait', 'ping', 'python3', 'nft', 'nsenter', 'unshare',
  'qbittorrent-nox', 'transmission-daemon', 'curl', 'busybox', 'ss',
  path.join(POD_GATEWAY_DIR, 'bin', 'gateway_init.sh'),
], () => {
  const id = process.pid % 10000;
  const ns = { node: `tw25-${id}-node`, inet: `tw25-${id}-inet`, vpn: `tw25-${id}-vpn`, gw: `tw25-${id}-gw`, client: `tw25-${id}-cl` };
  const dir = tmpdir('tw-portsync-');
  const wgEnv = { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' };
  const serverKey = generateKeyPair();
  const gatewayKey = generateKeyPair();
  const P = 41234;
  const P2 = 42345;
  const P3 = 43456;
  const P4 = 44567;
  const TR_PASSWORD = crypto.randomBytes(12).toString('base64url');
  const API_KEY = crypto.randomBytes(18).toString('base64url');
  const QBT_PASSWORD = crypto.randomBytes(12).toString('base64url');
  const props: VpnGatewayProps = {
    clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12'],
    nodeCidrs: ['192.168.77.0/24'],
    vpnProvider: 'protonvpn',
    wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' },
    wireguardAddresses: ['10.2.0.2/32'],
    serverCountries: ['Switzerland'],
    portForwarding: {
      app: 'qbittorrent', workload: 'my-qbit', workloadNamespace: 'media',
      controlApiKeySecret: { name: 'gluetun-control' }, appCredentialsSecret: { name: 'qbittorrent-webui' }, syncPeriodSeconds: 2,
    },
    dnsAddress: '10.2.0.1',
    dnssec: false,
  };
  const gateway = planVpnGateway(props);
  type C = { name: string; command?: string[]; env?: { name: string; value?: string }[] };
  const gwSpec = (gateway.objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { initContainers: C[]; containers: C[] } } } }).spec.template.spec;
  const gluetunEnv = Object.fromEntries(gwSpec.containers.find((c) => c.name === 'gluetun')!.env!.map((e) => [e.name, e.value ?? '']));
  const authInit = gwSpec.initContainers.find((c) => c.name === 'gluetun-auth')!;
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'my-qbit' }, name: 'my-qbit', kind: 'StatefulSet' });
  const routeData = (route.objects[0] as unknown as { data: Record<string, string> }).data;
  const syncData = (route.objects.find((o) => o.metadata.name === 'my-qbit-vpn-port-sync') as unknown as { data: Record<string, string> }).data;
  const sync = route.extraContainers.find((c) => c.name === 'vpn-port-sync')!;
  const syncEnv = Object.fromEntries(sync.env!.map((e) => [e.name, e.value ?? '']));
  const image = podGatewayImage();
  let gw: Pod;
  let client: Pod;
  const figures: Record<string, unknown> = {};

  const inNs = (n: string, cmd: string, timeout = 30_000) => sh(`ip netns exec ${n} bash -c ${quote(cmd)}`, { env: wgEnv, timeout });
  const up = (port: number) => gluetunEnv.VPN_PORT_FORWARDING_UP_COMMAND.replace(/\{\{PORT\}\}/g, String(port));
  const down = (port: number) => gluetunEnv.VPN_PORT_FORWARDING_DOWN_COMMAND.replace(/\{\{PORT\}\}/g, String(port));
  /** The provider forwards `port`: its DNAT on the VPN server, then gluetun's up command and port state. */
  const forward = (port: number) => {
    must(inNs(ns.vpn, `iptables -t nat -F PREROUTING && iptables -t nat -A PREROUTING -i wan0 -p tcp --dport ${port} -j DNAT --to-destination 10.2.0.2:${port}`), 'provider DNAT');
    must(inPod(gw, `${up(port)} && echo ${port} > /tmp/gluetun/forwarded_port`), 'up command');
  };
  /** The port changes: gluetun runs the down command with the old port, forgets it (port 0), then forwards the new one. */
  const changePort = (from: number, to: number) => {
    must(inPod(gw, `${down(from)} && echo 0 > /tmp/gluetun/forwarded_port`), 'down command');
    forward(to);
  };
  /** qBittorrent's own API: its listen port. */
  const qbtPort = () => {
    const r = inPod(client, `curl -s -c /tmp/t.jar --data-urlencode username=admin --data-urlencode password=${QBT_PASSWORD} http://127.0.0.1:8080/api/v2/auth/login >/dev/null && curl -s -b /tmp/t.jar http://127.0.0.1:8080/api/v2/app/preferences`);
    return Number(/"listen_port":(\d+)/.exec(r.stdout)?.[1] ?? NaN);
  };
  /** Seconds until qBittorrent reports `port` (polls every 0.2 s, up to `limit` s); NaN if it never does. */
  const secondsUntilPort = (port: number, limit = 30) => secondsUntilTrue(() => qbtPort() === port, limit);
  /** qBittorrent's own API: setPreferences with `json` (as its Web UI's Options dialog sends it). */
  const qbtSet = (json: Record<string, unknown>) => must(inPod(client, `curl -s -c /tmp/t.jar --data-urlencode username=admin --data-urlencode password=${QBT_PASSWORD} http://127.0.0.1:8080/api/v2/auth/login >/dev/null && curl -sf -b /tmp/t.jar --data-urlencode ${quote(`json=${JSON.stringify(json)}`)} http://127.0.0.1:8080/api/v2/app/setPreferences`), 'setPreferences');
  const boundMetric = () => Number(/tunnelwright_port_forward_app_bound_elsewhere\{app="qbittorrent"\} (\d+)/.exec(inPod(client, `curl -s http://127.0.0.1:${syncEnv.METRICS_PORT}/metrics`).stdout)?.[1] ?? NaN);
  /**
   * A connection from the internet (198.18.0.3) to the tunnel address's `port`: the source address of the SYNs that
   * arrived on the client's vxlan0 for that port (an nft set in the client namespace, where the app listens), or
   * undefined when the connection was not accepted (no listener on `port`: a RST, or nothing forwarded).
   */
  const connectAndSee = (port: number) => {
    must(inPod(client, 'nft flush set inet tw25 seen'), 'flush');
    const r = inNs(ns.inet, `python3 -c ${quote(`import socket\ns=socket.create_connection(("198.18.0.2", ${port}), timeout=3)\nprint("connected")`)}`);
    if (!r.stdout.includes('connected')) return undefined;
    const seen = inPod(client, 'nft -j list set inet tw25 seen').stdout;
    const found = [...seen.matchAll(/"concat":\s*\[\s*"([\d.]+)",\s*(\d+)\s*\]/g)].filter((m) => Number(m[2]) === port).map((m) => m[1]);
    return [...new Set(found)].join(',');
  };
  const syncRunning = () => inPod(client, 'pgrep -f "[p]ort-sync.sh" >/dev/null').status === 0;

  const gluetunControlStandIn = [
    // gluetun's control server, as far as port-sync depends on it: GET /v1/portforward -> {"port":N}; a request no role
    // of the auth file grants (route or key) -> 401 (internal/server/middlewares/auth/middleware.go:55-60, apikey.go:29-35).
    'import http.server, json, tomllib, sys',
    'roles = tomllib.load(open(sys.argv[1], "rb"))["roles"]',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    '        route = "GET " + self.path.split("?")[0]',
    '        ok = any(route in r["routes"] and r["auth"] == "apikey" and self.headers.get("X-API-Key") == r["apikey"] for r in roles)',
    '        if not ok:',
    '            self.send_response(401); self.end_headers(); self.wfile.write(b"Unauthorized\\n"); return',
    '        try: port = int(open("/tmp/gluetun/forwarded_port").read().strip() or 0)',
    '        except FileNotFoundError: port = 0',
    '        self.send_response(200); self.end_headers(); self.wfile.write(json.dumps({"port": port}).encode() + b"\\n")',
    '    def log_message(self, *a): pass',
    `http.server.ThreadingHTTPServer(("${gluetunEnv.HTTP_CONTROL_SERVER_ADDRESS.split(':')[0]}", ${Number(gluetunEnv.HTTP_CONTROL_SERVER_ADDRESS.split(':')[1])}), H).serve_forever()`,
  ].join('\n');

  const gluetunStandIn = () => [
    // the synthesized gluetun's interface (its VPN_INTERFACE) is tun0, as the stand-in's.
    ...gluetunTunnelStandIn({ privateKey: gatewayKey.privateKey, serverPublicKey: serverKey.publicKey, address: gluetunEnv.WIREGUARD_ADDRESSES, mtu: gluetunEnv.WIREGUARD_MTU }),
    `iptables -A INPUT -i eth0 -p tcp --dport ${gluetunEnv.FIREWALL_INPUT_PORTS} -j ACCEPT`,
    'while read -r rule; do [ -n "$rule" ] && $rule; done < /iptables/post-rules.txt',
    `echo "nameserver ${gluetunEnv.DNS_ADDRESS}" > /etc/resolv.conf`,
    'mkdir -p /tmp/gluetun && echo 0 > /tmp/gluetun/forwarded_port',
  ].join(' && ');

  /** qBittorrent's configuration as a user leaves it: WebUI on loopback with a password, listen port 6881. */
  const qbtConf = (listenPort: number, iface = '') => {
    const salt = crypto.randomBytes(16);
    const hash = crypto.pbkdf2Sync(QBT_PASSWORD, salt, 100000, 64, 'sha512');
    return [
      '[LegalNotice]', 'Accepted=true', '',
      '[BitTorrent]', `Session\\Port=${listenPort}`, ...(iface ? [`Session\\Interface=${iface}`, `Session\\InterfaceName=${iface}`] : []), 'Session\\DHTEnabled=false', 'Session\\LSDEnabled=false', 'Session\\PeXEnabled=false', '',
      '[Preferences]', 'Connection\\UPnP=false', 'WebUI\\Address=127.0.0.1', 'WebUI\\Port=8080', 'WebUI\\Username=admin',
      `WebUI\\Password_PBKDF2="@ByteArray(${salt.toString('base64')}:${hash.toString('base64')})"`, '',
    ].join('\n');
  };
  const startQbt = (listenPort: number, iface = '') => {
    must(inPod(client, `mkdir -p /tmp/qbt/qBittorrent/config && echo ${Buffer.from(qbtConf(listenPort, iface)).toString('base64')} | base64 -d > /tmp/qbt/qBittorrent/config/qBittorrent.conf`), 'qbt conf');
    startInPod(client, 'exec qbittorrent-nox --profile=/tmp/qbt', 'qbt.log', { HOME: '/tmp/qbt' });
    must(inPod(client, 'for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:8080/ && exit 0; sleep 0.1; done; exit 1'), `qbittorrent-nox:\n${podLog(client, 'qbt.log')}`);
  };
  const startSync = (envOf: Record<string, string> = syncEnv) => {
    const env = Object.entries({ ...envOf, METRICS_FILE: '/tmp/port-sync/metrics' }).map(([k, v]) => `${k}=${quote(v)}`).join(' ');
    startInPod(client, `exec env ${env} /bin/sh /port-sync/port-sync.sh`, 'sync.log');
  };

  /** Transmission's own RPC (its session-id handshake first): its peer port. */
  const trmPort = () => {
    const auth = `-u tw:${TR_PASSWORD}`;
    const r = inPod(client, `sid=$(curl -s ${auth} -D - -o /dev/null http://127.0.0.1:9091/transmission/rpc | tr -d '\\r' | sed -n 's/^X-Transmission-Session-Id: //p'); ` +
      `curl -s ${auth} -H "X-Transmission-Session-Id: $sid" --data '{"method":"session-get","arguments":{"fields":["peer-port"]}}' http://127.0.0.1:9091/transmission/rpc`);
    return Number(/"peer-port":(\d+)/.exec(r.stdout)?.[1] ?? NaN);
  };
  const secondsUntilTrm = (port: number, limit = 30) => secondsUntilTrue(() => trmPort() === port, limit);

  beforeAll(() => {
    const setup = [
      ...Object.values(ns).map((n) => `ip netns add ${n}`),
      ...Object.values(ns).map((n) => `ip -n ${n} link set lo up`),
      ...labNetwork(ns, [[ns.gw, '10.244.0.2', 'pod0'], [ns.client, '10.244.0.3', 'pod1']]),
      ...labVpnServer(ns.vpn, dir, serverKey.privateKey, { publicKey: gatewayKey.publicKey, allowedIps: '10.2.0.2/32' }),
      // The provider's NAT: the tunnel's own traffic out; a forwarded port in, the peer's address kept.
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s 10.2.0.0/24 -o wan0 -j MASQUERADE`,
    ].join(' && ');
    must(sh(setup, { timeout: 60_000 }), 'namespaces');
    must(sh(`ip netns exec ${ns.node} dnsmasq --keep-in-foreground --no-hosts --no-resolv --bind-interfaces --listen-address=10.96.0.10 --pid-file=${dir}/kdns.pid ` +
      `--host-record=vpn-gateway.vpn-gateway.svc.cluster.local,10.244.0.2 </dev/null >${dir}/kdns.log 2>&1 & sleep 0.3; echo ok`), 'kube-dns');

    gw = startPod(dir, 'gateway', ns.gw, 'vpn-gateway-6d5f7c9b8-x2k4q', {
      // pod-gateway's image, the synthesized ConfigMap where the Deployment mounts it, and the host's stand-ins.
      ...gatewayPodFiles(gateway.objects),
      '/opt/control.py': { content: gluetunControlStandIn },
    });
    must(inPod(gw, 'gateway_init.sh'), 'gateway_init.sh');
    // The Secret mounted where the gateway's gluetun-auth init container reads it, and its emptyDir (the pod's /run is a tmpfs).
    must(inPod(gw, `mkdir -p /run/control-api-key /run/gluetun-auth && printf %s ${API_KEY} > /run/control-api-key/api-key`), 'secret');
    // The library's init container, run as written (its image's /bin/sh: dash here).
    // Its values by the container's environment, as the kubelet sets it.
    must(inPod(gw, `${authInit.command![0]} -c ${quote(authInit.command![2])}`, { env: Object.fromEntries(authInit.env!.map((e) => [e.name, quote(e.value!)])) }), 'gluetun-auth init');
    must(inPod(gw, gluetunStandIn(), { timeout: 30_000 }), 'gluetun stand-in');
    startInPod(gw, `exec python3 /opt/control.py ${gluetunEnv.HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH}`, 'control.log');
    startInPod(gw, 'gateway_sidecar.sh', 'sidecar.log');
    must(inPod(gw, 'for i in $(seq 50); do ss -lun | grep -q ":67 " && ss -ltn | grep -q ":8000 " && exit 0; sleep 0.1; done; exit 1'), `gateway sidecar / control server:\n${podLog(gw, 'sidecar.log')}${podLog(gw, 'control.log')}`);

    client = startPod(dir, 'client', ns.client, 'my-qbit-0', { // the StatefulSet's pod name, its hostname
      ...image,
      '/config/settings.sh': { content: routeData['settings.sh'] },
      '/config/nat.conf': { content: routeData['nat.conf'] },
      '/etc/resolv.conf': { content: `nameserver ${route.dnsConfig.nameservers![0]}\n` },
      '/port-sync/port-sync.sh': { content: syncData['port-sync.sh'], mode: 0o555 },
    });
    const k8s = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    must(inPod(client, 'client_init.sh', { env: k8s, timeout: 60_000 }), 'client_init.sh');
    // The sidecar's projected Secret files.
    must(inPod(client, `mkdir -p /run/port-sync-secrets && cd /run/port-sync-secrets && printf %s ${API_KEY} > gluetun-api-key && printf %s admin > app-username && printf %s ${QBT_PASSWORD} > app-password`), 'secrets');
    // Where a forwarded connection arrives: SYNs on the client's vxlan0, by source address and port.
    must(inPod(client, `nft -f - <<'NFT'\ntable inet tw25 {\n  set seen { type ipv4_addr . inet_service; size 256; flags dynamic; }\n  chain input { type filter hook input priority -10; iifname "vxlan0" tcp flags & (syn | ack) == syn update @seen { ip saddr . tcp dport }; }\n}\nNFT`), 'nft');
    startQbt(6881);
  }, 180_000);

  afterAll(() => {
    process.stdout.write(`vpn-gateway port forwarding figures: ${JSON.stringify(figures)}\n`);
    for (const p of [client, gw]) if (p) stopPod(p);
    for (const n of Object.values(ns)) sh(`ip netns pids ${n} | xargs -r kill -9; ip netns del ${n} 2>/dev/null`);
  });

  it('the forwarded workload has the fixed address; the control server answers only the key of the one role', () => {
    expect(inPod(client, 'ip -4 addr show vxlan0').stdout).toContain('inet 172.16.0.5/24');
    const get = (key?: string) => inPod(client, `curl -s -o /dev/null -w '%{http_code}' ${key ? `-H 'X-API-Key: ${key}'` : ''} ${syncEnv.GLUETUN_URL}/v1/portforward`).stdout;
    expect([get(API_KEY), get(), get('wrong')]).toEqual(['200', '401', '401']);
    expect(inPod(client, `curl -s -o /dev/null -w '%{http_code}' -H 'X-API-Key: ${API_KEY}' ${syncEnv.GLUETUN_URL}/v1/vpn/status`).stdout).toBe('401');
  });

  it('port 0 at start-up: port-sync writes nothing, and qBittorrent keeps its own port', () => {
    startSync();
    const zero = 'tunnelwright_port_forward_forwarded_port{app="qbittorrent"} 0';
    expect(secondsUntilTrue(() => inPod(client, `curl -s http://127.0.0.1:${syncEnv.METRICS_PORT}/metrics`).stdout.includes(zero))).toBeLessThan(30);
    sh('sleep 5'); // periods after the first that saw port 0
    expect(qbtPort()).toBe(6881);
    expect(podLog(client, 'sync.log')).not.toContain('setting it');
  });

  it('the provider forwards P: qBittorrent reports listen port P, and a peer reaches it on P from its own address', () => {
    forward(P);
    const seconds = secondsUntilPort(P);
    expect(seconds).toBeLessThan(30);
    expect(qbtPort()).toBe(P);
    const peer = connectAndSee(P);
    expect(peer).toBe('198.18.0.3');
    const metrics = inPod(client, `curl -s http://127.0.0.1:${syncEnv.METRICS_PORT}/metrics`).stdout;
    expect(metrics).toContain(`tunnelwright_port_forward_forwarded_port{app="qbittorrent"} ${P}`);
    expect(metrics).toContain(`tunnelwright_port_forward_app_listen_port{app="qbittorrent"} ${P}`);
    figures['0 -> P'] = { from: 6881, to: P, secondsToReport: seconds, peerSeenAs: peer };
  });

  it('control: without the MASQUERADE fix (our vxlan0 RETURN rule), the app sees the gateway\'s address', () => {
    must(inPod(gw, 'iptables -t nat -D POSTROUTING -o vxlan0 -j RETURN'), 'remove the fix');
    try {
      const peer = connectAndSee(P);
      expect(peer).toBe('172.16.0.1');
      figures['no MASQUERADE fix (control)'] = { peerSeenAs: peer };
    } finally {
      must(inPod(gw, 'iptables -t nat -I POSTROUTING 1 -o vxlan0 -j RETURN'), 'restore the fix');
    }
    expect(connectAndSee(P)).toBe('198.18.0.3');
  });

  it('the provider changes P to P2: qBittorrent reports P2, P no longer reaches it, P2 does', () => {
    changePort(P, P2);
    const seconds = secondsUntilPort(P2);
    expect(seconds).toBeLessThan(30);
    expect(connectAndSee(P)).toBeUndefined();
    expect(connectAndSee(P2)).toBe('198.18.0.3');
    figures['P -> P2'] = { from: P, to: P2, secondsToReport: seconds };
  });

  it('an app restart that forgets the port (back to 6881) is repaired on the next period', () => {
    must(inPod(client, 'pkill -x qbittorrent-nox; for i in $(seq 50); do pgrep -x qbittorrent-nox >/dev/null || exit 0; sleep 0.1; done; exit 1'), 'stop qbittorrent');
    startQbt(6881);
    const seconds = secondsUntilPort(P2);
    expect(seconds).toBeLessThan(30);
    figures['app restart at 6881 -> P2'] = { secondsToReport: seconds };
  });

  it('control: with port-sync stopped, a port change leaves qBittorrent on the old port; started again, it follows', () => {
    must(inPod(client, 'pkill -f "[p]ort-sync.sh"; pkill -f "[n]c -ll"; true'), 'stop port-sync');
    expect(syncRunning()).toBe(false);
    changePort(P2, P3);
    sh('sleep 6'); // three of port-sync's periods
    expect(qbtPort()).toBe(P2);
    expect(connectAndSee(P3)).toBeUndefined();
    figures['P2 -> P3 without port-sync (control)'] = { appPortAfter6s: qbtPort() };
    startSync();
    const seconds = secondsUntilPort(P3);
    expect(seconds).toBeLessThan(30);
    expect(connectAndSee(P3)).toBe('198.18.0.3');
    figures['P2 -> P3, port-sync restarted'] = { secondsToReport: seconds };
    expect(podLog(client, 'sync.log')).not.toContain(API_KEY);
    expect(podLog(client, 'sync.log')).not.toContain(QBT_PASSWORD);
  });

  it('Transmission in the routed pod instead: it reports the forwarded port, a peer reaches it there from its own address, and it follows a change', () => {
    // The gateway side renders the same for every port-sync app (DNAT to the same port, one route for the key); the
    // routed pod now runs Debian's transmission-daemon 3.00 and port-sync with the environment rendered for it.
    must(inPod(client, 'pkill -f "[p]ort-sync.sh"; pkill -f "[n]c -ll"; pkill -x qbittorrent-nox; for i in $(seq 50); do pgrep -x qbittorrent-nox >/dev/null || exit 0; sleep 0.1; done; exit 1'), 'stop qbittorrent and port-sync');
    const trProps: VpnGatewayProps = { ...props, portForwarding: { ...props.portForwarding!, app: 'transmission', appCredentialsSecret: { name: 'transmission-rpc' } } };
    const trSync = planRoute(trProps, { namespace: 'media', podLabels: { app: 'my-qbit' }, name: 'my-qbit', kind: 'StatefulSet' }).extraContainers.find((c) => c.name === 'vpn-port-sync')!;
    const trEnv = Object.fromEntries(trSync.env!.map((e) => [e.name, e.value ?? '']));
    expect(trEnv).toMatchObject({ APP: 'transmission', APP_URL: 'http://127.0.0.1:9091' });
    must(inPod(client, `cd /run/port-sync-secrets && printf %s tw > app-username && printf %s ${TR_PASSWORD} > app-password && mkdir -p /tmp/trm`), 'transmission secrets');
    startInPod(client, `exec transmission-daemon -f -g /tmp/trm -w /tmp/trm -r 127.0.0.1 -p 9091 -t -u tw -v ${TR_PASSWORD} -P 51413 -M -O -Y`, 'trm.log');
    must(inPod(client, 'for i in $(seq 100); do ss -Hltn | grep -q "127.0.0.1:9091 " && exit 0; sleep 0.1; done; exit 1'), `transmission-daemon:\n${podLog(client, 'trm.log')}`);
    expect(trmPort()).toBe(51413);
    startSync(trEnv);
    const seconds = secondsUntilTrm(P3);
    expect(seconds).toBeLessThan(30);
    const peer = connectAndSee(P3);
    expect(peer).toBe('198.18.0.3');
    expect(connectAndSee(51413)).toBeUndefined(); // its old port is forwarded by nobody
    figures['transmission: 51413 -> P3'] = { from: 51413, to: P3, secondsToReport: seconds, peerSeenAs: peer };

    changePort(P3, P4);
    const seconds2 = secondsUntilTrm(P4);
    expect(seconds2).toBeLessThan(30);
    expect(connectAndSee(P3)).toBeUndefined();
    const peer2 = connectAndSee(P4);
    expect(peer2).toBe('198.18.0.3');
    figures['transmission: P3 -> P4'] = { from: P3, to: P4, secondsToReport: seconds2, peerSeenAs: peer2 };
    expect(podLog(client, 'sync.log')).not.toContain(TR_PASSWORD);
  });

  it('qBittorrent bound to eth0 (Session\\Interface): a peer no longer reaches the forwarded port, and port-sync says so; control: any interface, and vxlan0, are reached', () => {
    // By -f: the kernel's process name is cut to 15 characters ("transmission-da"), so -x transmission-daemon matches nothing.
    must(inPod(client, 'pkill -f "[p]ort-sync.sh"; pkill -f "[n]c -ll"; pkill -f "[t]ransmission-daemon"; for i in $(seq 50); do pgrep -f "[t]ransmission-daemon" >/dev/null || exit 0; sleep 0.1; done; exit 1'), 'stop transmission and port-sync');
    must(inPod(client, `cd /run/port-sync-secrets && printf %s admin > app-username && printf %s ${QBT_PASSWORD} > app-password && rm -rf /tmp/port-sync`), 'qbittorrent secrets');
    startQbt(P4, 'eth0');
    startSync();
    const seconds = secondsUntilTrue(() => boundMetric() === 1, 30);
    expect(seconds).toBeLessThan(30);
    expect(qbtPort()).toBe(P4); // the listen port is the forwarded one ...
    const listeners = inPod(client, `ss -Hltn 'sport = :${P4}'`).stdout.trim().split('\n').map((l) => l.split(/\s+/)[3]);
    expect(connectAndSee(P4)).toBeUndefined(); // ... and still no peer reaches it
    expect(podLog(client, 'sync.log')).toContain('port-sync: error: qBittorrent listens only on interface "eth0"');
    figures['qbittorrent bound to eth0'] = { appPort: P4, listeners, peerSeenAs: null, secondsToMetric: seconds };

    // Control: "Any interface", as the Options dialog sends it; the same port, now reached.
    qbtSet({ current_network_interface: '' });
    const anySeconds = secondsUntilTrue(() => connectAndSee(P4) === '198.18.0.3', 30);
    expect(anySeconds).toBeLessThan(30);
    expect(secondsUntilTrue(() => boundMetric() === 0, 30)).toBeLessThan(30);
    // vxlan0, where forwarded connections arrive: reached, and not reported.
    qbtSet({ current_network_interface: 'vxlan0' });
    sh('sleep 3'); // qBittorrent applies a binding at its next reconfigure; a period of port-sync
    const vxSeconds = secondsUntilTrue(() => connectAndSee(P4) === '198.18.0.3', 30);
    expect(vxSeconds).toBeLessThan(30);
    expect(boundMetric()).toBe(0);
    expect(podLog(client, 'sync.log').match(/port-sync: error: qBittorrent listens only on/g)).toHaveLength(1);
    figures['qbittorrent any interface, then vxlan0 (controls)'] = { peerSeenAs: connectAndSee(P4), secondsToReach: [anySeconds, vxSeconds] };
  });
});
