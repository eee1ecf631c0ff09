import { Mutable, mutated } from '../helpers/mutable';
import { Problem, validateWireguardMesh, WireguardMeshProps } from '../../src';
import { KEYS, threeNodeMesh } from '../helpers/fixtures';

// The key field's refusal as the user reads it, written out here (not the source's constant, which a test must not
// take its expectation from).
const KEY_FIELD_MESSAGE = 'expected a WireGuard public key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: key fields are never echoed)';

type Props = Mutable<WireguardMeshProps>;

function mutate(fn: (p: Props) => void): Props {
  return mutated(threeNodeMesh(), fn);
}

describe('WireguardMesh validation', () => {
  it('accepts the three-site mesh', () => {
    expect(validateWireguardMesh(threeNodeMesh())).toEqual([]);
  });

  const cases: [string, (p: Props) => void, Problem[]][] = [
    ['fails on a network that is not a CIDR', (p) => { p.network = '10.10.0.0'; }, [{ path: 'network', code: 'cidr', message: 'expected a CIDR with its prefix length such as 10.10.0.0/24, received "10.10.0.0" (a bare address)' }]],
    ['fails on a network with host bits', (p) => { p.network = '10.10.0.1/24'; }, [{ path: 'network', code: 'network', message: 'expected a network address such as 10.10.0.0/24, received "10.10.0.1/24"' }]],
    ['fails on an address outside the network', (p) => { p.nodes[2].address = '10.20.0.3'; }, [{ path: 'nodes[2].address', code: 'outside-network', message: 'expected an address inside 10.10.0.0/24, received "10.20.0.3"' }]],
    ['fails on an address with another prefix', (p) => { p.nodes[2].address = '10.10.0.3/16'; }, [{ path: 'nodes[2].address', code: 'prefix', message: 'expected the network\'s prefix /24 (or a bare address), received "10.10.0.3/16"' }]],
    ['fails on the broadcast address', (p) => { p.nodes[2].address = '10.10.0.255'; }, [{ path: 'nodes[2].address', code: 'host-address', message: 'expected a host address, received "10.10.0.255", which is the network\'s broadcast address' }]],
    ['accepts both addresses of a /31 (a point-to-point network has no network or broadcast address)', (p) => { p.network = '10.10.0.0/31'; p.nodes = p.nodes.slice(0, 2); p.nodes[0].address = '10.10.0.0'; p.nodes[1].address = '10.10.0.1'; }, []],
    ['accepts both addresses of an IPv6 /127', (p) => { p.network = 'fd10::/127'; p.cni = 'calico'; p.nodes = p.nodes.slice(0, 2); p.nodes[0].address = 'fd10::'; p.nodes[1].address = 'fd10::1'; }, []],
    ['accepts the last address of an IPv6 network (IPv6 has no broadcast address)', (p) => { p.network = 'fd10::/126'; p.cni = 'calico'; p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; }); }, []],
    ['fails on the IPv6 network\'s own address', (p) => { p.network = 'fd10::/64'; p.cni = 'calico'; p.nodes.forEach((n, i) => { n.address = `fd10::${i}`; }); p.nodes[0].address = 'fd10::'; }, [{ path: 'nodes[0].address', code: 'host-address', message: 'expected a host address, received "fd10::", which is the network\'s network address' }]],
    ['fails on a null endpoint (YAML `endpoint:`) as a type, not as an undialable node', (p) => { (p.nodes[1] as Record<string, unknown>).endpoint = null; }, [{ path: 'nodes[1].endpoint', code: 'type', message: 'expected string, received null' }]],
    ['fails on a Kubernetes version before 1.28', (p) => { p.kubernetesVersion = '1.27'; }, [{ path: 'kubernetesVersion', code: 'kubernetes-version', message: 'expected a Kubernetes version from 1.28 such as \'1.31\' or \'v1.31.2\', received "1.27"' }]],
    ['accepts Kubernetes 1.28', (p) => { p.kubernetesVersion = '1.28'; }, []],
    ['fails on a second kubeadm controller without a controlPlaneEndpoint', (p) => { p.distribution = 'kubeadm'; p.nodes[1].role = 'controller'; }, [{ path: 'controlPlaneEndpoint', code: 'kubeadm-controllers', message: 'kubeadm with 2 controllers (nodes[0], nodes[1]): kubeadm join --control-plane refuses a cluster made without a stable controlPlaneEndpoint, and one cannot be added later. Set controlPlaneEndpoint to a DNS name whose records are the controllers\' overlay addresses (10.10.0.1, 10.10.0.2), e.g. \'api.cluster.internal:6443\', or to a load balancer\'s address; or make all but one of them workers' }]],
    ['fails once on several kubeadm controllers of any kind, naming each', (p) => { p.distribution = 'kubeadm'; p.nodes[0].role = 'worker'; p.nodes[1].role = 'controller+worker'; p.nodes[2].role = 'controller'; }, [{ path: 'controlPlaneEndpoint', code: 'kubeadm-controllers', message: 'kubeadm with 2 controllers (nodes[1], nodes[2]): kubeadm join --control-plane refuses a cluster made without a stable controlPlaneEndpoint, and one cannot be added later. Set controlPlaneEndpoint to a DNS name whose records are the controllers\' overlay addresses (10.10.0.2, 10.10.0.3), e.g. \'api.cluster.internal:6443\', or to a load balancer\'s address; or make all but one of them workers' }]],
    ['accepts several kubeadm controllers with a controlPlaneEndpoint', (p) => { p.distribution = 'kubeadm'; p.nodes[1].role = 'controller'; p.controlPlaneEndpoint = 'api.cluster.internal:6443'; }, []],
    ['accepts one kubeadm controller and workers', (p) => { p.distribution = 'kubeadm'; }, []],
    ['accepts several k0s controllers (k0s joins controllers with a token)', (p) => { p.nodes[1].role = 'controller'; }, []],
    ['accepts several k3s controllers', (p) => { p.distribution = 'k3s'; p.nodes[1].role = 'controller+worker'; }, []],
    ['fails on two nodes with one address', (p) => { p.nodes[2].address = '10.10.0.1/24'; }, [{ path: 'nodes[2].address', code: 'duplicate-address', message: 'address "10.10.0.1/24" is already the address of nodes[0]: the two would overlap in every peer\'s allowedIPs' }]],
    ['fails on two nodes with one key', (p) => { p.nodes[1].publicKey = KEYS.a.publicKey; }, [{ path: 'nodes[1].publicKey', code: 'duplicate-key', message: "this public key is already the key of nodes[0] (keys are never shown): one key per node" }]],
    ['fails on two nodes dialled at one address and port (one NAT, one forwarded port)', (p) => { p.nodes[1].endpoint = '198.51.100.1'; }, [{ path: 'nodes[1].endpoint', code: 'duplicate-endpoint', message: "peers dial this node at the same address and port as nodes[0]: WireGuard sends both nodes' packets there and one host answers (a NAT forwards a port to one host), so every peer reaches only one of the two. Give each node its own port (a port forward per node and its listenPort), or leave this node's endpoint out so it dials the others (with keepalive)" }]],
    ['fails on the same written once with the port and once without (the mesh\'s listenPort)', (p) => { p.nodes[1].endpoint = '198.51.100.1:51820'; }, [{ path: 'nodes[1].endpoint', code: 'duplicate-endpoint', message: "peers dial this node at the same address and port as nodes[0]: WireGuard sends both nodes' packets there and one host answers (a NAT forwards a port to one host), so every peer reaches only one of the two. Give each node its own port (a port forward per node and its listenPort), or leave this node's endpoint out so it dials the others (with keepalive)" }]],
    ['fails on one IPv6 address written two ways', (p) => { p.nodes[0].endpoint = '[2001:db8::1]'; p.nodes[1].endpoint = '[2001:0db8:0:0::1]:51820'; }, [{ path: 'nodes[1].endpoint', code: 'duplicate-endpoint', message: "peers dial this node at the same address and port as nodes[0]: WireGuard sends both nodes' packets there and one host answers (a NAT forwards a port to one host), so every peer reaches only one of the two. Give each node its own port (a port forward per node and its listenPort), or leave this node's endpoint out so it dials the others (with keepalive)" }]],
    ['fails on one hostname, with and without the port', (p) => { p.nodes[0].endpoint = 'home.example.net'; p.nodes[1].endpoint = 'home.example.net:51820'; }, [{ path: 'nodes[1].endpoint', code: 'duplicate-endpoint', message: "peers dial this node at the same address and port as nodes[0]: WireGuard sends both nodes' packets there and one host answers (a NAT forwards a port to one host), so every peer reaches only one of the two. Give each node its own port (a port forward per node and its listenPort), or leave this node's endpoint out so it dials the others (with keepalive)" }]],
    ['accepts two nodes behind one address on their own ports (a port forward each)', (p) => { p.nodes[1].endpoint = '198.51.100.1'; p.nodes[1].listenPort = 51821; }, []],
    ['fails on two nodes with one name', (p) => { p.nodes[1].node = 'site-a'; }, [{ path: 'nodes[1].node', code: 'duplicate-node', message: 'node "site-a" is already nodes[0]' }]],
    ['fails on a key that is not a key', (p) => { p.nodes[0].publicKey = 'x'; }, [{ path: 'nodes[0].publicKey', code: 'key', message: KEY_FIELD_MESSAGE }]],
    ['fails on a dialed node without a listen port', (p) => { delete p.listenPort; p.nodes[1].listenPort = 51821; }, [{ path: 'nodes[0].listenPort', code: 'listen-port-required', message: 'peers dial this node at 198.51.100.1, so it needs a fixed listen port: set nodes[0].listenPort or the mesh\'s listenPort' }]],
    ['fails on two nodes no one can dial in a full mesh', (p) => { delete p.nodes[1].endpoint; }, [{ path: 'nodes[2].endpoint', code: 'unreachable-pair', message: 'neither this node nor nodes[1] has an endpoint: in a full mesh neither can dial the other; give one an endpoint or use topology { hub }' }]],
    ['fails on a hub that is not a node', (p) => { p.topology = { hub: 'site-z' }; }, [{ path: 'topology.hub', code: 'unknown-node', message: 'expected the name of one of the nodes, received "site-z"' }]],
    ['fails on a hub without an endpoint', (p) => { p.topology = { hub: 'site-c' }; }, [{ path: 'nodes[2].endpoint', code: 'hub-endpoint', message: 'the hub "site-c" needs an endpoint: every spoke dials it' }]],
    ['fails on an endpoint that is not host[:port]', (p) => { p.nodes[0].endpoint = '198.51.100.1:0'; }, [{ path: 'nodes[0].endpoint', code: 'endpoint', message: 'expected host or host:port (an IPv6 host in brackets), received "198.51.100.1:0"' }]],
    ['fails on an MTU below 1280 on an IPv6 overlay', (p) => { p.network = 'fd10::/64'; p.cni = 'calico'; p.mtu = 1200; p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; }); }, [{ path: 'mtu', code: 'mtu-ipv6', message: 'expected an MTU of at least 1280 on an IPv6 overlay, received 1200' }]],
    ['fails on an inline key (a mesh only reads keys from sources)', (p) => { (p.nodes[0] as Record<string, unknown>).privateKey = KEYS.a.privateKey; }, [{ path: 'nodes[0].privateKey', code: 'unknown-prop', message: 'unknown prop "privateKey"' }]],
    ['fails on a keepalive of zero', (p) => { p.persistentKeepalive = 0; }, [{ path: 'persistentKeepalive', code: 'range', message: 'expected a keepalive interval in seconds: an integer from 1 to 65535, received 0' }]],
    ['accepts an interface name of exactly 15 characters (IFNAMSIZ less its NUL)', (p) => { p.interfaceName = 'overlay-net-015'; }, []],
    ['accepts an MTU of 1280 on an IPv6 overlay', (p) => { p.network = 'fd10::/64'; p.cni = 'calico'; p.mtu = 1280; p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; }); }, []],
    ['fails on an underlay MTU that leaves an IPv6 overlay below 1280', (p) => { p.network = 'fd10::/64'; p.cni = 'calico'; p.underlayMtu = 1300; p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; }); }, [{ path: 'underlayMtu', code: 'mtu-ipv6', message: 'the interface MTU derived from underlayMtu 1300 is 1240, below the 1280 an IPv6 overlay needs' }]],
    ['accepts that underlay MTU when mtu is set (nothing is derived)', (p) => { p.network = 'fd10::/64'; p.cni = 'calico'; p.underlayMtu = 1300; p.mtu = 1280; p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; }); }, []],
    ['accepts that underlay MTU on an IPv4 overlay (1240 is enough for IPv4)', (p) => { p.underlayMtu = 1300; }, []],
    ['fails on a hub that is not a name, saying what topology takes (and looks for no node)', (p) => { (p as Record<string, unknown>).topology = { hub: 5 }; }, [{ path: 'topology', code: 'invalid_union', message: 'expected \'full\' or { hub: <a node\'s name> }, received an object' }]],
    ['fails on a topology that is neither', (p) => { (p as Record<string, unknown>).topology = 'star'; }, [{ path: 'topology', code: 'invalid_union', message: 'expected \'full\' or { hub: <a node\'s name> }, received "star"' }]],
    ['fails on an interface name that only starts as one (the pattern holds to the end)', (p) => { p.interfaceName = 'wg_mesh'; }, [{ path: 'interfaceName', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "wg_mesh"' }]],
    ['fails on an interface name that only ends as one (the pattern holds from the start)', (p) => { p.interfaceName = '-wg-mesh'; }, [{ path: 'interfaceName', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "-wg-mesh"' }]],
    ['fails on an interface name over 15 characters', (p) => { p.interfaceName = 'overlay-network-0'; }, [{ path: 'interfaceName', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "overlay-network-0"' }]],
  ];

  it.each(cases)('%s', (_name, fn, expected) => {
    expect(validateWireguardMesh(mutate(fn))).toEqual(expected);
  });

  it('accepts a hub-and-spoke mesh whose spokes have no endpoint', () => {
    expect(validateWireguardMesh(mutate((p) => { p.topology = { hub: 'site-a' }; delete p.nodes[1].endpoint; }))).toEqual([]);
  });

  it('reports every mistake at once', () => {
    const problems = validateWireguardMesh(mutate((p) => {
      p.nodes[0].address = '10.99.0.1';
      p.nodes[1].publicKey = KEYS.a.publicKey;
      p.nodes[2].node = 'site-a';
      p.mtu = 10;
      (p as Record<string, unknown>).topolgy = 'full';
    }));
    expect(problems.map((p) => `${p.path} ${p.code}`)).toEqual([
      'mtu range',
      'nodes[0].address outside-network',
      'nodes[1].publicKey duplicate-key',
      'nodes[2].node duplicate-node',
      'topolgy unknown-prop',
    ]);
  });
});
