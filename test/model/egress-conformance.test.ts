import { EgressConformanceProps, Problem, validateEgressConformance } from '../../src';
import { homelabConformance } from '../helpers/fixtures';
import { Mutable, mutated } from '../helpers/mutable';

type Props = Mutable<EgressConformanceProps>;
const check = (fn: (p: Props) => void) => mutated(homelabConformance(), fn);

describe('EgressConformance validation', () => {
  it('accepts a check of a gateway and a steering in namespaces the user named', () => {
    expect(validateEgressConformance(homelabConformance())).toEqual([]);
  });

  const cases: [string, Props, Problem[]][] = [
    ['refuses a check that is not opted into as destructive', check((p) => { p.destructive = false; }), [
      { path: 'destructive', code: 'destructive', message: 'expected true: the check stops each tunnel and vpn-class egress pauses until it recovers; set destructive: true to say you accept that' },
    ]],
    ['refuses a check without the destructive opt-in at all', check((p) => { delete (p as Partial<Props>).destructive; }), [
      { path: 'destructive', code: 'required', message: 'required: expected boolean' },
    ]],
    ['refuses a probe namespace the user did not name', check((p) => { p.vpnGateways![0].probeNamespace = 'downloads'; }), [
      { path: 'vpnGateways[0].probeNamespace', code: 'unnamed-namespace', message: 'the probe namespace "downloads" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)' },
    ]],
    ['refuses a gateway whose namespace (where gluetun is stopped) the user did not name', check((p) => { p.namespaces = ['media']; }), [
      { path: 'vpnGateways[0].gateway.namespace', code: 'unnamed-namespace', message: 'the gateway\'s namespace (where the check stops gluetun\'s VPN) "vpn-gateway" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)' },
    ]],
    ['refuses a node agent namespace the user did not name', check((p) => { p.egressSteerings![0].agentNamespace = 'kube-system'; }), [
      { path: 'egressSteerings[0].agentNamespace', code: 'unnamed-namespace', message: 'the node agent\'s namespace "kube-system" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)' },
    ]],
    ['refuses no namespaces at all', check((p) => { p.namespaces = []; }), [
      { path: 'egressSteerings[0].probeNamespace', code: 'unnamed-namespace', message: 'the probe namespace "media" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)' },
      { path: 'namespaces', code: 'required', message: 'expected the namespaces the check may act on: it is refused against any other' },
      { path: 'vpnGateways[0].gateway.namespace', code: 'unnamed-namespace', message: 'the gateway\'s namespace (where the check stops gluetun\'s VPN) "vpn-gateway" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)' },
      { path: 'vpnGateways[0].probeNamespace', code: 'unnamed-namespace', message: 'the probe namespace "media" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)' },
    ]],
    ['refuses a steering probe in a namespace the steering does not steer', check((p) => { p.namespaces.push('games'); p.egressSteerings![0].probeNamespace = 'games'; }), [
      { path: 'egressSteerings[0].probeNamespace', code: 'not-steered', message: '"games" is not one of the steering\'s namespaces (media): a probe there is never steered' },
    ]],
    ['requires the tunnel unit of a steering that renders no tunnel', check((p) => { delete (p.egressSteerings![0].steering as { tunnel?: unknown }).tunnel; }), [
      { path: 'egressSteerings[0].tunnelUnit', code: 'required', message: 'required when the steering renders no tunnel: the systemd unit of your own tunnel on the gateway node' },
    ]],
    ['accepts a steering that renders no tunnel given its tunnel unit', check((p) => { delete (p.egressSteerings![0].steering as { tunnel?: unknown }).tunnel; p.egressSteerings![0].tunnelUnit = 'wg-quick@tun0.service'; }), []],
    ['names every namespace the steering steers when the probe is in none of them', check((p) => { p.namespaces.push('games'); (p.egressSteerings![0].steering as { namespaces: string[] }).namespaces = ['media', 'downloads']; p.egressSteerings![0].probeNamespace = 'games'; }), [
      { path: 'egressSteerings[0].probeNamespace', code: 'not-steered', message: '"games" is not one of the steering\'s namespaces (media, downloads): a probe there is never steered' },
    ]],
    // Only the type, although the steering enforces that value and admits only the vpn class: no not-steered or
    // no-direct-class problem about a namespace that is not text.
    ['refuses a probe namespace that is not text once, as a type', check((p) => {
      (p.egressSteerings![0] as { probeNamespace: unknown }).probeNamespace = 5;
      (p.egressSteerings![0].steering as { enforceLabels: unknown }).enforceLabels = { namespaces: [5], classes: ['vpn'] };
    }), [
      { path: 'egressSteerings[0].probeNamespace', code: 'type', message: 'expected string, received number' },
      { path: 'egressSteerings[0].steering.enforceLabels.namespaces[0]', code: 'type', message: 'expected string, received number' },
    ]],
    ['refuses a check of nothing', check((p) => { delete p.vpnGateways; delete p.egressSteerings; }), [
      { path: 'vpnGateways', code: 'nothing-to-check', message: 'expected at least one of vpnGateways or egressSteerings: a check of nothing proves nothing' },
    ]],
    ['refuses a WAN address inside the VPN ranges, and one that is not an IPv4 address', check((p) => { p.wanIps = ['185.236.200.9', '203.0.113.0/24']; }), [
      { path: 'wanIps[0]', code: 'wan-in-vpn', message: '185.236.200.9 is inside vpnCidrs[0]: the check could not tell a leak from the tunnel' },
      { path: 'wanIps[1]', code: 'ip', message: 'expected an IPv4 address, not a CIDR or a name, received "203.0.113.0/24"' },
    ]],
    ['refuses empty targets, WAN addresses and VPN ranges', check((p) => { p.targets = []; p.wanIps = []; p.vpnCidrs = []; }), [
      { path: 'targets', code: 'required', message: 'expected at least one IP-echo URL (there is no default: choose whom you ask)' },
      { path: 'vpnCidrs', code: 'required', message: 'expected the VPN\'s egress ranges: vpn-class egress must leave from inside one' },
      { path: 'wanIps', code: 'required', message: 'expected your WAN addresses: direct-class egress must leave from one' },
    ]],
    ['refuses a target that is not an http(s) URL and an IPv6 VPN range', check((p) => { p.targets = ['ftp://echo.example.test/']; p.vpnCidrs = ['2001:db8::/32']; }), [
      { path: 'targets[0]', code: 'url', message: 'expected an http:// or https:// URL, received "ftp://echo.example.test/"' },
      { path: 'vpnCidrs[0]', code: 'ipv6-range', message: 'expected an IPv4 range (the check asks the echo over IPv4), received "2001:db8::/32"' },
    ]],
    ['reports the gateway\'s and the steering\'s own problems at their paths', check((p) => { p.vpnGateways![0].gateway.vpnProvider = 'nope'; p.egressSteerings![0].steering.gatewayNode = 'Bad_Node'; }), [
      { path: 'egressSteerings[0].steering.gatewayNode', code: 'format', message: 'expected a hostname (lowercase letters, digits, "-" and "."), received "Bad_Node"' },
      { path: 'vpnGateways[0].gateway.vpnProvider', code: 'provider', message: expect.stringMatching(/^expected one of .*received "nope"$/) as unknown as string },
    ]],
    ['refuses a recovery bound out of range and a unit that is not a service', check((p) => { p.recoverySeconds = 1; p.egressSteerings![0].tunnelUnit = 'rm -rf /'; }), [
      { path: 'egressSteerings[0].tunnelUnit', code: 'format', message: 'expected a systemd service name such as wg-quick@tun0.service, received "rm -rf /"' },
      { path: 'recoverySeconds', code: 'range', message: expect.stringMatching(/seconds/) as unknown as string },
    ]],
  ];
  it.each(cases)('%s', (_name, props, expected) => {
    expect(validateEgressConformance(props)).toEqual(expected);
  });
});
