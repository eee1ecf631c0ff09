import { EgressSteeringProps, planEgressSteering, Problem, validateEgressSteering } from '../../src';
import { KEYS, prodSteering, wireguardSteering } from '../helpers/fixtures';
import { Mutable, mutated } from '../helpers/mutable';
import { thrown } from '../helpers/thrown';

// The key field's refusal as the user reads it, written out here (not the source's constant, which a test must not
// take its expectation from).
const KEY_FIELD_MESSAGE = 'expected a WireGuard public key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: key fields are never echoed)';

type Props = Mutable<EgressSteeringProps>;
const prod = (fn: (p: Props) => void) => mutated(prodSteering(), fn);
const wg = (fn: (p: Props) => void) => mutated(wireguardSteering(), fn);

describe('EgressSteering validation', () => {
  it.each([
    ['prod (OpenVPN)', prodSteering()],
    ['WireGuard', wireguardSteering()],
    ['an IPv6-only WireGuard tunnel for IPv6 destinations only', wg((p) => { (p.tunnel as { address: string }).address = 'fd00:2::2/128'; p.destinationCidrs = ['2000::/3']; })],
    ['denyIpv6 with IPv4 destinations only', wg((p) => { p.destinationCidrs = ['0.0.0.0/0']; p.denyIpv6 = true; })],
    ['the WireGuard tunnel\'s address as the egress IP', wg((p) => { p.egressIp = '10.2.0.2'; })],
    ['an egress IP with Cilium devices that do not name the tunnel (the policy names no interface)', wg((p) => { p.egressIp = '10.2.0.2'; p.ciliumValues = { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0'] }; })],
    ['an egress IP without a tunnel (yours to route)', wg((p) => { delete p.tunnel; p.egressIp = '192.168.20.5'; })],
    ['Cilium devices as Helm\'s space- or comma-separated text', prod((p) => { p.ciliumValues!.devices = 'eth0 tun0'; })],
    ['Cilium devices that take the tunnel by a wildcard', prod((p) => { p.ciliumValues!.devices = 'eth0,tun+'; })],
    ['kubeProxyReplacement as Helm\'s text "true"', prod((p) => { p.ciliumValues!.kubeProxyReplacement = 'true'; })],
    ['an excluded CIDR inside the second of two destinations', prod((p) => { p.destinationCidrs = ['0.0.0.0/1', '128.0.0.0/1']; p.excludedCidrs = ['10.0.0.0/8', '192.168.0.0/16']; })],
    ['a WireGuard tunnel address on a /31 (both addresses are hosts, RFC 3021)', wg((p) => { (p.tunnel as { address: string }).address = '10.2.0.0/31'; })],
  ])('accepts %s', (_n, props) => {
    expect(validateEgressSteering(props)).toEqual([]);
  });

  const cases: [string, Props, Problem[]][] = [
    ['fails interface and egressIp together', wg((p) => { p.interface = 'tun0'; p.egressIp = '10.2.0.2'; }), [
      { path: 'egressIp', code: 'interface-and-egress-ip', message: 'expected interface or egressIp, never both: Cilium ignores a policy that sets both' },
    ]],
    ['fails an egress IP that is not an IP', wg((p) => { p.egressIp = 'tun0'; }), [
      { path: 'egressIp', code: 'ip', message: 'expected an IP address, received "tun0"' },
    ]],
    ['fails an egress IP other than the WireGuard tunnel\'s address (it would leave by the main table)', wg((p) => { p.egressIp = '192.168.20.5'; }), [
      { path: 'egressIp', code: 'egress-ip-tunnel', message: 'expected the tunnel\'s address 10.2.0.2 (or leave egressIp out): traffic masqueraded to 192.168.20.5 is not routed into the tunnel, only traffic from the tunnel\'s address is, and it would leave by the main table' },
    ]],
    ['fails an egress IP with an OpenVPN tunnel', prod((p) => { p.egressIp = '10.8.0.2'; }), [
      { path: 'egressIp', code: 'egress-ip-tunnel', message: 'expected no egressIp with an OpenVPN tunnel (leave it out: the policy names the interface): OpenVPN assigns the tunnel address at each connect, and traffic masqueraded to any other address is not routed into the tunnel' },
    ]],
    ['fails a gateway node that is not a hostname', prod((p) => { p.gatewayNode = 'Prod GW'; }), [
      { path: 'gatewayNode', code: 'format', message: 'expected a hostname (lowercase letters, digits, "-" and "."), received "Prod GW"' },
    ]],
    ['fails an excluded CIDR outside every destination', prod((p) => { p.destinationCidrs = ['0.0.0.0/1']; p.excludedCidrs = ['192.168.0.0/16']; }), [
      { path: 'excludedCidrs[0]', code: 'excluded-outside', message: 'expected an excluded CIDR inside a destination CIDR (Cilium ignores it otherwise), received "192.168.0.0/16"' },
    ]],
    ['fails an empty namespaces list', prod((p) => { p.namespaces = []; }), [
      { path: 'namespaces', code: 'required', message: 'expected at least one namespace (omit it for every namespace)' },
    ]],
    ['fails a class label that is not a label key', prod((p) => { p.egressClassLabel = 'egress class'; }), [
      { path: 'egressClassLabel', code: 'label-key', message: 'expected a label key, received "egress class"' },
    ]],
    ['fails allowed classes without the vpn class', prod((p) => { p.enforceLabels!.classes = ['direct']; }), [
      { path: 'enforceLabels.classes', code: 'classes', message: 'expected the allowed classes to include the vpn class "vpn", received ["direct"]' },
    ]],
    ['fails Cilium values the egress gateway cannot work with', prod((p) => { p.ciliumValues = { egressGateway: { enabled: false }, bpf: {}, kubeProxyReplacement: false, devices: 'eth0', ciliumEndpointSlice: { enabled: true } }; }), [
      { path: 'ciliumValues.bpf.masquerade', code: 'cilium-values', message: 'the egress gateway needs bpf.masquerade: true, received undefined' },
      { path: 'ciliumValues.ciliumEndpointSlice.enabled', code: 'cilium-values', message: 'the egress gateway needs ciliumEndpointSlice off (it is not compatible with the egress gateway), received true' },
      { path: 'ciliumValues.devices', code: 'cilium-values', message: 'the egress gateway needs the tunnel device "tun0" in devices (Cilium only egresses by devices it manages), received "eth0"' },
      { path: 'ciliumValues.egressGateway.enabled', code: 'cilium-values', message: 'the egress gateway needs egressGateway.enabled: true, received false' },
      { path: 'ciliumValues.kubeProxyReplacement', code: 'cilium-values', message: 'the egress gateway needs kubeProxyReplacement: true, received false' },
    ]],
    ['fails a WireGuard tunnel address that is a network', wg((p) => { (p.tunnel as { address: string }).address = '10.2.0.0/24'; }), [
      { path: 'tunnel.address', code: 'host-address', message: 'expected a host address, received "10.2.0.0/24"' },
    ]],
    ['fails an IPv6-only WireGuard tunnel for IPv4 destinations', wg((p) => { (p.tunnel as { address: string }).address = 'fd00:2::2/128'; }), [
      { path: 'tunnel.address', code: 'tunnel-family', message: 'expected an IPv4 tunnel address: the IPv4 destinations leave from the tunnel\'s IPv4 address, and fd00:2::2/128 is IPv6 (steer only IPv6 destinations through an IPv6-only tunnel)' },
    ]],
    ['fails denyIpv6 beside steered IPv6 destinations', wg((p) => { p.destinationCidrs = ['0.0.0.0/0', '2000::/3']; p.denyIpv6 = true; }), [
      { path: 'denyIpv6', code: 'deny-steered', message: 'expected denyIpv6 off while IPv6 destinations are steered: its deny of ::/0 drops them before the egress gateway redirects them' },
    ]],
    ['fails a WireGuard peer key that is not a key', wg((p) => { (p.tunnel as { peer: { publicKey: string } }).peer.publicKey = 'abc'; }), [
      { path: 'tunnel.peer.publicKey', code: 'key', message: KEY_FIELD_MESSAGE },
    ]],
    ['fails a WireGuard endpoint without a port', wg((p) => { (p.tunnel as { peer: { endpoint: string } }).peer.endpoint = '198.51.100.7'; }), [
      { path: 'tunnel.peer.endpoint', code: 'endpoint', message: 'expected host:port (an IPv6 host in brackets), received "198.51.100.7"' },
    ]],
    ['fails an OpenVPN remote without a port', prod((p) => { (p.tunnel as { remote: string }).remote = 'nl-amsterdam.privacy.network'; }), [
      { path: 'tunnel.remote', code: 'endpoint', message: 'expected host:port, received "nl-amsterdam.privacy.network"' },
    ]],
    ['fails an unknown tunnel type', prod((p) => { (p.tunnel as { type: string }).type = 'ipsec'; }), [
      { path: 'tunnel.type', code: 'invalid_union', message: 'expected one of "openvpn"|"wireguard", received "ipsec"' },
    ]],
    ['fails a tunnel without a type as a required prop', prod((p) => { delete (p.tunnel as { type?: string }).type; }), [
      { path: 'tunnel.type', code: 'required', message: 'required: expected one of "openvpn"|"wireguard"' },
    ]],
    ['fails a tunnel type given as a list, by its kind', prod((p) => { (p.tunnel as { type: unknown }).type = ['wireguard']; }), [
      { path: 'tunnel.type', code: 'invalid_union', message: 'expected one of "openvpn"|"wireguard", received an array of 1' },
    ]],
    ['fails a steered namespace that is not a namespace name', prod((p) => { p.namespaces = ['media', 'Media']; }), [
      { path: 'namespaces[1]', code: 'namespace', message: 'expected a namespace name, received "Media"' },
    ]],
    ['fails an empty vpn class (every unlabelled pod would carry it)', prod((p) => { p.vpnClass = ''; }), [
      { path: 'vpnClass', code: 'label-value', message: 'expected a label value, received ""' },
    ]],
    ['fails empty cluster CIDRs', prod((p) => { p.clusterCidrs = []; }), [
      { path: 'clusterCidrs', code: 'required', message: 'expected the pod and service CIDRs: they are never steered' },
    ]],
    ['fails an enforced namespace that is not a namespace name', prod((p) => { p.enforceLabels!.namespaces = ['media', 'Media']; }), [
      { path: 'enforceLabels.namespaces[1]', code: 'namespace', message: 'expected a namespace name, received "Media"' },
    ]],
    ['fails Cilium values that name no devices (Cilium then egresses by none of the tunnel\'s)', prod((p) => { delete p.ciliumValues!.devices; }), [
      { path: 'ciliumValues.devices', code: 'cilium-values', message: 'the egress gateway needs the tunnel device "tun0" in devices (Cilium only egresses by devices it manages), received undefined' },
    ]],
    ['fails devices wildcards that do not take the tunnel', prod((p) => { p.ciliumValues!.devices = ['eth+', 'tx+', 'tun']; }), [
      { path: 'ciliumValues.devices', code: 'cilium-values', message: 'the egress gateway needs the tunnel device "tun0" in devices (Cilium only egresses by devices it manages), received an array of 3' },
    ]],
    ['fails label enforcement in no namespace', prod((p) => { p.enforceLabels!.namespaces = []; }), [
      { path: 'enforceLabels.namespaces', code: 'required', message: 'expected at least one namespace to enforce the class label in' },
    ]],
    ['fails an allowed class with "|" (Kyverno reads it as "or")', prod((p) => { p.enforceLabels!.classes = ['vpn', 'direct|vpn']; }), [
      { path: 'enforceLabels.classes[1]', code: 'label-value', message: 'expected a non-empty label value without "|" (Kyverno reads "|" in a pattern as "or"), received "direct|vpn"' },
    ]],
    ['fails kubeProxyReplacement as other text', prod((p) => { p.ciliumValues!.kubeProxyReplacement = 'strict'; }), [
      { path: 'ciliumValues.kubeProxyReplacement', code: 'cilium-values', message: 'the egress gateway needs kubeProxyReplacement: true, received "strict"' },
    ]],
    ['fails an IPv6 tunnel address that is a network', wg((p) => { (p.tunnel as { address: string }).address = 'fd00:2::/64'; p.destinationCidrs = ['2000::/3']; }), [
      { path: 'tunnel.address', code: 'host-address', message: 'expected a host address, received "fd00:2::/64"' },
    ]],
    ['fails an IPv6-only tunnel when one destination of two is IPv4', wg((p) => { (p.tunnel as { address: string }).address = 'fd00:2::2/128'; p.destinationCidrs = ['2000::/3', '0.0.0.0/0']; }), [
      { path: 'tunnel.address', code: 'tunnel-family', message: 'expected an IPv4 tunnel address: the IPv4 destinations leave from the tunnel\'s IPv4 address, and fd00:2::2/128 is IPv6 (steer only IPv6 destinations through an IPv6-only tunnel)' },
    ]],
    ['fails an IPv6 egress IP whose number is the IPv4 tunnel address\'s (::10.2.0.2 is not 10.2.0.2)', wg((p) => { p.egressIp = '::a02:2'; }), [
      { path: 'egressIp', code: 'egress-ip-tunnel', message: 'expected the tunnel\'s address 10.2.0.2 (or leave egressIp out): traffic masqueraded to ::a02:2 is not routed into the tunnel, only traffic from the tunnel\'s address is, and it would leave by the main table' },
    ]],
    ['fails a WireGuard peer key that is no text, as a type only', wg((p) => { (p.tunnel as { peer: { publicKey: unknown } }).peer.publicKey = 42; }), [
      { path: 'tunnel.peer.publicKey', code: 'type', message: 'expected string, received a value of the wrong type (not shown: it is secret)' },
    ]],
    ['fails an OpenVPN tunnel with a WireGuard address, as an unknown prop only', prod((p) => { (p.tunnel as unknown as { address: string }).address = 'x'; }), [
      { path: 'tunnel.address', code: 'unknown-prop', message: 'unknown prop "address"' },
    ]],
    ['fails a WireGuard tunnel with an OpenVPN remote, as an unknown prop only', wg((p) => { (p.tunnel as unknown as { remote: string }).remote = 'nohost'; }), [
      { path: 'tunnel.remote', code: 'unknown-prop', message: 'unknown prop "remote"' },
    ]],
    // A namespace where Kyverno requires the class but no policy steers it: its vpn-class pods would leave by the WAN.
    ['fails an enforced namespace that is not steered', prod((p) => { p.enforceLabels!.namespaces = ['media', 'downloads']; }), [
      { path: 'enforceLabels.namespaces[1]', code: 'enforced-not-steered', message: 'expected a namespace the policy steers (namespaces: "media"): Kyverno would admit pods of class vpn in downloads, and they would leave by the WAN; add downloads to namespaces, or leave it out here' },
    ]],
    ['fails each enforced namespace that is not steered, with the vpn class as named', prod((p) => { p.vpnClass = 'tunnel'; p.namespaces = ['media', 'tv']; p.enforceLabels = { namespaces: ['books', 'tv', 'media', 'games'], classes: ['tunnel', 'direct'] }; }), [
      { path: 'enforceLabels.namespaces[0]', code: 'enforced-not-steered', message: 'expected a namespace the policy steers (namespaces: "media", "tv"): Kyverno would admit pods of class tunnel in books, and they would leave by the WAN; add books to namespaces, or leave it out here' },
      { path: 'enforceLabels.namespaces[3]', code: 'enforced-not-steered', message: 'expected a namespace the policy steers (namespaces: "media", "tv"): Kyverno would admit pods of class tunnel in games, and they would leave by the WAN; add games to namespaces, or leave it out here' },
    ]],
    // kube-state-metrics keeps the last nodes= entry only (pkg/options/types.go).
    ['fails a second nodes= entry in the kube-state-metrics allowlist', prod((p) => { p.monitoring!.kubeStateMetricsValues = { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink]', 'pods=[app]', 'nodes=[kubernetes.io/arch]'] }; }), [
      { path: 'monitoring.kubeStateMetricsValues.metricLabelsAllowlist[2]', code: 'ksm-nodes-repeated', message: 'expected one nodes= entry, found "nodes=[tunnelwright.dev/egress-uplink]", "nodes=[kubernetes.io/arch]": kube-state-metrics keeps only the last, so the labels of the others are never exported; list every node label in one nodes=[…] entry' },
    ]],
    ['fails a second nodes= group inside an entry of two', prod((p) => { p.monitoring!.kubeStateMetricsValues = { metricLabelsAllowlist: ['pods=[app],nodes=[kubernetes.io/arch]', 'nodes=[tunnelwright.dev/egress-uplink]'] }; }), [
      { path: 'monitoring.kubeStateMetricsValues.metricLabelsAllowlist[1]', code: 'ksm-nodes-repeated', message: 'expected one nodes= entry, found "pods=[app],nodes=[kubernetes.io/arch]", "nodes=[tunnelwright.dev/egress-uplink]": kube-state-metrics keeps only the last, so the labels of the others are never exported; list every node label in one nodes=[…] entry' },
    ]],
    ['fails two nodes= groups in one entry', prod((p) => { p.monitoring!.kubeStateMetricsValues = { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink],nodes=[kubernetes.io/arch]'] }; }), [
      { path: 'monitoring.kubeStateMetricsValues.metricLabelsAllowlist[0]', code: 'ksm-nodes-repeated', message: 'expected one nodes= entry, found "nodes=[tunnelwright.dev/egress-uplink],nodes=[kubernetes.io/arch]": kube-state-metrics keeps only the last, so the labels of the others are never exported; list every node label in one nodes=[…] entry' },
    ]],
    ['fails a monitoring namespace that is not a DNS label', prod((p) => { p.monitoring!.namespace = 'Monitoring'; }), [
      { path: 'monitoring.namespace', code: 'namespace', message: 'expected a namespace name, received "Monitoring"' },
    ]],
  ];

  it.each(cases)('%s', (_name, props, expected) => {
    expect(validateEgressSteering(props)).toEqual(expected);
  });

  it('warns when kube-state-metrics does not export the uplink label', () => {
    const plan = planEgressSteering(prod((p) => { delete p.monitoring!.kubeStateMetricsValues; p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages']; }));
    expect(plan.warnings).toEqual([{ path: 'monitoring.kubeStateMetricsValues', code: 'kube-state-metrics', message: 'kube-state-metrics must export the tunnelwright.dev/egress-uplink node label for VPNEgressSteeringStale and VPNEgressUplinkLabelMissing: plan.values.kubeStateMetrics holds the metricLabelsAllowlist to give it (under kube-state-metrics: in kube-prometheus-stack\'s values); Helm replaces a list, so give yours as monitoring.kubeStateMetricsValues to have it merged' }]);
  });

  it.each<[string, unknown[] | undefined, boolean]>([
    ['no allowlist', undefined, true],
    ['the uplink label among others, with spaces', ['pods=[app]', 'nodes=[kubernetes.io/arch, tunnelwright.dev/egress-uplink]'], false],
    ['every node label', ['nodes=[*]'], false],
    ['other node labels only', ['nodes=[kubernetes.io/arch,topology.kubernetes.io/zone]'], true],
    ['the uplink label on another resource', ['roles=[tunnelwright.dev/egress-uplink]'], true],
    ['an entry that is no text', [42], true],
    ['the uplink label in the second group of an entry', ['pods=[app],nodes=[tunnelwright.dev/egress-uplink]'], false],
    ['the uplink label on pods, in an entry that starts with nodes=', ['nodes=[kubernetes.io/arch],pods=[tunnelwright.dev/egress-uplink]'], true],
    ['a "*" that is not first in its group (kube-state-metrics skips it)', ['nodes=[kubernetes.io/arch,*]'], true],
    ['the uplink label in a nodes= group that a *= group overrides', ['*=[app]', 'nodes=[tunnelwright.dev/egress-uplink]'], true],
    ['every label for every resource', ['*=[*]'], false],
    ['a "*" after an empty label (kube-state-metrics reads it second)', ['nodes=[,*]'], true],
    ['the uplink label in a group helm --set split at its comma', ['nodes=[kubernetes.io/arch', 'tunnelwright.dev/egress-uplink]'], false],
  ])('kube-state-metrics allowlist %s: warned = %s', (_name, allowlist, warned) => {
    const props = prod((p) => { p.monitoring!.kubeStateMetricsValues = allowlist === undefined ? {} : { metricLabelsAllowlist: allowlist }; p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages']; });
    expect(planEgressSteering(props).warnings.map((w) => w.code)).toEqual(warned ? ['kube-state-metrics'] : []);
  });

  it.each<[string, string[] | undefined, string]>([
    ['every namespace steered: labelling CoreDNS works', undefined, 'vpn-class pods resolve names through the cluster DNS (the cluster CIDRs are never steered), which forwards outside names over the WAN: label the CoreDNS pods with the vpn class, or point CoreDNS\'s forward at a resolver reached only through the tunnel (see docs/egress-steering.md, "DNS leaves by the WAN")'],
    ['kube-system steered: labelling CoreDNS works', ['media', 'kube-system'], 'vpn-class pods resolve names through the cluster DNS (the cluster CIDRs are never steered), which forwards outside names over the WAN: label the CoreDNS pods with the vpn class, or point CoreDNS\'s forward at a resolver reached only through the tunnel (see docs/egress-steering.md, "DNS leaves by the WAN")'],
    ['kube-system not steered: labelling CoreDNS does nothing', ['media', 'downloads'], 'vpn-class pods resolve names through the cluster DNS (the cluster CIDRs are never steered), which forwards outside names over the WAN; labelling the CoreDNS pods with the vpn class does nothing here, since the policy selects pods only in "media", "downloads" and CoreDNS runs in kube-system: add kube-system to namespaces for that, or point CoreDNS\'s forward at a resolver reached only through the tunnel (see docs/egress-steering.md, "DNS leaves by the WAN")'],
  ])('the DNS warning says what steers CoreDNS: %s', (_name, namespaces, message) => {
    const props = prod((p) => { if (namespaces) p.namespaces = namespaces; else delete p.namespaces; p.enforceLabels!.namespaces = namespaces ?? ['media']; });
    expect(planEgressSteering(props).warnings.find((w) => w.code === 'dns-wan')!.message).toBe(message);
  });

  it('warns about IPv6 destinations (Cilium 1.20)', () => {
    const warnings = planEgressSteering(prod((p) => { p.destinationCidrs = ['0.0.0.0/0', '::/0']; })).warnings;
    expect(warnings.map((w) => `${w.path} ${w.code}`)).toEqual(['destinationCidrs[1] ipv6-destination', 'clusterCidrs dns-wan', 'vpnClass policy-delay', 'tunnel ignition-packages']);
    expect(warnings[0].message).toBe('IPv6 egress destinations need Cilium 1.20 or later');
  });

  it('says what Cilium\'s egress gateway leaves open, each until acknowledged: IPv6, DNS over the WAN, the first packets of new pods', () => {
    const v6 = prod((p) => { p.clusterCidrs = ['10.42.0.0/16', '10.43.0.0/16', 'fd00:42::/56']; });
    expect(planEgressSteering(v6).warnings.map((w) => `${w.path} ${w.code}`)).toEqual(['clusterCidrs[2] ipv6-egress', 'clusterCidrs dns-wan', 'vpnClass policy-delay', 'tunnel ignition-packages']);
    expect(planEgressSteering(v6).warnings[0].message).toBe('an IPv6 cluster: vpn-class pods\' IPv6 traffic is not steered (only IPv4 destinations are) and leaves natively; set denyIpv6: true (a CiliumClusterwideNetworkPolicy denying it), or steer IPv6 destinations (Cilium 1.20+)');
    expect(planEgressSteering({ ...v6, denyIpv6: true, acknowledge: ['dns-wan', 'policy-delay', 'ignition-packages'] }).warnings).toEqual([]);
  });

  // The codes a user can put in `acknowledge`, written out as docs/egress-steering.md lists them: each one silences its own warning
  // and no other, and the list refuses a code that is not one of them.
  it.each<[string, Props]>([
    ['dns-wan', prodSteering()],
    ['policy-delay', prodSteering()],
    ['ignition-packages', prodSteering()],
    ['ipv6-egress', prod((p) => { p.clusterCidrs = ['10.42.0.0/16', '10.43.0.0/16', 'fd00:42::/56']; })],
    ['ipv6-destination', prod((p) => { p.destinationCidrs = ['0.0.0.0/0', '::/0']; })],
    ['hostname-endpoint', wg((p) => { (p.tunnel as { peer: { endpoint: string } }).peer.endpoint = 'vpn.example.net:51820'; })],
    ['cilium-devices', wireguardSteering()],
    ['kube-state-metrics', prod((p) => { delete p.monitoring!.kubeStateMetricsValues; })],
  ])('acknowledge: [\'%s\'] is taken and silences that warning only', (code, props) => {
    const codes = planEgressSteering(props).warnings.map((w) => w.code);
    expect(codes).toContain(code);
    const acknowledged = { ...props, acknowledge: [code] } as EgressSteeringProps;
    expect(validateEgressSteering(acknowledged)).toEqual([]);
    expect(planEgressSteering(acknowledged).warnings.map((w) => w.code)).toEqual(codes.filter((c) => c !== code));
  });

  it('control: acknowledge refuses a code that names no warning it silences', () => {
    expect(validateEgressSteering({ ...prodSteering(), acknowledge: ['dns-leak'] } as unknown as EgressSteeringProps)).toEqual([
      { path: 'acknowledge[0]', code: 'enum', message: 'expected one of "dns-wan"|"policy-delay"|"ipv6-egress"|"ipv6-destination"|"hostname-endpoint"|"cilium-devices"|"kube-state-metrics"|"ignition-packages"|"default-kubeconfig", received "dns-leak"' },
    ]);
  });

  it('warns that Cilium needs the tunnel among its devices when it cannot give the whole list', () => {
    const plan = planEgressSteering(wg((p) => { p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages', 'default-kubeconfig']; }));
    expect(plan.warnings.map((w) => `${w.path} ${w.code}`)).toEqual(['ciliumValues cilium-devices']);
    // With egressIp the policy names no interface, so there is no device to add.
    expect(planEgressSteering(wg((p) => { p.egressIp = '10.2.0.2'; p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages', 'default-kubeconfig']; })).warnings).toEqual([]);
    expect((plan.values.cilium as Record<string, unknown>).devices).toBeUndefined();
    // It names the tunnel's interface as given.
    const named = planEgressSteering(wg((p) => { p.interface = 'wg-vpn'; p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages', 'default-kubeconfig']; })).warnings;
    expect(named.map((w) => w.message.split(': ')[1])).toEqual(['add "wg-vpn" to your Cilium values\' devices list (Helm replaces a list, so plan.values.cilium cannot carry it without your other devices); pass ciliumValues to get the whole list in plan.values.cilium.devices']);
  });

  it('reports every mistake at once', () => {
    expect(validateEgressSteering(wg((p) => { p.egressIp = 'x'; p.interface = 'tun 0'; (p.tunnel as { peer: { publicKey: string } }).peer.publicKey = KEYS.psk.slice(1); })).map((p) => `${p.path} ${p.code}`)).toEqual([
      'egressIp interface-and-egress-ip',
      'egressIp ip',
      'interface interface-name',
      'tunnel.peer.publicKey key',
    ]);
  });
});

describe('EgressSteering warnings and refusals as thrown', () => {
  it('warns that a hostname WireGuard endpoint must resolve before the tunnel is up', () => {
    const plan = planEgressSteering(wg((p) => { (p.tunnel as { peer: { endpoint: string } }).peer.endpoint = 'vpn.example.test:51820'; p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages', 'cilium-devices', 'default-kubeconfig']; }));
    expect(plan.warnings).toEqual([{ path: 'tunnel.peer.endpoint', code: 'hostname-endpoint', message: 'endpoint "vpn.example.test:51820" is a hostname: it must resolve before the tunnel is up; prefer an IP' }]);
  });

  it.each([
    ['no kubeconfigFrom: warned, naming the ServiceAccount and its token Secret', undefined, ['kubeconfigFrom default-kubeconfig']],
    ['control: kubeconfigFrom given, no warning', { file: '/etc/tunnelwright/resteer.kubeconfig' }, []],
  ] as const)('the re-steer hook\'s credential: %s', (_what, kubeconfigFrom, expected) => {
    const warnings = planEgressSteering(wg((p) => { p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages', 'cilium-devices']; if (kubeconfigFrom) p.kubeconfigFrom = kubeconfigFrom; })).warnings;
    expect(warnings.map((w) => `${w.path} ${w.code}`)).toEqual(expected);
    // The remedy names the ServiceAccount and its token Secret.
    expect(warnings.filter((w) => !/kubectl with the node's default config .*ServiceAccount vpn-egress-resteer .*Secret kube-system\/vpn-egress-resteer-token .*kubeconfigFrom/.test(w.message))).toEqual([]);
  });

  it('throws a ValidationError naming its subject', () => {
    expect((thrown(() => planEgressSteering(prod((p) => { p.vpnClass = ''; }))) as Error).message).toBe('invalid EgressSteering props:\nvpnClass: expected a label value, received ""');
  });
});
