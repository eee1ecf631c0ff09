import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateKeyPair, planWireguardMesh, WireguardMeshProps } from '../../src';
import { RESOLVE_SECRET_PATH } from '../../src/host/secret-source';
import { describeWithTools, must, sh, tmpdir } from './tools';

/**
 * Three network namespaces joined by a bridge (the "internet", 198.18.0.0/24), each running the WireGuard
 * interface WireguardMesh generated for it over userspace wireguard-go. The key reaches the interface the way it
 * does on a host: the generated secret unit's ExecStart resolves it into /run/tunnelwright/secrets (a private
 * tmpfs per node), and the generated PostUp applies it.
 */
describeWithTools('a three-node WireguardMesh pings across real userspace tunnels', ['wg', 'wg-quick', 'wireguard-go', 'ip', 'ping', 'unshare'], () => {
  const id = process.pid % 100000;
  const lan = `twm${id}-lan`;
  const ns = [0, 1, 2].map((i) => `twm${id}-n${i}`);
  const ifaces = [0, 1, 2].map((i) => `twm${id % 1000}n${i}`);
  const dir = tmpdir('tw-mesh-');
  const env = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go', WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD: '1' };
  const overlay = ['10.10.0.1', '10.10.0.2', '10.10.0.3'];

  const up = (i: number) => {
    const plan = planWireguardMesh(props).nodes[`node-${i}`];
    const unit = plan.host.units.find((u) => u.name === 'tunnelwright-secret-wg0-private-key.service')!;
    const execStart = /^ExecStart=(.+)$/m.exec(unit.content!)![1].replace(RESOLVE_SECRET_PATH, path.join(dir, 'resolve-secret'));
    const conf = path.join(dir, `${ifaces[i]}.conf`);
    fs.writeFileSync(conf, plan.host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content, { mode: 0o600 });
    return sh(`mkdir -p /run/tunnelwright && ip netns exec ${ns[i]} unshare -m sh -c 'mount -t tmpfs -o mode=0700 tmpfs /run/tunnelwright && ${execStart} && wg-quick up ${conf}'`, { env });
  };
  const down = (i: number) => sh(`ip netns exec ${ns[i]} wg-quick down ${path.join(dir, `${ifaces[i]}.conf`)}`, { env });
  const ping = (from: number, to: number, tries = 10) => sh(`for t in $(seq ${tries}); do ip netns exec ${ns[from]} ping -c1 -W1 ${overlay[to]} >/dev/null 2>&1 && exit 0; done; exit 1`, { timeout: 60_000 });

  let props: WireguardMeshProps;

  beforeAll(() => {
    const keys = [0, 1, 2].map(() => generateKeyPair());
    keys.forEach((k, i) => fs.writeFileSync(path.join(dir, `node-${i}.key`), `${k.privateKey}\n`, { mode: 0o600 }));
    props = {
      network: '10.10.0.0/24',
      listenPort: 51820,
      persistentKeepalive: 1,
      nodes: [0, 1, 2].map((i) => ({
        node: `node-${i}`,
        address: overlay[i],
        publicKey: keys[i].publicKey,
        privateKeyFrom: { file: path.join(dir, `node-${i}.key`) },
        // node-2 has no endpoint, as behind NAT: it dials the others, who learn its address from its handshakes.
        ...(i < 2 ? { endpoint: `198.18.0.${i + 1}` } : {}),
      })),
    };
    const plan = planWireguardMesh(props);
    fs.writeFileSync(path.join(dir, 'resolve-secret'), plan.nodes['node-0'].host.files.find((f) => f.path === RESOLVE_SECRET_PATH)!.content, { mode: 0o755 });
    const setup = [
      `ip netns add ${lan}`,
      `ip -n ${lan} link add br0 type bridge`,
      `ip -n ${lan} link set br0 up`,
      ...ns.flatMap((n, i) => [
        `ip netns add ${n}`,
        `ip -n ${n} link set lo up`,
        `ip link add eth0 netns ${n} type veth peer name v${i} netns ${lan}`,
        `ip -n ${lan} link set v${i} master br0 up`,
        `ip -n ${n} addr add 198.18.0.${i + 1}/24 dev eth0`,
        `ip -n ${n} link set eth0 up`,
      ]),
    ].join(' && ');
    must(sh(setup), 'namespace setup');
    for (const i of [0, 1, 2]) must(up(i), `wg-quick up on node-${i}`);
  });

  afterAll(() => {
    for (const n of [...ns, lan]) sh(`ip netns pids ${n} | xargs -r kill; sleep 0.2; ip netns del ${n}`);
  });

  it('applies each node its key from the resolved file', () => {
    for (const i of [0, 1, 2]) {
      const pub = sh(`ip netns exec ${ns[i]} wg show ${ifaces[i]} public-key`);
      expect(pub.stdout.trim()).toBe(props.nodes[i].publicKey);
    }
  });

  it('every node pings every other node\'s overlay address', () => {
    // The node without an endpoint speaks first: its peers learn where it is from its handshake.
    for (const [from, to] of [[2, 0], [2, 1], [0, 1], [1, 0], [0, 2], [1, 2]]) {
      expect({ from, to, ok: ping(from, to).status === 0 }).toEqual({ from, to, ok: true });
    }
  });

  it('when one node takes its interface down, its peers\' pings to it fail, and others still work', () => {
    expect(down(1).status).toBe(0);
    for (const from of [0, 2]) expect({ from, ok: ping(from, 1, 2).status === 0 }).toEqual({ from, ok: false });
    expect(ping(0, 2).status).toBe(0);
  });
});
