import { Problem, validateEgressSteering, validateKillSwitch, validateWireguardMesh, validateWireguardOverlayNode } from '../../src';
import { prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh } from '../helpers/fixtures';

/**
 * Every prop that names a Linux interface, at the kernel's limit: IFNAMSIZ is 16 bytes with the terminating NUL
 * (include/uapi/linux/if.h), and dev_valid_name() refuses a name of 16 characters or more (net/core/dev.c:
 * `strnlen(name, IFNAMSIZ) == IFNAMSIZ`), so `ip link add`, wg-quick and nft all fail on one at run time. 15
 * characters pass; 16 are refused at synth time, at the prop's own path.
 */
const FIFTEEN = 'wg-overlay-0015';
const SIXTEEN = 'wg-overlay-00016';

type Case = [string, string, (name: string) => Problem[]];
const CASES: Case[] = [
  ['WireguardOverlayNode', 'wireguard[0].name', (name) => validateWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], name }] })],
  ['WireguardMesh', 'interfaceName', (name) => validateWireguardMesh({ ...threeNodeMesh(), interfaceName: name })],
  ['KillSwitch', 'host.wanInterface', (name) => validateKillSwitch({ ...qbittorrentKillSwitch(), host: { ...qbittorrentKillSwitch().host!, wanInterface: name } })],
  ['KillSwitch', 'host.tunnelInterface', (name) => validateKillSwitch({ ...qbittorrentKillSwitch(), host: { ...qbittorrentKillSwitch().host!, tunnelInterface: name } })],
  ['EgressSteering', 'interface', (name) => validateEgressSteering({ ...prodSteering(), interface: name })],
];

describe('interface names at the kernel\'s limit (IFNAMSIZ 16 with its NUL: 15 characters)', () => {
  it('the names are 15 and 16 characters', () => {
    expect([FIFTEEN.length, SIXTEEN.length]).toEqual([15, 16]);
  });

  it.each(CASES)('%s %s: 15 characters accepted, 16 refused there', (_construct, at, validate) => {
    expect(validate(FIFTEEN).filter((p) => p.path === at)).toEqual([]);
    expect(validate(SIXTEEN).filter((p) => p.path === at).map((p) => p.code)).toEqual(['interface-name']);
  });
});
