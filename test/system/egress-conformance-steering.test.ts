import * as fs from 'node:fs';
import * as path from 'node:path';
import { EgressConformanceProps, EgressSteeringProps, generateKeyPair, HostPlan, planEgressConformance, planEgressSteering } from '../../src';
import { RESTEER_PATH } from '../../src/render/egress-steering';
import { ConformanceLab, nodeUnitStandIns, runConformance } from './conformance-lab';
import { inPod, Pod, PodFile, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { describeWithTools, echoServer, must, secondsUntilTrue, sh, tmpdir } from './tools';

/**
 * EgressConformance's own script, run unchanged against EgressSteering's gateway node in network namespaces: the
 * synthesized host files (kill switch, WireGuard config with its re-steer hooks, the re-steer hook) in a "node" pod,
 * the tunnel unit as systemd runs it (a systemctl stand-in that runs wireguard-tools' own wg-quick@.service
 * ExecStart/ExecStop lines; a systemd-run stand-in for the dead-man timer), a real wireguard-go peer, and stand-ins for
 * what cannot run here:
 * - kubectl: `exec deploy/<d> -c <c>` enters the pod playing that Deployment (the node agent: the node itself, as it
 *   is hostPID and hostNetwork), `get node` reads the label the node's re-steer hook wrote;
 * - the steering's consumer, Cilium's egress gateway: on each change of the CiliumNode's uplink label it caches the
 *   egress interface by the ifindex in the label's value `<address>-<ifindex>` and the egress IP by its address (as
 *   cilium bpf/lib/egress_gateway.h `egress_gw_fib_lookup_and_redirect` redirects to the policy's cached
 *   `egress_ifindex`), and SNATs the vpn-class probe to that IP. It is the less forgiving consumer: a cached interface
 *   that is gone is not a drop here but a fall-through to the node's main table (the WAN), where only the
 *   kill switch stops the packet (the `#40406` case: SNATed to the tunnel IP, leaving by eth0).
 *
 *   vpn probe 10.42.0.3 ─┐                ┌─ tun0 ──▶ VPN server 198.18.0.2 (wg 10.2.0.1, DNS) ──▶ echo 198.18.0.3:8080
 *   direct probe 10.42.0.4 ┴─ node br0 ─── eth0 192.168.1.2 (masquerade of the pods) ── router 198.18.0.1 ──▶ echo
 *
 * The echo target is a name (`echo.test`): the vpn probe resolves it through the tunnel (the VPN's DNS), the direct probe
 * through the node. The node sits behind a home router (192.168.1.1, WAN 198.18.0.1) that masquerades its LAN and
 * routes nothing back to any other range: a vpn-class packet that leaves by the node's WAN with the tunnel's address
 * reaches the echo host and is never answered, so no echo can tell it from a drop. The check counts it where it leaves
 * (its own nft counter on the node's eth0); the echo side counts what arrives from the tunnel's address as the lab's
 * own evidence.
 */
const RESTORE_UNIT_PREFIX = 'tunnelwright-conformance-restore-';

describeWithTools('EgressConformance against the EgressSteering gateway node (WireGuard host tunnel, re-steer hook)', [
  'ip', 'wg', 'wg-quick', 'wireguard-go', 'nft', 'dnsmasq', 'python3', 'nsenter', 'unshare', 'curl', 'shellcheck',
  '/lib/systemd/system/wg-quick@.service',
], () => {
  const id = process.pid % 10000;
  // TW_LAB_NS_PREFIX: a prefix of the runner's own for the namespaces (several people share the machine).
  const pre = `${process.env.TW_LAB_NS_PREFIX ?? ''}c29${id}`;
  const ns = { node: `${pre}-node`, rt: `${pre}-rt`, inet: `${pre}-inet`, vpn: `${pre}-vpn`, vp: `${pre}-vp`, dp: `${pre}-dp` };
  const dir = tmpdir('tw-conformance-st-');
  const server = generateKeyPair();
  const gateway = generateKeyPair();
  const steering: EgressSteeringProps = {
    gatewayNode: 'gw-1',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    namespaces: ['media'],
    tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/etc/wireguard/keys/vpn.key' }, peer: { publicKey: server.publicKey, endpoint: '198.18.0.2:51820' } },
  };
  const props: EgressConformanceProps = {
    namespaces: ['media'],
    destructive: true,
    targets: ['http://echo.test:8080/'],
    wanIps: ['198.18.0.1'],
    vpnCidrs: ['198.18.0.2/32'],
    recoverySeconds: 15,
    requestTimeoutSeconds: 3,
    egressSteerings: [{ steering, probeNamespace: 'media' }],
  };
  const LABEL = 'egress-steering vpn-egress';
  const script = (planEgressConformance(props).values.egressConformance as { script: string }).script;
  const host: HostPlan = planEgressSteering(steering).hosts[0];
  const execLines = (unit: string, key = 'ExecStart') => [...host.units.find((u) => u.name === unit)!.content!.matchAll(new RegExp(`^${key}=(.+)$`, 'gm'))].map((m) => m[1]);
  const resteer = host.files.find((f) => f.path === RESTEER_PATH)!.content;
  let node: Pod;
  let vp: Pod;
  let dp: Pod;
  const inNs = (n: string, cmd: string, timeout = 30_000) => sh(`ip netns exec ${n} bash -c ${quote(cmd)}`, { timeout, env: { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' } });
  const leaked = () => Number(/packets (\d+)/.exec(inNs(ns.inet, 'nft list counter inet wan leaked').stdout)?.[1] ?? NaN);
  const resetLeak = () => must(inNs(ns.inet, 'nft reset counter inet wan leaked >/dev/null'), 'reset counter');

  /** The node's kubectl (the re-steer hook's): `label <kind> <node> [--overwrite] <key>=<value> | <key>-`, kept per kind. */
  const nodeKubectl = `#!/bin/bash
echo "$*" >> /tmp/kubectl.log
[ "$1" = label ] || exit 1
mkdir -p /run/tw-labels
case \${@: -1} in
  *=*) printf '%s' "\${@: -1}" | cut -d= -f2- > "/run/tw-labels/$2.partial" && mv "/run/tw-labels/$2.partial" "/run/tw-labels/$2" ;;
  *-) rm -f "/run/tw-labels/$2" ;;
esac
`;
  /**
   * Cilium's egress gateway on the gateway node, as far as the check depends on it: policy state recomputed on each
   * change of the CiliumNode's label, the egress interface cached by ifindex (a route in its own table: the kernel
   * drops it with the device, and it comes back only when the label changes again), the egress IP for the SNAT.
   */
  const consumer = `last=
while :; do
  v=$(cat /run/tw-labels/ciliumnode 2>/dev/null)
  if [ "$v" != "$last" ]; then
    last=$v
    if [ -n "$v" ]; then
      idx=\${v##*-} addr=\${v%-*}
      dev=$(ip -o link show | awk -F': ' -v i="$idx" '$1 == i { sub(/@.*/, "", $2); print $2 }')
      printf 'table ip c29cilium\\ndelete table ip c29cilium\\ntable ip c29cilium {\\n chain post {\\n  type nat hook postrouting priority 99;\\n  ip saddr 10.42.0.3 snat to %s\\n }\\n}\\n' "$addr" | nft -f -
      [ -n "$dev" ] && ip route replace default dev "$dev" table 2029
      echo "label $v: egress ifindex $idx (\${dev:-gone}), egress IP $addr" >> /tmp/consumer.log
    else
      echo "label removed: state kept" >> /tmp/consumer.log
    fi
  fi
  sleep 0.1
done`;

  const enter = (p: Pod) => `nsenter -t ${p.pid} -m -u -p -n -r -w`;
  const lab = new ConformanceLab(dir, script, leaked);
  const tunnelUp = () => inPod(node, 'ip link show tun0').status === 0;
  const waitFor = (what: string, cond: () => boolean, seconds = 30) => {
    for (let i = 0; i < seconds * 5; i++) {
      if (cond()) return;
      sh('sleep 0.2');
    }
    throw new Error(`timed out waiting for ${what}:\n${podLog(node, 'unit.log').slice(-2000)}\n${podLog(node, 'consumer.log').slice(-2000)}`);
  };
  const viaTunnel = () => inPod(vp, 'curl -s -4 --max-time 2 http://echo.test:8080/').stdout.trim() === '198.18.0.2';
  const onHost = (file: string, cmd: string) => fs.writeFileSync(path.join(dir, file), `#!/bin/bash\n${cmd}\n`, { mode: 0o755 });

  /** The lab as synthesized (every control's change undone), the tunnel up and steered, the WAN counter at 0. */
  const designAsSynthesized = () => {
    for (const f of ['on-stop.sh', 'on-start.sh']) fs.rmSync(path.join(dir, f), { force: true });
    inNs(ns.inet, 'iptables -D INPUT -p tcp --dport 8080 -j DROP 2>/dev/null; true');
    must(inPod(node, [
      'rm -f /tmp/lab/start-noop',
      `echo ${Buffer.from(resteer).toString('base64')} | base64 -d > ${RESTEER_PATH} && chmod 755 ${RESTEER_PATH}`,
      execLines('tunnelwright-killswitch.service')[0],
      'systemctl start wg-quick@tun0.service',
      // What the hook's timer does within a minute: the label names the live tun0 again (after the re-steer control).
      `KUBECTL=/usr/local/bin/kubectl ${RESTEER_PATH}`,
    ].join(' && ')), 'design as synthesized');
    waitFor('vpn-class egress through the tunnel', viaTunnel);
    resetLeak();
  };

  beforeAll(() => {
    const startEcho = echoServer(dir, ns.inet);
    // What arrives at the WAN side from the tunnel's address (before any filter); that address routed back to the node.
    fs.writeFileSync(path.join(dir, 'wan.nft'), 'table inet wan {\n  counter leaked {}\n  chain prerouting {\n    type filter hook prerouting priority -300;\n    ip saddr 10.2.0.0/24 counter name "leaked"\n  }\n}\n');
    fs.writeFileSync(path.join(dir, 'server.key'), `${server.privateKey}\n`, { mode: 0o600 });
    must(sh([
      ...Object.values(ns).map((n) => `ip netns add ${n} && ip -n ${n} link set lo up`),
      `ip -n ${ns.inet} link add br0 type bridge && ip -n ${ns.inet} addr add 198.18.0.3/24 dev br0 && ip -n ${ns.inet} link set br0 up`,
      ...([[ns.rt, '198.18.0.1'], [ns.vpn, '198.18.0.2']] as const).map(([n, ip], i) =>
        `ip link add eth0 netns ${n} type veth peer name p${i} netns ${ns.inet} && ip -n ${ns.inet} link set p${i} master br0 up && ip -n ${n} addr add ${ip}/24 dev eth0 && ip -n ${n} link set eth0 up`),
      `ip netns exec ${ns.inet} nft -f ${dir}/wan.nft`,
      // The home router: the node on its LAN, its LAN masqueraded to its WAN address, nothing routed back to any other
      // range (the tunnel's). It forwards what its LAN sends, whatever the source (rp_filter off, as the audit's did).
      `ip link add lan0 netns ${ns.rt} type veth peer name eth0 netns ${ns.node}`,
      `ip -n ${ns.rt} addr add 192.168.1.1/24 dev lan0 && ip -n ${ns.rt} link set lan0 up && ip -n ${ns.node} addr add 192.168.1.2/24 dev eth0 && ip -n ${ns.node} link set eth0 up`,
      `ip -n ${ns.rt} route add default via 198.18.0.3`,
      ...(['all', 'default', 'lan0', 'eth0'].map((c) => `ip netns exec ${ns.rt} sysctl -qw net.ipv4.conf.${c}.rp_filter=0`)),
      `ip netns exec ${ns.rt} sysctl -qw net.ipv4.ip_forward=1`,
      `printf 'table ip c29rt {\n chain post {\n  type nat hook postrouting priority 100;\n  ip saddr 192.168.1.0/24 oifname "eth0" masquerade\n }\n}\n' | ip netns exec ${ns.rt} nft -f -`,
      // The node: the pods' bridge, forwarding, a default route by the router, its masquerade of the pods.
      `ip -n ${ns.node} route add default via 192.168.1.1`,
      `ip -n ${ns.node} link add br0 type bridge && ip -n ${ns.node} addr add 10.42.0.1/24 dev br0 && ip -n ${ns.node} link set br0 up`,
      ...(['all', 'default'].map((c) => `ip netns exec ${ns.node} sysctl -qw net.ipv4.conf.${c}.rp_filter=0`)),
      `ip netns exec ${ns.node} sysctl -qw net.ipv4.ip_forward=1`,
      `printf 'table ip c29node {\\n chain post {\\n  type nat hook postrouting priority 100;\\n  ip saddr 10.42.0.0/16 oifname "eth0" masquerade\\n }\\n}\\n' | ip netns exec ${ns.node} nft -f -`,
      ...([[ns.vp, '10.42.0.3'], [ns.dp, '10.42.0.4']] as const).flatMap(([n, ip], i) => [
        `ip link add eth0 netns ${n} type veth peer name pod${i} netns ${ns.node}`,
        `ip -n ${ns.node} link set pod${i} master br0 up`,
        `ip -n ${n} addr add ${ip}/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.42.0.1`,
      ]),
      // The consumer's selector: the vpn-class probe, by its own table.
      `ip -n ${ns.node} rule add from 10.42.0.3 iif br0 lookup 2029 priority 100`,
      // The VPN server: a WireGuard peer that NATs to its WAN address, and the VPN's DNS on its tunnel address.
      `ip netns exec ${ns.vpn} sysctl -qw net.ipv4.ip_forward=1`,
      `ip netns exec ${ns.vpn} env WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 wireguard-go c29${id}s >/dev/null 2>&1`,
      `ip netns exec ${ns.vpn} wg set c29${id}s private-key ${dir}/server.key listen-port 51820 peer ${gateway.publicKey} allowed-ips 10.2.0.2/32`,
      `ip -n ${ns.vpn} addr add 10.2.0.1/24 dev c29${id}s && ip -n ${ns.vpn} link set c29${id}s up`,
      `ip netns exec ${ns.vpn} iptables -t nat -A POSTROUTING -s 10.2.0.0/24 -o eth0 -j MASQUERADE`,
    ].join(' && '), { timeout: 60_000 }), 'namespaces');
    const dns = (n: string, addr: string, tag: string) => `ip netns exec ${n} setsid dnsmasq --keep-in-foreground --no-hosts --no-resolv --bind-interfaces --listen-address=${addr} --pid-file=${dir}/${tag}.pid --address=/echo.test/198.18.0.3 </dev/null >${dir}/${tag}.log 2>&1 &`;
    must(sh(`${startEcho}${dns(ns.vpn, '10.2.0.1', 'vpndns')} ${dns(ns.node, '10.42.0.1', 'nodedns')} sleep 0.5; echo ok`), 'servers');
    node = startPod(dir, 'node', ns.node, 'gw-1', {
      ...Object.fromEntries(host.files.map((f) => [f.path, { content: f.content, mode: f.mode } as PodFile])),
      '/etc/wireguard/keys/vpn.key': { content: `${gateway.privateKey}\n`, mode: 0o600 },
      '/usr/local/bin/kubectl': { content: nodeKubectl, mode: 0o755 },
      ...nodeUnitStandIns('/usr/local/bin/kubectl'),
      '/tmp/.keep': { content: '' },
    });
    // The vpn probe asks the VPN's DNS (through the tunnel); the direct probe the node's.
    vp = startPod(dir, 'vp', ns.vp, 'egress-conformance-s0-vpn-6c9d8-k2x7q', { '/etc/resolv.conf': { content: 'nameserver 10.2.0.1\noptions timeout:5 attempts:2\n' } });
    dp = startPod(dir, 'dp', ns.dp, 'egress-conformance-s0-direct-6c9d8-p4z2w', { '/etc/resolv.conf': { content: 'nameserver 10.42.0.1\n' } });
    // Boot order: the kill switch, the secret units, the tunnel unit; the consumer watching the label.
    must(inPod(node, execLines('tunnelwright-killswitch.service')[0]), 'kill switch');
    for (const u of host.units.filter((x) => x.name.startsWith('tunnelwright-secret-'))) must(inPod(node, execLines(u.name)[0]), u.name);
    must(inPod(node, 'mkdir -p /tmp/lab && systemctl start wg-quick@tun0.service'), `tunnel unit:\n${podLog(node, 'unit.log')}`);
    startInPod(node, consumer, 'consumer.out');
    // On the lab's host after the node agent's `systemctl stop|start` of the tunnel: <dir>/on-stop.sh, <dir>/on-start.sh.
    lab.writeKubectl({
      deployments: {
        'media/egress-conformance-s0-vpn/probe': enter(vp),
        'media/egress-conformance-s0-direct/probe': enter(dp),
        'media/egress-conformance-s0-agent/agent': enter(node),
      },
      nodeAgent: { node: 'gw-1', labels: `${enter(node)} cat /run/tw-labels/node 2>/dev/null` },
      podIps: { 'media/egress-conformance-s0-vpn': '10.42.0.3', 'media/egress-conformance-s0-direct': '10.42.0.4' },
      afterExec: [
        ['"systemctl stop wg-quick"*', `[ -x ${dir}/on-stop.sh ] && ${dir}/on-stop.sh >/dev/null 2>&1`],
        ['"systemctl start wg-quick"*', `[ -x ${dir}/on-start.sh ] && ${dir}/on-start.sh >/dev/null 2>&1`],
      ],
    });
    designAsSynthesized();
  }, 180_000);

  afterAll(() => {
    lab.printRuns('egress conformance (EgressSteering) runs');
    for (const p of [vp, dp, node]) if (p) stopPod(p);
    for (const n of Object.values(ns)) sh(`ip netns pids ${n} | xargs -r kill -9; ip netns del ${n} 2>/dev/null`);
  });

  const ifindex = () => inPod(node, 'cat /sys/class/net/tun0/ifindex').stdout.trim();
  const label = () => inPod(node, 'cat /run/tw-labels/node 2>/dev/null').stdout.trim();
  const timers = () => inPod(node, 'ls /run/tw-timers 2>/dev/null').stdout.trim();

  it('the script is shellcheck-clean and refuses to run without --destructive (exit 2, no kubectl call)', () => {
    fs.writeFileSync(path.join(dir, 'lint.sh'), script);
    const lint = sh(`shellcheck -s sh ${dir}/lint.sh`);
    expect(lint.output).toBe('');
    fs.writeFileSync(lab.kubectlLog, '');
    const r = runConformance(lab, { args: [] });
    expect(r.status).toBe(2);
    expect(fs.readFileSync(lab.kubectlLog, 'utf8')).toBe('');
  });

  it('passes on the design as synthesized: each requirement with its evidence, the label follows the new tun0, 0 packets at the WAN, the dead-man disarmed', () => {
    designAsSynthesized();
    const before = ifindex();
    const r = runConformance(lab, { record: 'design as synthesized' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const after = ifindex();
    expect(after).not.toBe(before);
    const l = r.lines;
    expect(l[0]).toBe(`== ${LABEL}`);
    expect(l[1]).toBe(`PASS R1 [${LABEL}]: vpn-class egress: the echo saw 198.18.0.2, inside 198.18.0.2/32`);
    expect(l[2]).toBe(`PASS R2 [${LABEL}]: direct-class egress: the echo saw 198.18.0.1, one of 198.18.0.1`);
    expect(l[3]).toMatch(new RegExp(`^ {3}dead-man restore ${RESTORE_UNIT_PREFIX}\\d+-\\d+-1 armed: it starts the tunnel 63s from now unless this run does first$`));
    expect(l[4]).toBe(`   tunnel stopped (tun0 ifindex was ${before})`);
    expect(l[5]).toBe(`PASS R3 [${LABEL}]: tunnel stopped: the vpn-class request got no answer within 3s while the direct-class control at the same moment was answered from 198.18.0.1 (no vpn-class request reached the echo by the WAN); 0 vpn-class packets left by eth0 (source 10.2.0.2 10.42.0.3) (each name pinned to the address the direct class resolved: echo.test:8080:198.18.0.3)`);
    expect(l[6]).toMatch(new RegExp(`^PASS R4 \\[${LABEL}\\]: tunnel started: vpn-class egress back through the tunnel after \\d+s \\(the echo saw 198\\.18\\.0\\.2; bound 15s\\) from a new interface \\(tun0 ifindex ${before} -> ${after}, node gw-1 tunnelwright\\.dev/egress-uplink=10\\.2\\.0\\.2-${after}\\)$`));
    expect(l.slice(7)).toEqual([`RESTORED [${LABEL}]: the tunnel is running again`, 'node agent media/egress-conformance-s0-agent scaled back to 0 replicas', 'conformance: PASS (every requirement holds)']);
    expect(lab.outputs['design as synthesized'].leakedAtWan).toBe(0);
    expect(timers()).toBe('');
    expect(tunnelUp()).toBe(true);
  });

  /** The packets the check says it counted leaving by the WAN (its R3 line), or NaN. */
  const countedByCheck = (lines: string[]) => Number(/ R3 .*?(\d+) vpn-class packet/.exec(lines.find((x) => x.includes(' R3 ')) ?? '')?.[1] ?? NaN);
  const noCounterTable = () => inPod(node, 'nft list table netdev tunnelwright_conformance').status !== 0;

  it('control: the kill switch gone (its nft table deleted, its 5210 rule too) behind a router that routes nothing back: no answer, and R3 fails on the packets the check counted leaving by the WAN', () => {
    designAsSynthesized();
    must(inPod(node, 'nft delete table inet tunnelwright_killswitch && while ip rule del priority 5210 2>/dev/null; do :; done'), 'kill switch gone');
    const r = runConformance(lab, { record: 'kill switch gone' });
    expect(r.status).toBe(1);
    expect(r.lines.filter((x) => x.startsWith('FAIL'))).toEqual([
      expect.stringMatching(new RegExp(`^FAIL R3 \\[${LABEL}\\]: tunnel stopped: \\d+ vpn-class packet\\(s\\) left by eth0 \\(source 10\\.2\\.0\\.2 10\\.42\\.0\\.3\\) while the tunnel was stopped`)),
    ]);
    expect(countedByCheck(r.lines)).toBeGreaterThan(0);
    expect(lab.outputs['kill switch gone'].leakedAtWan).toBeGreaterThan(0);
    expect(noCounterTable()).toBe(true);
    expect(tunnelUp()).toBe(true);
  });

  it('control: the same leak with the check\'s WAN counter taken out: the check passes R3 and exits 0 while the packets reach the echo host (issue 45\'s finding)', () => {
    designAsSynthesized();
    must(inPod(node, 'nft delete table inet tunnelwright_killswitch && while ip rule del priority 5210 2>/dev/null; do :; done'), 'kill switch gone');
    const uncounted = script.replace('if [ "$kind" = steering ]; then\n    if ! got=$(wan_counter_install', 'if [ "$kind" = no-counter ]; then\n    if ! got=$(wan_counter_install');
    expect(uncounted).not.toBe(script);
    const r = runConformance(lab, { check: uncounted, record: 'kill switch gone, check without its WAN counter (control)' });
    expect(r.lines.filter((x) => x.includes(' R3 '))).toEqual([expect.stringMatching(/^PASS R3 /)]);
    expect(r.status).toBe(0);
    expect(lab.outputs['kill switch gone, check without its WAN counter (control)'].leakedAtWan).toBeGreaterThan(0);
  });

  it('control: the kill switch gone and the check without its pinned address nor its WAN counter: the vpn class\'s lookup hangs (through the stopped tunnel) and R3 passes on a leak; with the counter alone it fails', () => {
    designAsSynthesized();
    must(inPod(node, 'nft delete table inet tunnelwright_killswitch && while ip rule del priority 5210 2>/dev/null; do :; done'), 'kill switch gone');
    const unpinned = script.replace(/ --resolve "\$pin"/g, '');
    expect(unpinned).not.toBe(script);
    const uncounted = unpinned.replace('if [ "$kind" = steering ]; then\n    if ! got=$(wan_counter_install', 'if [ "$kind" = no-counter ]; then\n    if ! got=$(wan_counter_install');
    expect(uncounted).not.toBe(unpinned);
    const r = runConformance(lab, { check: uncounted, record: 'kill switch gone, check without --resolve nor its counter (control)' });
    expect(r.lines.filter((x) => x.includes(' R3 '))).toEqual([expect.stringMatching(/^PASS R3 /)]);
    expect(r.status).toBe(0);
    // The lookup itself (to the VPN's DNS, 10.2.0.1) leaves by the WAN once the tunnel is gone: the counter sees it.
    designAsSynthesized();
    must(inPod(node, 'nft delete table inet tunnelwright_killswitch && while ip rule del priority 5210 2>/dev/null; do :; done'), 'kill switch gone');
    const counted = runConformance(lab, { check: unpinned, record: 'kill switch gone, check without --resolve' });
    expect(counted.status).toBe(1);
    expect(countedByCheck(counted.lines)).toBeGreaterThan(0);
  });

  it('control: the tunnel never restarted (the unit\'s start does nothing): R4 fails after the bound', () => {
    designAsSynthesized();
    must(inPod(node, 'touch /tmp/lab/start-noop'), 'start-noop');
    const r = runConformance(lab, { record: 'tunnel never restarted' });
    must(inPod(node, 'rm -f /tmp/lab/start-noop'), 'start again');
    expect(r.status).toBe(1);
    expect(r.lines.filter((x) => x.startsWith('FAIL'))).toEqual([
      expect.stringMatching(new RegExp(`^FAIL R4 \\[${LABEL}\\]: tunnel started: vpn-class egress not back inside 198\\.18\\.0\\.2/32 within 15s \\(tun0 ifindex \\d+ -> none, node gw-1 tunnelwright\\.dev/egress-uplink=none\\)$`)),
    ]);
  });

  it('control: the re-steer not run (the hook a no-op): the label and the consumer stay on the old tun0, and R4 fails', () => {
    designAsSynthesized();
    const before = ifindex();
    must(inPod(node, `printf '#!/bin/sh\\nexit 0\\n' > ${RESTEER_PATH}`), 'no re-steer');
    const r = runConformance(lab, { record: 're-steer not run' });
    expect(r.status).toBe(1);
    expect(label()).toBe(`10.2.0.2-${before}`);
    expect(r.lines.filter((x) => x.startsWith('FAIL'))).toEqual([
      expect.stringMatching(new RegExp(`^FAIL R4 \\[${LABEL}\\]: tunnel started: vpn-class egress not back inside 198\\.18\\.0\\.2/32 within 15s \\(tun0 ifindex ${before} -> (?!${before}\\b)\\d+, node gw-1 tunnelwright\\.dev/egress-uplink=10\\.2\\.0\\.2-${before}\\)$`)),
    ]);
    expect(lab.outputs['re-steer not run'].leakedAtWan).toBe(0);
  });

  it('control: the echo down while the tunnel is stopped: R3 fails as an echo outage, never as a kill switch', () => {
    designAsSynthesized();
    onHost('on-stop.sh', `ip netns exec ${ns.inet} iptables -I INPUT -p tcp --dport 8080 -j DROP`);
    onHost('on-start.sh', `ip netns exec ${ns.inet} iptables -D INPUT -p tcp --dport 8080 -j DROP`);
    const r = runConformance(lab, { record: 'echo down while stopped' });
    expect(r.status).toBe(1);
    expect(r.lines.filter((x) => x.startsWith('FAIL'))).toEqual([`FAIL R3 [${LABEL}]: tunnel stopped: the direct-class control got no answer either: an echo outage, not a proven kill switch`]);
  });

  it('restores the tunnel when interrupted while it is stopped (SIGTERM in R3), says so, and disarms the dead-man', () => {
    designAsSynthesized();
    const { lines } = runConformance(lab, { interrupt: 'TERM', record: 'interrupted while stopped (SIGTERM)' });
    expect(lines).toContain('interrupted');
    expect(lines).toContain(`RESTORED [${LABEL}]: the tunnel was started again after a failed or interrupted step`);
    expect(lines.slice(-1)).toEqual(['status 1']);
    expect(tunnelUp()).toBe(true);
    expect(timers()).toBe('');
  });

  it('the run killed outright while the tunnel is stopped (SIGKILL: no trap runs): the dead-man timer on the node starts the tunnel; control: without it the tunnel stays stopped', () => {
    const killed = (check: string, what: string) => {
      designAsSynthesized();
      const r = runConformance(lab, { check, env: { DEADMAN_SECONDS: '6' }, interrupt: 'KILL', record: what });
      const lines = [...r.lines];
      const downAfterKill = !tunnelUp();
      // DEADMAN_SECONDS is 6: polled for up to 20 s, so a loaded machine's slow start is not a missing restore.
      const upAfter = secondsUntilTrue(tunnelUp, 20);
      const upLater = !Number.isNaN(upAfter);
      r.lines.push(`tunnel down right after the kill: ${downAfterKill}; up within 20 s: ${upLater}${upLater ? ` (after ${upAfter.toFixed(1)} s)` : ''}`);
      return { lines, downAfterKill, upLater };
    };
    const armed = killed(script, 'killed (SIGKILL) while stopped');
    expect(armed.lines.slice(-1)).toEqual(['status 137']);
    expect(armed.downAfterKill).toBe(true);
    expect(armed.upLater).toBe(true);
    expect(inPod(node, 'cat /tmp/systemctl.log').stdout).toMatch(new RegExp(`timer ${RESTORE_UNIT_PREFIX}\\d+-\\d+-1 elapsed\\n`));
    waitFor('vpn-class egress back through the tunnel after the dead-man', viaTunnel);
    // Control: the same kill, the check without its dead-man (arming is a no-op).
    const disarmedCheck = script.replace(/systemd-run --quiet --collect --unit="\$7" --on-active="\$dm_secs" --timer-property=RemainAfterElapsed=no systemctl start "\$6"/, 'true');
    expect(disarmedCheck).not.toBe(script);
    const none = killed(disarmedCheck, 'killed (SIGKILL) while stopped, no dead-man (control)');
    expect(none.downAfterKill).toBe(true);
    expect(none.upLater).toBe(false);
  });

});
