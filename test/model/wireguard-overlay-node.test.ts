import { Mutable, mutated } from '../helpers/mutable';
import { Problem, validateWireguardOverlayNode, planWireguardOverlayNode, ValidationError, WireguardOverlayNodeProps } from '../../src';
import { KEYS, siteA } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';

// The key field's refusal as the user reads it, written out here (not the source's constant, which a test must not
// take its expectation from).
const KEY_FIELD_MESSAGE = 'expected a WireGuard public key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: key fields are never echoed)';

type Props = Mutable<WireguardOverlayNodeProps>;

function mutate(fn: (p: Props) => void): Props {
  return mutated(siteA(), fn);
}

describe('WireguardOverlayNode validation', () => {
  it('accepts the three-site controller', () => {
    expect(validateWireguardOverlayNode(siteA())).toEqual([]);
  });

  it('is silent for an empty wireguard list', () => {
    expect(validateWireguardOverlayNode({ node: 'n1', wireguard: [] })).toEqual([]);
    expect(planWireguardOverlayNode({ node: 'n1', wireguard: [] }).warnings).toEqual([]);
    // Nothing on the host either: no packages, files or units for no interface.
    expect(planWireguardOverlayNode({ node: 'n1', wireguard: [] }).hosts).toEqual([{ node: 'n1', files: [], units: [], dropins: [], commands: [], packages: [] }]);
  });

  const cases: [string, (p: Props) => void, Problem[]][] = [
    ['fails without a name', (p) => { delete (p.wireguard[0] as Partial<Props['wireguard'][0]>).name; }, [{ path: 'wireguard[0].name', code: 'required', message: 'required: expected string' }]],
    ['fails on a name that is not an interface name', (p) => { p.wireguard[0].name = 'WG_0'; }, [{ path: 'wireguard[0].name', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "WG_0"' }]],
    ['fails on a name that only starts as an interface name (the pattern holds to the end)', (p) => { p.wireguard[0].name = 'wg_0'; }, [{ path: 'wireguard[0].name', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "wg_0"' }]],
    ['fails on a name that only ends as an interface name (the pattern holds from the start)', (p) => { p.wireguard[0].name = '-wg0'; }, [{ path: 'wireguard[0].name', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "-wg0"' }]],
    ['fails on a name over 15 characters', (p) => { p.wireguard[0].name = 'overlay-site-a-1'; }, [{ path: 'wireguard[0].name', code: 'interface-name', message: 'expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, received "overlay-site-a-1"' }]],
    ['fails on a name used twice', (p) => { p.wireguard.push({ ...p.wireguard[0], address: '10.20.0.1/24', nodeAddress: false, peers: [] }); }, [{ path: 'wireguard[1].name', code: 'duplicate', message: 'interface name "wg0" is already used by wireguard[0]' }]],
    ['fails on a bare IP address', (p) => { p.wireguard[0].address = '10.10.0.1'; }, [{ path: 'wireguard[0].address', code: 'cidr', message: 'expected an interface address with its prefix such as 10.10.0.1/24, received a bare IP "10.10.0.1"' }]],
    ['fails on a network address', (p) => { p.wireguard[0].address = '10.10.0.0/24'; }, [{ path: 'wireguard[0].address', code: 'host-address', message: 'expected a host address inside the network, received "10.10.0.0/24", which is the network address' }]],
    ['fails on a Kubernetes version that is no version', (p) => { p.kubernetesVersion = 'latest'; }, [{ path: 'kubernetesVersion', code: 'kubernetes-version', message: 'expected a Kubernetes version from 1.28 such as \'1.31\' or \'v1.31.2\', received "latest"' }]],
    ['fails on Kubernetes 1.27', (p) => { p.kubernetesVersion = 'v1.27.9'; }, [{ path: 'kubernetesVersion', code: 'kubernetes-version', message: 'expected a Kubernetes version from 1.28 such as \'1.31\' or \'v1.31.2\', received "v1.27.9"' }]],
    ['accepts Kubernetes v1.28.0 (the control of the two above)', (p) => { p.kubernetesVersion = 'v1.28.0'; }, []],
    ['takes a 15-character interface name', (p) => { p.wireguard[0].name = 'overlay-site-a1'; }, []],
    ['takes both addresses of an IPv4 /31 (RFC 3021: no network or broadcast address)', (p) => { p.wireguard[0].address = '10.10.0.0/31'; p.wireguard.push({ ...p.wireguard[0], name: 'wg1', address: '10.20.0.1/31', listenPort: 51821, nodeAddress: false, peers: [] }); }, []],
    ['takes the last address of an IPv6 network (IPv6 has no broadcast address)', (p) => { p.wireguard[0].address = 'fd10::ffff:ffff:ffff:ffff/64'; p.cni = 'calico'; }, []],
    ['takes an MTU of 576 on IPv4, and of 65535', (p) => { p.wireguard[0].mtu = 576; p.wireguard.push({ ...p.wireguard[0], name: 'wg1', address: '10.20.0.1/24', listenPort: 51821, mtu: 65535, nodeAddress: false, peers: [] }); }, []],
    ['takes an MTU of 1280 on an IPv6 interface', (p) => { p.wireguard[0].address = 'fd10::1/64'; p.cni = 'calico'; p.wireguard[0].mtu = 1280; }, []],
    ['takes an underlay MTU that leaves an IPv6 interface exactly 1280', (p) => { delete p.wireguard[0].mtu; p.wireguard[0].address = 'fd10::1/64'; p.cni = 'calico'; p.wireguard[0].underlayMtu = 1340; }, []],
    ['takes an underlay MTU that leaves an IPv4-only interface under 1280', (p) => { delete p.wireguard[0].mtu; p.wireguard[0].underlayMtu = 1300; }, []],
    ['fails on an MTU over 65535', (p) => { p.wireguard[0].mtu = 65536; }, [{ path: 'wireguard[0].mtu', code: 'range', message: 'expected an MTU: an integer from 576 to 65535, received 65536' }]],
    ['fails on an underlay MTU that leaves an interface dialled over IPv6 under 1280 (80 bytes of overhead)', (p) => { delete p.wireguard[0].mtu; p.wireguard[0].address = 'fd10::1/64'; p.cni = 'calico'; p.wireguard[0].underlayMtu = 1350; p.wireguard[0].peers[0].endpoint = '[2001:db8::7]:51820'; }, [
      { path: 'wireguard[0].underlayMtu', code: 'mtu-ipv6', message: 'the interface MTU derived from underlayMtu 1350 is 1270, below the 1280 an IPv6 address needs; expected an underlay MTU of at least 1360' },
    ]],
    ['fails on three addresses', (p) => { p.wireguard[0].address = ['10.10.0.1/24', 'fd10::1/64', 'fd20::1/64']; }, [
      { path: 'wireguard[0].address', code: 'addresses', message: 'expected one IPv4 and/or one IPv6 interface address, received a list of 3' },
      { path: 'wireguard[0].address[2]', code: 'addresses', message: 'expected at most one IPv6 address per interface (a dual-stack interface has one of each), received "fd20::1/64"' },
    ]],
    ['fails on an address that is no text in a list, by its type only', (p) => { (p.wireguard[0].address as unknown) = ['10.10.0.1/24', 42]; }, [
      { path: 'wireguard[0].address', code: 'invalid_union', message: 'expected an address with its prefix such as 10.10.0.1/24, or a list of them, received an array of 2' },
    ]],
    ['fails on an interface without an address as a required prop', (p) => { delete (p.wireguard[0] as { address?: unknown }).address; }, [
      { path: 'wireguard[0].address', code: 'required', message: 'required: expected an address with its prefix such as 10.10.0.1/24, or a list of them' },
    ]],
    ['fails on a distribution given as an object, by its kind only, not by a field that shares its name', (p) => { (p as Record<string, unknown>).distribution = { distribution: 'k0s' }; }, [
      { path: 'distribution', code: 'enum', message: 'expected one of "k0s"|"k3s"|"kubeadm", received an object' },
    ]],
    ['fails on a key file path with a space after its first character', (p) => { p.wireguard[0].privateKeyFrom = { file: '/run/wg 0.key' }; }, [
      { path: 'wireguard[0].privateKeyFrom.file', code: 'path', message: 'expected an absolute path without spaces or quotes, received "/run/wg 0.key"' },
    ]],
    ['fails on a key URL with a space after the scheme, without echoing it', (p) => { p.wireguard[0].privateKeyFrom = { url: 'https://vault.example.test/wg0?token=a b' }; }, [
      { path: 'wireguard[0].privateKeyFrom.url', code: 'url', message: 'expected an https:// URL without spaces or quotes' },
    ]],
    ['fails on a waitFor of 0s (the unit would never wait)', (p) => { p.wireguard[0].privateKeyFrom = { file: '/run/k', waitFor: '0s' }; }, [
      { path: 'wireguard[0].privateKeyFrom.waitFor', code: 'range', message: 'expected a duration from 1s to 1h, received "0s"' },
    ]],
    ['fails on an endpoint port over 65535, and takes 65535', (p) => { p.wireguard[0].peers[0].endpoint = '198.51.100.7:65536'; p.wireguard[0].peers[1].endpoint = '198.51.100.8:65535'; }, [
      { path: 'wireguard[0].peers[0].endpoint', code: 'endpoint', message: 'expected host:port (an IPv6 host in brackets), received "198.51.100.7:65536"' },
    ]],
    ['fails on an endpoint with a stray "]" before its host', (p) => { p.wireguard[0].peers[0].endpoint = 'x]vpn.example.net:51820'; }, [
      { path: 'wireguard[0].peers[0].endpoint', code: 'endpoint', message: 'expected host:port (an IPv6 host in brackets), received "x]vpn.example.net:51820"' },
    ]],
    ['fails on an IPv4 broadcast address', (p) => { p.wireguard[0].address = '10.10.0.255/24'; }, [{ path: 'wireguard[0].address', code: 'host-address', message: 'expected a host address inside the network, received "10.10.0.255/24", which is the network\'s broadcast address' }]],
    ['fails on a peer that is no object, beside an underlay MTU that leaves IPv6 under 1280', (p) => { delete p.wireguard[0].mtu; p.wireguard[0].address = 'fd10::1/64'; p.cni = 'calico'; p.wireguard[0].underlayMtu = 1300; (p.wireguard[0].peers as unknown[]) = [null]; }, [
      { path: 'wireguard[0].peers[0]', code: 'type', message: 'expected object, received null' },
      { path: 'wireguard[0].underlayMtu', code: 'mtu-ipv6', message: 'the interface MTU derived from underlayMtu 1300 is 1240, below the 1280 an IPv6 address needs; expected an underlay MTU of at least 1340' },
    ]],
    ['fails on a cluster endpoint that names no host, and says nothing of node addresses', (p) => { p.clusterEndpoint = 'https://10.10.0.1 :6443'; delete p.wireguard[0].nodeAddress; }, [{ path: 'clusterEndpoint', code: 'endpoint', message: 'expected host:port or https://host:port, received "https://10.10.0.1 :6443"' }]],
    ['fails on a dual-stack list with two IPv4 addresses', (p) => { p.wireguard[0].address = ['10.10.0.1/24', '10.20.0.1/24']; }, [{ path: 'wireguard[0].address[1]', code: 'addresses', message: 'expected at most one IPv4 address per interface (a dual-stack interface has one of each), received "10.20.0.1/24"' }]],
    ['fails on an empty address list', (p) => { p.wireguard[0].address = []; }, [{ path: 'wireguard[0].address', code: 'addresses', message: 'expected one IPv4 and/or one IPv6 interface address, received a list of 0' }]],
    ['checks each address of a dual-stack list alone', (p) => { p.wireguard[0].address = ['10.10.0.1/24', 'fd10::/64']; }, [{ path: 'wireguard[0].address[1]', code: 'host-address', message: 'expected a host address inside the network, received "fd10::/64", which is the network address' }]],
    ['fails on an underlay MTU that leaves an IPv6 interface under 1280', (p) => { delete p.wireguard[0].mtu; p.wireguard[0].address = ['10.10.0.1/24', 'fd10::1/64']; p.wireguard[0].underlayMtu = 1300; }, [{ path: 'wireguard[0].underlayMtu', code: 'mtu-ipv6', message: 'the interface MTU derived from underlayMtu 1300 is 1240, below the 1280 an IPv6 address needs; expected an underlay MTU of at least 1340' }]],
    ['fails on an underlay MTU below 1280', (p) => { p.wireguard[0].underlayMtu = 1000; }, [{ path: 'wireguard[0].underlayMtu', code: 'range', message: 'expected an underlay MTU: an integer from 1280 to 65535, received 1000' }]],
    ['fails on an endpoint that is dotted digits but no address', (p) => { p.wireguard[0].peers[0].endpoint = '1.2.3.4.5:51820'; }, [{ path: 'wireguard[0].peers[0].endpoint', code: 'endpoint', message: 'expected host:port (an IPv6 host in brackets), received "1.2.3.4.5:51820"' }]],
    ['fails on an address with a leading zero', (p) => { p.wireguard[0].address = '10.10.0.02/24'; }, [{ path: 'wireguard[0].address', code: 'cidr', message: 'expected an interface address such as 10.10.0.1/24, received "10.10.0.02/24"' }]],
    ['fails on a listen port out of range', (p) => { p.wireguard[0].listenPort = 70000; }, [{ path: 'wireguard[0].listenPort', code: 'range', message: 'expected a port: an integer from 1 to 65535, received 70000' }]],
    ['fails on an MTU below 576', (p) => { p.wireguard[0].mtu = 500; }, [{ path: 'wireguard[0].mtu', code: 'range', message: 'expected an MTU: an integer from 576 to 65535, received 500' }]],
    ['fails on an MTU below 1280 with IPv6', (p) => { p.wireguard[0].address = 'fd10::1/64'; p.cni = 'calico'; p.wireguard[0].mtu = 1200; }, [{ path: 'wireguard[0].mtu', code: 'mtu-ipv6', message: 'expected an MTU of at least 1280 on an interface with an IPv6 address, received 1200' }]],
    ['fails with both privateKey and privateKeyFrom', (p) => { p.wireguard[0].privateKey = KEYS.a.privateKey; }, [{ path: 'wireguard[0]', code: 'private-key', message: 'expected exactly one of privateKey or privateKeyFrom, received both' }]],
    ['fails with neither privateKey nor privateKeyFrom', (p) => { delete p.wireguard[0].privateKeyFrom; }, [{ path: 'wireguard[0]', code: 'private-key', message: 'expected exactly one of privateKey or privateKeyFrom, received neither' }]],
    ['fails on an inline key that is not 32 bytes of base64, without echoing it', (p) => { delete p.wireguard[0].privateKeyFrom; p.wireguard[0].privateKey = 'c2VjcmV0LWJ1dC10b28tc2hvcnQ='; }, [{ path: 'wireguard[0].privateKey', code: 'key', message: 'expected a WireGuard private key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: it is secret)' }]],
    ['fails on a key source that is neither file nor url', (p) => { p.wireguard[0].privateKeyFrom = {} as never; }, [{ path: 'wireguard[0].privateKeyFrom', code: 'secret-source', message: 'expected exactly one of `file` (an absolute path) or `url` (an https:// URL)' }]],
    ['fails on a relative key file', (p) => { p.wireguard[0].privateKeyFrom = { file: 'wg0.key' }; }, [{ path: 'wireguard[0].privateKeyFrom.file', code: 'path', message: 'expected an absolute path without spaces or quotes, received "wg0.key"' }]],
    ['fails on a plain-http key URL', (p) => { p.wireguard[0].privateKeyFrom = { url: 'http://vault/wg0' }; }, [{ path: 'wireguard[0].privateKeyFrom.url', code: 'url', message: 'expected an https:// URL without spaces or quotes' }]],
    ['fails on a waitFor over an hour', (p) => { p.wireguard[0].privateKeyFrom = { file: '/run/k', waitFor: '2h' }; }, [{ path: 'wireguard[0].privateKeyFrom.waitFor', code: 'range', message: 'expected a duration from 1s to 1h, received "2h"' }]],
    ['fails on a waitFor that is not a duration', (p) => { p.wireguard[0].privateKeyFrom = { file: '/run/k', waitFor: 'soon' }; }, [{ path: 'wireguard[0].privateKeyFrom.waitFor', code: 'duration', message: 'expected a duration such as 30s, 10m or 1h, received "soon"' }]],
    ['fails on two interfaces registering the node address', (p) => { p.wireguard.push({ name: 'wg1', address: '10.20.0.1/24', nodeAddress: true, privateKeyFrom: { file: '/run/k1' }, peers: [] }); }, [{ path: 'wireguard[1].nodeAddress', code: 'node-address', message: 'at most one interface per node registers the node address; wireguard[0] already does' }]],
    ['fails on a peer without a public key', (p) => { delete (p.wireguard[0].peers[0] as Partial<Props['wireguard'][0]['peers'][0]>).publicKey; }, [{ path: 'wireguard[0].peers[0].publicKey', code: 'required', message: 'required: expected string' }]],
    ['fails on a public key that is not a key', (p) => { p.wireguard[0].peers[0].publicKey = 'abc'; }, [{ path: 'wireguard[0].peers[0].publicKey', code: 'key', message: KEY_FIELD_MESSAGE }]],
    ['fails on two peers dialled at one address and port', (p) => { p.wireguard[0].peers[1].endpoint = '198.51.100.2:51820'; }, [{ path: 'wireguard[0].peers[1].endpoint', code: 'duplicate-endpoint', message: "this peer is dialled at the same address and port as wireguard[0].peers[0]: WireGuard sends each peer's packets there and one host answers, so one of the two peers is never reached (a NAT forwards a port to one host). Give each peer its own port (a port forward and listenPort per node), or leave this endpoint out so the peer dials this node (with persistentKeepalive)" }]],
    ['accepts two peers at one address on their own ports', (p) => { p.wireguard[0].peers[1].endpoint = '198.51.100.2:51821'; }, []],
    ['fails on two peers with one public key', (p) => { p.wireguard[0].peers[1].publicKey = KEYS.b.publicKey; }, [{ path: 'wireguard[0].peers[1].publicKey', code: 'duplicate-key', message: "this public key is already the key of wireguard[0].peers[0] (keys are never shown): one peer per key" }]],
    ['fails on an endpoint without a port', (p) => { p.wireguard[0].peers[0].endpoint = '198.51.100.2'; }, [{ path: 'wireguard[0].peers[0].endpoint', code: 'endpoint', message: 'expected host:port (an IPv6 host in brackets), received "198.51.100.2"' }]],
    ['fails on a peer without allowedIPs', (p) => { p.wireguard[0].peers[0].allowedIPs = []; }, [{ path: 'wireguard[0].peers[0].allowedIPs', code: 'required', message: 'expected at least one CIDR: a peer without allowedIPs receives nothing' }]],
    ['fails on an allowed IP that is not a CIDR', (p) => { p.wireguard[0].peers[0].allowedIPs = ['10.10.0.2/33']; }, [{ path: 'wireguard[0].peers[0].allowedIPs[0]', code: 'cidr', message: 'expected a prefix length from 0 to 32 for an IPv4 address, received "10.10.0.2/33": /33 is out of range' }]],
    ['fails on allowedIPs overlapping between peers', (p) => { p.wireguard[0].peers[1].allowedIPs = ['10.10.0.3/32', '10.10.0.0/30']; }, [{ path: 'wireguard[0].peers[0].allowedIPs[0]', code: 'overlap', message: 'allowed IP 10.10.0.2/32 overlaps 10.10.0.0/30 of wireguard[0].peers[1].allowedIPs[1]: WireGuard gives an address to one peer only, the other silently loses it' }]],
    ['fails on a keepalive out of range', (p) => { p.wireguard[0].peers[1].persistentKeepalive = 0; }, [{ path: 'wireguard[0].peers[1].persistentKeepalive', code: 'range', message: 'expected a keepalive interval in seconds: an integer from 1 to 65535, received 0' }]],
    ['fails with both presharedKey and presharedKeyFrom', (p) => { p.wireguard[0].peers[0].presharedKey = KEYS.psk; p.wireguard[0].peers[0].presharedKeyFrom = { file: '/run/psk' }; }, [{ path: 'wireguard[0].peers[0]', code: 'preshared-key', message: 'expected at most one of presharedKey or presharedKeyFrom, received both' }]],
    ['fails on an unknown prop (a typo)', (p) => { (p.wireguard[0] as Record<string, unknown>).listenport = 51820; }, [{ path: 'wireguard[0].listenport', code: 'unknown-prop', message: 'unknown prop "listenport"' }]],
    ['fails on an unknown distribution', (p) => { (p as Record<string, unknown>).distribution = 'rke2'; }, [{ path: 'distribution', code: 'enum', message: 'expected one of "k0s"|"k3s"|"kubeadm", received "rke2"' }]],
    ['fails on a null distribution (YAML `distribution:`), saying null', (p) => { (p as Record<string, unknown>).distribution = null; }, [{ path: 'distribution', code: 'enum', message: 'expected one of "k0s"|"k3s"|"kubeadm", received null' }]],
    ['fails on a cluster endpoint that is not host:port', (p) => { p.clusterEndpoint = 'https://'; }, [{ path: 'clusterEndpoint', code: 'endpoint', message: 'expected host:port or https://host:port, received "https://"' }]],
    ['fails on a cluster endpoint with the scheme inside it', (p) => { p.clusterEndpoint = '10.10.0.1:https://6443'; }, [{ path: 'clusterEndpoint', code: 'endpoint', message: 'expected host:port or https://host:port, received "10.10.0.1:https://6443"' }]],
    ['fails on an inline preshared key that is not a key, without echoing it', (p) => { p.wireguard[0].peers[0].presharedKey = 'c2VjcmV0LWJ1dC10b28tc2hvcnQ='; }, [{ path: 'wireguard[0].peers[0].presharedKey', code: 'key', message: 'expected a WireGuard preshared key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: it is secret)' }]],
    ['accepts installK0s with the distribution left at its default (k0s)', (p) => { delete p.distribution; p.installK0s = {}; }, []],
    ['fails on a key URL that only contains https://', (p) => { p.wireguard[0].privateKeyFrom = { url: 'ftp://vault.example.test/https://x' }; }, [{ path: 'wireguard[0].privateKeyFrom.url', code: 'url', message: 'expected an https:// URL without spaces or quotes' }]],
    ['accepts waitFor at its ends (1s and 1h) and listen ports 1 and 65535', (p) => { p.wireguard[0].privateKeyFrom = { file: '/run/k', waitFor: '1h' }; p.wireguard[0].listenPort = 1; p.wireguard.push({ ...p.wireguard[0], name: 'wg1', address: '10.20.0.1/24', nodeAddress: false, listenPort: 65535, privateKeyFrom: { file: '/run/k1', waitFor: '1s' }, peers: [] }); }, []],
    ['fails on a cluster endpoint with a path inside it', (p) => { p.clusterEndpoint = 'https://10.10.0.1/k8s:6443'; }, [{ path: 'clusterEndpoint', code: 'endpoint', message: 'expected host:port or https://host:port, received "https://10.10.0.1/k8s:6443"' }]],
  ];

  it.each(cases)('%s', (_name, fn, expected) => {
    expect(validateWireguardOverlayNode(mutate(fn))).toEqual(expected);
  });

  it('reports five different mistakes at once', () => {
    const props = mutate((p) => {
      p.wireguard[0].name = 'this-name-is-too-long';
      p.wireguard[0].address = '10.10.0.1';
      p.wireguard[0].mtu = 100;
      p.wireguard[0].peers[0].endpoint = 'nope';
      p.wireguard[0].peers[1].publicKey = KEYS.b.publicKey;
    });
    expect(validateWireguardOverlayNode(props).map((p) => `${p.path} ${p.code}`)).toEqual([
      'wireguard[0].address cidr',
      'wireguard[0].mtu range',
      'wireguard[0].name interface-name',
      'wireguard[0].peers[0].endpoint endpoint',
      'wireguard[0].peers[1].publicKey duplicate-key',
    ]);
    const error = thrown(() => planWireguardOverlayNode(props));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems).toHaveLength(5);
    expect(error!.message.split('\n')).toEqual(['invalid WireguardOverlayNode props:', ...validateWireguardOverlayNode(props).map((p) => `${p.path}: ${p.message}`)]);
  });

  describe('warnings', () => {
    it('warns about a hostname endpoint', () => {
      const plan = planWireguardOverlayNode(mutate((p) => { p.wireguard[0].peers[0].endpoint = 'site-b.example.net:51820'; p.installK0s = {}; }));
      expect(plan.warnings).toEqual([{ path: 'wireguard[0].peers[0].endpoint', code: 'hostname-endpoint', message: 'endpoint "site-b.example.net:51820" is a hostname: tunnelwright-wg0-endpoints.service sets it once the interface is up and retries until the name resolves (DNS may need the overlay itself); until then this peer is unreachable, while the interface, its other peers and the distribution start without waiting; prefer an IP' }]);
    });

    it('warns about inline secrets without showing them', () => {
      const plan = planWireguardOverlayNode(mutate((p) => {
        delete p.wireguard[0].privateKeyFrom;
        p.wireguard[0].privateKey = KEYS.a.privateKey;
        p.wireguard[0].peers[0].presharedKey = KEYS.psk;
        p.installK0s = {};
      }));
      expect(plan.warnings.map((w) => `${w.path} ${w.code}`)).toEqual(['wireguard[0].privateKey inline-secret', 'wireguard[0].peers[0].presharedKey inline-secret']);
      expect(JSON.stringify(plan.warnings)).not.toContain(KEYS.a.privateKey);
      expect(JSON.stringify(plan.warnings)).not.toContain(KEYS.psk);
    });

    it('warns when a node joining over the overlay registers no node address', () => {
      const plan = planWireguardOverlayNode(mutate((p) => { p.role = 'worker'; p.clusterEndpoint = 'https://10.10.0.1:6443'; p.wireguard[0].address = '10.10.0.5/24'; delete p.wireguard[0].nodeAddress; }));
      expect(plan.warnings).toEqual([{ path: 'wireguard', code: 'no-node-address', message: "the node joins the cluster over the overlay (https://10.10.0.1:6443) but no interface sets nodeAddress: the kubelet will register another interface's address" }]);
    });

    it.each<[string, (p: Props) => void, string[]]>([
      ['a cluster endpoint with a trailing slash and no port, in the overlay', (p) => { p.clusterEndpoint = 'https://10.10.0.1/'; }, ['wireguard no-node-address']],
      ['a cluster endpoint in the second interface\'s network', (p) => { p.clusterEndpoint = '10.20.0.1:6443'; p.wireguard.push({ ...p.wireguard[0], name: 'wg1', address: '10.20.0.5/24', listenPort: 51821, peers: [] }); delete p.wireguard[1].nodeAddress; }, ['wireguard no-node-address']],
      ['an interface that registers the node address (the control of the two above)', (p) => { p.clusterEndpoint = 'https://10.10.0.1:6443/'; p.wireguard[0].nodeAddress = true; p.installK0s = {}; }, ['k0sConfig.network.podCIDR pod-cidr']],
      ['a node of no given role (a worker) that registers its overlay address without installK0s', (p) => { delete p.role; p.wireguard[0].nodeAddress = true; }, ['wireguard[0].nodeAddress k0s-node-ip', 'k0sConfig.network.podCIDR pod-cidr']],
      ['a controller that registers its overlay address (it runs no kubelet)', (p) => { p.role = 'controller'; p.wireguard[0].nodeAddress = true; }, []],
      ['a hostname endpoint starting and ending in digits', (p) => { p.wireguard[0].peers[0].endpoint = '3rd.site-2:51820'; }, ['wireguard[0].peers[0].endpoint hostname-endpoint']],
    ])('warns about %s: %j', (_name, fn, warned) => {
      const plan = planWireguardOverlayNode(mutate((p) => { p.role = 'worker'; p.wireguard[0].address = '10.10.0.5/24'; delete p.wireguard[0].nodeAddress; fn(p); }));
      expect(plan.warnings.map((w) => `${w.path} ${w.code}`)).toEqual(warned);
    });

    it('does not warn when the node joins over another network', () => {
      const plan = planWireguardOverlayNode(mutate((p) => { p.clusterEndpoint = '192.168.1.10:6443'; delete p.wireguard[0].nodeAddress; }));
      expect(plan.warnings).toEqual([]);
    });
  });
});
