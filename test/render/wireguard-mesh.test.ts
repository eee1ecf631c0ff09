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
        'MTU = 1420',
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
    expect(plan.nodes['site-a'].values.node).toEqual({ name: 'site-a', nodeIp: '10.10.0.1', apiSans: ['10.10.0.1'] });
    expect(plan.nodes['site-b'].host.dropins.map((d) => d.unit)).toEqual(['wg-quick@wg0.service', 'k0sworker.service']);
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

  it('puts no key in any file', () => {
    const plan = planWireguardMesh(threeNodeMesh());
    const text = JSON.stringify(plan.hosts);
    for (const k of [KEYS.a.privateKey, KEYS.b.privateKey, KEYS.c.privateKey]) expect(text).not.toContain(k);
    expect(plan.hosts.every((h) => h.files.every((f) => !f.secret))).toBe(true);
  });
});
