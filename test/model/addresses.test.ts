import {
  validateEgressProbe, validateEgressSteering, validateKillSwitch, validateVpnGateway, validateWireguardMesh, validateWireguardOverlayNode,
} from '../../src';
import { parseCidr, parseIp } from '../../src/model/net';
import { gatewayProbe, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh } from '../helpers/fixtures';

/** Dotted text that is no IPv4 address: each once sent the old hand-written parser into unbounded recursion. */
const MALFORMED = ['256.1.1.1', '1.2.3', '10.10.0.02', '1.2.3.4.5', '0x7f.0.0.1', '1..2.3', 'fe80::1%eth0', '1::2::3', '::ffff:1.2.3'];

describe('address parsing (ipaddr.js)', () => {
  it.each(MALFORMED)('refuses %s as an address and as a CIDR', (text) => {
    expect(parseIp(text)).toBeUndefined();
    expect(parseCidr(`${text}/24`)).toBeUndefined();
  });

  it.each([
    ['10.10.0.1', 4, 0x0a0a0001n],
    ['0.0.0.0', 4, 0n],
    ['fd00::1', 6, (0xfd00n << 112n) | 1n],
    ['::ffff:192.0.2.1', 6, (0xffffn << 32n) | 0xc0000201n],
  ])('parses %s', (text, family, value) => {
    expect(parseIp(text)).toEqual({ family, value });
  });

  it('keeps a CIDR\'s address and block', () => {
    expect(parseCidr('10.10.0.7/24')).toEqual({ family: 4, address: 0x0a0a0007n, prefix: 24, start: 0x0a0a0000n, end: 0x0a0a00ffn });
    expect(parseCidr('10.10.0.0/024')).toBeUndefined();
    expect(parseCidr('10.10.0.0/33')).toBeUndefined();
  });
});

/** Every construct, given each malformed address where it takes one: problems, never a crash. */
describe.each(MALFORMED)('every construct refuses %s without crashing', (bad) => {
  const cidr = `${bad}/24`;
  const cases: [string, () => unknown[]][] = [
    ['WireguardOverlayNode address', () => validateWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], address: cidr }] })],
    ['WireguardOverlayNode allowedIPs', () => validateWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: [cidr] }] }] })],
    ['WireguardOverlayNode endpoint', () => validateWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], peers: [{ ...siteA().wireguard[0].peers[0], endpoint: `${bad}:51820` }] }] })],
    ['WireguardOverlayNode clusterEndpoint', () => validateWireguardOverlayNode({ ...siteA(), clusterEndpoint: `${bad}:6443` })],
    ['WireguardMesh network', () => validateWireguardMesh({ ...threeNodeMesh(), network: cidr })],
    ['WireguardMesh address', () => validateWireguardMesh({ ...threeNodeMesh(), nodes: [{ ...threeNodeMesh().nodes[0], address: bad }, ...threeNodeMesh().nodes.slice(1)] })],
    ['WireguardMesh endpoint', () => validateWireguardMesh({ ...threeNodeMesh(), nodes: [{ ...threeNodeMesh().nodes[0], endpoint: bad }, ...threeNodeMesh().nodes.slice(1)] })],
    ['KillSwitch allowCidrs', () => validateKillSwitch({ ...qbittorrentKillSwitch(), allowCidrs: [cidr] })],
    ['VpnGateway clusterCidrs', () => validateVpnGateway({ ...nordvpnGateway(), clusterCidrs: [cidr] })],
    ['VpnGateway clusterDnsIp', () => validateVpnGateway({ ...nordvpnGateway(), clusterDnsIp: bad })],
    ['EgressSteering lanCidrs', () => validateEgressSteering({ ...prodSteering(), lanCidrs: [cidr] })],
    ['EgressSteering egressIp', () => validateEgressSteering({ ...prodSteering(), interface: undefined, egressIp: bad })],
    ['EgressProbe', () => validateEgressProbe({ ...gatewayProbe(), wanIps: [bad] })],
  ];
  it.each(cases)('%s', (_what, validate) => {
    const problems = validate();
    expect(problems.length).toBeGreaterThan(0);
  });
});
