import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planWireguardMesh, WireguardMeshProps } from '../../src';
import { RESOLVE_SECRET_PATH } from '../../src/host/secret-source';
import { describeWithTools, must, run, Run, sh, tmpdir } from './tools';

/**
 * Pod traffic between two overlay nodes, beside the cluster's CNI (issue 26).
 *
 * Two network namespaces are the nodes, joined by a bridge (the "internet", 198.18.0.0/24, each node's default route
 * on eth0 as on a real host). Each runs the WireGuard interface WireguardMesh plans for it, over userspace
 * wireguard-go, unchanged: the generated wg0.conf, address and MTU, and the generated secret unit's ExecStart. Behind
 * each node a pod namespace hangs on a veth, with an address in that node's pod CIDR (the cluster pod CIDR from the
 * plan's k0s.yaml, or k3s's default) and the pod MTU the plan gives the CNI.
 *
 * What this kernel offers, checked when this test was written (6.18, in a network namespace): `ip link add type vxlan`
 * works; `type ipip`, `type ip6tnl`, `type gre`, `type sit`, `type geneve`, `type wireguard` and `ip fou add` do not
 * ("Unknown device type" / "Error talking to the kernel"). So:
 * - VXLAN (flannel's, Calico's) is the kernel's own VXLAN device, made as the CNI makes it.
 * - kube-router's IPIP tunnel is a TUN of the same name with a userspace IPIP loop (test/system/ipip-userspace.py):
 *   real IPv4-in-IPv4 packets (protocol 4, outer addresses the node addresses), made in userspace.
 *
 * Replayed (the CNI's decisions, computed here from what the plan emits, by the CNI's code cited at each step):
 * - kube-router v2.1.0, the version k0s 1.30 ships (k0s pkg/constant/constant.go:99 KubeRouterCNIImageVersion
 *   "v2.1.0-iptables1.8.9-0"); lines are at that tag: the overlay flags from k0s.yaml's `kuberouter.extraArgs`
 *   (defaults pkg/options/options.go:155 enable-overlay true, :106/:211 overlay-type "subnet"); `sameSubnet`
 *   (pkg/controllers/routing/network_routes_controller.go:593-615, the subnet of the interface holding the node IP,
 *   utils.go:122-139 getNodeSubnet) and `shouldCreateTunnel` (:644-655); then either the tunnel
 *   `tun-<sha256(ip)[0:11]>` (utils.go:145-155 generateTunnelName; `ip tunnel add <tun> mode ipip local <node IP>
 *   remote <next hop>`, :832) with `podCIDR dev tun src <node IP>` (:672-690), or the plain `podCIDR via <next hop>`
 *   (:691-706). The same decision holds in the kube-router versions later k0s releases ship (they make the tunnel
 *   through netlink, pkg/tunnels/linux_tunnels.go, instead of `ip tunnel add`).
 * - kube-router's policy routing, for the NodePort case: `ip rule add from <own pod CIDR> lookup 77` (pbr.go:23) and
 *   `<peer's node IP> dev <tun> table 77` (network_routes_controller.go:886).
 * - kube-proxy's nat rules for one NodePort Service, externalTrafficPolicy Cluster, one endpoint on node-1, as its
 *   iptables proxier writes them (kubernetes pkg/proxy/iptables/proxier.go syncProxyRules: KUBE-NODEPORTS →
 *   KUBE-EXT-… → KUBE-MARK-MASQ (`--or-mark 0x4000`) and KUBE-SVC-… → KUBE-SEP-… DNAT; KUBE-POSTROUTING `--xor-mark`
 *   then `MASQUERADE --random-fully`; chain hashes shortened), loaded with iptables-restore (iptables-nft), so the
 *   kernel's own MASQUERADE picks the source. Read in kube-proxy's code through the code search, not at a v1.30 line.
 * - flannel (k3s): the interface: k3s's `flannel-iface`, else the default gateway's (k3s pkg/agent/flannel/flannel.go
 *   LookupExtIface → flannel pkg/ip/iface.go:146 GetDefaultGatewayInterface); its first IPv4 address as the VTEP
 *   (flannel pkg/backend/vxlan/vxlan_network.go:189-200); the device `flannel.1`, VNI 1, the kernel's default port 8472,
 *   `nolearning`, on that interface and address, MTU the interface's less 50 (pkg/backend/vxlan/device.go:60-68);
 *   per peer the route `subnet via <subnet>.0 dev flannel.1 onlink`, the ARP entry and the FDB entry to the peer's
 *   public IP (vxlan_network.go:291-295, :357, :364).
 * - Calico VXLAN (k0s): the node address by `ipAutodetectionMethod` (`interface=<name>`, else first-found: the first
 *   interface not in DEFAULT_INTERFACES_TO_EXCLUDE, calico node/pkg/lifecycle/startup/autodetection/
 *   autodetection_linux.go; eth0 comes before wg0), the VXLAN device `vxlan.calico`, VNI 4096, port 4789, on it, the
 *   pod MTU from k0s.yaml's `calico.mtu`. Calico's own code was not read at a line here (no Calico checkout): VNI and
 *   port are Calico's documented defaults (FelixConfiguration vxlanVNI 4096, vxlanPort 4789), cited, not read.
 * Cited only, not replayed: BGP (kube-router learns peers' pod CIDRs over GoBGP; here each node's is given), IPAM (the
 * per-node /24 of the cluster CIDR), the CNI's bridge and veth plumbing (here one veth per pod, routed), kube-proxy's
 * other chains (filter table, ClusterIP, health checks) and kube-proxy itself (its rules are written here, not by it).
 * IPv6 is not replayed: kube-router's ip6ip6 tunnel (`ip -6 tunnel add … mode ip6ip6`) cannot be made on this kernel
 * (no ip6tnl), so the IPv6 MTU (−48) and the ip6 SNAT table (unit-tested in test/render/cni.test.ts) rest on the code
 * cited in src/render/cni.ts.
 *
 * Counted where packets arrive: ICMP echo requests at the destination pod (an nft counter in its input hook), and, on
 * the receiving node, IPIP, VXLAN and WireGuard packets at eth0's ingress (the underlay: what crosses the internet) and
 * at the WireGuard device's ingress (inside the tunnel). In the NodePort case, on node-1: the requests' inner source
 * at wg0's ingress (what the masquerade chose) and the pod's replies where they leave, at eth0's egress (in clear)
 * and at wg0's egress (IPIP with the pod as inner source).
 */
describeWithTools('pod traffic between overlay nodes beside the CNI: kube-router, flannel, Calico, over real wireguard-go', ['wg', 'wg-quick', 'wireguard-go', 'ip', 'ping', 'nft', 'iptables-restore', 'ss', 'unshare', 'python3'], () => {
  const id = process.pid % 100000;
  const NSP = `k26${id}`;
  const lan = `${NSP}-lan`;
  const nodeNs = [0, 1].map((i) => `${NSP}-n${i}`);
  const podNs = [0, 1].map((i) => `${NSP}-p${i}`);
  const dir = tmpdir('tw-cni-');
  const env = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go', WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' };
  const overlay = ['10.10.0.1', '10.10.0.2'];
  const underlay = ['198.18.0.1', '198.18.0.2'];
  const keys = [0, 1].map(() => generateKeyPair());
  const ENCAP = path.join(__dirname, 'ipip-userspace.py');
  const PINGS = 10;

  const mesh = (over: Partial<WireguardMeshProps>): WireguardMeshProps => ({
    network: '10.10.0.0/24', listenPort: 51820, persistentKeepalive: 1, underlayMtu: 1500,
    nodes: [0, 1].map((i) => ({ node: `node-${i}`, address: overlay[i], publicKey: keys[i].publicKey, privateKeyFrom: { file: path.join(dir, `node-${i}.key`) }, endpoint: underlay[i], role: i === 0 ? 'controller+worker' as const : 'worker' as const })),
    ...over,
  });
  const K0S_KUBE_ROUTER = mesh({ distribution: 'k0s', cni: 'kube-router', k0sConfig: { network: { podCIDR: '10.244.0.0/16' } } });
  const K0S_CALICO = mesh({ distribution: 'k0s', cni: 'calico', k0sConfig: { network: { podCIDR: '10.244.0.0/16' } } });
  const K3S_FLANNEL = mesh({ distribution: 'k3s', cni: 'flannel' });
  const plan = planWireguardMesh(K0S_KUBE_ROUTER);
  const iface = plan.nodes['node-0'].wireguard.name;
  const wgMtu = plan.nodes['node-0'].wireguard.mtu!;
  /** k0s.yaml's spec.network as the controller's plan writes it (one file for the cluster). */
  const k0sNetworkOf = (props: WireguardMeshProps) => ((planWireguardMesh(props).nodes['node-0'].values.k0s as { config: { spec: { network: Record<string, unknown> } } }).config.spec.network);
  /** The same k0s.yaml before issue 26: no spec.network, so k0s's defaults (kube-router, its own args). */
  const K0S_BEFORE: Record<string, unknown> = { podCIDR: '10.244.0.0/16', provider: 'kuberouter' };
  const k3sConfigOf = (props: WireguardMeshProps, i: number) => (planWireguardMesh(props).nodes[`node-${i}`].values.k3s as { config: Record<string, unknown> }).config;

  /**
   * Runs a command in node i's namespace with its own /etc/wireguard, /run/tunnelwright and /run/wireguard (wireguard-go's
   * control sockets, global otherwise), so both nodes run the plan's interface under its own name.
   */
  const inNode = (i: number, cmd: string): Run => sh(`ip netns exec ${nodeNs[i]} unshare -m sh -c 'mount --make-rprivate / && mount --bind ${dir}/etc${i} /etc/wireguard && mount --bind ${dir}/run${i} /run/tunnelwright && mount --bind ${dir}/wgrun${i} /run/wireguard && mount --bind ${dir}/tw${i} /etc/tunnelwright && ${cmd}'`, { env, timeout: 60_000 });
  const node = (i: number, cmd: string): Run => sh(`ip netns exec ${nodeNs[i]} ${cmd}`);
  const nodeMust = (i: number, cmds: string[]) => must(sh(cmds.map((c) => `ip netns exec ${nodeNs[i]} ${c}`).join(' && ')), `node-${i}: ${cmds.join('; ')}`);

  /** Pods: pod i at <cidr i>.2 behind node i's veth at <cidr i>.1 (the CNI bridge's gateway, as kube-bridge / cni0). */
  let podIp: string[] = [];
  let podCidr: string[] = [];
  const podsUp = (clusterCidr: string, mtu: number) => {
    const [a, b] = clusterCidr.split('.');
    podCidr = [0, 1].map((i) => `${a}.${b}.${i}.0/24`);
    podIp = [0, 1].map((i) => `${a}.${b}.${i}.2`);
    for (const i of [0, 1]) {
      must(sh([
        `ip netns add ${podNs[i]}`,
        `ip -n ${podNs[i]} link set lo up`,
        `ip link add eth0 netns ${podNs[i]} mtu ${mtu} type veth peer name veth${NSP}p netns ${nodeNs[i]} mtu ${mtu}`,
        `ip -n ${podNs[i]} addr add ${podIp[i]}/24 dev eth0`,
        `ip -n ${podNs[i]} link set eth0 up`,
        `ip -n ${podNs[i]} route add default via ${a}.${b}.${i}.1`,
        `ip -n ${nodeNs[i]} addr add ${a}.${b}.${i}.1/24 dev veth${NSP}p`,
        `ip -n ${nodeNs[i]} link set veth${NSP}p up`,
        `ip netns exec ${podNs[i]} nft -f - <<'EOF'\n${podCounters(i)}\nEOF`,
      ].join(' && ')), `pod ${i}`);
    }
  };
  const podCounters = (i: number) => [
    `add table inet ${NSP}`,
    `add counter inet ${NSP} echo`,
    `add chain inet ${NSP} in { type filter hook input priority 0; }`,
    `add rule inet ${NSP} in icmp type echo-request ip saddr ${podIp[1 - i]} counter name echo`,
  ].join('\n');
  const podsDown = () => {
    for (const i of [0, 1]) sh(`ip -n ${nodeNs[i]} link del veth${NSP}p 2>/dev/null; ip netns del ${podNs[i]} 2>/dev/null`);
  };
  /** A counter's packets: `nft -j list counter`. */
  const counter = (ns: string, family: string, name: string, table = NSP): number => {
    const r = must(sh(`ip netns exec ${ns} nft -j list counter ${family} ${table} ${name}`), `counter ${name}`);
    return (JSON.parse(r.stdout) as { nftables: { counter?: { packets: number } }[] }).nftables.find((e) => e.counter)!.counter!.packets;
  };
  /** On each node: at eth0's ingress (the underlay) and at the WireGuard device's (inside the tunnel). */
  const wireCounters = () => [
    `add table netdev ${NSP}`,
    ...['ipip', 'vxlan8472', 'vxlan4789', 'wireguard', 'tipip', 'tvxlan8472', 'tvxlan4789'].map((c) => `add counter netdev ${NSP} ${c}`),
    `add chain netdev ${NSP} under { type filter hook ingress device eth0 priority 0; }`,
    `add rule netdev ${NSP} under ip protocol 4 counter name ipip`,
    `add rule netdev ${NSP} under udp dport 8472 counter name vxlan8472`,
    `add rule netdev ${NSP} under udp dport 4789 counter name vxlan4789`,
    `add rule netdev ${NSP} under udp dport 51820 counter name wireguard`,
    `add chain netdev ${NSP} tunnel { type filter hook ingress device ${iface} priority 0; }`,
    `add rule netdev ${NSP} tunnel ip protocol 4 counter name tipip`,
    `add rule netdev ${NSP} tunnel udp dport 8472 counter name tvxlan8472`,
    `add rule netdev ${NSP} tunnel udp dport 4789 counter name tvxlan4789`,
  ].join('\n');
  const resetCounters = () => {
    for (const i of [0, 1]) must(sh(`ip netns exec ${nodeNs[i]} nft reset counters table netdev ${NSP} >/dev/null`), 'reset');
  };
  interface Figures { pings: string; echoArrived: number; underlay: Record<string, number>; tunnel: Record<string, number> }
  /** Pings pod 0 → pod 1 (and back), one at a time, and what node-1 and pod-1 counted. */
  const pingPods = (size = 56): Figures => {
    resetCounters();
    for (const i of [0, 1]) sh(`ip netns exec ${podNs[i]} nft reset counters table inet ${NSP} >/dev/null`);
    let ok = 0;
    for (let t = 0; t < PINGS; t++) if (sh(`ip netns exec ${podNs[0]} ping -c1 -W1 -M do -s ${size} ${podIp[1]}`).status === 0) ok++;
    const get = (name: string) => counter(nodeNs[1], 'netdev', name);
    return {
      pings: `${ok}/${PINGS}`,
      echoArrived: counter(podNs[1], 'inet', 'echo'),
      underlay: { ipip: get('ipip'), vxlan8472: get('vxlan8472'), vxlan4789: get('vxlan4789'), wireguard: get('wireguard') },
      tunnel: { ipip: get('tipip'), vxlan8472: get('tvxlan8472'), vxlan4789: get('tvxlan4789') },
    };
  };
  const figures: string[] = [];
  const record = (what: string, f: Figures) => {
    figures.push(`${what}: pings ${f.pings}, echo requests arrived at the pod ${f.echoArrived}, node-1 underlay (eth0) ipip ${f.underlay.ipip} vxlan:8472 ${f.underlay.vxlan8472} vxlan:4789 ${f.underlay.vxlan4789} wireguard ${f.underlay.wireguard}, inside wg ipip ${f.tunnel.ipip} vxlan:8472 ${f.tunnel.vxlan8472} vxlan:4789 ${f.tunnel.vxlan4789}`);
    return f;
  };

  // --- kube-router (replayed from its code, see the header) ---
  const kubeRouterArgs = (network: Record<string, unknown>) => {
    const extra = ((network.kuberouter as { extraArgs?: Record<string, string> } | undefined)?.extraArgs) ?? {};
    // v2.1.0 options.go:155 enable-overlay defaults to true; :211 overlay-type to "subnet" (set at :106).
    return { enableOverlay: (extra['enable-overlay'] ?? 'true') === 'true', overlayType: extra['overlay-type'] ?? 'subnet' };
  };
  /** The node IP's subnet (kube-router v2.1.0 routing/utils.go:122-139 getNodeSubnet: the prefix of the interface holding it). */
  const sameSubnet = (i: number, nextHop: string): boolean => {
    const addrs = JSON.parse(node(i, 'ip -j -4 addr show').stdout) as { addr_info: { local: string; prefixlen: number }[] }[];
    const mine = addrs.flatMap((a) => a.addr_info).find((a) => a.local === overlay[i])!;
    const n = (ip: string) => ip.split('.').reduce((x, o) => x * 256 + Number(o), 0);
    const block = 2 ** (32 - mine.prefixlen);
    return Math.floor(n(mine.local) / block) === Math.floor(n(nextHop) / block);
  };
  /** The userspace IPIP loops this test started (ended by their pids). */
  const encapPids: number[] = [];
  const tunnelName = (ip: string) => `tun-${createHash('sha256').update(ip.replace(/[.:]/g, '')).digest('hex').slice(0, 11)}`;
  /** kube-router's injectRoute for the peer's pod CIDR on node i; returns what it installed. */
  const kubeRouterInject = (i: number, network: Record<string, unknown>, podMtu: number): string => {
    const j = 1 - i;
    const { enableOverlay, overlayType } = kubeRouterArgs(network);
    const same = sameSubnet(i, overlay[j]);
    const shouldCreateTunnel = enableOverlay && (overlayType === 'full' || (overlayType === 'subnet' && !same));
    if (shouldCreateTunnel) {
      const tun = tunnelName(overlay[j]);
      // The kernel's ipip device takes the MTU of the route to Remote less 20 (net/ipv4/ip_tunnel.c ip_tunnel_bind_dev).
      const started = must(sh(`ip netns exec ${nodeNs[i]} sh -c '${ENCAP} ${tun} ${overlay[i]} ${overlay[j]} >${dir}/encap${i}.log 2>&1 & echo $!; for t in $(seq 50); do ip link show ${tun} >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1'`), `userspace IPIP on node-${i}`);
      encapPids.push(Number(started.stdout.trim()));
      nodeMust(i, [`ip link set ${tun} mtu ${wgMtu - 20} up`, `ip route replace ${podCidr[j]} dev ${tun} src ${overlay[i]} proto 17`]);
      return `tunnel ${tun} ${overlay[i]}→${overlay[j]}, ${podCidr[j]} dev ${tun} (pod MTU ${podMtu})`;
    }
    if (same) {
      nodeMust(i, [`ip route replace ${podCidr[j]} via ${overlay[j]} proto 17`]);
      return `${podCidr[j]} via ${overlay[j]}`;
    }
    return 'nothing (BGP)';
  };
  const kubeRouterPodMtu = (network: Record<string, unknown>) => {
    const kr = network.kuberouter as { autoMTU?: boolean; mtu?: number } | undefined;
    // auto-MTU (kube-router's default) takes the node interface's MTU (v2.1.0 pkg/utils/node.go:150-168 GetMTUFromNodeIP).
    return kr?.autoMTU === false && kr.mtu !== undefined ? kr.mtu : wgMtu;
  };
  const kubeRouterDown = () => {
    for (const pid of encapPids.splice(0)) sh(`kill ${pid}; while kill -0 ${pid} 2>/dev/null; do sleep 0.05; done`);
    for (const i of [0, 1]) {
      sh(`ip netns exec ${nodeNs[i]} ip route del ${podCidr[1 - i]} 2>/dev/null`);
    }
  };

  // --- VXLAN (flannel, Calico), the kernel's device ---
  interface Vxlan { dev: string; vni: number; port: number; mtu: number; via: string[]; vtep: string[] }
  const vxlanUp = (v: Vxlan) => {
    const macs = [0, 1].map((i) => `02:26:00:00:0${i}:01`);
    for (const i of [0, 1]) {
      const j = 1 - i;
      const vtepIp = (k: number) => podCidr[k].replace(/\.0\/24$/, '.0');
      nodeMust(i, [
        `ip link add ${v.dev} address ${macs[i]} mtu ${v.mtu} type vxlan id ${v.vni} local ${v.vtep[i]} dev ${v.via[i]} dstport ${v.port} nolearning`,
        `ip addr add ${vtepIp(i)}/32 dev ${v.dev}`,
        `ip link set ${v.dev} up`,
        `ip route replace ${podCidr[j]} via ${vtepIp(j)} dev ${v.dev} onlink`,
        `ip neigh replace ${vtepIp(j)} lladdr ${macs[j]} dev ${v.dev} nud permanent`,
        `bridge fdb append ${macs[j]} dev ${v.dev} dst ${v.vtep[j]} self permanent`,
      ]);
    }
  };
  const vxlanDown = (dev: string) => {
    for (const i of [0, 1]) sh(`ip netns exec ${nodeNs[i]} ip link del ${dev} 2>/dev/null`);
  };
  const ifaceIp4 = (i: number, dev: string): string => {
    const a = JSON.parse(node(i, `ip -j -4 addr show dev ${dev}`).stdout) as { addr_info: { local: string }[] }[];
    return a[0].addr_info[0].local;
  };
  const defaultGatewayIface = (i: number): string => (JSON.parse(node(i, 'ip -j route show default').stdout) as { dev: string }[])[0].dev;
  const ifaceMtu = (i: number, dev: string): number => (JSON.parse(node(i, `ip -j link show dev ${dev}`).stdout) as { mtu: number }[])[0].mtu;
  /** flannel's interface from k3s's config (flannel-iface, else the default gateway's). */
  const flannelIface = (config: Record<string, unknown>, i: number): string => (typeof config['flannel-iface'] === 'string' ? config['flannel-iface'] : defaultGatewayIface(i));
  /** Calico's node address: `interface=<regex>`, else first-found (the first interface, in order, not excluded). */
  const calicoIface = (network: Record<string, unknown>, i: number): string => {
    const method = (network.calico as { ipAutodetectionMethod?: string } | undefined)?.ipAutodetectionMethod ?? 'first-found';
    const links = (JSON.parse(node(i, 'ip -j -4 addr show').stdout) as { ifname: string; addr_info: unknown[] }[]).filter((l) => l.addr_info.length > 0).map((l) => l.ifname);
    if (method.startsWith('interface=')) return links.find((l) => new RegExp(`^${method.slice('interface='.length)}$`).test(l))!;
    const exclude = [/^docker/, /^cbr/, /^dummy/, /^virbr/, /^lxcbr/, /^veth/, /^lo/, /^cali/, /^tunl/, /^flannel/, /^kube-ipvs/, /^cni/, /^vxlan\.calico/];
    return links.find((l) => !exclude.some((e) => e.test(l)))!;
  };

  beforeAll(() => {
    keys.forEach((k, i) => fs.writeFileSync(path.join(dir, `node-${i}.key`), `${k.privateKey}\n`, { mode: 0o600 }));
    const files = plan.nodes['node-0'].host.files;
    fs.writeFileSync(path.join(dir, 'resolve-secret'), files.find((f) => f.path === RESOLVE_SECRET_PATH)!.content, { mode: 0o755 });
    must(sh(['mkdir -p /etc/wireguard /etc/tunnelwright /run/tunnelwright /run/wireguard', `ip netns add ${lan}`, `ip -n ${lan} link add br0 type bridge`, `ip -n ${lan} addr add 198.18.0.254/24 dev br0`, `ip -n ${lan} link set br0 up`].join(' && ')), 'the internet');
    for (const i of [0, 1]) {
      must(sh([
        `ip netns add ${nodeNs[i]}`,
        `ip -n ${nodeNs[i]} link set lo up`,
        `ip link add eth0 netns ${nodeNs[i]} type veth peer name ${NSP}v${i} netns ${lan}`,
        `ip -n ${lan} link set ${NSP}v${i} master br0 up`,
        `ip -n ${nodeNs[i]} addr add ${underlay[i]}/24 dev eth0`,
        `ip -n ${nodeNs[i]} link set eth0 up`,
        `ip -n ${nodeNs[i]} route add default via 198.18.0.254`,
        `ip netns exec ${nodeNs[i]} sysctl -q -w net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0`,
        `mkdir -p ${dir}/etc${i} ${dir}/run${i} ${dir}/wgrun${i} ${dir}/tw${i}`,
      ].join(' && ')), `node-${i}`);
      const p = plan.nodes[`node-${i}`];
      fs.writeFileSync(path.join(dir, `etc${i}`, `${iface}.conf`), p.host.files.find((f) => f.path === `/etc/wireguard/${iface}.conf`)!.content, { mode: 0o600 });
      // The nft table wg0's PreUp loads (kube-router nodes: kube-proxy's masquerade into the tunnels).
      for (const f of p.host.files.filter((x) => x.path.startsWith('/etc/tunnelwright/'))) fs.writeFileSync(path.join(dir, `tw${i}`, path.basename(f.path)), f.content);
      const unit = p.host.units.find((u) => u.name === `tunnelwright-secret-${iface}-private-key.service`)!;
      const execStart = /^ExecStart=(.+)$/m.exec(unit.content!)![1].replace(RESOLVE_SECRET_PATH, path.join(dir, 'resolve-secret'));
      must(inNode(i, `${execStart} && wg-quick up ${iface}`), `wg-quick up on node-${i}`);
      must(sh(`ip netns exec ${nodeNs[i]} nft -f - <<'EOF'\n${wireCounters()}\nEOF`), `counters on node-${i}`);
    }
    // The overlay itself first: node to node.
    must(sh(`for t in $(seq 20); do ip netns exec ${nodeNs[0]} ping -c1 -W1 ${overlay[1]} >/dev/null && exit 0; done; exit 1`), 'overlay ping');
  });

  afterAll(() => {
    for (const n of [...podNs, ...nodeNs, lan]) sh(`ip netns pids ${n} | xargs -r kill; sleep 0.2; ip netns del ${n} 2>/dev/null`);
    fs.rmSync(dir, { recursive: true, force: true });
    if (process.env.TW_RECORD) fs.appendFileSync(process.env.TW_RECORD, `overlay-cni-netns (${PINGS} pings pod-0 → pod-1 per case):\n${figures.join('\n')}\n`);
  });

  describe('k0s + kube-router', () => {
    afterEach(() => {
      kubeRouterDown();
      podsDown();
    });

    it('control: the k0s.yaml before the fix (kube-router\'s subnet overlay) installs a plain route via the peer, and WireGuard drops every pod packet', () => {
      const network = K0S_BEFORE;
      podsUp(network.podCIDR as string, kubeRouterPodMtu(network));
      expect([0, 1].map((i) => kubeRouterInject(i, network, kubeRouterPodMtu(network)))).toEqual([`10.244.1.0/24 via ${overlay[1]}`, `10.244.0.0/24 via ${overlay[0]}`]);
      const f = record('k0s+kube-router, before (subnet overlay, route via the peer)', pingPods());
      expect(f.pings).toBe(`0/${PINGS}`);
      expect(f.echoArrived).toBe(0);
      expect(f.tunnel.ipip).toBe(0);
    });

    it('the plan (overlay-type full, MTU overlay − 20): IPIP between the node overlay addresses inside WireGuard, pods ping both ways', () => {
      const network = k0sNetworkOf(K0S_KUBE_ROUTER);
      expect(network).toMatchObject({ kuberouter: { autoMTU: false, mtu: wgMtu - 20, extraArgs: { 'enable-overlay': 'true', 'overlay-type': 'full' } } });
      const mtu = kubeRouterPodMtu(network);
      podsUp(network.podCIDR as string, mtu);
      expect([0, 1].map((i) => kubeRouterInject(i, network, mtu))[0]).toMatch(/^tunnel tun-[0-9a-f]{11} 10\.10\.0\.1→10\.10\.0\.2/);
      const f = record('k0s+kube-router, the plan (full overlay)', pingPods());
      expect(f.pings).toBe(`${PINGS}/${PINGS}`);
      expect(f.echoArrived).toBe(PINGS);
      expect(f.tunnel.ipip).toBeGreaterThanOrEqual(PINGS);
      expect(f.underlay.ipip).toBe(0);
      expect(f.underlay.wireguard).toBeGreaterThanOrEqual(PINGS);
      // Back the other way.
      expect(sh(`ip netns exec ${podNs[1]} ping -c3 -W1 ${podIp[0]}`).status).toBe(0);
      // The pod MTU the plan writes fits: a full-size packet with DF passes ...
      expect(record(`k0s+kube-router, the plan, DF at the pod MTU ${mtu}`, pingPods(mtu - 28)).pings).toBe(`${PINGS}/${PINGS}`);
    });

    it('control: the same tunnel with the pod MTU kube-router\'s auto-MTU takes (the interface\'s, IPIP not subtracted) drops full-size packets', () => {
      const network = k0sNetworkOf(K0S_KUBE_ROUTER);
      podsUp(network.podCIDR as string, wgMtu);
      for (const i of [0, 1]) kubeRouterInject(i, network, wgMtu);
      const f = record(`k0s+kube-router, full overlay, pod MTU ${wgMtu} (auto-MTU), DF at that size`, pingPods(wgMtu - 28));
      expect(f.pings).toBe(`0/${PINGS}`);
      expect(f.echoArrived).toBe(0);
    });
  });

  describe('k0s + kube-router: a peer\'s tunnel route deleted (kube-router\'s cleanupTunnel when BGP drops)', () => {
    afterEach(() => {
      sh(`ip netns exec ${nodeNs[0]} nft delete table netdev ${NSP}f 2>/dev/null; ip -n ${nodeNs[0]} route flush type unreachable 2>/dev/null`);
      kubeRouterDown();
      podsDown();
    });

    it('the plan\'s unreachable routes (its fail-closed unit) drop the pod\'s packets; control: without them they leave eth0 in clear', () => {
      const network = k0sNetworkOf(K0S_KUBE_ROUTER);
      const mtu = kubeRouterPodMtu(network);
      podsUp(network.podCIDR as string, mtu);
      for (const i of [0, 1]) kubeRouterInject(i, network, mtu);
      const unit = plan.nodes['node-0'].host.units.find((u) => u.name === `tunnelwright-${iface}-kube-router-fail-closed.service`)!;
      const routes = [...unit.content!.matchAll(/^ExecStart=(.+)$/gm)].map((m) => m[1]);
      expect(routes).toEqual([`/usr/sbin/ip route replace unreachable 10.244.0.0/16 metric 4096`, `/usr/sbin/ip route replace unreachable 10.10.0.0/24 metric 4096`]);
      must(sh(`ip netns exec ${nodeNs[0]} nft -f - <<'EOF'\nadd table netdev ${NSP}f\nadd counter netdev ${NSP}f clear\nadd chain netdev ${NSP}f out { type filter hook egress device eth0 priority 0; }\nadd rule netdev ${NSP}f out ip saddr ${podIp[0]} counter name clear\nEOF`), 'egress counter on node-0');
      // kube-router v2.1.0 cleanupTunnel (network_routes_controller.go:620-636, :739-751): the route to the peer's pod CIDR goes.
      nodeMust(0, [`ip route del ${podCidr[1]}`]);
      const clear = () => {
        must(sh(`ip netns exec ${nodeNs[0]} nft reset counters table netdev ${NSP}f >/dev/null`), 'reset');
        for (let t = 0; t < 3; t++) sh(`ip netns exec ${podNs[0]} ping -c1 -W1 ${podIp[1]}`);
        return counter(nodeNs[0], 'netdev', 'clear', `${NSP}f`);
      };
      const without = clear();
      nodeMust(0, routes);
      const withRoutes = clear();
      figures.push(`k0s+kube-router, tunnel route deleted: pod-0 packets out of node-0's eth0 in clear without the unreachable routes ${without}, with them ${withRoutes}`);
      expect({ without, withRoutes }).toEqual({ without: 3, withRoutes: 0 });
      // The overlay itself still works (wg0's own route wins over the unreachable one).
      expect(sh(`ip netns exec ${nodeNs[0]} ping -c1 -W1 ${overlay[1]}`).status).toBe(0);
      // The unit's stop (its ExecStop lines, `-` dropped) removes them again, and only them: wg0's connected route stays.
      const stops = [...unit.content!.matchAll(/^ExecStop=-(.+)$/gm)].map((m) => m[1]);
      expect(stops.length).toBe(routes.length);
      nodeMust(0, stops);
      expect(sh(`ip -n ${nodeNs[0]} route show type unreachable`).stdout).toBe('');
      expect(sh(`ip -n ${nodeNs[0]} route show dev ${iface}`).stdout).toContain('10.10.0.0/24');
    });
  });

  describe('k0s + kube-router: kube-proxy masquerades a NodePort flow into the tunnel', () => {
    // A client on the internet (the lan namespace's 198.18.0.254) sends UDP to node-0's NodePort; kube-proxy's rules
    // (replayed below) DNAT it to the pod on node-1 and masquerade it into kube-router's tunnel. The pod's replies
    // are counted where node-1 sends them: out of eth0 in clear, or into the tunnel (the IPIP packets wg0 sends).
    const NODE_PORT = 30080;
    const POD_PORT = 8080;
    const servers: number[] = [];
    afterEach(() => {
      for (const pid of servers.splice(0)) sh(`kill ${pid}; while kill -0 ${pid} 2>/dev/null; do sleep 0.05; done`);
      sh(`ip netns exec ${nodeNs[0]} nft delete table ip nat 2>/dev/null; ip netns exec ${nodeNs[1]} nft delete table netdev ${NSP}r 2>/dev/null`);
      for (const i of [0, 1]) sh(`ip -n ${nodeNs[i]} rule del from ${podCidr[i]} lookup 77 2>/dev/null; ip -n ${nodeNs[i]} route flush table 77 2>/dev/null`);
      kubeRouterDown();
      podsDown();
    });
    /**
     * kube-proxy's nat rules for one NodePort Service (externalTrafficPolicy Cluster) with its one endpoint on node-1,
     * as its iptables proxier writes them (pkg/proxy/iptables/proxier.go syncProxyRules, v1.30; chain hashes shortened),
     * through iptables-restore (iptables-nft, as on a current host).
     */
    const kubeProxyRules = (endpoint: string) => [
      '*nat',
      ...['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ', 'KUBE-EXT-ECHO', 'KUBE-SVC-ECHO', 'KUBE-SEP-ECHO'].map((c) => `:${c} - [0:0]`),
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
      '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
      '-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000',
      '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
      '-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000',
      '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
      `-A KUBE-NODEPORTS -m comment --comment "default/echo" -p udp -m udp --dport ${NODE_PORT} -j KUBE-EXT-ECHO`,
      '-A KUBE-EXT-ECHO -m comment --comment "masquerade traffic for default/echo external destinations" -j KUBE-MARK-MASQ',
      '-A KUBE-EXT-ECHO -j KUBE-SVC-ECHO',
      `-A KUBE-SVC-ECHO -m comment --comment "default/echo -> ${endpoint}:${POD_PORT}" -j KUBE-SEP-ECHO`,
      `-A KUBE-SEP-ECHO -s ${endpoint}/32 -m comment --comment "default/echo" -j KUBE-MARK-MASQ`,
      `-A KUBE-SEP-ECHO -p udp -m comment --comment "default/echo" -m udp -j DNAT --to-destination ${endpoint}:${POD_PORT}`,
      'COMMIT',
      '',
    ].join('\n');
    /** Where node-1 sends the pod's replies: out of eth0 (in clear), and into wg0 as IPIP with the pod as inner source. */
    const hex = (ip: string) => `0x${ip.split('.').map((o) => Number(o).toString(16).padStart(2, '0')).join('')}`;
    const replyCounters = (pod: string) => [
        `add table netdev ${NSP}r`,
        ...['clear', 'inwg', 'srcoverlay', 'srcunderlay'].map((c) => `add counter netdev ${NSP}r ${c}`),
        `add chain netdev ${NSP}r under { type filter hook egress device eth0 priority 0; }`,
        `add rule netdev ${NSP}r under ip saddr ${pod} udp sport ${POD_PORT} counter name clear`,
        `add chain netdev ${NSP}r tunnel { type filter hook egress device ${iface} priority 0; }`,
        // The inner IPv4 header follows the outer one: its source at byte 32, its protocol at byte 29.
        `add rule netdev ${NSP}r tunnel ip protocol 4 @nh,256,32 ${hex(pod)} @nh,232,8 17 counter name inwg`,
        // What kube-proxy's MASQUERADE on node-0 chose: the inner source of the requests arriving inside wg0.
        `add chain netdev ${NSP}r arrive { type filter hook ingress device ${iface} priority 0; }`,
        `add rule netdev ${NSP}r arrive ip protocol 4 @nh,256,32 ${hex(overlay[0])} @nh,232,8 17 counter name srcoverlay`,
        `add rule netdev ${NSP}r arrive ip protocol 4 @nh,256,32 ${hex(underlay[0])} @nh,232,8 17 counter name srcunderlay`,
      ].join('\n');
    const CLIENT = [
      'import socket, sys',
      'ok = 0',
      'for _ in range(int(sys.argv[3])):',
      '    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
      '    s.settimeout(1)',
      '    s.sendto(b"tw", (sys.argv[1], int(sys.argv[2])))',
      '    try:',
      '        ok += s.recv(64) == b"tw"',
      '    except OSError:',
      '        pass',
      '    s.close()',
      'print(ok)',
    ].join('\n');
    const SERVER = [
      'import socket, sys',
      's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
      's.bind((sys.argv[1], int(sys.argv[2])))',
      'while True:',
      '    data, peer = s.recvfrom(64)',
      '    s.sendto(data, peer)',
    ].join('\n');
    interface NodePortFigures { replies: string; clear: number; insideWg: number; srcOverlay: number; srcUnderlay: number }
    const nodePort = (): NodePortFigures => {
      const network = k0sNetworkOf(K0S_KUBE_ROUTER);
      const mtu = kubeRouterPodMtu(network);
      podsUp(network.podCIDR as string, mtu);
      for (const i of [0, 1]) {
        kubeRouterInject(i, network, mtu);
        // kube-router's policy routing: pod-sourced packets look up table 77 (pbr.go:23), which routes each peer's
        // node IP into its tunnel (network_routes_controller.go:886).
        nodeMust(i, [`ip rule add from ${podCidr[i]} lookup 77`, `ip route add ${overlay[1 - i]} dev ${tunnelName(overlay[1 - i])} table 77`]);
      }
      fs.writeFileSync(path.join(dir, 'udp-client.py'), CLIENT);
      fs.writeFileSync(path.join(dir, 'udp-echo.py'), SERVER);
      const started = must(sh(`ip netns exec ${podNs[1]} sh -c 'python3 ${dir}/udp-echo.py ${podIp[1]} ${POD_PORT} >/dev/null 2>&1 & echo $!; for t in $(seq 50); do ss -Hlun | grep -q ":${POD_PORT} " && exit 0; sleep 0.1; done; exit 1'`), 'echo server in pod-1');
      servers.push(Number(started.stdout.trim()));
      must(run('ip', ['netns', 'exec', nodeNs[0], 'iptables-restore'], { input: kubeProxyRules(podIp[1]) }), 'kube-proxy rules on node-0');
      must(sh(`ip netns exec ${nodeNs[1]} nft -f - <<'EOF'\n${replyCounters(podIp[1])}\nEOF`), 'reply counters on node-1');
      const client = must(sh(`ip netns exec ${lan} python3 ${dir}/udp-client.py ${underlay[0]} ${NODE_PORT} ${PINGS}`), 'client');
      const get = (name: string) => counter(nodeNs[1], 'netdev', name, `${NSP}r`);
      return { replies: `${client.stdout.trim()}/${PINGS}`, clear: get('clear'), insideWg: get('inwg'), srcOverlay: get('srcoverlay'), srcUnderlay: get('srcunderlay') };
    };

    const SNAT_TABLE = `tunnelwright-${iface}-kube-router`;
    const confOf = (i: number) => plan.nodes[`node-${i}`].host.files.find((f) => f.path === `/etc/wireguard/${iface}.conf`)!.content;
    it('the plan: wg0\'s PreUp loads an SNAT to the overlay address for what kube-proxy masquerades into tun-*, and every reply goes back inside wg0', () => {
      const conf = confOf(0);
      expect(conf).toContain(`PreUp = nft -f /etc/tunnelwright/${iface}-kube-router-snat.nft`);
      expect(conf).not.toContain('PostDown');
      // wg-quick ran that hook when beforeAll brought the plan's wg0 up.
      expect(node(0, `nft list table ip ${SNAT_TABLE}`).stdout).toContain(`snat to ${overlay[0]}`);
      const f = nodePort();
      figures.push(`k0s+kube-router NodePort via node-0 to pod-1, the plan (SNAT table): replies at the client ${f.replies}, requests arriving in ${iface} with the overlay source ${f.srcOverlay} / the underlay source ${f.srcUnderlay}, node-1 replies out of eth0 in clear ${f.clear}, inside ${iface} ${f.insideWg}`);
      expect(f.srcOverlay).toBe(PINGS);
      expect(f.srcUnderlay).toBe(0);
      expect(f.replies).toBe(`${PINGS}/${PINGS}`);
      expect(f.insideWg).toBe(PINGS);
      expect(f.clear).toBe(0);
    });

    it('control: the plan without that table (kube-proxy\'s MASQUERADE alone): the source is the underlay address and the pod replies in clear', () => {
      nodeMust(0, [`nft delete table ip ${SNAT_TABLE}`]);
      try {
        const f = nodePort();
        figures.push(`k0s+kube-router NodePort via node-0 to pod-1, control (no SNAT table): replies at the client ${f.replies}, requests arriving in ${iface} with the overlay source ${f.srcOverlay} / the underlay source ${f.srcUnderlay}, node-1 replies out of eth0 in clear ${f.clear}, inside ${iface} ${f.insideWg}`);
        expect(f.srcUnderlay).toBe(PINGS);
        expect(f.srcOverlay).toBe(0);
        expect(f.clear).toBe(PINGS);
        expect(f.insideWg).toBe(0);
      } finally {
        nodeMust(0, [`nft -f ${dir}/tw0/${iface}-kube-router-snat.nft`]);
      }
    });
  });

  describe('k0s + kube-router: the SNAT table across a wg0 restart', () => {
    const SNAT_TABLE = `tunnelwright-${iface}-kube-router`;
    const confPath = path.join(dir, 'etc0', `${iface}.conf`);
    const confOf = (i: number) => plan.nodes[`node-${i}`].host.files.find((f) => f.path === `/etc/wireguard/${iface}.conf`)!.content;
    const hasTable = () => node(0, `nft list table ip ${SNAT_TABLE}`).status === 0;
    /** wg-quick down, then up, on node-0 with the given wg0.conf; whether the table was there while wg0 was down, and after. */
    const restart = (conf: string) => {
      fs.writeFileSync(confPath, conf, { mode: 0o600 });
      try {
        must(inNode(0, `wg-quick down ${iface}`), 'wg-quick down');
        const whileDown = hasTable();
        must(inNode(0, `wg-quick up ${iface}`), 'wg-quick up');
        const afterUp = hasTable();
        must(sh(`for t in $(seq 20); do ip netns exec ${nodeNs[0]} ping -c1 -W1 ${overlay[1]} >/dev/null && exit 0; done; exit 1`), 'overlay ping after the restart');
        return { whileDown, afterUp };
      } finally {
        fs.writeFileSync(confPath, confOf(0), { mode: 0o600 });
      }
    };

    it('the plan (PreUp, no PostDown): the table is there while wg0 is down and after it is up again, so no flow is NATed to the underlay in between', () => {
      expect(hasTable()).toBe(true);
      const r = restart(confOf(0));
      figures.push(`k0s+kube-router SNAT table across wg-quick down/up, the plan: present while down ${r.whileDown}, after up ${r.afterUp}`);
      expect(r).toEqual({ whileDown: true, afterUp: true });
    });

    it('after `nft flush ruleset` (what nftables.service runs at start, reload and stop) the plan\'s unit, reloaded with nftables.service, loads the table again; control: nothing else does', () => {
      const unit = plan.nodes['node-0'].host.units.find((u) => u.name === `tunnelwright-${iface}-kube-router-snat.service`)!;
      expect(unit.content).toContain('ReloadPropagatedFrom=nftables.service\n');
      const execReload = /^ExecReload=(.+)$/m.exec(unit.content!)![1];
      try {
        nodeMust(0, ['nft flush ruleset']);
        const afterFlush = hasTable();
        must(inNode(0, execReload), 'the unit\'s ExecReload');
        const afterReload = hasTable();
        figures.push(`k0s+kube-router SNAT table after nft flush ruleset: present ${afterFlush} (control), after the unit's ExecReload ${afterReload}`);
        expect({ afterFlush, afterReload }).toEqual({ afterFlush: false, afterReload: true });
      } finally {
        // The flush took this test's counters too.
        must(sh(`ip netns exec ${nodeNs[0]} nft -f - <<'EOF'\n${wireCounters()}\nEOF`), 'counters on node-0');
        if (!hasTable()) must(inNode(0, execReload), 'the table back');
      }
    });

    it('control: the hooks before this (PostUp loads, PostDown deletes): the table is absent while wg0 is down', () => {
      const before = confOf(0).replace(/^PreUp = (nft -f .*)$/m, `PostUp = $1\nPostDown = nft delete table ip ${SNAT_TABLE} || true`);
      expect(before).toContain('PostDown = nft delete table');
      const r = restart(before);
      figures.push(`k0s+kube-router SNAT table across wg-quick down/up, control (PostDown delete): present while down ${r.whileDown}, after up ${r.afterUp}`);
      expect(r).toEqual({ whileDown: false, afterUp: true });
    });
  });

  describe('k3s + flannel (VXLAN)', () => {
    afterEach(() => {
      vxlanDown('flannel.1');
      podsDown();
    });
    const flannel = (config: Record<string, unknown>) => {
      const via = [0, 1].map((i) => flannelIface(config, i));
      // flannel's VXLAN MTU: the interface's less 50 (device.go:63).
      const mtu = ifaceMtu(0, via[0]) - 50;
      podsUp('10.42.0.0/16', mtu); // k3s's default cluster-cidr
      vxlanUp({ dev: 'flannel.1', vni: 1, port: 8472, mtu, via, vtep: [0, 1].map((i) => ifaceIp4(i, via[i])) });
      return { via, mtu };
    };

    it('the plan (flannel-iface: the overlay): VXLAN between overlay addresses rides inside WireGuard, none in clear on the underlay', () => {
      const config = [0, 1].map((i) => k3sConfigOf(K3S_FLANNEL, i));
      expect(config.map((c) => c['flannel-iface'])).toEqual([iface, iface]);
      const { via, mtu } = flannel(config[0]);
      expect(via).toEqual([iface, iface]);
      const f = record(`k3s+flannel, the plan (VXLAN on ${iface}, MTU ${mtu})`, pingPods());
      expect(f.pings).toBe(`${PINGS}/${PINGS}`);
      expect(f.echoArrived).toBe(PINGS);
      expect(f.tunnel.vxlan8472).toBeGreaterThanOrEqual(PINGS);
      expect(f.underlay.vxlan8472).toBe(0);
      expect(f.underlay.wireguard).toBeGreaterThanOrEqual(PINGS);
      expect(record(`k3s+flannel, the plan, DF at the pod MTU ${mtu}`, pingPods(mtu - 28)).pings).toBe(`${PINGS}/${PINGS}`);
    });

    it('control: the k3s config before the fix (no flannel-iface): VXLAN on the default-route NIC, pod traffic in clear on the underlay', () => {
      const config = { 'node-ip': overlay[0] };
      const { via } = flannel(config);
      expect(via).toEqual(['eth0', 'eth0']);
      const f = record('k3s+flannel, before (VXLAN on eth0)', pingPods());
      expect(f.pings).toBe(`${PINGS}/${PINGS}`);
      expect(f.underlay.vxlan8472).toBeGreaterThanOrEqual(PINGS);
      expect(f.tunnel.vxlan8472).toBe(0);
    });
  });

  describe('k0s + Calico (VXLAN)', () => {
    afterEach(() => {
      vxlanDown('vxlan.calico');
      podsDown();
    });
    const calico = (network: Record<string, unknown>) => {
      const via = [0, 1].map((i) => calicoIface(network, i));
      const mtu = (network.calico as { mtu?: number } | undefined)?.mtu ?? 1450; // k0s's default (calico.go DefaultCalico)
      podsUp(network.podCIDR as string, mtu);
      vxlanUp({ dev: 'vxlan.calico', vni: 4096, port: 4789, mtu, via, vtep: [0, 1].map((i) => ifaceIp4(i, via[i])) });
      return { via, mtu };
    };

    it('the plan (interface=<overlay>, MTU overlay − 50): VXLAN inside WireGuard, full-size packets pass', () => {
      const network = k0sNetworkOf(K0S_CALICO);
      const { via, mtu } = calico(network);
      expect(via).toEqual([iface, iface]);
      expect(mtu).toBe(wgMtu - 50);
      const f = record(`k0s+calico, the plan (VXLAN on ${iface}, MTU ${mtu})`, pingPods());
      expect(f.pings).toBe(`${PINGS}/${PINGS}`);
      expect(f.echoArrived).toBe(PINGS);
      expect(f.tunnel.vxlan4789).toBeGreaterThanOrEqual(PINGS);
      expect(f.underlay.vxlan4789).toBe(0);
      expect(record(`k0s+calico, the plan, DF at the pod MTU ${mtu}`, pingPods(mtu - 28)).pings).toBe(`${PINGS}/${PINGS}`);
    });

    it('control: Calico with k0s\'s defaults (first-found autodetection, no MTU from the overlay): VXLAN on eth0, pod traffic in clear', () => {
      const { via } = calico({ podCIDR: '10.244.0.0/16', provider: 'calico', calico: { mode: 'vxlan' } });
      expect(via).toEqual(['eth0', 'eth0']);
      const f = record('k0s+calico, before (first-found: VXLAN on eth0)', pingPods());
      expect(f.pings).toBe(`${PINGS}/${PINGS}`);
      expect(f.underlay.vxlan4789).toBeGreaterThanOrEqual(PINGS);
      expect(f.tunnel.vxlan4789).toBe(0);
    });
  });
});
