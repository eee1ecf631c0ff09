import { dataUrl } from '../../src/host/ignition';
import { planWireguardMesh, renderHostArtefacts } from '../../src';
import { KEYS, threeNodeMesh } from '../helpers/fixtures';

const confOf = (plan: ReturnType<typeof planWireguardMesh>, node: string) => plan.nodes[node].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;

describe('planWireguardMesh', () => {
  it('gives every node every other node as a peer, with keepalive on links to the node without an endpoint', () => {
    const plan = planWireguardMesh(threeNodeMesh());
    expect(Object.keys(plan.nodes)).toEqual(['site-a', 'site-b', 'site-c']);
    expect(confOf(plan, 'site-a')).toBe(
      [
        '# wg0 on site-a: written by tunnelwright',
        '[Interface]',
        'Address = 10.10.0.1/24',
        'ListenPort = 51820',
        'PostUp = wg set %i private-key /run/tunnelwright/secrets/wg0-private-key',
        '',
        '[Peer]',
        '# site-b',
        `PublicKey = ${KEYS.b.publicKey}`,
        'Endpoint = 198.51.100.2:51820',
        'AllowedIPs = 10.10.0.2/32',
        '',
        '[Peer]',
        '# site-c',
        `PublicKey = ${KEYS.c.publicKey}`,
        'AllowedIPs = 10.10.0.3/32',
        'PersistentKeepalive = 25',
        '',
      ].join('\n'),
    );
    expect(confOf(plan, 'site-c')).toContain(`# site-a\nPublicKey = ${KEYS.a.publicKey}\nEndpoint = 198.51.100.1:51820\nAllowedIPs = 10.10.0.1/32\nPersistentKeepalive = 25\n`);
  });

  it('registers each node address and orders the distribution unit after the interface', () => {
    const plan = planWireguardMesh(threeNodeMesh());
    expect(plan.nodes['site-a'].values.node).toEqual({ name: 'site-a', nodeIp: '10.10.0.1', nodeIps: ['10.10.0.1'], apiSans: ['10.10.0.1'] });
    expect(plan.nodes['site-b'].host.dropins.map((d) => d.unit)).toEqual(['wg-quick@wg0.service', 'wg-quick@wg0.service', 'k0sworker.service']);
    // k0s nodes that run a kubelet and are not installed by the library: the node IP cannot be set from the host.
    const message = 'k0s takes the kubelet\'s node IP only at `k0s install`: nothing on this host can set it, so the node registers its first interface\'s address unless you pass plan.nodes[<node>].values.k0s.installFlags to k0s install (k0sctl: the host\'s installFlags), or set installK0s';
    expect(plan.warnings).toEqual([0, 1, 2].map((i) => ({ path: `nodes[${i}].installK0s`, code: 'k0s-node-ip', message })));
    // A controller runs no kubelet, so it has no node IP to warn about.
    const controller = planWireguardMesh({ ...threeNodeMesh(), nodes: threeNodeMesh().nodes.map((n, i) => (i === 0 ? { ...n, role: 'controller' as const } : n)) });
    expect(controller.warnings.map((w) => w.path)).toEqual(['nodes[1].installK0s', 'nodes[2].installK0s']);
    const installed = planWireguardMesh({ ...threeNodeMesh(), nodes: threeNodeMesh().nodes.map((n) => ({ ...n, installK0s: {} })) });
    expect(installed.warnings).toEqual([]);
    expect(installed.nodes['site-b'].host.units.find((u) => u.name === 'tunnelwright-k0s-install.service')!.content).toContain('\nExecStart=/usr/local/bin/k0s install worker --kubelet-extra-args=--node-ip=10.10.0.2\n');
  });

  it('routes spokes through the hub, which forwards', () => {
    const props = threeNodeMesh();
    const plan = planWireguardMesh({ ...props, topology: { hub: 'site-a' } });
    expect(confOf(plan, 'site-b')).toContain(`[Peer]\n# site-a\nPublicKey = ${KEYS.a.publicKey}\nEndpoint = 198.51.100.1:51820\nAllowedIPs = 10.10.0.0/24\n\n`.trimEnd());
    expect(confOf(plan, 'site-b').match(/\[Peer\]/g)).toHaveLength(1);
    expect(confOf(plan, 'site-a')).toContain('PostUp = sysctl -q -w net.ipv4.ip_forward=1\n');
    expect(confOf(plan, 'site-a').match(/\[Peer\]/g)).toHaveLength(2);
  });

  it('uses a node listen port, an endpoint port and bracketed IPv6 endpoints', () => {
    const props = threeNodeMesh();
    const nodes = [{ ...props.nodes[0], endpoint: '[2001:db8::1]', listenPort: 51900 }, { ...props.nodes[1], endpoint: '198.51.100.2:443' }, props.nodes[2]];
    const plan = planWireguardMesh({ ...props, nodes });
    expect(confOf(plan, 'site-c')).toContain('Endpoint = [2001:db8::1]:51900\n');
    expect(confOf(plan, 'site-c')).toContain('Endpoint = 198.51.100.2:443\n');
    expect(confOf(plan, 'site-a')).toContain('ListenPort = 51900\n');
  });

  it('writes Ignition data URLs exactly as encoding each file whole would (the shared peer sections join exactly)', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), topology: 'full' });
    for (const host of plan.hosts) {
      const files = renderHostArtefacts(host).ignition.storage!.files;
      expect(files.map((f) => f.contents.source)).toEqual(host.files.map((f) => dataUrl(f.content)));
    }
  });

  it('derives every node\'s MTU from the underlay: 60 bytes of overhead over IPv4, 80 once a node is dialled over IPv6', () => {
    const mtuOf = (props: ReturnType<typeof threeNodeMesh>) => Object.keys(planWireguardMesh(props).nodes).map((n) => /^MTU = (\d+)$/m.exec(confOf(planWireguardMesh(props), n))?.[1]);
    expect(mtuOf(threeNodeMesh())).toEqual([undefined, undefined, undefined]);
    expect(mtuOf({ ...threeNodeMesh(), underlayMtu: 1450 })).toEqual(['1390', '1390', '1390']);
    const v6 = threeNodeMesh();
    expect(mtuOf({ ...v6, underlayMtu: 1500, nodes: [{ ...v6.nodes[0], endpoint: '[2001:db8::1]' }, ...v6.nodes.slice(1)] })).toEqual(['1420', '1420', '1420']);
    expect(planWireguardMesh({ ...threeNodeMesh(), underlayMtu: 1450 }).nodes['site-b'].values.network).toEqual({ overlayMtu: 1390, podMtu: 1340 });
  });

  it('makes each interface reloadable without losing its key', () => {
    for (const host of planWireguardMesh(threeNodeMesh()).hosts) {
      expect(host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content).toBe('[Service]\nExecReload=\nExecReload=/opt/tunnelwright/bin/wg-reload %i\n');
    }
  });
});

describe('a full mesh too big for one user-data', () => {
  it('warns for each node by its place in nodes, exactly when its cloud-config is over 16 KiB', () => {
    const key = (i: number) => { const b = Buffer.alloc(32); b.writeUInt32BE(i + 1, 28); return b.toString('base64'); };
    const nodes = Array.from({ length: 120 }, (_, i) => ({ node: `n${i}`, address: `10.10.0.${i + 1}`, publicKey: key(i), privateKeyFrom: { file: '/run/wg.key' }, endpoint: `198.51.100.${i + 1}` }));
    const plan = planWireguardMesh({ network: '10.10.0.0/24', listenPort: 51820, nodes, installPackages: false });
    const over = nodes.map((n, i) => ({ i, bytes: Buffer.byteLength(renderHostArtefacts(plan.nodes[n.node].host).cloudConfig) })).filter((x) => x.bytes > 16384);
    expect(over.length).toBe(120);
    expect(plan.warnings.filter((w) => w.code === 'user-data-size').map((w) => w.path)).toEqual(over.map((x) => `nodes[${x.i}]`));
  });
});
