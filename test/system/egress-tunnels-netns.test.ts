import * as fs from 'node:fs';
import * as path from 'node:path';
import { EgressSteeringProps, generateKeyPair, HostPlan, planEgressSteering } from '../../src';
import { OPENVPN_DOWN_PATH, OPENVPN_PIN_PATH, OPENVPN_UP_PATH, RESTEER_PATH } from '../../src/render/egress-steering';
import { KILL_SWITCH_NFT_PATH } from '../../src/render/kill-switch';
import { inPod, Pod, PodFile, podLog, quote, startInPod, startPod, stopPod } from './pods';
import { describeWithTools, must, sh, tmpdir } from './tools';

/**
 * EgressSteering's gateway node over its lifetime, in network namespaces: the synthesized host files placed where
 * the host has them (a "node" pod: network, mount, UTS and PID namespaces over an overlay), the synthesized unit
 * command lines run as systemd would, a real OpenVPN server (or a wireguard-go peer) on the far side, and a kubectl
 * stand-in that records what the re-steer hook patches.
 *
 *   node pod (eth0 198.18.0.1, tun0) ── internet bridge 198.18.0.0/24 ── VPN server 198.18.0.2
 *                                              └── the WAN side 198.18.0.3: packets from the tunnel's addresses counted here
 */
const common: PodFile = { content: '#!/bin/sh\necho "$*" >> /tmp/kubectl.log\n', mode: 0o755 };
/** The hook's kubectl, named explicitly (a real kubectl may come earlier on the PATH). */
const KUBECTL_STUB = '/usr/local/bin/kubectl';
const CYCLES = 5;

/** The network, the server's namespace and the helpers both tunnel types share. */
function world(tag: string) {
  const id = `${tag}${process.pid % 10000}`;
  const ns = { node: `${id}-node`, inet: `${id}-inet`, vpn: `${id}-vpn` };
  const dir = tmpdir(`tw-${tag}-`);
  const inNs = (n: string, cmd: string, timeout = 30_000) => sh(`ip netns exec ${n} bash -c ${quote(cmd)}`, { timeout, env: { WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' } });
  const setup = () => {
    // The WAN side counts what arrives from the tunnels' address ranges (the node may send it only through the tunnel),
    // and what the node sends to 198.18.0.99, the .ovpn's first, wrong remote (an address here: nothing answers).
    fs.writeFileSync(path.join(dir, 'wan.nft'), [
      'table inet wan {', '  counter leaked {}', '  counter wrong_remote {}',
      // At prerouting, before the reverse-path filter (the WAN side has no route back to those ranges) can drop them.
      '  chain prerouting {', '    type filter hook prerouting priority -300;', '    ip saddr { 10.8.0.0/24, 10.2.0.0/24 } counter name "leaked"', '    ip daddr 198.18.0.99 udp dport 1194 counter name "wrong_remote"', '  }', '}', '',
    ].join('\n'));
    must(sh([
    ...Object.values(ns).map((n) => `ip netns add ${n} && ip -n ${n} link set lo up`),
    `ip -n ${ns.inet} link add br0 type bridge && ip -n ${ns.inet} addr add 198.18.0.3/24 dev br0 && ip -n ${ns.inet} addr add 198.18.0.99/32 dev br0 && ip -n ${ns.inet} link set br0 up`,
    ...([[ns.node, '198.18.0.1'], [ns.vpn, '198.18.0.2']] as const).map(([n, ip], i) =>
      `ip link add eth0 netns ${n} type veth peer name p${i} netns ${ns.inet} && ip -n ${ns.inet} link set p${i} master br0 up && ip -n ${n} addr add ${ip}/24 dev eth0 && ip -n ${n} link set eth0 up`),
    `ip netns exec ${ns.inet} nft -f ${dir}/wan.nft`,
  ].join(' && '), { timeout: 60_000 }), 'namespaces');
  };
  const counter = (name: string) => Number(/packets (\d+)/.exec(inNs(ns.inet, `nft list counter inet wan ${name}`).stdout)?.[1] ?? NaN);
  const reset = (name: string) => must(inNs(ns.inet, `nft reset counter inet wan ${name} >/dev/null`), 'reset counter');
  const teardown = (pods: (Pod | undefined)[]) => {
    for (const p of pods) if (p) stopPod(p);
    for (const n of Object.values(ns)) sh(`ip netns pids ${n} | xargs -r kill -9; ip netns del ${n} 2>/dev/null`);
  };
  return { ns, dir, inNs, setup, counter, reset, teardown };
}

/** The host plan's files where the node has them, and a kubectl that records its arguments. */
function nodeFiles(host: HostPlan, extra: Record<string, PodFile> = {}): Record<string, PodFile> {
  return { ...Object.fromEntries(host.files.map((f) => [f.path, { content: f.content, mode: f.mode }])), '/usr/local/bin/kubectl': common, ...extra };
}

/** A unit's ExecStart / ExecStartPre lines (what systemd runs). */
function execLines(host: HostPlan, unit: string, key = 'ExecStart'): string[] {
  const text = host.units.find((u) => u.name === unit)!.content!;
  return [...text.matchAll(new RegExp(`^${key}=(.+)$`, 'gm'))].map((m) => m[1]);
}

/**
 * Sends 3 UDP packets with the tunnel's address as source to the WAN side, after the tunnel is gone: what Cilium's
 * BPF source NAT hands the stack for a steered pod (IP_TRANSPARENT lets a socket send from an address the host no
 * longer has; a plain socket could not). Prints how many the kernel accepted.
 */
const SEND = (addr: string) => `python3 -c ${quote(`import socket\ns=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.setsockopt(socket.IPPROTO_IP, 19, 1)\ns.bind(("${addr}", 0))\nok=0\nfor i in range(3):\n    try:\n        s.sendto(b"leak", ("198.18.0.3", 9999)); ok+=1\n    except OSError:\n        pass\nprint(ok)`)}`;

describeWithTools('EgressSteering over OpenVPN: pinned remote, reconnects, kill-switch reloads and flushes', ['openvpn', 'openssl', 'nft', 'ip', 'python3', 'nsenter', 'unshare'], () => {
  const w = world('two');
  const { ns, dir, inNs } = w;
  const props: EgressSteeringProps = {
    gatewayNode: 'prod-gw',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
    tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/client/vpn.ovpn' }, credentialsFrom: { file: '/etc/openvpn/client/credentials' }, remote: '198.18.0.2:1194' },
  };
  const host = planEgressSteering(props).hosts[0];
  let node: Pod;
  const serverLog = path.join(dir, 'server.log');

  const openvpnArgs = () => execLines(host, 'tunnelwright-openvpn.service')[0];
  /** The unit's ExecStartPre lines in order, as systemd runs them at each start: a "-" line may fail. */
  const startPre = () => {
    for (const line of execLines(host, 'tunnelwright-openvpn.service', 'ExecStartPre')) {
      const r = inPod(node, line.replace(/^-/, ''));
      if (!line.startsWith('-')) must(r, line);
    }
  };
  const tunAddr = () => /inet (10\.8\.0\.\d+)\//.exec(inPod(node, 'ip -4 addr show dev tun0 2>/dev/null').stdout)?.[1];
  const waitFor = (what: string, cond: () => boolean, seconds = 30) => {
    for (let i = 0; i < seconds * 5; i++) {
      if (cond()) return;
      sh('sleep 0.2');
    }
    throw new Error(`timed out waiting for ${what}:\n${podLog(node, 'openvpn.log').slice(-3000)}`);
  };
  const kubectl = () => inPod(node, 'cat /tmp/kubectl.log 2>/dev/null').stdout.trim().split('\n').filter(Boolean);
  // The up path's label (`--overwrite …=<addr>-<ifindex>`), not the down hook's removal (`…-`), which --down-pre writes
  // while the old tun0 still has its address: waiting on any ciliumnode line raced a reconnect.
  const labelled = () => kubectl().some((l) => l.startsWith('label ciliumnode') && l.includes(' --overwrite '));
  const rule = () => inPod(node, 'ip -4 rule show priority 5210').stdout.trim();
  const set = () => inPod(node, 'nft list set inet tunnelwright_killswitch tunnel_v4').stdout;
  const startClient = (args: string) => startInPod(node, `exec ${args}`, 'openvpn.log', { KUBECTL: KUBECTL_STUB });
  const stopClient = () => inPod(node, 'pkill -9 -x openvpn; for i in $(seq 50); do pgrep -x openvpn >/dev/null || exit 0; sleep 0.1; done');
  /** A routing table or the rule list as the kernel reports it, one entry a line (iproute2 ends some with a space), sorted. */
  const routes = (table: string) => inPod(node, `ip -4 route show table ${table}`).stdout.split('\n').map((l) => l.trim()).filter(Boolean).sort();
  const rules = () => inPod(node, 'ip -4 rule show').stdout.split('\n').map((l) => l.trim()).filter(Boolean);
  let mainBefore: string[] = [];

  beforeAll(() => {
    w.setup();
    const pki = [
      `cd ${dir}`,
      'openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=tw-test-ca',
      'openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=server',
      "printf 'extendedKeyUsage=serverAuth\\nkeyUsage=digitalSignature,keyAgreement\\n' > ext",
      'openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile ext',
    ].join(' && ');
    must(sh(`(${pki}) 2>&1`), 'test PKI');
    fs.writeFileSync(path.join(dir, 'verify.sh'), '#!/bin/sh\n[ "$(sed -n 1p "$1")" = gw-user ] && [ "$(sed -n 2p "$1")" = gw-pass ]\n', { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'server.conf'), [
      'port 1194', 'proto udp', 'dev tun', `ca ${dir}/ca.crt`, `cert ${dir}/server.crt`, `key ${dir}/server.key`, 'dh none', 'topology subnet',
      // keepalive 1 4 spelt out (helper.c:500-551 at v2.6.14): keepalive's own pushes come after the config's push
      // lines (options.c:3696), and these two must come after its ping-restart to override it, as a server's would.
      'server 10.8.0.0 255.255.255.0', 'ping 1', 'ping-restart 8', 'push "ping 1"', 'push "ping-restart 4"', 'push "ping-restart 0"', 'push "ping-restart  0"', 'push "ping-restart -1"', 'push "\\"ping-restart\\" 0"', 'push "ping-exit 0"', 'verify-client-cert none', 'username-as-common-name', 'duplicate-cn',
      `auth-user-pass-verify ${dir}/verify.sh via-file`, 'script-security 2', 'verb 3',
      // The address a connect is given: the pool's, or the one in next-addr (a provider that hands out another).
      `client-connect ${dir}/connect.sh`, '',
    ].join('\n'));
    fs.writeFileSync(path.join(dir, 'connect.sh'), `#!/bin/sh\n[ -s ${dir}/next-addr ] && echo "ifconfig-push $(cat ${dir}/next-addr) 255.255.255.0" > "$1"\nexit 0\n`, { mode: 0o755 });
    must(sh(`ip netns exec ${ns.vpn} setsid openvpn --config ${dir}/server.conf </dev/null >${serverLog} 2>&1 & sleep 1; grep -q 'Initialization Sequence Completed' ${serverLog} || sleep 2; echo ok`), 'OpenVPN server');
    // The provider's .ovpn: a wrong remote first, the right one second (what a pinned remote must override).
    // Its own pull-filters accept what the unit ignores: the unit's come first on the command line, and the first
    // match wins.
    const ovpn = ['client', 'dev tun', 'proto udp', 'remote 198.18.0.99 1194', 'remote 198.18.0.2 1194', 'persist-tun', 'nobind', 'server-poll-timeout 2', 'connect-retry 1 1',
      'pull-filter accept ping-exit', 'pull-filter accept "ping-restart"', 'pull-filter ignore "route-ipv6"', 'auth-retry nointeract',
      'remote-cert-tls server', 'verb 3', `<ca>\n${fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8')}</ca>`, ''].join('\n');
    node = startPod(dir, 'node', ns.node, 'prod-gw', nodeFiles(host, {
      '/etc/openvpn/client/vpn.ovpn': { content: ovpn, mode: 0o600 },
      '/etc/openvpn/client/credentials': { content: 'gw-user\ngw-pass\n', mode: 0o600 },
    }));
    // Boot order: the kill switch, the secret units, then the tunnel unit's ExecStartPre and ExecStart.
    must(inPod(node, execLines(host, 'tunnelwright-killswitch.service')[0]), 'kill switch');
    for (const u of host.units.filter((x) => x.name.startsWith('tunnelwright-secret-'))) must(inPod(node, execLines(host, u.name)[0]), u.name);
    startPre();
    mainBefore = routes('main');
    w.reset('wrong_remote');
    startClient(openvpnArgs());
    waitFor('the first connect', () => tunAddr() !== undefined && labelled());
  }, 120_000);

  afterAll(() => {
    sh(`ip netns pids ${ns.vpn} | xargs -r kill -9`);
    w.teardown([node]);
  });

  it('the up script\'s routes read back from the kernel: the default only in table 51821, the main table as before (no default added) but for tun0\'s own subnet, one rule from the tunnel address', () => {
    const addr = tunAddr()!;
    // The lab node's main table has no default route (its WAN is a connected subnet): a default written to main by the
    // up script would show as a difference here, as would any other route it added or removed.
    expect(routes('main')).toEqual([...mainBefore, `10.8.0.0/24 dev tun0 proto kernel scope link src ${addr}`].sort());
    expect(routes('51821')).toEqual(['blackhole default metric 4294967295', 'default dev tun0 scope link']);
    expect(rules()).toEqual(['0:\tfrom all lookup local', `5210:\tfrom ${addr} lookup 51821`, '32766:\tfrom all lookup main', '32767:\tfrom all lookup default']);
  });

  it('tries only the pinned remote (0 packets to the .ovpn\'s first remote); control: unpinned, OpenVPN tries it first', () => {
    expect(w.counter('wrong_remote')).toBe(0);
    const pinned = inPod(node, 'cat /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned').stdout;
    expect(pinned).not.toMatch(/^remote /m);
    // Control: the same command line with the .ovpn as it is (--remote appended to its list, not replacing it).
    stopClient();
    startClient(openvpnArgs().replace('vpn-egress-openvpn-config.pinned', 'vpn-egress-openvpn-config'));
    waitFor('the unpinned client to try the wrong remote', () => w.counter('wrong_remote') > 0, 20);
    expect(w.counter('wrong_remote')).toBeGreaterThan(0);
    stopClient();
    w.reset('wrong_remote');
    inPod(node, 'rm -f /tmp/kubectl.log');
    startClient(openvpnArgs());
    waitFor('the reconnect', () => tunAddr() !== undefined && labelled());
    expect(w.counter('wrong_remote')).toBe(0);
  });

  const results: { cycle: number; connected: string; label: string; leakedWhileDown: number; sentWhileDown: number }[] = [];

  it(`stays right over ${CYCLES} disconnect/reconnect cycles: rule, kill-switch set and label each time, 0 tunnel-sourced packets at the WAN while down`, () => {
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const addr = tunAddr()!;
      const ifindex = inPod(node, 'cat /sys/class/net/tun0/ifindex').stdout.trim();
      // Connected: the rule from the tunnel address, the address in the kill switch, the label on Node and CiliumNode.
      // (An earlier address, given before a reconnect without a down hook, keeps its own rule: the hooks touch only theirs.)
      expect(rule().split('\n')).toContain(`5210:\tfrom ${addr} lookup 51821`);
      expect(set()).toMatch(new RegExp(`elements = \\{[^}]*\\b${addr.replace(/\./g, '\\.')}\\b`));
      expect(kubectl().slice(-2)).toEqual([`label node prod-gw --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=${addr}-${ifindex}`, `label ciliumnode prod-gw --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=${addr}-${ifindex}`]);
      // Disconnect: the server stops answering, the client restarts its session (down script, tun0 closed).
      inPod(node, 'rm -f /tmp/kubectl.log');
      must(inNs(ns.vpn, 'iptables -I INPUT -p udp --dport 1194 -j DROP'), 'block the server');
      inPod(node, 'pkill -USR1 -x openvpn');
      waitFor('tun0 to go', () => tunAddr() === undefined);
      waitFor('the label to be removed', () => kubectl().length >= 2);
      expect(kubectl()).toEqual(['label node prod-gw --request-timeout=10s tunnelwright.dev/egress-uplink-', 'label ciliumnode prod-gw --request-timeout=10s tunnelwright.dev/egress-uplink-']);
      // Closed while down: the rule stays (the table's blackhole takes the traffic), the kill switch keeps the address.
      expect(rule().split('\n')).toContain(`5210:\tfrom ${addr} lookup 51821`);
      expect(set()).toMatch(new RegExp(`elements = \\{[^}]*\\b${addr.replace(/\./g, '\\.')}\\b`));
      w.reset('leaked');
      const sent = Number(inPod(node, SEND(addr)).stdout.trim());
      results.push({ cycle, connected: addr, label: `${addr}-${ifindex}`, leakedWhileDown: w.counter('leaked'), sentWhileDown: sent });
      expect(w.counter('leaked')).toBe(0);
      // Reconnect.
      inPod(node, 'rm -f /tmp/kubectl.log');
      must(inNs(ns.vpn, 'iptables -D INPUT -p udp --dport 1194 -j DROP'), 'unblock the server');
      waitFor('the reconnect', () => tunAddr() !== undefined && labelled());
    }
    expect(results).toHaveLength(CYCLES);
  });

  /** Disconnected, with only the layer under test between tunnel-sourced traffic and the WAN: how many packets arrive there. */
  const leakWhileDown = (prepare: string) => {
    const addr = tunAddr()!;
    must(inNs(ns.vpn, 'iptables -I INPUT -p udp --dport 1194 -j DROP'), 'block the server');
    inPod(node, 'pkill -USR1 -x openvpn');
    waitFor('tun0 to go', () => tunAddr() === undefined);
    must(inPod(node, prepare), 'prepare');
    w.reset('leaked');
    inPod(node, SEND(addr));
    const leaked = w.counter('leaked');
    must(inNs(ns.vpn, 'iptables -D INPUT -p udp --dport 1194 -j DROP'), 'unblock the server');
    return leaked;
  };
  const restore = () => {
    must(inPod(node, `ip -4 route replace blackhole default table 51821 metric 4294967295; ${execLines(host, 'tunnelwright-killswitch.service')[0]}`), 'restore');
    waitFor('the reconnect', () => tunAddr() !== undefined && /elements/.test(set()));
  };
  const leaks: Record<string, number> = {};

  it('the routing layer alone holds while down (kill-switch table removed); control: without the blackhole it leaks', () => {
    leaks['routing only'] = leakWhileDown('nft delete table inet tunnelwright_killswitch');
    expect(leaks['routing only']).toBe(0);
    restore();
    leaks['routing only, no blackhole (control)'] = leakWhileDown('nft delete table inet tunnelwright_killswitch; ip -4 route del blackhole default table 51821 metric 4294967295; while ip -4 rule del priority 5209 2>/dev/null; do :; done');
    expect(leaks['routing only, no blackhole (control)']).toBeGreaterThan(0);
    restore();
  });

  // Every rule of the egress table and every held address: the kill switch alone.
  const noRouting = 'while ip -4 rule del priority 5209 2>/dev/null; do :; done; while ip -4 rule del priority 5210 2>/dev/null; do :; done';
  it('the kill switch alone holds after `nft -f` of its table and after a flush followed by its unit; controls: without the include, or flushed and not reloaded, it leaks', () => {
    const load = execLines(host, 'tunnelwright-killswitch.service')[0];
    leaks['kill switch only, after nft -f'] = leakWhileDown(`${noRouting}; ${load}`);
    restore();
    // What nftables.service does (flush ruleset), then the kill switch's unit again (PartOf= restarts it).
    leaks['kill switch only, after flush ruleset + unit'] = leakWhileDown(`${noRouting}; nft flush ruleset; ${load}`);
    restore();
    leaks['kill switch only, flushed, not reloaded (control)'] = leakWhileDown(`${noRouting}; nft flush ruleset`);
    restore();
    const noInclude = `sed '/^include /d' ${KILL_SWITCH_NFT_PATH} > /tmp/no-include.nft && nft -f /tmp/no-include.nft`;
    leaks['kill switch only, reloaded without the include (control)'] = leakWhileDown(`${noRouting}; ${noInclude}`);
    restore();
    expect(leaks).toMatchObject({
      'kill switch only, after nft -f': 0,
      'kill switch only, after flush ruleset + unit': 0,
    });
    expect(leaks['kill switch only, flushed, not reloaded (control)']).toBeGreaterThan(0);
    expect(leaks['kill switch only, reloaded without the include (control)']).toBeGreaterThan(0);
  });

  const silent: Record<string, unknown> = {};
  // Silent both ways: a server that only stops reading keeps pinging the client until its own per-client timeout.
  const silence = () => must(inNs(ns.vpn, 'iptables -I INPUT -p udp --dport 1194 -j DROP && iptables -I OUTPUT -p udp --sport 1194 -j DROP'), 'silence the server');
  const unsilence = () => must(inNs(ns.vpn, 'iptables -D INPUT -p udp --dport 1194 -j DROP && iptables -D OUTPUT -p udp --sport 1194 -j DROP'), 'unsilence');
  it('a silent server ends the session: tun0 goes within ping-restart with persist-tun in the provider\'s config and `ping-restart 0` / `ping-exit 0` pushed; controls: the config as given keeps tun0, and so does the unit without either new pull-filter', () => {
    // The server pushes ping 1 / ping-restart 4, then ping-restart 0 and ping-exit 0: the unit ignores the last two, so
    // the bound here is 4 s (60 s on the node's own flags).
    const log = podLog(node, 'openvpn.log');
    expect(log).toContain("Pushed option removed by filter: 'ping-restart 0'");
    // Spellings OpenVPN also reads as 0: two spaces, and a negative (positive_atoi).
    expect(log).toContain("Pushed option removed by filter: 'ping-restart  0'");
    expect(log).toContain("Pushed option removed by filter: 'ping-restart -1'");
    // A quoted first word, which OpenVPN unquotes only after the filters.
    expect(log).toContain("Pushed option removed by filter: '\"ping-restart\" 0'");
    expect(log).toContain("Pushed option removed by filter: 'ping-exit 0'");
    expect(log).not.toContain("Pushed option removed by filter: 'ping-restart 4'");
    expect(openvpnArgs().indexOf('--pull-filter')).toBeLessThan(openvpnArgs().indexOf('--config'));
    silence();
    const t0 = Date.now();
    waitFor('tun0 to go after the server fell silent', () => tunAddr() === undefined, 20);
    silent.rewrittenSecondsToTun0Gone = (Date.now() - t0) / 1000;
    unsilence();
    waitFor('the reconnect', () => tunAddr() !== undefined);
    // Control: the provider's config as it is (persist-tun kept).
    stopClient();
    inPod(node, ': > /tmp/openvpn-raw.log');
    startClient(openvpnArgs().replace('vpn-egress-openvpn-config.pinned', 'vpn-egress-openvpn-config'));
    waitFor('the unpinned client to connect', () => tunAddr() !== undefined);
    silence();
    waitFor('the ping-restart', () => /SIGUSR1\[soft,ping-restart\]/.test(podLog(node, 'openvpn.log')), 20);
    silent.asGivenTun0AfterPingRestart = inPod(node, 'ip -o link show tun0').status === 0;
    expect(silent.asGivenTun0AfterPingRestart).toBe(true);
    unsilence();
    stopClient();
    inPod(node, 'ip link del tun0 2>/dev/null');
    // Controls: the unit's own command line without the pull-filters for the pushed zeros. Three times the 4 s bound
    // after the server fell silent, tun0 still has its address and OpenVPN never timed the server out.
    const kept = (args: string, label: string) => {
      startClient(args);
      waitFor(`the client ${label} to connect`, () => tunAddr() !== undefined);
      silence();
      sh('sleep 12');
      const up = tunAddr() !== undefined && !/Inactivity timeout/.test(podLog(node, 'openvpn.log'));
      unsilence();
      stopClient();
      inPod(node, 'ip link del tun0 2>/dev/null');
      return up;
    };
    const pingRestartFilters = / --pull-filter accept "ping-restart 1".* --pull-filter accept "ping-restart 9" --pull-filter ignore ping-restart/;
    expect(openvpnArgs()).toMatch(pingRestartFilters);
    const noZeroFilters = openvpnArgs().replace(pingRestartFilters, '').replace(' --pull-filter ignore ping-exit', '');
    expect(noZeroFilters).not.toBe(openvpnArgs());
    silent.withoutZeroFiltersTun0After12s = kept(noZeroFilters, 'without the two filters');
    // The filter as it was: "ping-restart 0" ignored, the other spellings of 0 let through.
    silent.onlyExactZeroIgnoredTun0After12s = kept(openvpnArgs().replace(pingRestartFilters, ' --pull-filter ignore "ping-restart 0"'), 'ignoring "ping-restart 0" only');
    silent.withoutPingExitFilterTun0After12s = kept(openvpnArgs().replace(' --pull-filter ignore ping-exit', ''), 'without the ping-exit filter');
    // The unit's filters after --config, where the provider's `pull-filter accept` lines come first and win.
    const filters = / --pull-filter ignore '"' --pull-filter ignore "'" --pull-filter ignore redirect-gateway --pull-filter ignore persist-tun( --pull-filter accept "ping-restart \d")+ --pull-filter ignore ping-restart --pull-filter ignore ping-exit/;
    const ours = filters.exec(openvpnArgs())![0];
    const filtersLast = openvpnArgs().replace(ours, '').replace(' --route-noexec', ` --route-noexec${ours}`);
    expect(filtersLast).not.toBe(openvpnArgs());
    expect(filtersLast.indexOf('--pull-filter')).toBeGreaterThan(filtersLast.indexOf('--config'));
    silent.filtersAfterConfigTun0After12s = kept(filtersLast, 'with its filters after the config\'s');
    expect(silent).toMatchObject({ withoutZeroFiltersTun0After12s: true, withoutPingExitFilterTun0After12s: true, onlyExactZeroIgnoredTun0After12s: true, filtersAfterConfigTun0After12s: true });
    inPod(node, 'rm -f /tmp/kubectl.log');
    startClient(openvpnArgs());
    waitFor('the reconnect', () => tunAddr() !== undefined && labelled());
    // Within the controls' 12 s window (measured: under the pushed 4 s).
    expect(silent.rewrittenSecondsToTun0Gone).toBeLessThan(12);
  });

  it('the up script survives `nft flush ruleset`: the next connect loads the table again, 0 packets leak, the tunnel is up; control: the old up script ends OpenVPN', () => {
    must(inPod(node, 'nft flush ruleset'), 'flush');
    inPod(node, 'rm -f /tmp/kubectl.log');
    inPod(node, 'pkill -USR1 -x openvpn');
    waitFor('the reconnect after the flush', () => tunAddr() !== undefined && labelled());
    expect(set()).toMatch(new RegExp(`elements = \\{[^}]*\\b${tunAddr()!.replace(/\./g, '\\.')}\\b`));
    // Only the kill switch (routing removed) between tunnel-sourced traffic and the WAN.
    leaks['after flush + reconnect, kill switch only'] = leakWhileDown(noRouting);
    expect(leaks['after flush + reconnect, kill switch only']).toBe(0);
    restore();
    // Control: the up script without the reload, as it was.
    const up = host.files.find((f) => f.path === '/opt/tunnelwright/bin/egress-openvpn-up')!.content.replace(/^nft list table .*\n/m, '');
    must(inPod(node, `echo ${Buffer.from(up).toString('base64')} | base64 -d > /tmp/old-up && chmod 755 /tmp/old-up`), 'old up');
    stopClient();
    startClient(openvpnArgs().replace('--up /opt/tunnelwright/bin/egress-openvpn-up', '--up /tmp/old-up'));
    waitFor('the old client to connect', () => tunAddr() !== undefined);
    must(inPod(node, 'nft flush ruleset'), 'flush');
    inPod(node, 'pkill -USR1 -x openvpn');
    waitFor('OpenVPN to exit on the failed up script', () => inPod(node, 'pgrep -x openvpn').status !== 0, 20);
    leaks['after flush + reconnect with the old up script (control): tunnel up'] = tunAddr() !== undefined ? 1 : 0;
    expect(tunAddr()).toBeUndefined();
    must(inPod(node, execLines(host, 'tunnelwright-killswitch.service')[0]), 'kill switch');
    inPod(node, 'rm -f /tmp/kubectl.log');
    startClient(openvpnArgs());
    waitFor('the reconnect', () => tunAddr() !== undefined && labelled());
  });

  it('a password rotated at its source reaches OpenVPN at the next start (ExecStartPre resolves the secrets again); control: the start without it fails AUTH_FAILED with the boot\'s copy', () => {
    const verify = path.join(dir, 'verify.sh');
    const before = fs.readFileSync(verify, 'utf8');
    const creds = '/etc/openvpn/client/credentials';
    try {
      stopClient();
      // The provider rotates the password: the server takes only the new one, the source file holds it.
      fs.writeFileSync(verify, before.replace('gw-pass', 'gw-pass-2'));
      must(inPod(node, `printf 'gw-user\\ngw-pass-2\\n' > ${creds}`), 'rotate');
      // Control: OpenVPN started again without the unit's ExecStartPre (what a restart read before): the boot's copy.
      // It exits on AUTH_FAILED (--auth-retry none over the config's nointeract), so systemd starts the unit again.
      startClient(openvpnArgs());
      waitFor('AUTH_FAILED with the old password', () => /AUTH_FAILED/.test(podLog(node, 'openvpn.log')));
      expect(tunAddr()).toBeUndefined();
      waitFor('OpenVPN to exit on AUTH_FAILED', () => inPod(node, 'pgrep -x openvpn').status !== 0, 10);
      // Control: without --auth-retry none, the config's nointeract retries in the same process, never restarted.
      startClient(openvpnArgs().replace(' --auth-retry none', ''));
      waitFor('AUTH_FAILED again', () => /AUTH_FAILED/.test(podLog(node, 'openvpn.log')));
      sh('sleep 5');
      expect(inPod(node, 'pgrep -x openvpn').status).toBe(0);
      expect(podLog(node, 'openvpn.log')).toContain('SIGUSR1[soft,auth-failure]');
      stopClient();
      // The unit's start, as systemd's Restart=always runs it: every ExecStartPre, then ExecStart.
      inPod(node, 'rm -f /tmp/kubectl.log');
      startPre();
      startClient(openvpnArgs());
      waitFor('the connect with the rotated password', () => tunAddr() !== undefined && labelled());
    } finally {
      fs.writeFileSync(verify, before);
      inPod(node, `printf 'gw-user\\ngw-pass\\n' > ${creds}`);
    }
  });

  afterAll(() => {
    process.stdout.write(`egress OpenVPN cycles: ${JSON.stringify(results)}\negress OpenVPN leaks at the WAN side: ${JSON.stringify(leaks)}\negress OpenVPN silent server: ${JSON.stringify(silent)}\n`);
  });

  it('the pin drops every spelling of remote and persist-tun, as OpenVPN\'s own parser reads the result; control: the config as given', () => {
    const spellings = ['client', 'dev tun', '--remote 198.18.0.99 1194', '  "remote" 198.18.0.98 1194', "\t'--remote' 198.18.0.97", 'persist-tun', '--persist-tun', '  "persist-tun"', 'nobind', 'ca /tmp/p/ca.crt', 'cert /tmp/p/server.crt', 'key /tmp/p/server.key', ''].join('\n');
    const put = (file: string, content: string) => must(inPod(node, `mkdir -p /tmp/p && echo ${Buffer.from(content).toString('base64')} | base64 -d > ${file}`), file);
    for (const f of ['ca.crt', 'server.crt', 'server.key']) put(`/tmp/p/${f}`, fs.readFileSync(path.join(dir, f), 'utf8'));
    put('/tmp/p/spellings.ovpn', spellings);
    must(inPod(node, `${OPENVPN_PIN_PATH} /tmp/p/spellings.ovpn /tmp/spellings.pinned pin`), 'pin');
    // openvpn --verb 4 prints its parsed options (connection profiles, persist_tun) before it connects; no network here.
    const parsed = (config: string) => inPod(node, `timeout 3 unshare -n openvpn --config ${config} --remote 198.18.0.2 1194 --verb 4 2>&1; true`).stdout;
    const read = (out: string) => ({ remotes: [...out.matchAll(/\s{2}remote = '([^']+)'/g)].map((m) => m[1]), persistTun: /persist_tun = ENABLED/.test(out) });
    expect(read(parsed('/tmp/spellings.pinned'))).toEqual({ remotes: ['198.18.0.2'], persistTun: false });
    expect(read(parsed('/tmp/p/spellings.ovpn'))).toEqual({ remotes: ['198.18.0.99', '198.18.0.98', '198.18.0.97', '198.18.0.2'], persistTun: true });
  });

  it('the pin script refuses a config with <connection> blocks when pinning (they carry their own remotes), and keeps them otherwise', () => {
    must(inPod(node, "printf 'client\\n  <connection>\\nremote 198.18.0.99 1194\\n</connection>\\n' > /tmp/conn.ovpn"), 'conn');
    expect(inPod(node, `${OPENVPN_PIN_PATH} /tmp/conn.ovpn /tmp/conn.kept && cat /tmp/conn.kept`).stdout).toBe('client\n  <connection>\nremote 198.18.0.99 1194\n</connection>\n');
    const r = inPod(node, `${OPENVPN_PIN_PATH} /tmp/conn.ovpn /tmp/conn.pinned pin`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('<connection> blocks');
  });

  const reconnects: Record<string, number | string> = {};
  afterAll(() => process.stdout.write(`egress OpenVPN reconnect to a new address, packets from the old one at the WAN side: ${JSON.stringify(reconnects)}\n`));

  it('a reconnect given a new address: the old address stays blackholed, 0 packets from it at the WAN with the re-steer failing and working; control: the old hooks (every rule at the priority deleted, no hold) send it to the WAN', () => {
    const giveNext = (addr: string) => fs.writeFileSync(path.join(dir, 'next-addr'), addr);
    const reconnectTo = (addr: string) => {
      giveNext(addr);
      inPod(node, 'rm -f /tmp/kubectl.log');
      inPod(node, 'pkill -USR1 -x openvpn');
      waitFor(`the reconnect to ${addr}`, () => tunAddr() === addr);
    };
    // The routing layer alone: the kill switch would hide what the hooks do (the up script loads its table again
    // when it is gone, with the new address learnt), so it is removed before each count.
    const sendFrom = (addr: string) => {
      inPod(node, 'nft delete table inet tunnelwright_killswitch');
      w.reset('leaked');
      inPod(node, SEND(addr));
      return w.counter('leaked');
    };
    stopClient();
    giveNext('10.8.0.70');
    startPre();
    startClient(openvpnArgs());
    waitFor('a fresh connect', () => tunAddr() === '10.8.0.70' && labelled());
    // The re-steer failing: the label keeps naming 10.8.0.70 (Cilium's cached egress IP).
    must(inPod(node, `printf '#!/bin/sh\\necho "$*" >> /tmp/kubectl.log\\nexit 1\\n' > ${KUBECTL_STUB}`), 'failing kubectl');
    reconnectTo('10.8.0.71');
    reconnects['re-steer failing, new address 10.8.0.71'] = sendFrom('10.8.0.70');
    // The re-steer working: the label names the new address; the old one stays held.
    must(inPod(node, `printf '#!/bin/sh\\necho "$*" >> /tmp/kubectl.log\\n' > ${KUBECTL_STUB}`), 'kubectl');
    must(inPod(node, `KUBECTL=${KUBECTL_STUB} ${RESTEER_PATH}`), 're-steer');
    expect(kubectl().at(-1)).toMatch(/^label ciliumnode prod-gw --overwrite --request-timeout=10s tunnelwright\.dev\/egress-uplink=10\.8\.0\.71-\d+$/);
    reconnects['re-steer working, new address 10.8.0.71'] = sendFrom('10.8.0.70');
    expect(reconnects).toMatchObject({ 're-steer failing, new address 10.8.0.71': 0, 're-steer working, new address 10.8.0.71': 0 });
    // Control: the hooks as they were (the up script deleted every rule at its priority; the down script held nothing),
    // a real reconnect to another address.
    must(inPod(node, [
      `sed -i 's/rule del from "$ifconfig_local" priority "$PRIORITY"/rule del priority "$PRIORITY"/' ${OPENVPN_UP_PATH}`,
      `sed -i 's/^  ip -4 rule add from "$ifconfig_local" blackhole.*$/  :/' ${OPENVPN_DOWN_PATH}`,
      `grep -q 'rule del priority "$PRIORITY"' ${OPENVPN_UP_PATH}`,
    ].join(' && ')), 'the old hooks');
    reconnectTo('10.8.0.72');
    reconnects['control: old hooks, new address 10.8.0.72'] = sendFrom('10.8.0.71');
    expect(reconnects['control: old hooks, new address 10.8.0.72']).toBeGreaterThan(0);
    fs.rmSync(path.join(dir, 'next-addr'));
  });
});

describeWithTools('EgressSteering over WireGuard: reconnects, and a second up after an unclean exit', ['wg', 'wg-quick', 'wireguard-go', 'nft', 'ip', 'python3', 'nsenter', 'unshare'], () => {
  const w = world('tww');
  const { ns, dir, inNs } = w;
  const server = generateKeyPair();
  const gateway = generateKeyPair();
  const props: EgressSteeringProps = {
    gatewayNode: 'gw-1',
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
    tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/etc/wireguard/keys/vpn.key' }, peer: { publicKey: server.publicKey, endpoint: '198.18.0.2:51820' } },
  };
  const host = planEgressSteering(props).hosts[0];
  const env = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go', WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1', KUBECTL: KUBECTL_STUB };
  let node: Pod;
  const up = () => inPod(node, 'wg-quick up tun0', { env });
  const kubectl = () => inPod(node, 'cat /tmp/kubectl.log 2>/dev/null').stdout.trim().split('\n').filter(Boolean);
  const rule = () => inPod(node, 'ip -4 rule show priority 5210').stdout.trim();
  const routes = (table: string) => inPod(node, `ip -4 route show table ${table}`).stdout.split('\n').map((l) => l.trim()).filter(Boolean).sort();
  let mainBefore: string[] = [];
  const results: { cycle: number; how: string; upStatus: number | null; rule: string; leakedWhileDown: number; labelsWhileDown: string[] }[] = [];

  beforeAll(() => {
    w.setup();
    fs.writeFileSync(path.join(dir, 'server.key'), `${server.privateKey}\n`, { mode: 0o600 });
    must(inNs(ns.vpn, `wireguard-go wgs && wg set wgs private-key ${dir}/server.key listen-port 51820 peer ${gateway.publicKey} allowed-ips 10.2.0.2/32 && ip addr add 10.2.0.1/24 dev wgs && ip link set wgs up`), 'WireGuard server');
    node = startPod(dir, 'node', ns.node, 'gw-1', nodeFiles(host, { '/etc/wireguard/keys/vpn.key': { content: `${gateway.privateKey}\n`, mode: 0o600 } }));
    must(inPod(node, execLines(host, 'tunnelwright-killswitch.service')[0]), 'kill switch');
    for (const u of host.units.filter((x) => x.name.startsWith('tunnelwright-secret-'))) must(inPod(node, execLines(host, u.name)[0]), u.name);
    mainBefore = routes('main');
    must(up(), 'wg-quick up');
  }, 120_000);

  afterAll(() => {
    process.stdout.write(`egress WireGuard cycles: ${JSON.stringify(results)}\n`);
    w.teardown([node]);
  });

  it('PostUp\'s routes read back from the kernel: the default only in table 51821, the main table exactly as before (Table = off), one rule from the tunnel address', () => {
    // As for OpenVPN: the lab node has no default route in main, and PostUp must leave main as it was.
    expect(routes('main')).toEqual(mainBefore);
    expect(routes('51821')).toEqual(['blackhole default metric 4294967295', 'default dev tun0 scope link']);
    expect(inPod(node, 'ip -4 rule show').stdout.split('\n').map((l) => l.trim()).filter(Boolean)).toEqual(['0:\tfrom all lookup local', '5210:\tfrom 10.2.0.2 lookup 51821', '32766:\tfrom all lookup main', '32767:\tfrom all lookup default']);
  });

  it(`${CYCLES} cycles, clean and unclean (wireguard-go killed): each up succeeds, the rule is there once, the label follows, 0 packets leak while down`, () => {
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const how = cycle % 2 === 0 ? 'unclean' : 'clean';
      expect(inPod(node, 'ping -c1 -W2 -I 10.2.0.2 10.2.0.1').status).toBe(0);
      expect(rule()).toBe('5210:\tfrom 10.2.0.2 lookup 51821');
      const ifindex = inPod(node, 'cat /sys/class/net/tun0/ifindex').stdout.trim();
      expect(kubectl().slice(-1)).toEqual([`label ciliumnode gw-1 --overwrite --request-timeout=10s tunnelwright.dev/egress-uplink=10.2.0.2-${ifindex}`]);
      inPod(node, 'rm -f /tmp/kubectl.log');
      if (how === 'clean') must(inPod(node, 'wg-quick down tun0', { env }), 'wg-quick down');
      else must(inPod(node, 'pkill -9 -x wireguard-go; for i in $(seq 50); do [ -e /sys/class/net/tun0 ] || exit 0; sleep 0.1; done; exit 1'), 'unclean exit');
      // Down: the rule stays and the blackhole takes tunnel-sourced traffic; the kill switch drops it too.
      expect(rule()).toBe('5210:\tfrom 10.2.0.2 lookup 51821');
      w.reset('leaked');
      inPod(node, SEND('10.2.0.2'));
      const leaked = w.counter('leaked');
      const labelsWhileDown = kubectl();
      const r = up();
      results.push({ cycle, how, upStatus: r.status, rule: rule(), leakedWhileDown: leaked, labelsWhileDown });
      expect(leaked).toBe(0);
      expect(r.output).not.toContain('File exists');
      expect(r.status).toBe(0);
      expect(rule().split('\n')).toHaveLength(1);
    }
    // A clean down runs PostDown after the interface is gone: the hook removes the label. (An unclean exit runs no hook:
    // the timer converges the label.)
    const removed = ['label node gw-1 --request-timeout=10s tunnelwright.dev/egress-uplink-', 'label ciliumnode gw-1 --request-timeout=10s tunnelwright.dev/egress-uplink-'];
    expect(results.filter((x) => x.how === 'clean').map((x) => x.labelsWhileDown)).toEqual([removed, removed, removed]);
  });

  it('control: with PostUp\'s plain `ip rule add` (no delete first), the up after an unclean exit fails on the stale rule', () => {
    const conf = host.files.find((f) => f.path === '/etc/wireguard/tun0.conf')!.content;
    const old = conf.replace(/^PostUp = while .*\n/m, '');
    expect(old).not.toBe(conf);
    must(inPod(node, `mkdir -p /tmp/old && echo ${Buffer.from(old).toString('base64')} | base64 -d > /tmp/old/tun0.conf && chmod 600 /tmp/old/tun0.conf`), 'old config');
    must(inPod(node, 'pkill -9 -x wireguard-go; for i in $(seq 50); do [ -e /sys/class/net/tun0 ] || exit 0; sleep 0.1; done; exit 1'), 'unclean exit');
    const r = inPod(node, 'wg-quick up /tmp/old/tun0.conf', { env });
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('File exists');
  });
});
