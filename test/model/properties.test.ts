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
    return { network: network.cidr, listenPort, distribution, ...(keepalive ? { persistentKeepalive: keepalive } : {}), ...(hub ? { topology: { hub: 'node-0' } } : {}), nodes };
  });

/** Random overlay nodes with inline keys (the case where secrets sit in the props). */
const inlineNodeArb = fc.record({ priv: key, psk: key, peers: fc.uniqueArray(key, { minLength: 1, maxLength: 5 }) }).map(({ priv, psk, peers }): WireguardOverlayNodeProps => ({
  node: 'lab-1',
  wireguard: [{ name: 'wg0', address: '10.10.0.1/24', listenPort: 51820, privateKey: priv, peers: peers.map((p, i) => ({ publicKey: p, allowedIPs: [`10.10.0.${i + 2}/32`], presharedKey: psk })) }],
}));

describe('properties', () => {
  it('every random valid mesh validates and renders the same bytes twice', () => {
    fc.assert(
      fc.property(meshArb, (props) => {
        expect(validateWireguardMesh(props)).toEqual([]);
        const one = planWireguardMesh(props);
        const two = planWireguardMesh(structuredClone(props));
        for (let i = 0; i < one.hosts.length; i++) {
          const a = renderHostArtefacts(one.hosts[i]);
          const b = renderHostArtefacts(two.hosts[i]);
          expect(b.cloudConfig).toBe(a.cloudConfig);
          expect(b.ignitionJson).toBe(a.ignitionJson);
        }
        expect(one.objects).toEqual([]);
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
      fc.property(fc.string({ minLength: 8, maxLength: 60 }).filter((s) => !/^\s*$/.test(s)), (bad) => {
        const problems = validateWireguardOverlayNode({ node: 'lab-1', wireguard: [{ name: 'wg0', address: '10.10.0.1/24', privateKey: bad, peers: [{ publicKey: 'x'.repeat(10), allowedIPs: ['10.10.0.2/32'], presharedKey: bad }] }] });
        expect(JSON.stringify(problems)).not.toContain(JSON.stringify(bad).slice(1, -1));
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
