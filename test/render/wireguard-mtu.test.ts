import { planWireguardMesh, planWireguardOverlayNode } from '../../src';
import { siteA, threeNodeMesh } from '../helpers/fixtures';

/**
 * The MTU written for an interface when only the underlay's is given: WireGuard's overhead is 60 bytes over IPv4 and
 * 80 over IPv6 (20/40 IP + 8 UDP + 32 WireGuard). A peer dialled by name may be reached over IPv6: wg takes the first
 * address getaddrinfo gives (wireguard-tools src/config.c, parse_endpoint), IPv6 first where the host has a global
 * IPv6 address (RFC 6724's default policy), and wg-endpoints takes that same first address. An IPv4 MTU there makes
 * every full-size packet 20 bytes too big for the link, dropped where path-MTU discovery is blocked.
 */
const mtuOf = (text: string) => Number(/^MTU = (\d+)$/m.exec(text)?.[1]);

describe('the MTU derived from underlayMtu 1500, by how the peers are dialled', () => {
  it.each([
    ['an IPv4 address', '198.51.100.2:51820', 1440],
    ['an IPv6 address', '[2001:db8::2]:51820', 1420],
    ['a name (it may resolve to IPv6)', 'site-b.example.net:51820', 1420],
  ])('WireguardOverlayNode, a peer at %s (%s): MTU %i', (_how, endpoint, mtu) => {
    const props = siteA();
    const { mtu: _m, ...iface } = props.wireguard[0];
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...iface, underlayMtu: 1500, peers: [{ ...iface.peers[0], endpoint }, iface.peers[1]] }] });
    expect(mtuOf(plan.hosts[0].files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content)).toBe(mtu);
    // The pods inside (kube-router's IPIP between IPv4 node addresses: 20 bytes less) follow it.
    expect(plan.values.network).toEqual({ overlayMtu: mtu, podMtu: mtu - 20 });
  });

  it.each([
    ['IPv4 addresses', '198.51.100.1', 1440],
    ['an IPv6 address', '[2001:db8::1]', 1420],
    ['a name (it may resolve to IPv6)', 'site-a.example.net', 1420],
  ])('WireguardMesh, a node dialled at %s (%s): MTU %i on every node', (_how, endpoint, mtu) => {
    const mesh = threeNodeMesh();
    const plan = planWireguardMesh({ ...mesh, underlayMtu: 1500, nodes: [{ ...mesh.nodes[0], endpoint }, ...mesh.nodes.slice(1)] });
    expect(Object.values(plan.nodes).map((n) => mtuOf(n.host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content))).toEqual([mtu, mtu, mtu]);
  });
});
