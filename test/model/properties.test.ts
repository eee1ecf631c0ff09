import * as fc from 'fast-check';
import {
  planWireguardMesh, planWireguardOverlayNode, renderHostArtefacts, validateWireguardMesh, validateWireguardOverlayNode, ValidationError, WireguardMeshProps, WireguardOverlayNodeProps,
} from '../../src';
import { thrown } from '../helpers/thrown';
import { runs } from '../helpers/runs';

const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64'));

/** An overlay network of either family, at random: an IPv4 /24 in a private range or an IPv6 /64 in fd00::/8. */
const networkArb = fc.oneof(
  fc.record({ base: fc.constantFrom('10', '172.16', '172.31', '192.168', '100.64'), mid: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 2, maxLength: 2 }) }).map(({ base, mid }) => {
    const prefix = [base, ...mid].join('.').split('.').slice(0, 3).join('.');
    return { cidr: `${prefix}.0/24`, host: (h: number) => `${prefix}.${h}` };
  }),
  fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 3, maxLength: 3 }).map(([a, b, c]) => {
    const prefix = `fd${(a & 0xff).toString(16).padStart(2, '0')}:${b.toString(16)}:${c.toString(16)}:1`;
    return { cidr: `${prefix}::/64`, host: (h: number) => `${prefix}::${h.toString(16)}` };
  }),
);

/** Random valid meshes: unique names, addresses and keys; in a full mesh at most one node without an endpoint. */
const meshArb: fc.Arbitrary<WireguardMeshProps> = fc
  .record({
    n: fc.integer({ min: 2, max: 12 }),
    network: networkArb,
    listenPort: fc.integer({ min: 1024, max: 65535 }).filter((p) => p !== 4789 && p !== 8472),
    v6Endpoints: fc.boolean(),
    hosts: fc.uniqueArray(fc.integer({ min: 1, max: 254 }), { minLength: 12, maxLength: 12 }),
    keys: fc.uniqueArray(key, { minLength: 12, maxLength: 12 }),
    dialable: fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
    hub: fc.boolean(),
    keepalive: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    distribution: fc.constantFrom('k0s', 'k3s', 'kubeadm') as fc.Arbitrary<'k0s' | 'k3s' | 'kubeadm'>,
  })
  .map(({ n, network, listenPort, v6Endpoints, hosts, keys, dialable, hub, keepalive, distribution }) => {
    const nodes = Array.from({ length: n }, (_, i) => ({
      node: `node-${i}`,
      address: network.host(hosts[i]),
      publicKey: keys[i],
      privateKeyFrom: i % 2 === 0 ? { file: `/run/keys/node-${i}` } : { url: `https://keys.example.test/node-${i}`, waitFor: '5m' },
      ...((hub ? i === 0 || dialable[i] : i < n - 1 || dialable[i]) ? { endpoint: v6Endpoints ? `[2001:db8::${i + 1}]` : `198.51.100.${i + 1}` } : {}),
    }));
    // k0s runs kube-router for IPv6-only nodes only with an IPv6 pod CIDR (k0s's IPv6 single-stack; else refused).
    const k0sV6 = distribution === 'k0s' && network.cidr.includes(':') ? { k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } } : {};
    return { network: network.cidr, listenPort, distribution, ...k0sV6, ...(keepalive ? { persistentKeepalive: keepalive } : {}), ...(hub ? { topology: { hub: 'node-0' } } : {}), nodes };
  });

/** A wg-quick config as WireGuard reads it: the [Interface] keys and each [Peer]'s (one value a key, the last one wins). */
function parseWgConf(text: string): { iface: Record<string, string>; peers: Record<string, string>[] } {
  const sections: { name: string; keys: Record<string, string> }[] = [];
  for (const line of text.split('\n')) {
    const l = line.replace(/#.*/, '').trim();
    if (!l) continue;
    const head = /^\[(\w+)\]$/.exec(l);
    if (head) sections.push({ name: head[1], keys: {} });
    else {
      const kv = /^(\w+)\s*=\s*(.*)$/.exec(l)!;
      sections[sections.length - 1].keys[kv[1]] = kv[2];
    }
  }
  return { iface: sections.find((x) => x.name === 'Interface')!.keys, peers: sections.filter((x) => x.name === 'Peer').map((x) => x.keys) };
}

/** An address as [family, value] and a CIDR as [family, first, last], computed here (not with the library's helpers). */
function ipValue(ip: string): [number, bigint] {
  if (ip.includes(':')) {
    const [head, tail = ''] = ip.split('::');
    const h = head ? head.split(':') : [];
    const t = ip.includes('::') ? (tail ? tail.split(':') : []) : [];
    const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
    return [6, groups.reduce((v, g) => (v << 16n) + BigInt(parseInt(g, 16)), 0n)];
  }
  return [4, ip.split('.').reduce((v, o) => (v << 8n) + BigInt(Number(o)), 0n)];
}
function cidr(text: string): [number, bigint, bigint] {
  const [ip, len] = text.split('/');
  const [family, v] = ipValue(ip);
  const bits = BigInt(family === 4 ? 32 : 128);
  const host = bits - BigInt(Number(len));
  const first = (v >> host) << host;
  return [family, first, first + (1n << host) - 1n];
}
const overlaps = (a: [number, bigint, bigint], b: [number, bigint, bigint]) => a[0] === b[0] && a[1] <= b[2] && b[1] <= a[2];
const contains = (r: [number, bigint, bigint], ip: string) => {
  const [f, v] = ipValue(ip);
  return f === r[0] && r[1] <= v && v <= r[2];
};

/**
 * Invalid keys, among them what a person pastes: a real key one character short or long, with a character no base64
 * has, without its padding, or a key's worth of base64 of the wrong length (each still carries most of a real key).
 */
const badKey = fc.oneof(
  fc.string({ minLength: 8, maxLength: 60 }).filter((s) => !/^\s*$/.test(s)),
  key.map((k) => k.slice(0, 43)),
  key.map((k) => `${k.slice(0, 42)}A=`.replace(/^(.{41})./, '$1!')),
  fc.tuple(key, fc.integer({ min: 0, max: 42 })).map(([k, i]) => `${k.slice(0, i)}*${k.slice(i + 1)}`),
  key.map((k) => `${k}A`),
  fc.uint8Array({ minLength: 31, maxLength: 33 }).filter((b) => b.length !== 32).map((b) => Buffer.from(b).toString('base64')),
);

/** Random overlay nodes with inline keys (the case where secrets sit in the props). */
const inlineNodeArb = fc.record({ priv: key, psk: key, peers: fc.uniqueArray(key, { minLength: 1, maxLength: 5 }) }).map(({ priv, psk, peers }): WireguardOverlayNodeProps => ({
  node: 'lab-1',
  wireguard: [{ name: 'wg0', address: '10.10.0.1/24', listenPort: 51820, privateKey: priv, peers: peers.map((p, i) => ({ publicKey: p, allowedIPs: [`10.10.0.${i + 2}/32`], presharedKey: psk })) }],
}));

describe('properties', () => {
  it('every random valid mesh: each node\'s interface config reaches every other node by exactly one peer, symmetric, disjoint AllowedIPs, dialled where it listens', () => {
    fc.assert(
      fc.property(meshArb, (props) => {
        expect(validateWireguardMesh(props)).toEqual([]);
        const plan = planWireguardMesh(props);
        expect(plan.objects).toEqual([]);
        const hub = typeof props.topology === 'object' ? props.topology.hub : undefined;
        const prefix = Number(props.network.split('/')[1]);
        const conf = Object.fromEntries(props.nodes.map((n) => [n.node, parseWgConf(plan.nodes[n.node].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content)]));
        const byKey = new Map(props.nodes.map((n) => [n.publicKey, n]));
        for (const n of props.nodes) {
          const c = conf[n.node];
          const [address, length] = c.iface.Address.split('/');
          expect({ address: ipValue(address), length: Number(length), listenPort: c.iface.ListenPort }).toEqual({ address: ipValue(n.address), length: prefix, listenPort: String(props.listenPort) });
          // Who it peers with: everyone else in a full mesh; in a hub topology the hub peers with everyone, a spoke with the hub.
          const expectedPeers = props.nodes.filter((o) => o !== n && (!hub || n.node === hub || o.node === hub));
          expect(c.peers.map((p) => byKey.get(p.PublicKey)?.node).sort()).toEqual(expectedPeers.map((o) => o.node).sort());
          const ranges = c.peers.map((p) => p.AllowedIPs.split(/,\s*/).map(cidr));
          // No two peers of one node claim one address (WireGuard would move it to the last one). A node's own address is
          // claimed by no peer, but for a spoke, whose one peer (the hub) takes the whole network (its own address stays
          // local: the local table comes first).
          const flat = ranges.flat();
          for (let i = 0; i < flat.length; i++) for (let j = i + 1; j < flat.length; j++) expect(overlaps(flat[i], flat[j])).toBe(false);
          const spoke = hub !== undefined && n.node !== hub;
          expect(flat.some((r) => contains(r, n.address))).toBe(spoke);
          expect(spoke ? ranges : 'not a spoke').toEqual(spoke ? [[cidr(props.network)]] : 'not a spoke');
          // Every other node's address is reached through exactly one peer: itself in a full mesh (or for the hub), else the hub.
          for (const o of props.nodes.filter((x) => x !== n)) {
            const via = c.peers.filter((_p, i) => ranges[i].some((r) => contains(r, o.address))).map((p) => byKey.get(p.PublicKey)!.node);
            expect(via).toEqual([!hub || n.node === hub ? o.node : hub]);
          }
          for (const p of c.peers) {
            const other = byKey.get(p.PublicKey)!;
            // Symmetric: the peer has this node as a peer too.
            expect(conf[other.node].peers.map((q) => q.PublicKey)).toContain(n.publicKey);
            // Dialled at the peer's endpoint and listen port exactly when the peer has an endpoint.
            expect(p.Endpoint).toBe(other.endpoint ? `${other.endpoint}:${props.listenPort}` : undefined);
          }
        }
        // Every pair that peers can meet: at least one side dials the other.
        for (const n of props.nodes) for (const p of conf[n.node].peers) {
          const other = byKey.get(p.PublicKey)!;
          expect(p.Endpoint !== undefined || conf[other.node].peers.find((q) => q.PublicKey === n.publicKey)!.Endpoint !== undefined).toBe(true);
        }
        // And deterministic: the same props render the same bytes.
        const again = planWireguardMesh(structuredClone(props));
        for (let i = 0; i < plan.hosts.length; i++) expect(renderHostArtefacts(again.hosts[i]).cloudConfig).toBe(renderHostArtefacts(plan.hosts[i]).cloudConfig);
      }),
      { numRuns: runs(60) },
    );
  });

  it('no private or preshared key appears in a warning, an error or a Kubernetes object', () => {
    fc.assert(
      fc.property(inlineNodeArb, fc.constantFrom('valid', 'bad-address', 'bad-peer'), (props, breakIt) => {
        const secrets = [props.wireguard[0].privateKey!, props.wireguard[0].peers[0].presharedKey!];
        const iface = props.wireguard[0];
        const broken: WireguardOverlayNodeProps = breakIt === 'valid' ? props : { ...props, wireguard: [{ ...iface, ...(breakIt === 'bad-address' ? { address: '10.10.0.0/24' } : { peers: [...iface.peers, { ...iface.peers[0] }] }) }] };
        const error = thrown(() => planWireguardOverlayNode(broken));
        expect(error === undefined || error instanceof ValidationError).toBe(true);
        const plan = error ? undefined : planWireguardOverlayNode(broken);
        const said = error ? `${error.message}${JSON.stringify((error as ValidationError).problems)}` : JSON.stringify([plan!.warnings, plan!.objects, plan!.values]);
        expect(error ? true : renderHostArtefacts(plan!.hosts[0]).secret).toBe(true);
        for (const s of secrets) expect(said).not.toContain(s);
      }),
      { numRuns: runs(100) },
    );
  });

  it('an invalid key is never echoed, whatever it is', () => {
    fc.assert(
      fc.property(badKey, (bad) => {
        const problems = validateWireguardOverlayNode({ node: 'lab-1', wireguard: [{ name: 'wg0', address: '10.10.0.1/24', privateKey: bad, peers: [{ publicKey: 'x'.repeat(10), allowedIPs: ['10.10.0.2/32'], presharedKey: bad }] }] });
        // Refused where it was given (the check ran), and no 16 characters of it in a row are said back.
        expect(problems.map((p) => p.path)).toEqual(expect.arrayContaining(['wireguard[0].privateKey', 'wireguard[0].peers[0].presharedKey']));
        const said = JSON.stringify(problems);
        const escaped = JSON.stringify(bad).slice(1, -1);
        for (let i = 0; i + 16 <= escaped.length; i++) expect(said).not.toContain(escaped.slice(i, i + 16));
        expect(said).not.toContain(escaped);
      }),
      { numRuns: runs(200) },
    );
  });

  it('validation never throws, and planning throws nothing but ValidationError', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (a, b) => {
        for (const input of [a, { node: 'n', wireguard: [a] }, { network: '10.0.0.0/24', nodes: [a, b] }]) {
          validateWireguardOverlayNode(input);
          validateWireguardMesh(input);
          for (const plan of [planWireguardOverlayNode, planWireguardMesh] as ((p: unknown) => unknown)[]) {
            const error = thrown(() => plan(input));
            expect(error === undefined || error instanceof ValidationError).toBe(true);
          }
        }
      }),
      { numRuns: runs(300) },
    );
  });
});
