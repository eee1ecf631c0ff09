import { Problem, PROVIDERS, validateVpnGateway, VpnGatewayProps } from '../../src';
import { checkVpnGateway } from '../../src/model/vpn-gateway';
import { gatewayFor, nordvpnGateway } from '../helpers/fixtures';
import { Mutable, mutated } from '../helpers/mutable';

type Props = Mutable<VpnGatewayProps>;
const on = (provider: string, fn: (p: Props) => void) => mutated(gatewayFor(provider), fn);
/** The same gateway over OpenVPN: no WireGuard setting left, the credentials from a Secret. */
function overOpenvpn(p: Props): void {
  p.vpnType = 'openvpn';
  delete p.wireguardPrivateKeySecret;
  delete p.wireguardPresharedKeySecret;
  delete p.wireguardAddresses;
  p.openvpnCredentialsSecret = { name: 'creds' };
}

// The refusals' words as a user reads them, written out (not read from the PROVIDERS table whose text they test: an
// emptied or garbled message there would pass).
const PIA_NO_WIREGUARD = 'gluetun has no WireGuard support for private internet access ("native support cannot be added"): use vpnProvider "custom" with the WireGuard config from pia-wg-config (vpnEndpointIp, vpnEndpointPort, wireguardPublicKey, wireguardAddresses), one serverNames entry, and portForwarding { provider: "private internet access", credentialsSecret }';
const AIRVPN_NO_OPENVPN = 'gluetun refuses airvpn over OpenVPN without a client certificate and key (settings/openvpn.go: validateOpenVPNClientCertificate/Key), which tunnelwright does not model: use vpnType "wireguard" (wireguardPrivateKeySecret, wireguardPresharedKeySecret, wireguardAddresses from your AirVPN WireGuard config)';

describe('VpnGateway validation: the provider matrix', () => {
  it.each(Object.keys(PROVIDERS))('accepts a valid %s gateway', (provider) => {
    expect(validateVpnGateway(gatewayFor(provider))).toEqual([]);
  });

  const cases: [string, Props, Problem[]][] = [
    ['fails pia over WireGuard, saying how to do it', on('nordvpn', (p) => { p.vpnProvider = 'pia'; delete p.serverCountries; }), [
      { path: 'vpnProvider', code: 'no-wireguard', message: PIA_NO_WIREGUARD },
    ]],
    ['fails a gateway without a provider as missing only (no unknown provider beside it)', on('nordvpn', (p) => { delete (p as Partial<Props>).vpnProvider; }), [
      { path: 'vpnProvider', code: 'required', message: 'required: expected string' },
    ]],
    ['accepts a ProtonVPN OpenVPN port gluetun allows', on('nordvpn', (p) => { p.vpnProvider = 'protonvpn'; overOpenvpn(p); p.vpnEndpointPort = 443; }), []],
    ['fails OpenVPN credentials on a WireGuard gateway', on('nordvpn', (p) => { p.openvpnCredentialsSecret = { name: 'c' }; }), [
      { path: 'openvpnCredentialsSecret', code: 'forbidden', message: 'an OpenVPN setting, but vpnType is wireguard' },
    ]],
    ['gives the country hint on windscribe\'s country filter only', on('windscribe', (p) => { p.serverCountries = ['Switzerland']; p.serverNames = ['x']; }), [
      { path: 'serverCountries', code: 'filter', message: 'windscribe has no SERVER_COUNTRIES filter; it has serverRegions, serverCities, serverHostnames: windscribe has no country data (use serverRegions)' },
      { path: 'serverNames', code: 'filter', message: 'windscribe has no SERVER_NAMES filter; it has serverRegions, serverCities, serverHostnames' },
    ]],
    ['accepts two server names on a provider with the filter (one is custom\'s limit only)', on('protonvpn', (p) => { p.serverNames = ['CH#1', 'CH#2']; }), []],
    ['fails a cluster CIDR over nordvpn\'s default WireGuard address', on('nordvpn', (p) => { p.clusterCidrs = ['10.5.0.0/16', '10.152.183.0/24']; }), [
      { path: 'clusterCidrs[0]', code: 'overlap', message: 'overlaps wireguardAddresses (nordvpn\'s default 10.5.0.2/32): FIREWALL_OUTBOUND_SUBNETS must not overlap the tunnel (traffic to the tunnel gateway, such as NAT-PMP port forwarding, would leave by eth0)' },
    ]],
    ['accepts that cluster CIDR with WireGuard addresses of one\'s own', on('nordvpn', (p) => { p.clusterCidrs = ['10.5.0.0/16', '10.152.183.0/24']; p.wireguardAddresses = ['10.6.0.2/32']; }), []],
    ['accepts that cluster CIDR over OpenVPN (no WireGuard default applies)', on('nordvpn', (p) => { p.clusterCidrs = ['10.5.0.0/16', '10.152.183.0/24']; overOpenvpn(p); }), []],
    ['fails a tunnel range that contains the cluster\'s, as a tunnel overlap', on('surfshark', (p) => { p.wireguardAddresses = ['10.0.0.2/8']; }), [
      { path: 'clusterCidrs[0]', code: 'overlap', message: 'overlaps wireguardAddresses[0]: FIREWALL_OUTBOUND_SUBNETS must not overlap the tunnel (traffic to the tunnel gateway, such as NAT-PMP port forwarding, would leave by eth0)' },
      { path: 'clusterCidrs[1]', code: 'overlap', message: 'overlaps wireguardAddresses[0]: FIREWALL_OUTBOUND_SUBNETS must not overlap the tunnel (traffic to the tunnel gateway, such as NAT-PMP port forwarding, would leave by eth0)' },
    ]],
    ['fails a VXLAN network that is not a /24', on('nordvpn', (p) => { p.vxlanNetwork = '172.16.0.0/16'; }), [
      { path: 'vxlanNetwork', code: 'vxlan-network', message: 'expected an IPv4 /24 network such as 172.16.0.0/24 (pod-gateway numbers the gateway .1 and clients from .20), received "172.16.0.0/16"' },
    ]],
    ['fails an IPv6 VXLAN network even as a /24 (pod-gateway numbers it as IPv4)', on('nordvpn', (p) => { p.vxlanNetwork = 'fd00::/24'; }), [
      { path: 'vxlanNetwork', code: 'vxlan-network', message: 'expected an IPv4 /24 network such as 172.16.0.0/24 (pod-gateway numbers the gateway .1 and clients from .20), received "fd00::/24"' },
    ]],
    ['fails a cluster CIDR over the default VXLAN network', on('nordvpn', (p) => { p.clusterCidrs = [...p.clusterCidrs, '172.16.0.0/12']; }), [
      { path: 'clusterCidrs[2]', code: 'overlap', message: 'overlaps vxlanNetwork (default 172.16.0.0/24): the VXLAN, cluster and node networks must be distinct' },
    ]],
    ['fails a DNS address with three octets, with the IP check\'s own message', on('nordvpn', (p) => { p.dnsAddress = '1.1.1'; }), [
      { path: 'dnsAddress', code: 'ip', message: 'expected an IP address such as 203.0.113.7, received "1.1.1"' },
    ]],
    ['fails a clusterDnsIp that is no text as a type only', on('nordvpn', (p) => { (p as Record<string, unknown>).clusterDnsIp = 5; p.clusterCidrs = ['10.1.0.0/16']; }), [
      { path: 'clusterDnsIp', code: 'type', message: 'expected string, received number' },
    ]],
    ['fails port forwarding on pia over WireGuard without the ProtonVPN hint', on('private internet access', (p) => { p.vpnType = 'wireguard'; delete p.openvpnCredentialsSecret; p.wireguardPrivateKeySecret = { name: 'k' }; }), [
      { path: 'portForwarding', code: 'no-port-forwarding', message: 'private internet access has no port forwarding over wireguard in gluetun' },
      { path: 'vpnProvider', code: 'no-wireguard', message: PIA_NO_WIREGUARD },
    ]],
    ['accepts native port forwarding without a provider, and with the provider\'s alias', on('private internet access', (p) => { p.portForwarding = { provider: 'pia' }; }), []],
    ['accepts ProtonVPN port forwarding without a provider', on('protonvpn', (p) => { p.portForwarding = {}; }), []],
    ['fails a forwarded-port workload that is no DNS label', on('protonvpn', (p) => { p.portForwarding!.workload = 'Qbit'; }), [
      { path: 'portForwarding.workload', code: 'name', message: 'expected a workload name (a DNS label), received "Qbit"' },
    ]],
    ['fails an unknown provider', on('nordvpn', (p) => { p.vpnProvider = 'nord'; }), [
      { path: 'vpnProvider', code: 'provider', message: 'expected one of "nordvpn", "protonvpn", "mullvad", "surfshark", "ivpn", "windscribe", "airvpn", "fastestvpn", "private internet access", "custom" (or "pia"), received "nord"' },
    ]],
    ['fails WireGuard without the key Secret', on('nordvpn', (p) => { delete p.wireguardPrivateKeySecret; }), [
      { path: 'wireguardPrivateKeySecret', code: 'required', message: 'required for WireGuard: the Secret holding the private key (it is mounted as a file, never put in the environment)' },
    ]],
    ...(['mullvad', 'surfshark', 'ivpn', 'windscribe', 'airvpn', 'fastestvpn', 'custom'].map((provider) => [
      `fails ${provider} without wireguardAddresses`, on(provider, (p) => { delete p.wireguardAddresses; }),
      [{ path: 'wireguardAddresses', code: 'required', message: `required by ${provider} over WireGuard: the tunnel addresses the provider assigned to your key` }],
    ] as [string, Props, Problem[]])),
    ['fails airvpn without a preshared key', on('airvpn', (p) => { delete p.wireguardPresharedKeySecret; }), [
      { path: 'wireguardPresharedKeySecret', code: 'required', message: 'required by airvpn over WireGuard (gluetun checks it)' },
    ]],
    ['fails airvpn over OpenVPN: gluetun needs a client certificate and key', on('airvpn', (p) => {
      overOpenvpn(p); delete p.vpnEndpointPort;
    }), [
      { path: 'vpnType', code: 'no-openvpn', message: AIRVPN_NO_OPENVPN },
    ]],
    ...(['nordvpn', 'surfshark', 'fastestvpn'].map((provider) => [
      `fails an OpenVPN endpoint port for ${provider} (gluetun allows no custom port)`, on(provider, (p) => { overOpenvpn(p); p.vpnEndpointPort = 443; }),
      [{ path: 'vpnEndpointPort', code: 'forbidden', message: `must not be set for ${provider} over OpenVPN (gluetun refuses a custom OpenVPN port for it), received 443` }],
    ] as [string, Props, Problem[]])),
    ...([['ivpn', '53, 1194, 2049, 2050'], ['pia', '53, 1194, 1197, 1198, 8080, 9201'], ['protonvpn', '80, 443, 1194, 4569, 5060, 51820'], ['windscribe', '53, 80, 123, 443, 1194, 54783']].map(([provider, list]) => [
      `fails an OpenVPN endpoint port outside ${provider}'s list`, on(provider === 'pia' ? 'nordvpn' : provider, (p) => {
        p.vpnProvider = provider; overOpenvpn(p); delete p.serverCountries; delete p.serverRegions; delete p.serverCities; p.vpnEndpointPort = 9999;
      }),
      [{ path: 'vpnEndpointPort', code: 'port', message: `expected one of ${list} for ${provider === 'pia' ? 'private internet access' : provider} over OpenVPN (UDP), received 9999` }],
    ] as [string, Props, Problem[]])),
    ['fails protonvpn\'s default tunnel address inside the node networks (NAT-PMP would leave by eth0)', on('protonvpn', (p) => { delete p.wireguardAddresses; p.nodeCidrs = ['10.0.0.0/8']; }), [
      { path: 'nodeCidrs[0]', code: 'overlap', message: "overlaps wireguardAddresses (protonvpn's default 10.2.0.2/32): FIREWALL_OUTBOUND_SUBNETS must not overlap the tunnel (traffic to the tunnel gateway, such as NAT-PMP port forwarding, would leave by eth0)" },
    ]],
    ...(['nordvpn', 'protonvpn', 'surfshark', 'fastestvpn'].map((provider) => [
      `fails an endpoint port for ${provider}`, on(provider, (p) => { p.vpnEndpointPort = 51820; }),
      [{ path: 'vpnEndpointPort', code: 'forbidden', message: `must not be set for ${provider} over WireGuard (gluetun takes the port from its server data), received 51820` }],
    ] as [string, Props, Problem[]])),
    ['fails an ivpn port outside its list', on('ivpn', (p) => { p.vpnEndpointPort = 51820; }), [
      { path: 'vpnEndpointPort', code: 'port', message: 'expected one of 53, 2049, 2050, 30587, 41893, 48574, 58237 for ivpn, received 51820' },
    ]],
    ['fails a windscribe port outside its list', on('windscribe', (p) => { p.vpnEndpointPort = 51820; }), [
      { path: 'vpnEndpointPort', code: 'port', message: 'expected one of 53, 80, 123, 443, 1194, 65142 for windscribe, received 51820' },
    ]],
    ['fails an airvpn port outside its list', on('airvpn', (p) => { p.vpnEndpointPort = 443; }), [
      { path: 'vpnEndpointPort', code: 'port', message: 'expected one of 1637, 47107 for airvpn, received 443' },
    ]],
    ['fails windscribe with countries (it has no country data)', on('windscribe', (p) => { p.serverCountries = ['Switzerland']; }), [
      { path: 'serverCountries', code: 'filter', message: 'windscribe has no SERVER_COUNTRIES filter; it has serverRegions, serverCities, serverHostnames: windscribe has no country data (use serverRegions)' },
    ]],
    ['fails a filter nordvpn does not have', on('nordvpn', (p) => { p.serverNames = ['ch-1']; }), [
      { path: 'serverNames', code: 'filter', message: 'nordvpn has no SERVER_NAMES filter; it has serverCountries, serverRegions, serverCities, serverHostnames' },
    ]],
    ['fails custom without endpoint IP, port and public key', on('custom', (p) => { delete p.vpnEndpointIp; delete p.vpnEndpointPort; delete p.wireguardPublicKey; }), [
      { path: 'vpnEndpointIp', code: 'required', message: "required for custom: the server's IP address" },
      { path: 'vpnEndpointPort', code: 'required', message: "required for custom: the server's WireGuard port (there is no default)" },
      { path: 'wireguardPublicKey', code: 'required', message: "required for custom: the server's public key" },
    ]],
    ['fails a custom endpoint that is a hostname', on('custom', (p) => { p.vpnEndpointIp = 'ch.example.net'; }), [
      { path: 'vpnEndpointIp', code: 'ip', message: 'expected an IP address, never a hostname (gluetun takes an IP), received "ch.example.net"' },
    ]],
    ['fails custom with two server names', on('custom', (p) => { p.serverNames = ['a', 'b']; }), [
      { path: 'serverNames', code: 'filter', message: 'custom takes at most one server name, received 2' },
      { path: 'serverNames', code: 'required', message: 'private internet access port forwarding over custom needs exactly one server name (the server of your WireGuard config)' },
    ]],
    ['fails custom-only settings on a provider', on('nordvpn', (p) => { p.vpnEndpointIp = '203.0.113.5'; }), [
      { path: 'vpnEndpointIp', code: 'forbidden', message: "only for vpnProvider custom (gluetun takes nordvpn's from its server data)" },
    ]],
    ['fails OpenVPN without credentials', on('private internet access', (p) => { delete p.openvpnCredentialsSecret; }), [
      { path: 'openvpnCredentialsSecret', code: 'required', message: 'required for OpenVPN: the Secret with the username and password' },
    ]],
    ['fails WireGuard settings with OpenVPN', on('private internet access', (p) => { p.wireguardAddresses = ['10.0.0.2/32']; }), [
      { path: 'wireguardAddresses', code: 'forbidden', message: 'a WireGuard setting, but vpnType is openvpn' },
    ]],
    ['fails OpenVPN for custom', on('custom', (p) => { overOpenvpn(p); delete p.wireguardPublicKey; }), [
      { path: 'vpnType', code: 'no-openvpn', message: 'tunnelwright offers OpenVPN for nordvpn, protonvpn, surfshark, ivpn, windscribe, fastestvpn, private internet access (received "custom")' },
    ]],
    ['fails port forwarding where the provider has none', on('nordvpn', (p) => { p.portForwarding = {}; }), [
      { path: 'portForwarding', code: 'no-port-forwarding', message: 'nordvpn has no port forwarding over wireguard in gluetun (ProtonVPN does; PIA via custom WireGuard or OpenVPN)' },
    ]],
    ['fails custom port forwarding without a provider', on('custom', (p) => { p.portForwarding = {}; }), [
      { path: 'portForwarding.provider', code: 'required', message: 'required with custom: one of perfect privacy, private internet access, privatevpn, protonvpn' },
    ]],
    ['fails PIA port forwarding over custom without credentials', on('custom', (p) => { delete p.portForwarding!.credentialsSecret; }), [
      { path: 'portForwarding.credentialsSecret', code: 'required', message: 'required for private internet access port forwarding: your PIA username and password' },
    ]],
    ['fails a forwarded port without the workload that receives it', on('protonvpn', (p) => { delete p.portForwarding!.workload; }), [
      { path: 'portForwarding.workload', code: 'required', message: 'required with toPort: the name of the routed workload that receives the forwarded port' },
    ]],
    ['fails DNS over TLS (gluetun and dnsmasq would both bind :53)', on('nordvpn', (p) => { p.dnsOverTls = true; }), [
      { path: 'dnsOverTls', code: 'dns-collision', message: "gluetun's DNS server (which DNS over TLS needs) binds :53 on every interface and collides with pod-gateway's dnsmasq, which routed pods need for cluster names; leave dnsOverTls off: DNS still leaves through the tunnel" },
    ]],
    ['fails tunnel addresses overlapping the outbound subnets', on('surfshark', (p) => { p.wireguardAddresses = ['10.1.0.2/32']; }), [
      { path: 'wireguardAddresses[0]', code: 'overlap', message: 'overlaps clusterCidrs[0]: FIREWALL_OUTBOUND_SUBNETS must not overlap the tunnel (traffic to the tunnel gateway, such as NAT-PMP port forwarding, would leave by eth0)' },
    ]],
    ['fails a VXLAN network overlapping the cluster', on('nordvpn', (p) => { p.vxlanNetwork = '10.1.5.0/24'; }), [
      { path: 'vxlanNetwork', code: 'overlap', message: 'overlaps clusterCidrs[0]: the VXLAN, cluster and node networks must be distinct' },
    ]],
    ['fails an empty list of tunnel addresses where the provider needs them', on('mullvad', (p) => { p.wireguardAddresses = []; }), [
      { path: 'wireguardAddresses', code: 'required', message: 'required by mullvad over WireGuard: the tunnel addresses the provider assigned to your key' },
    ]],
    ['fails a custom server public key that is not a key, without echoing it', on('custom', (p) => { p.wireguardPublicKey = 'abc'; }), [
      { path: 'wireguardPublicKey', code: 'key', message: 'expected a WireGuard public key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: key fields are never echoed)' },
    ]],
    ['fails a port-forwarding provider on a provider that forwards ports itself', on('protonvpn', (p) => { p.portForwarding!.provider = 'pia'; }), [
      { path: 'portForwarding.provider', code: 'provider', message: 'only with custom: protonvpn forwards ports itself, received "pia"' },
    ]],
    ['fails a VXLAN network given by a host address', on('nordvpn', (p) => { p.vxlanNetwork = '172.16.0.5/24'; }), [
      { path: 'vxlanNetwork', code: 'vxlan-network', message: 'expected an IPv4 /24 network such as 172.16.0.0/24 (pod-gateway numbers the gateway .1 and clients from .20), received "172.16.0.5/24"' },
    ]],
    ['fails a VXLAN network that is not a /24', on('nordvpn', (p) => { p.vxlanNetwork = '172.16.0.0/16'; }), [
      { path: 'vxlanNetwork', code: 'vxlan-network', message: 'expected an IPv4 /24 network such as 172.16.0.0/24 (pod-gateway numbers the gateway .1 and clients from .20), received "172.16.0.0/16"' },
    ]],
    ['fails cluster CIDRs that overlap each other', on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16', '10.1.128.0/24']; p.clusterDnsIp = '10.1.128.10'; }), [
      { path: 'clusterCidrs[1]', code: 'overlap', message: 'overlaps clusterCidrs[0]: the cluster CIDRs must be distinct' },
    ]],
    ['fails a VXLAN id out of range', on('nordvpn', (p) => { p.vxlanId = 0; }), [
      { path: 'vxlanId', code: 'range', message: 'expected a VXLAN id: an integer from 1 to 16777215, received 0' },
    ]],
    ['fails a cluster DNS IP outside the cluster CIDRs', on('nordvpn', (p) => { p.clusterDnsIp = '192.168.1.53'; }), [
      { path: 'clusterDnsIp', code: 'outside', message: 'expected the kube-dns ClusterIP inside the cluster CIDRs, received "192.168.1.53"' },
    ]],
    // Issue 47: at the prop the user wrote, with what to add; clusterDnsIp is a default they may never have set.
    ['fails without a service CIDR to derive the DNS IP from', on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16']; }), [
      { path: 'clusterCidrs', code: 'service-cidr', message: 'has no service CIDR to take the kube-dns address from: add the cluster\'s service CIDR as clusterCidrs[1] (k3s: 10.43.0.0/16, kubeadm: 10.96.0.0/12; kube-dns is its .10), or set clusterDnsIp to the kube-dns ClusterIP (kubectl -n kube-system get service kube-dns)' },
    ]],
    ['control: the same pod CIDR with the service CIDR beside it passes', on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16', '10.43.0.0/16']; }), []],
    ['control: the same pod CIDR with clusterDnsIp set passes', on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16']; p.clusterDnsIp = '10.1.0.10'; }), []],
    ['fails a default route in nodeCidrs', on('nordvpn', (p) => { p.nodeCidrs = ['0.0.0.0/0']; }), [
      { path: 'nodeCidrs[0]', code: 'default-route', message: 'expected a local network, received a default route: it would keep everything off the VPN' },
    ]],
    ['fails a namespace that is not a DNS label', on('nordvpn', (p) => { p.namespace = 'VPN'; }), [
      { path: 'namespace', code: 'namespace', message: 'expected a DNS label (lowercase letters, digits and "-", ≤ 63 characters), received "VPN"' },
    ]],
    ['fails empty cluster CIDRs (once: the service CIDR it lacks is part of what it says)', on('nordvpn', (p) => { p.clusterCidrs = []; }), [
      { path: 'clusterCidrs', code: 'required', message: 'expected the pod and service CIDRs: they are never routed through the VPN' },
    ]],
    ['fails an IPv6 service CIDR without clusterDnsIp (the .10 default is IPv4 only)', on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16', 'fd00:43::/112']; }), [
      { path: 'clusterCidrs[1]', code: 'service-cidr', message: 'is not an IPv4 service CIDR, and kube-dns\'s default address (the service CIDR\'s .10) is taken from an IPv4 one: set clusterDnsIp to the kube-dns ClusterIP (kubectl -n kube-system get service kube-dns), or put the IPv4 service CIDR at clusterCidrs[1]' },
    ]],
  ];

  it.each(cases)('%s', (_name, props, expected) => {
    expect(validateVpnGateway(props)).toEqual(expected);
  });

  it('accepts an IPv6 service CIDR with its DNS address given', () => {
    expect(validateVpnGateway({ ...nordvpnGateway(), clusterCidrs: ['10.1.0.0/16', 'fd00:43::/112'], clusterDnsIp: 'fd00:43::a' })).toEqual([]);
  });

  it('accepts a node network that contains the cluster\'s (a broad LAN)', () => {
    expect(validateVpnGateway(mutated(nordvpnGateway(), (p) => { p.nodeCidrs = ['10.0.0.0/15']; }))).toEqual([]);
  });

  it('reports several mistakes at once', () => {
    const problems = validateVpnGateway(mutated(nordvpnGateway(), (p) => { p.vpnEndpointPort = 51820; delete p.wireguardPrivateKeySecret; p.serverNames = ['x']; p.vxlanId = -1; }));
    expect(problems.map((p) => `${p.path} ${p.code}`)).toEqual(['serverNames filter', 'vpnEndpointPort forbidden', 'vxlanId range', 'wireguardPrivateKeySecret required']);
  });
});

describe('VpnGateway: what gluetun accepts beyond the refusals', () => {
  it.each(['nordvpn', 'protonvpn', 'surfshark', 'ivpn', 'windscribe', 'fastestvpn', 'mullvad', 'custom'])('accepts an optional preshared key for %s (gluetun validates and uses one)', (provider) => {
    expect(validateVpnGateway(on(provider, (p) => { p.wireguardPresharedKeySecret = { name: 'psk' }; }))).toEqual([]);
  });

  it('accepts ProtonVPN server names (gluetun\'s ProtonVPN data has names)', () => {
    expect(validateVpnGateway(on('protonvpn', (p) => { p.serverNames = ['CH#10']; }))).toEqual([]);
  });

  it('warns, and keeps out of the gateway, IPv6 cluster and node CIDRs', async () => {
    const { planVpnGateway } = await import('../../src');
    const plan = planVpnGateway(on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16', '10.152.183.0/24', 'fd00:10::/56']; p.nodeCidrs = ['192.168.1.0/24', 'fd00:1::/64']; }));
    const message = 'an IPv6 CIDR is kept out of the gateway (pod-gateway routes IPv4 only and removes routed pods\' IPv6 default route): routed pods have no IPv6 egress, which their kill switch denies';
    expect(plan.warnings).toEqual([{ path: 'clusterCidrs[2]', code: 'ipv6-cidr', message }, { path: 'nodeCidrs[1]', code: 'ipv6-cidr', message }]);
    expect(JSON.stringify(plan.objects)).not.toContain('fd00');
  });
});

/**
 * ProtonVPN forwards a port only to a credential made for it (OpenVPN username + "+pmp"; a WireGuard key from a config
 * made with NAT-PMP on), which synth cannot read: a warning at the prop to check, which `acknowledge` silences.
 */
describe('VpnGateway: ProtonVPN port forwarding warns what synth cannot see', () => {
  const { portForwarding: _pf, acknowledge: _ack, ...protonNoForwarding } = gatewayFor('protonvpn') as Props;
  const proton = { ...protonNoForwarding, portForwarding: { toPort: 6881, workload: 'qbittorrent', workloadNamespace: 'media' } } as Props;
  const openvpn = mutated(proton, overOpenvpn);
  // custom is WireGuard only here (tunnelwright offers no custom OpenVPN).
  const viaCustom = mutated(gatewayFor('custom'), (p) => { p.portForwarding = { provider: 'protonvpn' }; });
  const warned = (props: VpnGatewayProps) => checkVpnGateway(props).warnings.map((w) => `${w.path} ${w.code}`);
  it.each<[string, VpnGatewayProps, string[]]>([
    ['protonvpn, WireGuard, port forwarding', proton, ['wireguardPrivateKeySecret protonvpn-wireguard-pmp']],
    ['protonvpn, OpenVPN, port forwarding', openvpn, ['openvpnCredentialsSecret protonvpn-openvpn-pmp']],
    ['custom forwarding by protonvpn', viaCustom, ['wireguardPrivateKeySecret protonvpn-wireguard-pmp']],
    ['control: protonvpn without port forwarding', protonNoForwarding as VpnGatewayProps, []],
    ['control: custom forwarding by private internet access', gatewayFor('custom'), ['portForwarding.stateClaim.storageClassName default-storage-class']],
    ['acknowledged: WireGuard', { ...proton, acknowledge: ['protonvpn-wireguard-pmp'] }, []],
    ['acknowledged: OpenVPN', { ...openvpn, acknowledge: ['protonvpn-openvpn-pmp'] }, []],
    ['acknowledging the other code silences nothing', { ...openvpn, acknowledge: ['protonvpn-wireguard-pmp'] }, ['openvpnCredentialsSecret protonvpn-openvpn-pmp']],
  ])('%s', (_name, props, expected) => {
    expect(checkVpnGateway(props).problems).toEqual([]);
    expect(warned(props)).toEqual(expected);
  });

  it('says what to check and how to acknowledge it, never the Secret\'s value', () => {
    const [w] = checkVpnGateway(openvpn).warnings;
    expect(w.message).toContain('+pmp');
    expect(w.message).toContain('acknowledge \'protonvpn-openvpn-pmp\'');
    const [k] = checkVpnGateway(proton).warnings;
    expect(k.message).toContain('NAT-PMP');
    expect(k.message).toContain('acknowledge \'protonvpn-wireguard-pmp\'');
  });

  it('acknowledge silences every other warning code too, and refuses a code that is none', () => {
    const ipv6 = on('nordvpn', (p) => { p.clusterCidrs = ['10.1.0.0/16', '10.152.183.0/24', 'fd00:10::/56']; });
    expect(warned(ipv6)).toEqual(['clusterCidrs[2] ipv6-cidr']);
    expect(warned({ ...ipv6, acknowledge: ['ipv6-cidr'] })).toEqual([]);
    expect(validateVpnGateway({ ...ipv6, acknowledge: ['protonvpn-pmp'] } as unknown as VpnGatewayProps).map((p) => p.path)).toEqual(['acknowledge[0]']);
  });
});

/**
 * gluetun v3.41's WireGuard matrix (research/vpn-gateway.md §1, from settings/wireguard.go, wireguardselection.go and
 * serverselection.go), stated here on its own rather than read from PROVIDERS: each row's rule is tried on each side.
 */
describe('VpnGateway: gluetun\'s WireGuard matrix, rule by rule', () => {
  const codes = (props: VpnGatewayProps) => validateVpnGateway(props).map((p) => `${p.path} ${p.code}`);
  const without = (provider: string, key: keyof VpnGatewayProps) => mutated(gatewayFor(provider), (p) => { delete (p as Record<string, unknown>)[key]; });

  it.each([['nordvpn', false], ['protonvpn', false], ['mullvad', true], ['surfshark', true], ['ivpn', true], ['windscribe', true], ['airvpn', true], ['fastestvpn', true], ['custom', true]] as const)(
    '%s: WIREGUARD_ADDRESSES required = %s', (provider, required) => {
      expect(codes(without(provider, 'wireguardAddresses'))).toEqual(required ? ['wireguardAddresses required'] : []);
    });

  it.each([
    ['nordvpn', 51820, 'forbidden'], ['protonvpn', 51820, 'forbidden'], ['surfshark', 51820, 'forbidden'], ['fastestvpn', 51820, 'forbidden'],
    ['mullvad', 4000, undefined], ['ivpn', 2049, undefined], ['ivpn', 30587, undefined], ['ivpn', 51820, 'port'], ['windscribe', 65142, undefined], ['windscribe', 51820, 'port'],
    ['airvpn', 47107, undefined], ['airvpn', 51820, 'port'], ['custom', 4000, undefined],
  ] as const)('%s: WIREGUARD_ENDPOINT_PORT %i refused as %s', (provider, port, refused) => {
    const problems = codes(mutated(gatewayFor(provider), (p) => { p.vpnEndpointPort = port; }));
    expect(problems).toEqual(refused ? [`vpnEndpointPort ${refused}`] : []);
  });

  it.each([
    ['nordvpn', ['serverCountries', 'serverRegions', 'serverCities', 'serverHostnames'], ['serverNames']],
    ['protonvpn', ['serverCountries', 'serverRegions', 'serverCities', 'serverHostnames', 'serverNames'], []],
    ['mullvad', ['serverCountries', 'serverCities', 'serverHostnames'], ['serverRegions', 'serverNames']],
    ['surfshark', ['serverCountries', 'serverRegions', 'serverCities', 'serverHostnames'], ['serverNames']],
    ['ivpn', ['serverCountries', 'serverCities', 'serverHostnames'], ['serverRegions', 'serverNames']],
    ['windscribe', ['serverRegions', 'serverCities', 'serverHostnames'], ['serverCountries', 'serverNames']],
    ['airvpn', ['serverCountries', 'serverRegions', 'serverCities', 'serverNames', 'serverHostnames'], []],
    ['fastestvpn', ['serverCountries', 'serverCities', 'serverHostnames'], ['serverRegions', 'serverNames']],
    ['custom', ['serverNames'], ['serverCountries', 'serverRegions', 'serverCities', 'serverHostnames']],
  ] as const)('%s: location filters gluetun has data for are accepted, the others refused', (provider, accepted, refused) => {
    // Without port forwarding, whose custom form needs exactly one server name.
    const base = mutated(gatewayFor(provider), (p) => { for (const f of [...accepted, ...refused, 'portForwarding']) delete (p as Record<string, unknown>)[f]; });
    const filtered = (f: string) => codes({ ...base, [f]: ['x1'] });
    expect(accepted.filter((f) => filtered(f).length > 0)).toEqual([]);
    expect(refused.filter((f) => filtered(f).join() !== `${f} filter`)).toEqual([]);
  });
});
