import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planRoute, planVpnGateway, VpnGatewayProps } from '../../src';
import { gatewayPodFiles, gatewaySidecarFiles, inPod, Pod, podGatewayImage, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { describeWithTools, echoServer, labNetwork, labVpnServer, must, POD_GATEWAY_DIR, sh, tmpdir } from './tools';


/**
 * The VpnGateway data path, run by pod-gateway's own scripts (../shared/vendor, unchanged) over what the library
 * synthesizes, in network namespaces:
 *
 *   client pod 10.244.0.3 ──vxlan──▶ gateway pod 10.244.0.2 ──tun0 (wireguard-go)──▶ VPN server ──▶ internet
 *          └──────────── eth0 ──────────── node (bridge, kube-dns stand-in 10.96.0.10, NAT to its WAN) ──▶ internet
 *
 * The internet is 198.18.0.0/24: the node's WAN is .1, the VPN server .2, the echo server .3. The echo server logs
 * the source address of each request: .2 means "left by the VPN", .1 "leaked by the node". gluetun cannot run here;
 * a stand-in does what gluetun does that the path depends on (cited in each step).
 */
describeWithTools('VpnGateway data path through pod-gateway\'s own scripts', [
  'ip', 'wg', 'wireguard-go', 'iptables', 'dnsmasq', 'dig', 'udhcpc', 'route', 'killall', 'inotifywait', 'ping', 'python3', 'nft', 'nsenter', 'unshare',
  path.join(POD_GATEWAY_DIR, 'bin', 'gateway_init.sh'),
], () => {
  const id = process.pid % 10000;
  const ns = { node: `twg${id}-node`, inet: `twg${id}-inet`, vpn: `twg${id}-vpn`, gw: `twg${id}-gw`, client: `twg${id}-cl` };
  const dir = tmpdir('tw-gwpath-');
  const wgEnv = { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' };
  const serverKey = generateKeyPair();
  const gatewayKey = generateKeyPair();
  const FORWARDED = 40000; // the port the VPN provider forwards (gluetun's {{PORT}})
  const props: VpnGatewayProps = {
    clusterCidrs: ['10.244.0.0/16', '10.96.0.0/12', 'fd00:244::/56'], // an IPv6 entry: must stay out of pod-gateway's lists
    nodeCidrs: ['192.168.77.0/24'],
    vpnProvider: 'protonvpn',
    wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' },
    wireguardAddresses: ['10.2.0.2/32'],
    serverCountries: ['Switzerland'],
    portForwarding: { toPort: 6881, workload: 'my-qbit', workloadNamespace: 'media' },
    // The provider's in-tunnel resolver, which (like the stand-in here) returns no DNSSEC records.
    dnsAddress: '10.2.0.1',
    dnssec: false,
  };
  const gateway = planVpnGateway(props);
  const gatewayData = (gateway.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data;
  const gluetunEnv = Object.fromEntries(((gateway.objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { name: string; env: { name: string; value?: string }[] }[] } } } })
    .spec.template.spec.containers.find((c) => c.name === 'gluetun')!.env).map((e) => [e.name, e.value ?? '']));
  // The forwarded workload is a StatefulSet: its one pod is named, and hostnamed, my-qbit-0 by the StatefulSet controller.
  const route = planRoute(props, { namespace: 'media', podLabels: { app: 'my-qbit' }, name: 'my-qbit', kind: 'StatefulSet' });
  const POD_NAME = 'my-qbit-0';
  const initCommand = route.initContainer.command!.map(quote).join(' ');
  /** The route init container's environment, as the kubelet sets it (its values quoted for the shell inPod runs). */
  const initEnv = Object.fromEntries(route.initContainer.env!.map((e) => [e.name, quote(e.value!)]));
  const routeData = (route.objects[0] as unknown as { data: Record<string, string> }).data;
  const image = podGatewayImage();
  let gw: Pod;
  let client: Pod;

  const inNs = (n: string, cmd: string, timeout = 30_000) => sh(`ip netns exec ${n} bash -c ${quote(cmd)}`, { env: wgEnv, timeout });
  /** Requests from the client to the echo server: the source addresses the echo server logged for them. */
  const echoSources = () => fs.existsSync(path.join(dir, 'echo.log')) ? fs.readFileSync(path.join(dir, 'echo.log'), 'utf8').split('\n').filter(Boolean) : [];
  /** Packets that reached the echo server's port (counted there, whatever their source). */
  const counterAtEcho = () => {
    const m = /packets (\d+) bytes (\d+)/.exec(inNs(ns.inet, 'nft list counter inet twcount echo').stdout);
    return { packets: Number(m?.[1] ?? NaN), bytes: Number(m?.[2] ?? NaN) };
  };
  const packetsAtEcho = () => counterAtEcho().packets;
  /** Figures for the closing note: what arrived at the echo server, per phase. */
  const figures: Record<string, { packets: number; bytes: number; sources: string[] }> = {};
  const record = (phase: string) => { figures[phase] = { ...counterAtEcho(), sources: echoSources() }; };
  const resetEcho = () => { fs.writeFileSync(path.join(dir, 'echo.log'), ''); must(inNs(ns.inet, 'nft reset counter inet twcount echo >/dev/null'), 'reset counter'); };
  const fetchFromClient = (tries = 1) => inPod(client, `for i in $(seq ${tries}); do curl -s --max-time 2 http://198.18.0.3:8080/ && exit 0; done; exit 1`);

  /** gluetun's tunnel (internal/wireguard): the interface (VPN_INTERFACE=tun0), key, peer, its fwmark 51820 table. */
  const tunnelStandIn = () => [
    `wireguard-go ${gluetunEnv.VPN_INTERFACE}`,
    `echo ${gatewayKey.privateKey} > /tmp/wg.key`,
    `wg set tun0 private-key /tmp/wg.key fwmark 51820 peer ${serverKey.publicKey} endpoint 198.18.0.2:51820 allowed-ips 0.0.0.0/0 persistent-keepalive 5`,
    `ip addr add ${gluetunEnv.WIREGUARD_ADDRESSES} dev tun0`,
    `ip link set tun0 mtu ${gluetunEnv.WIREGUARD_MTU} up`,
    'ip route add default dev tun0 table 51820',
  ];
  /** gluetun, as far as the data path depends on it: a WireGuard tun0 with its fwmark routing, its firewall, its DNS. */
  const gluetunStandIn = () => [
    ...tunnelStandIn(),
    'ip rule add not fwmark 51820 table 51820 priority 101',
    // internal/firewall: INPUT DROP but established, loopback and the links that existed at start (vxlan0), then
    // FIREWALL_INPUT_PORTS and /iptables/post-rules.txt (the library's file, run line by line as gluetun does).
    'iptables -P INPUT DROP',
    'iptables -A INPUT -i lo -j ACCEPT',
    'iptables -A INPUT -m state --state ESTABLISHED,RELATED -j ACCEPT',
    'iptables -A INPUT -i vxlan0 -j ACCEPT',
    `iptables -A INPUT -i eth0 -p tcp --dport ${gluetunEnv.FIREWALL_INPUT_PORTS} -j ACCEPT`,
    'while read -r rule; do [ -n "$rule" ] && $rule; done < /iptables/post-rules.txt',
    // internal/dns: with DNS_SERVER=off gluetun writes DNS_ADDRESS (reached through the tunnel) into resolv.conf.
    `echo "nameserver ${gluetunEnv.DNS_ADDRESS}" > /etc/resolv.conf`,
    // internal/portforward: the up command, {{PORT}} replaced.
    `${gluetunEnv.VPN_PORT_FORWARDING_UP_COMMAND.replace(/\{\{PORT\}\}/g, String(FORWARDED))}`,
  ].join(' && ');

  beforeAll(() => {
    const startEcho = echoServer(dir, ns.inet, { log: path.join(dir, 'echo.log') });
    const setup = [
      ...Object.values(ns).map((n) => `ip netns add ${n}`),
      ...Object.values(ns).map((n) => `ip -n ${n} link set lo up`),
      // The internet: a bridge with the echo server on it; the node: the pod network's bridge, forwarding and NAT out of
      // its WAN, and kube-dns.
      ...labNetwork(ns, [[ns.gw, '10.244.0.2', 'pod0'], [ns.client, '10.244.0.3', 'pod1']]),
      // The VPN server: WireGuard, NAT to the internet, a DNS resolver on its tunnel address, the forwarded port.
      ...labVpnServer(ns.vpn, dir, serverKey.privateKey, { publicKey: gatewayKey.publicKey, allowedIps: '10.2.0.2/32' }),
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s 10.2.0.0/24 -o wan0 -j MASQUERADE`,
      `ip netns exec ${ns.vpn} iptables -t nat -A PREROUTING -i wan0 -p tcp --dport ${FORWARDED} -j DNAT --to-destination 10.2.0.2:${FORWARDED}`,
      // Packets counted where they arrive: the echo server's port.
      `ip netns exec ${ns.inet} nft -f - <<'NFT'\ntable inet twcount {\n  counter echo {}\n  chain input { type filter hook input priority 0; tcp dport 8080 counter name "echo"; }\n}\nNFT`,
    ].join(' && ');
    must(sh(setup, { timeout: 60_000 }), 'namespaces');
    must(sh(`${startEcho}` +
      `ip netns exec ${ns.node} dnsmasq --keep-in-foreground --no-hosts --no-resolv --bind-interfaces --listen-address=10.96.0.10 --pid-file=${dir}/kdns.pid ` +
      `--host-record=vpn-gateway.vpn-gateway.svc.cluster.local,10.244.0.2 --host-record=echo.default.svc.cluster.local,10.244.0.99 </dev/null >${dir}/kdns.log 2>&1 & ` +
      `ip netns exec ${ns.vpn} dnsmasq --keep-in-foreground --no-hosts --no-resolv --bind-interfaces --listen-address=10.2.0.1 --pid-file=${dir}/vdns.pid ` +
      `--host-record=example.test,198.18.0.3 </dev/null >${dir}/vdns.log 2>&1 & sleep 0.5; echo ok`), 'servers');

    // The gateway pod: the image's scripts and defaults, the synthesized ConfigMap where the Deployment mounts it.
    gw = startPod(dir, 'gateway', ns.gw, 'vpn-gateway-6d5f7c9b8-x2k4q', {
      // pod-gateway's image, the synthesized ConfigMap where the Deployment mounts it, and the host's stand-ins.
      ...gatewayPodFiles(gateway.objects),
    });
    must(inPod(gw, 'gateway_init.sh'), 'gateway_init.sh');
    must(inPod(gw, gluetunStandIn(), { timeout: 30_000 }), 'gluetun stand-in');
    startInPod(gw, 'gateway_sidecar.sh', 'sidecar.log');
    must(inPod(gw, 'for i in $(seq 50); do ss -lun | grep -q ":67 " && exit 0; sleep 0.1; done; exit 1'), `gateway sidecar (dnsmasq):\n${podLog(gw, 'sidecar.log')}`);

    // The routed client: the synthesized client settings, the StatefulSet pod's hostname and the DNS the synthesized pod
    // spec gives it.
    client = startPod(dir, 'client', ns.client, POD_NAME, {
      ...image,
      '/config/settings.sh': { content: routeData['settings.sh'] },
      '/config/nat.conf': { content: routeData['nat.conf'] },
      '/etc/resolv.conf': { content: `search ${route.dnsConfig.searches!.join(' ')}\nnameserver ${route.dnsConfig.nameservers!.join('\nnameserver ')}\noptions ndots:5\n` },
    });
    const k8s = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    // The route's own init command: pod-gateway's client_init.sh behind the check that this pod is my-qbit-0.
    must(inPod(client, initCommand, { env: { ...initEnv, ...k8s }, timeout: 60_000 }), 'vpn-route-init');
    startInPod(client, 'client_sidecar.sh', 'sidecar.log', k8s);
    // The workload: a listener on the forwarded port's target.
    startInPod(client, `python3 -c ${quote('import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 6881)); s.listen()\nwhile True:\n    c,a=s.accept(); c.sendall(b"qbittorrent\\n"); c.close()')}`, 'listener.log');
  }, 120_000);

  afterAll(() => {
    process.stdout.write(`vpn-gateway data path, at the echo server: ${JSON.stringify(figures)}\n`);
    for (const p of [client, gw]) if (p) stopPod(p);
    for (const n of Object.values(ns)) sh(`ip netns pids ${n} | xargs -r kill -9; ip netns del ${n} 2>/dev/null`);
  });

  it('keeps IPv6 CIDRs out of pod-gateway\'s lists: gateway_init.sh ran; control: with the IPv6 entry it fails', () => {
    expect(gatewayData['settings.sh']).not.toContain('fd00');
    expect(routeData['settings.sh']).not.toContain('fd00');
    // Control: the same init with the IPv6 cluster CIDR in VPN_LOCAL_CIDRS, as written before the fix, in a fresh pod.
    const n = `twg${id}-ctl`;
    must(sh(`ip netns add ${n} && ip link add eth0 netns ${n} type veth peer name ctl0 netns ${ns.node} && ip -n ${n} addr add 10.244.0.50/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.244.0.1`), 'control netns');
    const withV6 = gatewayData['settings.sh'].replace(/^VPN_LOCAL_CIDRS="([^"]*)"$/m, 'VPN_LOCAL_CIDRS="$1 fd00:244::/56"');
    const pod = startPod(dir, 'control-v6', n, 'vpn-gateway-ctl', { ...image, '/config/settings.sh': { content: withV6 }, '/config/nat.conf': { content: gatewayData['nat.conf'] } });
    try {
      const r = inPod(pod, 'gateway_init.sh');
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/fd00:244::/);
    } finally {
      stopPod(pod);
      sh(`ip netns del ${n}`);
    }
  });

  it('gives the forwarded workload the fixed VXLAN address nat.conf names: its hostname is found', () => {
    expect(inPod(client, 'ip -4 addr show vxlan0').stdout).toContain('inet 172.16.0.5/24');
  });

  it('sends the client\'s traffic out by the VPN: the echo server sees the VPN server\'s address', () => {
    resetEcho();
    expect(fetchFromClient(5).stdout).toBe('198.18.0.2');
    expect(echoSources()).toEqual(['198.18.0.2']);
    record('through the tunnel');
    expect(figures['through the tunnel'].packets).toBeGreaterThanOrEqual(5);
  });

  const resolve = (name: string) => inPod(client, `dig +short +time=2 +tries=3 ${name}`).stdout.trim();

  it('resolves a cluster name through kube-dns and an outside name through the tunnel', () => {
    expect(resolve('echo.default.svc.cluster.local')).toBe('10.244.0.99');
    expect(resolve('example.test')).toBe('198.18.0.3');
  });

  /** A container restart of the gateway sidecar: its processes gone, its own files fresh, the pod's resolv.conf kept. */
  const restartSidecar = (settings: string) => {
    // (Bracketed patterns: `pkill -f` must not match this very command line.)
    inPod(gw, 'pkill -9 -f "[g]ateway_sidecar"; pkill -9 -x dnsmasq; pkill -9 -f "[i]notifyd"; pkill -9 -x inotifywait; rm -f /etc/resolv.conf.org /etc/dnsmasq.d/pod-gateway.conf; true');
    must(inPod(gw, 'for i in $(seq 50); do pgrep -x dnsmasq >/dev/null || exit 0; sleep 0.1; done; exit 1'), 'dnsmasq stopped');
    // Through the pod's own view (writing an overlay's upper layer under a live mount is not reliably seen).
    must(inPod(gw, `echo ${Buffer.from(settings).toString('base64')} | base64 -d > /config/settings.sh`), 'settings');
    startInPod(gw, 'gateway_sidecar.sh', 'sidecar.log');
    must(inPod(gw, 'for i in $(seq 50); do ss -lun | grep -q ":53 " && exit 0; sleep 0.1; done; exit 1'), 'sidecar restart');
  };

  it('after the gateway sidecar restarts, cluster names still resolve; control: without DNS_LOCAL_SERVER they do not', () => {
    const settings = gatewayData['settings.sh'];
    expect(settings).toContain('\nDNS_LOCAL_SERVER="10.96.0.10"\n');
    restartSidecar(settings.replace(/^DNS_LOCAL_SERVER=.*\n/m, ''));
    expect(resolve('echo.default.svc.cluster.local')).toBe('');
    restartSidecar(settings);
    expect(resolve('echo.default.svc.cluster.local')).toBe('10.244.0.99');
    expect(resolve('example.test')).toBe('198.18.0.3');
  });

  it('forwards the VPN\'s forwarded port to my-qbit; control: after gluetun\'s down command, it does not', () => {
    const connect = () => inNs(ns.inet, `python3 -c ${quote('import socket\ns=socket.create_connection(("198.18.0.2", ' + FORWARDED + '), timeout=3)\nprint(s.recv(64).decode().strip())')}`);
    expect(connect().stdout.trim()).toBe('qbittorrent');
    must(inPod(gw, gluetunEnv.VPN_PORT_FORWARDING_DOWN_COMMAND.replace(/\{\{PORT\}\}/g, String(FORWARDED))), 'down command');
    expect(inPod(gw, 'iptables -t nat -S PREROUTING').stdout).not.toContain(`--dport ${FORWARDED}`);
    expect(connect().status).not.toBe(0);
    must(inPod(gw, gluetunEnv.VPN_PORT_FORWARDING_UP_COMMAND.replace(/\{\{PORT\}\}/g, String(FORWARDED))), 'up command');
    expect(connect().stdout.trim()).toBe('qbittorrent');
  });

  it('after gluetun dies without its down command and runs its up command again, one down command closes the port; control: rules appended to PREROUTING/FORWARD stay open', () => {
    // gluetun runs the down command only from a clean stop (internal/portforward/service/stop.go:28-41); after an
    // OOM kill the restarted gluetun runs the up command again in the same network namespace (PIA keeps the port).
    const connect = () => inNs(ns.inet, `python3 -c ${quote('import socket\ns=socket.create_connection(("198.18.0.2", ' + FORWARDED + '), timeout=3)\nprint(s.recv(64).decode().strip())')}`);
    const up = gluetunEnv.VPN_PORT_FORWARDING_UP_COMMAND.replace(/\{\{PORT\}\}/g, String(FORWARDED));
    const down = gluetunEnv.VPN_PORT_FORWARDING_DOWN_COMMAND.replace(/\{\{PORT\}\}/g, String(FORWARDED));
    const dnatRules = () => inPod(gw, 'iptables-save -t nat').stdout.split('\n').filter((l) => l.includes('-p tcp') && l.includes(`--dport ${FORWARDED} `) && l.includes('DNAT')).length;
    must(inPod(gw, up), 'up command of the restarted gluetun');
    expect(dnatRules()).toBe(1);
    // Where the up command sends the port, as its rule says (the command runs a script with its values as arguments).
    const rule = inPod(gw, 'iptables-save -t nat').stdout.split('\n').find((l) => l.includes(`--dport ${FORWARDED} `) && l.includes('DNAT'))!;
    const [, toIp, toPort] = /--to-destination ([0-9.]+):(\d+)/.exec(rule)!;
    expect(connect().stdout.trim()).toBe('qbittorrent');
    must(inPod(gw, down), 'down command');
    expect(dnatRules()).toBe(0);
    expect(connect().status).not.toBe(0);

    // Control: the same two runs with rules appended straight to PREROUTING and FORWARD (the up command before
    // the fix), undone once: the port stays open.
    const appended = `iptables -t nat -A PREROUTING -i tun0 -p tcp --dport ${FORWARDED} -j DNAT --to-destination ${toIp}:${toPort}; iptables -I FORWARD -i tun0 -d ${toIp} -p tcp --dport ${toPort} -j ACCEPT`;
    must(inPod(gw, `${appended}; ${appended}`), 'appended twice');
    must(inPod(gw, appended.replace(' -A PREROUTING', ' -D PREROUTING').replace(' -I FORWARD', ' -D FORWARD')), 'deleted once');
    expect(dnatRules()).toBe(1);
    expect(connect().stdout.trim()).toBe('qbittorrent');
    must(inPod(gw, appended.replace(' -A PREROUTING', ' -D PREROUTING').replace(' -I FORWARD', ' -D FORWARD')), 'control cleaned');
    must(inPod(gw, up), 'up command again');
    expect(connect().stdout.trim()).toBe('qbittorrent');
  });

  it('with the tunnel deleted, 0 packets of the client reach the internet; control: without the gateway\'s FORWARD DROP they leak', () => {
    must(inPod(gw, 'ip link del tun0'), 'delete tun0');
    resetEcho();
    expect(fetchFromClient(3).status).not.toBe(0);
    record('tunnel deleted');
    expect(packetsAtEcho()).toBe(0);
    expect(echoSources()).toEqual([]);
    // Control: the same with the piece under test (pod-gateway's block mode, VPN_BLOCK_OTHER_TRAFFIC) opened.
    must(inPod(gw, 'iptables -P FORWARD ACCEPT'), 'open FORWARD');
    try {
      expect(fetchFromClient(3).stdout).toBe('198.18.0.1');
      record('tunnel deleted, FORWARD opened (control)');
      expect(packetsAtEcho()).toBeGreaterThan(0);
      expect(echoSources()).toEqual(['198.18.0.1']);
    } finally {
      inPod(gw, 'iptables -P FORWARD DROP');
    }
  });
  // Last: a second client on the gateway's VXLAN may make the first one's sidecar reconnect (a lost ping is enough).
  it('control: with the workload\'s own dashed name in nat.conf (not what client_init.sh cuts from my-qbit-0), it takes a dynamic address', () => {
    const n = `twg${id}-ctl2`;
    must(sh(`ip netns add ${n} && ip link add eth0 netns ${n} type veth peer name ctl2 netns ${ns.node} && ip -n ${ns.node} link set ctl2 master br0 up && ip -n ${n} addr add 10.244.0.51/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.244.0.1`), 'control netns');
    const pod = startPod(dir, 'control-dash', n, POD_NAME, {
      ...image,
      '/config/settings.sh': { content: routeData['settings.sh'] },
      '/config/nat.conf': { content: routeData['nat.conf'].replace(/^my /m, 'my-qbit ') },
      '/etc/resolv.conf': { content: `nameserver ${route.dnsConfig.nameservers![0]}\n` },
    });
    try {
      expect(inPod(pod, 'client_init.sh', { env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, timeout: 60_000 }).status).toBe(0);
      const addr = /inet (172\.16\.0\.\d+)\//.exec(inPod(pod, 'ip -4 addr show vxlan0').stdout)?.[1];
      expect(addr).toMatch(/^172\.16\.0\.(\d{2,3})$/);
      expect(addr).not.toBe('172.16.0.5');
    } finally {
      stopPod(pod);
      sh(`ip netns del ${n}`);
    }
  });

  it('a second ordinal my-qbit-1 (kubectl scale) runs the route\'s init command: it exits 1 and takes no address; control: client_init.sh alone takes .5 there too', () => {
    const n = `twg${id}-ctl3`;
    must(sh(`ip netns add ${n} && ip link add eth0 netns ${n} type veth peer name ctl3 netns ${ns.node} && ip -n ${ns.node} link set ctl3 master br0 up && ip -n ${n} addr add 10.244.0.52/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.244.0.1`), 'control netns');
    const pod = startPod(dir, 'second-ordinal', n, 'my-qbit-1', {
      ...image,
      '/config/settings.sh': { content: routeData['settings.sh'] },
      '/config/nat.conf': { content: routeData['nat.conf'] },
      '/etc/resolv.conf': { content: `nameserver ${route.dnsConfig.nameservers![0]}\n` },
    });
    const env = { env: { ...initEnv, KUBERNETES_SERVICE_HOST: '10.96.0.1' }, timeout: 60_000 };
    try {
      const r = inPod(pod, initCommand, env);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe('vpn-route-init: this pod is my-qbit-1, not my-qbit-0: only my-qbit-0 may take the forwarded workload\'s fixed VXLAN address (a second replica of the StatefulSet my-qbit, from kubectl scale, an autoscaler or a replicas patch, would take it too); scale my-qbit to 1\n');
      expect(inPod(pod, 'ip -4 addr show vxlan0').status).not.toBe(0);
      // Control: pod-gateway's command alone, in the same pod: my-qbit-1 cuts to `my` and takes the forwarded address.
      expect(inPod(pod, 'client_init.sh', env).status).toBe(0);
      expect(inPod(pod, 'ip -4 addr show vxlan0').stdout).toContain('inet 172.16.0.5/24');
    } finally {
      stopPod(pod);
      sh(`ip netns del ${n}`);
    }
  });

  /**
   * A vxlan0 MAC whose hash seeds dnsmasq's search at `172.16.0.<host>` of pod-gateway's range .20–.255: dnsmasq's
   * src/dhcp.c, `address_allocate`, hashes the MAC with SDBM into `start + hash % (end - start + 1)`.
   */
  const macSeeding = (host: number): string => {
    for (let x = 0; x < 65536; x++) {
      const mac = [0x02, 0x42, 0xac, 0x10, x >> 8, x & 255];
      let j = 0;
      for (const b of mac) j = (b + ((j << 6) >>> 0) + ((j << 16) >>> 0) - j) >>> 0;
      if (20 + ((j || 1) % 236) === host) return mac.map((b) => b.toString(16).padStart(2, '0')).join(':');
    }
    throw new Error(`no MAC seeds .${host}`);
  };

  // Last, too: it restarts the gateway sidecar and adds clients to the VXLAN.
  it('a routed pod whose vxlan0 MAC dnsmasq hashes to 172.16.0.255 takes another address and the gateway answers it; control: without tunnelwright\'s dhcp-host line it leases the broadcast address and no answer comes back', () => {
    const mac = macSeeding(255);
    const reserved = Object.keys(gatewaySidecarFiles(gateway.objects)).find((p) => p.startsWith('/etc/dnsmasq.d/'))!;
    // client_init.sh creates vxlan0 with a MAC the kernel draws at random: this `ip` pins it to the one drawn here.
    const pinMac = `#!/bin/sh\nif [ "$1 $2 $3" = "link add vxlan0" ]; then shift 3; exec /sbin/ip link add vxlan0 address ${mac} "$@"; fi\nexec /sbin/ip "$@"\n`;
    const env = { env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', PATH: `/tw-pin-mac:${process.env.PATH}` }, timeout: 60_000 };
    /** A Deployment's pod (its hostname cuts to `sonarr`, which nat.conf does not name, so it asks dnsmasq) asking the gateway's DNS for a cluster name. */
    const routed = (name: string, last: number) => {
      const n = `twg${id}-${name}`;
      must(sh(`ip netns add ${n} && ip link add eth0 netns ${n} type veth peer name ${name} netns ${ns.node} && ip -n ${ns.node} link set ${name} master br0 up && ip -n ${n} addr add 10.244.0.${last}/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.244.0.1`), `${name} netns`);
      const pod = startPod(dir, name, n, 'sonarr-7d9f8b6c5-k2x4q', {
        ...image,
        '/config/settings.sh': { content: routeData['settings.sh'] },
        '/config/nat.conf': { content: routeData['nat.conf'] },
        '/etc/resolv.conf': { content: `nameserver ${route.dnsConfig.nameservers![0]}\n` },
        '/tw-pin-mac/ip': { content: pinMac, mode: 0o755 },
      });
      try {
        const init = inPod(pod, 'client_init.sh', env);
        const vxlan = inPod(pod, 'ip -4 -o addr show vxlan0; ip -o link show vxlan0').stdout;
        const answer = inPod(pod, 'dig +short +time=2 +tries=3 echo.default.svc.cluster.local').stdout.trim();
        return { init, answer, address: /inet (\S+)/.exec(vxlan)?.[1], mac: /link\/ether (\S+)/.exec(vxlan)?.[1] };
      } finally {
        stopPod(pod);
        sh(`ip netns del ${n}`);
      }
    };
    try {
      // Control: the gateway's dnsmasq with pod-gateway's file alone (restarted: its address search starts afresh).
      must(inPod(gw, `mv ${reserved} /tmp/reserved.conf`), 'reservation out');
      restartSidecar(gatewayData['settings.sh']);
      const control = routed('bcast0', 53);
      expect(control.mac).toBe(mac);
      expect(control.address).toBe('172.16.0.255/24');
      // No answer comes back, whichever way the gateway's kernel takes it: with rp_filter on, a source that is its own
      // subnet's broadcast address is a martian and dropped; with it off, dnsmasq's answer is addressed to the broadcast
      // address, which a socket without SO_BROADCAST may not send to. (So client_init.sh's own ping of the gateway
      // passes or fails by rp_filter: not asserted.)
      expect(control.answer).toMatch(/;; no servers could be reached$/);
      expect(control.answer).not.toContain('10.244.0.99');
      // With the file as synthesized. dnsmasq's lease file still gives this MAC .255 here, which no Kubernetes restart
      // keeps (the lease file is in the container's layer): a harder case than a cluster makes.
      must(inPod(gw, `mv /tmp/reserved.conf ${reserved}`), 'reservation back');
      restartSidecar(gatewayData['settings.sh']);
      expect(inPod(gw, 'cat /var/lib/misc/dnsmasq.leases').stdout).toContain(` ${mac} 172.16.0.255 `);
      const fixed = routed('bcast1', 54);
      expect(fixed.mac).toBe(mac);
      expect(fixed.address).toMatch(/^172\.16\.0\.(2\d|[3-9]\d|1\d\d|2[0-4]\d|25[0-4])\/24$/);
      expect(fixed.init.stdout).toContain('Gateway ready and reachable');
      expect(fixed.init.status).toBe(0);
      // Through the gateway's dnsmasq to kube-dns: the cluster name the control could not resolve.
      expect(fixed.answer).toBe('10.244.0.99');
    } finally {
      inPod(gw, `[ -f /tmp/reserved.conf ] && mv /tmp/reserved.conf ${reserved}; true`);
    }
  });
});
