import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planWireguardMesh, WireguardMeshProps } from '../../src';
import { DEFERRED_ENDPOINT_PREFIX, WG_ENDPOINTS_PATH, WG_RELOAD_PATH } from '../../src/host/wireguard-reload';
import { SCHEMA_DIR } from '../helpers/schemas';
import { describeWithTools, must, secondsUntilTrue, sh, tmpdir } from './tools';

/**
 * Three nodes over wireguard-go in network namespaces; node-1 is dialled by a name that does not resolve (each node's
 * resolver is an address nobody answers, as when DNS is reached only over the overlay). With the generated config the
 * other nodes' interfaces come up at once and ping each other; the endpoints script sets node-1's endpoint when the
 * name starts to resolve, and dials node-1 at its new address when the name moves. Control: the config of before (the
 * name in `Endpoint =`) under upstream's unit environment does not come up.
 */
describeWithTools('a WireguardMesh with a peer whose hostname does not resolve', ['wg', 'wg-quick', 'wireguard-go', 'ip', 'ping', 'unshare', 'timeout'], () => {
  const id = process.pid % 100000;
  const lan = `tw28${id}-lan`;
  const ns = [0, 1, 2].map((i) => `tw28${id}-n${i}`);
  const ifaces = [0, 1, 2].map((i) => `tw28${id % 1000}h${i}`);
  const dir = tmpdir('tw-hostname-');
  const env = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go', WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' };
  const overlay = ['10.11.0.1', '10.11.0.2', '10.11.0.3'];
  const keys = [0, 1, 2].map(() => generateKeyPair());
  const upstreamEnv = /^Environment=(WG_ENDPOINT_RESOLUTION_RETRIES=\S+)$/m.exec(fs.readFileSync(path.join(SCHEMA_DIR, 'wg-quick@.service'), 'utf8'))![1];
  const mesh: WireguardMeshProps = {
    network: '10.11.0.0/24', listenPort: 51820, persistentKeepalive: 1,
    nodes: [0, 1, 2].map((i) => ({ node: `node-${i}`, address: overlay[i], publicKey: keys[i].publicKey, privateKeyFrom: { file: path.join(dir, `node-${i}.key`) }, endpoint: i === 1 ? 'node-1.tw28.test' : `198.18.1.${i + 1}` })),
  };
  const plan = planWireguardMesh(mesh);
  const confOf = (i: number) => plan.nodes[`node-${i}`].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content
    .replace(/^PostUp = wg set %i private-key .*$/m, `PostUp = wg set %i private-key ${path.join(dir, `node-${i}.key`)}`);
  const inNode = (i: number, cmd: string, timeout = 60_000) => sh(`ip netns exec ${ns[i]} unshare -m sh -c 'mount --make-rprivate / && mount --bind ${dir}/etc${i} /etc/wireguard && mount --bind ${dir}/resolv.conf /etc/resolv.conf && mount --bind ${dir}/hosts${i} /etc/hosts && mount --bind ${dir}/tw${i} /etc/tunnelwright && ${cmd}'`, { env, timeout });
  const write = (i: number, content: string) => fs.writeFileSync(path.join(dir, `etc${i}`, `${ifaces[i]}.conf`), content, { mode: 0o600 });
  const ping = (from: number, to: number, tries = 10) => sh(`for t in $(seq ${tries}); do ip netns exec ${ns[from]} ping -c1 -W1 ${overlay[to]} >/dev/null 2>&1 && exit 0; done; exit 1`, { timeout: 60_000 });
  const pinging = (nodes: number[], tries = 10) => nodes.flatMap((a) => nodes.filter((b) => b !== a).map((b) => [a, b] as const)).filter(([a, b]) => ping(a, b, tries).status === 0).map(([a, b]) => `${a}>${b}`);
  const linkExists = (i: number) => sh(`ip -n ${ns[i]} link show ${ifaces[i]}`).status === 0;
  /** Starts the endpoints script on node i as its unit does (it runs until stopped); returns its log's path. */
  const startEndpoints = (i: number, env: string) => {
    const log = path.join(dir, `endpoints${i}.log`);
    fs.writeFileSync(log, '');
    must(inNode(i, `{ ${env} setsid ${path.join(dir, 'wg-endpoints')} ${ifaces[i]} >${log} 2>&1 </dev/null & echo $! >${dir}/endpoints${i}.pid; }`), `endpoints script on node-${i}`);
    return log;
  };
  const stopEndpoints = (i: number) => sh(`p=$(cat ${dir}/endpoints${i}.pid); kill $p; while kill -0 $p 2>/dev/null; do sleep 0.1; done`);
  const logSays = (log: string, line: string, limit = 30) => secondsUntilTrue(() => fs.readFileSync(log, 'utf8').includes(line), limit);
  const figures: string[] = [];

  beforeAll(() => {
    keys.forEach((k, i) => fs.writeFileSync(path.join(dir, `node-${i}.key`), `${k.privateKey}\n`, { mode: 0o600 }));
    fs.writeFileSync(path.join(dir, 'wg-endpoints'), plan.nodes['node-0'].host.files.find((f) => f.path === WG_ENDPOINTS_PATH)!.content, { mode: 0o755 });
    // A resolver nobody answers: getaddrinfo fails with EAI_AGAIN, the failure wg retries.
    fs.writeFileSync(path.join(dir, 'resolv.conf'), 'nameserver 198.18.1.53\noptions timeout:1 attempts:1\n');
    const setup = [`ip netns add ${lan}`, `ip -n ${lan} link add br0 type bridge`, `ip -n ${lan} link set br0 up`];
    for (const i of [0, 1, 2]) {
      fs.mkdirSync(path.join(dir, `etc${i}`));
      // The files wg0's hooks read (kube-router's SNAT table on these k0s nodes), where the host has them.
      fs.mkdirSync(path.join(dir, `tw${i}`));
      for (const f of plan.nodes[`node-${i}`].host.files.filter((x) => x.path.startsWith('/etc/tunnelwright/'))) fs.writeFileSync(path.join(dir, `tw${i}`, path.basename(f.path)), f.content);
      fs.writeFileSync(path.join(dir, `hosts${i}`), '127.0.0.1 localhost\n');
      setup.push(`ip netns add ${ns[i]}`, `ip -n ${ns[i]} link set lo up`, `ip link add eth0 netns ${ns[i]} type veth peer name v${i} netns ${lan}`,
        `ip -n ${lan} link set v${i} master br0 up`, `ip -n ${ns[i]} addr add 198.18.1.${i + 1}/24 dev eth0`, `ip -n ${ns[i]} link set eth0 up`);
    }
    must(sh(['mkdir -p /etc/wireguard /etc/tunnelwright', ...setup].join(' && ')), 'namespace setup');
  });

  afterAll(() => {
    for (const n of [...ns, lan]) sh(`ip netns pids ${n} | xargs -r kill; sleep 0.2; ip netns del ${n} 2>/dev/null`);
    // The lock files wg-reload and wg-endpoints make, at their default place.
    sh(`rm -f ${ifaces.map((i) => `/run/tunnelwright/wg-${i}.lock`).join(' ')}`);
    if (process.env.TW_RECORD) fs.appendFileSync(process.env.TW_RECORD, `one unresolvable peer:\n${figures.join('\n')}\n`);
  });

  it('control: the config of before (the name in Endpoint) under upstream\'s unit environment does not come up within 20 s', () => {
    const before = confOf(0).replace(DEFERRED_ENDPOINT_PREFIX, 'Endpoint = ');
    expect(before).toContain('\nEndpoint = node-1.tw28.test:51820\n');
    write(0, before);
    const r = inNode(0, `${upstreamEnv} timeout 20 wg-quick up ${ifaces[0]}`);
    expect(r.status).toBe(124); // killed by timeout: still resolving
    expect(r.stderr).toContain('Trying again in');
    expect(linkExists(0)).toBe(false);
    figures.push('config of before, upstream environment: wg-quick up still resolving after 20 s (killed), no interface');
  });

  it('the generated configs: every interface is up at once, and node-0 and node-2 ping each other while the name does not resolve', () => {
    for (const i of [0, 1, 2]) {
      write(i, confOf(i));
      const t0 = Date.now();
      must(inNode(i, `${upstreamEnv} wg-quick up ${ifaces[i]}`), `wg-quick up on node-${i}`);
      figures.push(`node-${i}: generated config, wg-quick up returned in ${((Date.now() - t0) / 1000).toFixed(2)} s`);
    }
    const t0 = Date.now();
    expect(pinging([0, 2])).toEqual(['0>2', '2>0']);
    figures.push(`node-0 and node-2 pinging each other ${((Date.now() - t0) / 1000).toFixed(2)} s after the last up`);
    // One round of the endpoints script: the name does not resolve, the script says so and fails, nothing else changes.
    const once = inNode(0, `${path.join(dir, 'wg-endpoints')} --once ${ifaces[0]}`);
    expect(once.status).toBe(1);
    expect(once.stderr).toContain(`wg-endpoints: ${ifaces[0]}: node-1.tw28.test:51820 does not resolve yet: peer ${keys[1].publicKey} has no endpoint`);
    expect(sh(`ip netns exec ${ns[0]} wg show ${ifaces[0]} endpoints`).stdout).toContain(`${keys[1].publicKey}\t(none)`);
  });

  it('once the name resolves, the retrying script sets node-1\'s endpoint on every node that dials it, and all six pairs ping', () => {
    for (const i of [0, 2]) {
      // The record appears 3 s after the script starts: it must retry (after 1, 2 and 4 s here) and then succeed.
      const log = startEndpoints(i, 'WG_ENDPOINTS_INTERVAL=1');
      sh(`sleep 3; echo "198.18.1.2 node-1.tw28.test" >> ${dir}/hosts${i}`);
      expect(logSays(log, `wg-endpoints: ${ifaces[i]}: peer ${keys[1].publicKey} at node-1.tw28.test:51820 (198.18.1.2:51820)`)).toBeLessThan(30);
      stopEndpoints(i);
      expect(fs.readFileSync(log, 'utf8')).toContain('does not resolve yet');
      expect(sh(`ip netns exec ${ns[i]} wg show ${ifaces[i]} endpoints`).stdout).toContain(`${keys[1].publicKey}\t198.18.1.2:51820`);
    }
    const pairs = pinging([0, 1, 2]);
    expect(pairs.sort()).toEqual(['0>1', '0>2', '1>0', '1>2', '2>0', '2>1']);
    figures.push(`after the name resolves: ${pairs.length} of 6 pairs`);
  });

  // node-1 dials no name (its peers are IPs), so before this was fixed its first boot installed no endpoints unit:
  // cloud-init runs once, and a node added later by name was written as a comment nothing on node-1 ever set.
  it('a node that dialled no name at first boot dials a node added later by name, by the day-2 path (control: the reload alone leaves it without an endpoint)', () => {
    const firstBoot = plan.nodes['node-1'].host;
    expect(firstBoot.units.map((u) => u.name)).toContain('tunnelwright-wg0-endpoints.service');
    expect(firstBoot.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content).toContain('\nExecReload=-/usr/bin/systemctl restart --no-block tunnelwright-wg0-endpoints.service\n');
    // node-3 joins, dialled by name. It cannot resolve node-1's name, so only node-1 can start their link.
    const key3 = generateKeyPair();
    fs.writeFileSync(path.join(dir, 'node-3.key'), `${key3.privateKey}\n`, { mode: 0o600 });
    const grown = planWireguardMesh({ ...mesh, nodes: [...mesh.nodes, { node: 'node-3', address: '10.11.0.4', publicKey: key3.publicKey, privateKeyFrom: { file: path.join(dir, 'node-3.key') }, endpoint: 'node-3.tw28.test' }] });
    const grownConf = (i: number) => grown.nodes[`node-${i}`].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content
      .replace(/^PostUp = wg set %i private-key .*$/m, `PostUp = wg set %i private-key ${path.join(dir, `node-${i}.key`)}`);
    ns.push(`tw28${id}-n3`);
    ifaces.push(`tw28${id % 1000}h3`);
    overlay.push('10.11.0.4');
    fs.mkdirSync(path.join(dir, 'etc3'));
    fs.mkdirSync(path.join(dir, 'tw3'));
    for (const f of grown.nodes['node-3'].host.files.filter((x) => x.path.startsWith('/etc/tunnelwright/'))) fs.writeFileSync(path.join(dir, 'tw3', path.basename(f.path)), f.content);
    fs.writeFileSync(path.join(dir, 'hosts3'), '127.0.0.1 localhost\n');
    fs.writeFileSync(path.join(dir, 'wg-reload'), grown.nodes['node-1'].host.files.find((f) => f.path === WG_RELOAD_PATH)!.content, { mode: 0o755 });
    must(sh([`ip netns add ${ns[3]}`, `ip -n ${ns[3]} link set lo up`, `ip link add eth0 netns ${ns[3]} type veth peer name v3 netns ${lan}`, `ip -n ${lan} link set v3 master br0 up`,
      `ip -n ${ns[3]} addr add 198.18.1.4/24 dev eth0`, `ip -n ${ns[3]} link set eth0 up`].join(' && ')), 'namespace of node-3');
    write(3, grownConf(3));
    must(inNode(3, `${upstreamEnv} wg-quick up ${ifaces[3]}`), 'wg-quick up on node-3');
    // node-1 takes its new config (copy, then the reload script): node-3 is a comment there, added without an endpoint.
    const conf1 = grownConf(1);
    expect(conf1).toContain(`\n${DEFERRED_ENDPOINT_PREFIX}node-3.tw28.test:51820\n`);
    write(1, conf1);
    must(inNode(1, `${path.join(dir, 'wg-reload')} ${ifaces[1]}`), 'reload node-1');
    fs.appendFileSync(path.join(dir, 'hosts1'), '198.18.1.4 node-3.tw28.test\n');
    // Control: the reload alone, as on a node with no endpoints unit: node-3 has no endpoint on node-1, no ping.
    expect(sh(`ip netns exec ${ns[1]} wg show ${ifaces[1]} endpoints`).stdout).toContain(`${key3.publicKey}\t(none)`);
    expect(pinging([1, 3], 3)).toEqual([]);
    // The unit the reload starts again (its ExecStart): node-3's endpoint is set, and both ways ping.
    const log = startEndpoints(1, 'WG_ENDPOINTS_INTERVAL=1');
    expect(logSays(log, `wg-endpoints: ${ifaces[1]}: peer ${key3.publicKey} at node-3.tw28.test:51820 (198.18.1.4:51820)`)).toBeLessThan(30);
    stopEndpoints(1);
    const pairs = pinging([1, 3]);
    expect(pairs).toEqual(['1>3', '3>1']);
    figures.push(`a node added by name, seen from a node that dialled no name at first boot: reload alone 0 of 2 pairs, with the unit's run ${pairs.length} of 2`);
  });

  // A name that moves (dynamic DNS): a peer that can send first is found again by WireGuard's roaming, but node-0 here
  // is behind a stateful firewall (as behind a home router's NAT), so only node-0 can start its link to node-1.
  it('a node behind a stateful firewall dials a peer at its new address once the peer\'s name moves (control: with the names set and the script gone, as before, 0 pings)', () => {
    must(sh(`ip netns exec ${ns[0]} nft -f - <<'EOF'\ntable inet tw28fw {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    iifname "eth0" ct state new drop\n  }\n}\nEOF`), 'node-0\'s firewall');
    expect(pinging([0, 1], 3)).toEqual(['0>1', '1>0']);
    must(sh(`ip -n ${ns[1]} addr del 198.18.1.2/24 dev eth0 && ip -n ${ns[1]} addr add 198.18.1.12/24 dev eth0`), 'node-1 moves');
    fs.writeFileSync(path.join(dir, 'hosts0'), '127.0.0.1 localhost\n198.18.1.12 node-1.tw28.test\n');
    // Control: node-0 still dials the old address, and node-1's packets from its new one are new to the firewall.
    expect(pinging([0, 1], 8)).toEqual([]);
    expect(sh(`ip netns exec ${ns[0]} wg show ${ifaces[0]} endpoints`).stdout).toContain(`${keys[1].publicKey}\t198.18.1.2:51820`);
    // The script as its unit runs it, with its waits shortened: node-0's handshake is stale, and it sends (handshake
    // initiations, for its keepalive) without receiving anything for 2 s, so the name is resolved again.
    const t0 = Date.now();
    const log = startEndpoints(0, 'WG_ENDPOINTS_INTERVAL=1 WG_ENDPOINTS_STALE=5 WG_ENDPOINTS_QUIET=2');
    expect(logSays(log, `wg-endpoints: ${ifaces[0]}: peer ${keys[1].publicKey} at node-1.tw28.test:51820 (198.18.1.12:51820): 198.18.1.2:51820 was not answering`)).toBeLessThan(30);
    const pairs = pinging([0, 1]);
    expect(pairs).toEqual(['0>1', '1>0']);
    figures.push(`node-1's name moved, node-0 behind a stateful firewall: without the script 0 of 2 pairs in 8 tries, with it ${pairs.length} of 2, ${((Date.now() - t0) / 1000).toFixed(1)} s after it started`);
    stopEndpoints(0);
  });
});
