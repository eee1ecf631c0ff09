import { EgressProbeProps, Problem, validateEgressProbe } from '../../src';
import { gatewayProbe } from '../helpers/fixtures';
import { Mutable, mutated } from '../helpers/mutable';

type Props = Mutable<EgressProbeProps>;
const probe = (fn: (p: Props) => void) => mutated(gatewayProbe(), fn);

describe('EgressProbe validation', () => {
  it('accepts a probe through a gateway and one for a steering class', () => {
    expect(validateEgressProbe(gatewayProbe())).toEqual([]);
    expect(validateEgressProbe({ ...gatewayProbe(), via: { egressSteering: {} } })).toEqual([]);
    // The control of the gateway's IPv6 refusal: the same IPv6 probe from a steering class, with the tunnel's IPv6
    // range to check its answer against, is taken.
    expect(validateEgressProbe({ ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true, vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'] })).toEqual([]);
    // IPv6 ranges alone are taken too (the IPv4 probe then checks the WAN addresses only).
    expect(validateEgressProbe({ ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true, vpnCidrs: ['2a03:1b20::/32'] })).toEqual([]);
  });

  const cases: [string, Props, Problem[]][] = [
    ['fails a probe attached to nothing', probe((p) => { delete (p as Partial<Props>).via; }), [
      { path: 'via', code: 'attached-to-nothing', message: 'expected { vpnGateway } or { egressSteering }: a probe attached to nothing proves nothing about vpn-class traffic' },
    ]],
    ['fails a probe attached to nothing beside its other mistakes, all at once', probe((p) => { delete (p as Partial<Props>).via; (p as { targets: unknown }).targets = [5]; }), [
      { path: 'targets[0]', code: 'type', message: 'expected string, received number' },
      { path: 'via', code: 'attached-to-nothing', message: 'expected { vpnGateway } or { egressSteering }: a probe attached to nothing proves nothing about vpn-class traffic' },
    ]],
    ['fails a probe attached to something that is neither', probe((p) => { (p as { via: unknown }).via = { vpnGatway: {} }; }), [
      { path: 'via', code: 'invalid_union', message: 'expected { vpnGateway: <its props> } or { egressSteering: { egressClassLabel?, vpnClass? } }, received an object' },
    ]],
    ['fails targets and WAN addresses that are not text as types only', probe((p) => { (p as { wanIps: unknown }).wanIps = [5]; (p as { vpnCidrs: unknown }).vpnCidrs = [5]; }), [
      { path: 'vpnCidrs[0]', code: 'type', message: 'expected string, received number' },
      { path: 'wanIps[0]', code: 'type', message: 'expected string, received number' },
    ]],
    ['fails targets that are not http(s) URLs, or whose host Go\'s net/url would not find', probe((p) => { p.targets = ['ftp://ifconfig.example.test/', 'http:ifconfig.example.test', 'https:///ifconfig.example.test', 'http:\\\\ifconfig.example.test', 'mailto:a@b', 'HTTPS://IFCONFIG.EXAMPLE.TEST/ip', 'ftp://mirror.example.test/http://ifconfig.example.test']; }), [
      { path: 'targets[0]', code: 'url', message: 'expected an http:// or https:// URL, received "ftp://ifconfig.example.test/"' },
      { path: 'targets[1]', code: 'url', message: 'expected an http:// or https:// URL, received "http:ifconfig.example.test"' },
      { path: 'targets[2]', code: 'url', message: 'expected an http:// or https:// URL, received "https:///ifconfig.example.test"' },
      { path: 'targets[3]', code: 'url', message: 'expected an http:// or https:// URL, received "http:\\\\\\\\ifconfig.example.test"' },
      { path: 'targets[4]', code: 'url', message: 'expected an http:// or https:// URL, received "mailto:a@b"' },
      { path: 'targets[6]', code: 'url', message: 'expected an http:// or https:// URL, received "ftp://mirror.example.test/http://ifconfig.example.test"' },
    ]],
    ['fails targets the URL parser refuses, and one without a host', probe((p) => { p.targets = ['http://[::1', 'https://']; }), [
      { path: 'targets[0]', code: 'url', message: 'expected an http:// or https:// URL, received "http://[::1"' },
      { path: 'targets[1]', code: 'url', message: 'expected an http:// or https:// URL, received "https://"' },
    ]],
    ['fails a name and namespace that are no DNS labels', probe((p) => { p.name = 'Probe_1'; p.namespace = 'Media'; }), [
      { path: 'name', code: 'name', message: 'expected a DNS label, received "Probe_1"' },
      { path: 'namespace', code: 'namespace', message: 'expected a DNS label, received "Media"' },
    ]],
    ['fails no targets', probe((p) => { p.targets = []; }), [
      { path: 'targets', code: 'required', message: 'expected at least one IP-echo URL (there is no default: choose whom you ask)' },
    ]],
    ['fails no WAN addresses', probe((p) => { p.wanIps = []; }), [
      { path: 'wanIps', code: 'required', message: 'expected your WAN addresses: the probe fails when it sees one' },
    ]],
    ['fails WAN addresses given as a CIDR or a name', probe((p) => { p.wanIps = ['203.0.113.0/24', 'wan.example.test']; }), [
      { path: 'wanIps[0]', code: 'ip', message: 'expected an address, not a CIDR or a name, received "203.0.113.0/24"' },
      { path: 'wanIps[1]', code: 'ip', message: 'expected an address, not a CIDR or a name, received "wan.example.test"' },
    ]],
    ['fails a steering class label that is no label key', probe((p) => { (p as { via: unknown }).via = { egressSteering: { egressClassLabel: 'egress class' } }; p.dnsLeak = { resolver: '10.43.0.10', leakedCidrs: ['192.0.2.0/24'] }; }), [
      { path: 'via.egressSteering.egressClassLabel', code: 'label-key', message: 'expected a label key, received "egress class"' },
    ]],
    ['fails a DNS leak check with neither range', probe((p) => { p.dnsLeak = {}; }), [
      { path: 'dnsLeak', code: 'required', message: 'expected leakedCidrs (answers that mean a leak) and/or tunnelCidrs (answers that mean the tunnel): without either the probe cannot tell' },
    ]],
    ['fails an empty leak range list, a resolver that is no address and an IPv6 tunnel range', probe((p) => { p.dnsLeak = { leakedCidrs: [], tunnelCidrs: ['fd00::/64'], resolver: 'kube-dns' }; }), [
      { path: 'dnsLeak.leakedCidrs', code: 'required', message: 'expected at least one range (or leave it out)' },
      { path: 'dnsLeak.resolver', code: 'ip', message: 'expected the resolver\'s address, received "kube-dns"' },
      { path: 'dnsLeak.tunnelCidrs[0]', code: 'ipv6-range', message: 'expected an IPv4 range (the probe asks for an A record), received "fd00::/64"' },
    ]],
    ['fails a DNS leak check of a steering class without the resolver', probe((p) => { (p as { via: unknown }).via = { egressSteering: {} }; p.dnsLeak = { leakedCidrs: ['192.0.2.0/24'] }; }), [
      { path: 'dnsLeak.resolver', code: 'required', message: 'required with egressSteering: the cluster DNS address vpn-class pods ask (kube-dns\'s ClusterIP)' },
    ]],
    ['fails a target that is not an http(s) URL', probe((p) => { p.targets = ['ftp://ifconfig.example.test/ip']; }), [
      { path: 'targets[0]', code: 'url', message: 'expected an http:// or https:// URL, received "ftp://ifconfig.example.test/ip"' },
    ]],
    ['fails no targets', probe((p) => { p.targets = []; }), [
      { path: 'targets', code: 'required', message: 'expected at least one IP-echo URL (there is no default: choose whom you ask)' },
    ]],
    ['fails a WAN CIDR where an address is expected', probe((p) => { p.wanIps = ['203.0.113.0/24']; }), [
      { path: 'wanIps[0]', code: 'ip', message: 'expected an address, not a CIDR or a name, received "203.0.113.0/24"' },
    ]],
    ['fails a WAN address inside the VPN ranges', probe((p) => { p.wanIps = ['185.236.201.9']; }), [
      { path: 'wanIps[0]', code: 'wan-in-vpn', message: '185.236.201.9 is inside vpnCidrs[0]: a WAN address cannot also be a VPN egress address' },
    ]],
    ...(['IPv4 ranges only', 'no ranges'] as const).map((what): [string, Props, Problem[]] => [`fails an IPv6 probe of a steering class with ${what} in vpnCidrs`, probe((p) => {
      (p as { via: unknown }).via = { egressSteering: {} };
      p.ipv6 = true;
      if (what === 'no ranges') delete p.vpnCidrs;
    }), [
      { path: 'vpnCidrs', code: 'ipv6-range-required', message: 'expected an IPv6 range in vpnCidrs with ipv6 (the tunnel\'s IPv6 egress range, such as 2a03:1b20::/32): without one the IPv6 probe cannot fail on a native IPv6 address; add the range, or set ipv6 false' },
    ]]),
    ['fails an IPv6 WAN address inside the IPv6 VPN range', probe((p) => { (p as { via: unknown }).via = { egressSteering: {} }; p.ipv6 = true; p.vpnCidrs = ['2a03:1b20::/32']; p.wanIps = ['2A03:1B20:0:0::9']; }), [
      { path: 'wanIps[0]', code: 'wan-in-vpn', message: '2A03:1B20:0:0::9 is inside vpnCidrs[0]: a WAN address cannot also be a VPN egress address' },
    ]],
    ['reports the gateway\'s own problems under via', probe((p) => { (p.via as { vpnGateway: { vpnProvider: string } }).vpnGateway.vpnProvider = 'pia'; }), [
      { path: 'via.vpnGateway.serverCountries', code: 'filter', message: 'private internet access has no SERVER_COUNTRIES filter; it has serverRegions, serverNames, serverHostnames' },
      { path: 'via.vpnGateway.vpnProvider', code: 'no-wireguard', message: expect.stringContaining('gluetun has no WireGuard support for private internet access') as unknown as string },
    ]],
    ['fails an IPv6 probe through a VpnGateway (routed pods have no IPv6 egress)', probe((p) => { p.ipv6 = true; }), [
      { path: 'ipv6', code: 'ipv6-through-gateway', message: 'expected ipv6 off with vpnGateway: routed pods have no IPv6 egress (pod-gateway removes their IPv6 default route), so an IPv6 probe would fail forever; probe IPv6 from an EgressSteering class instead' },
    ]],
    ['fails an interval that is not a duration', probe((p) => { p.interval = 'often'; }), [
      { path: 'interval', code: 'duration', message: 'expected a duration such as 30s, 10m or 1h, received "often"' },
    ]],
  ];

  it.each(cases)('%s', (_name, props, expected) => {
    expect(validateEgressProbe(props)).toEqual(expected);
  });
});
