import {
  EgressProbeProps, EgressSteeringProps, planEgressProbe, planEgressSteering, planHostKillSwitch, planKillSwitch, planRoute, planVpnGateway, planWireguardOverlayNode, Problem, validateEgressProbe, validateEgressSteering, validateVpnGateway,
  planWireguardMesh, renderKillSwitchTable, validateWireguardMesh, validateWireguardOverlayNode, ValidationError, VpnGatewayProps, WireguardMeshProps,
} from '../../src';
import { z } from 'zod';
import { describeValue, durationSeconds, parseWith, sortProblems } from '../../src/model/common';
import { shown } from '../helpers/shown';
import { thrown } from '../helpers/thrown';
import { gatewayFor, gatewayProbe, nordvpnGateway, prodSteering, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';
import { Mutable, mutated } from '../helpers/mutable';

/**
 * Refusals the other tables did not reach, each with the whole problem list a user reads, and the renderings that
 * depend on an optional prop being there or not.
 */
const probe = (fn: (p: Mutable<EgressProbeProps>) => void) => mutated(gatewayProbe(), fn);
const steering = (fn: (p: Mutable<EgressSteeringProps>) => void) => mutated(prodSteering(), fn);
const wgSteering = (fn: (p: Mutable<EgressSteeringProps>) => void) => mutated(wireguardSteering(), fn);
const gateway = (base: VpnGatewayProps, fn: (p: Mutable<VpnGatewayProps>) => void) => mutated(base, fn);
/** A host name of 254 characters, one over the limit. */
const LONG_HOST = `${'h'.repeat(63)}.${'h'.repeat(63)}.${'h'.repeat(63)}.${'h'.repeat(62)}`;
const mesh = (fn: (p: Mutable<WireguardMeshProps>) => void) => mutated(threeNodeMesh(), fn);

describe('refusals at the edges', () => {
  it.each<[string, () => Problem[], Problem[]]>([
    ['EgressProbe: a vpn class that is no label value', () => validateEgressProbe(probe((p) => { (p as { via: unknown }).via = { egressSteering: { vpnClass: 'vpn class' } }; })), [
      { path: 'via.egressSteering.vpnClass', code: 'label-value', message: 'expected a label value, received "vpn class"' },
    ]],
    ['EgressProbe: a monitoring namespace that is no DNS label', () => validateEgressProbe(probe((p) => { p.monitoring!.namespace = 'Monitoring'; })), [
      { path: 'monitoring.namespace', code: 'namespace', message: 'expected a namespace name, received "Monitoring"' },
    ]],
    ['EgressSteering: a name that is no DNS label', () => validateEgressSteering(steering((p) => { p.name = 'VPN egress'; })), [
      { path: 'name', code: 'name', message: 'expected a DNS label, received "VPN egress"' },
    ]],
    ['EgressSteering: an empty class and a class with "|" (the policy joins classes with it)', () => validateEgressSteering(steering((p) => { p.enforceLabels!.classes = ['vpn', '', 'a|b']; })), [
      { path: 'enforceLabels.classes[1]', code: 'label-value', message: 'expected a non-empty label value without "|" (Kyverno reads "|" in a pattern as "or"), received ""' },
      { path: 'enforceLabels.classes[2]', code: 'label-value', message: 'expected a non-empty label value without "|" (Kyverno reads "|" in a pattern as "or"), received "a|b"' },
    ]],
    ['EgressSteering: a WireGuard tunnel address without its prefix', () => validateEgressSteering(wgSteering((p) => { (p.tunnel as { address: string }).address = '10.2.0.2'; })), [
      { path: 'tunnel.address', code: 'cidr', message: 'expected the tunnel address with its prefix such as 10.2.0.2/32, received "10.2.0.2"' },
    ]],
    ['EgressSteering: Cilium devices without the tunnel (a list is shown by its length, never echoed)', () => validateEgressSteering(steering((p) => { p.ciliumValues!.devices = ['eth0']; })), [
      { path: 'ciliumValues.devices', code: 'cilium-values', message: 'the egress gateway needs the tunnel device "tun0" in devices (Cilium only egresses by devices it manages), received an array of 1' },
    ]],
    ['EgressSteering: an interface alone is taken', () => validateEgressSteering(steering((p) => { p.interface = 'tun1'; p.ciliumValues!.devices = ['eth0', 'tun1']; })), []],
    ['VpnGateway: a tunDevice that is neither a way nor a resource says what it takes', () => validateVpnGateway(gateway(nordvpnGateway(), (p) => { (p as Record<string, unknown>).tunDevice = 'hostPath'; })), [
      { path: 'tunDevice', code: 'invalid_union', message: 'expected \'runtime\', \'privileged\' or { resource: <an extended resource name such as squat.ai/tun> }, received "hostPath"' },
    ]],
    ['WireguardOverlayNode: an address that is neither text nor a list says what it takes', () => validateWireguardOverlayNode(mutated(siteA(), (p) => { (p.wireguard[0] as Record<string, unknown>).address = 5; })), [
      { path: 'wireguard[0].address', code: 'invalid_union', message: 'expected an address with its prefix such as 10.10.0.1/24, or a list of them, received 5' },
    ]],
    ['WireguardMesh: an endpoint on port 1 is taken', () => validateWireguardMesh(mesh((p) => { p.nodes[0].endpoint = '198.51.100.1:1'; })), []],
    ['WireguardMesh: an IPv4 host in brackets (brackets are for IPv6)', () => validateWireguardMesh(mesh((p) => { p.nodes[0].endpoint = '[198.51.100.1]:51820'; })), [
      { path: 'nodes[0].endpoint', code: 'endpoint', message: 'expected host or host:port (an IPv6 host in brackets), received "[198.51.100.1]:51820"' },
    ]],
    ['WireguardMesh: a key file given as a relative path (the unit runs from /)', () => validateWireguardMesh(mesh((p) => { p.nodes[0].privateKeyFrom = { file: 'run/corium/wg0.key' }; })), [
      { path: 'nodes[0].privateKeyFrom.file', code: 'path', message: 'expected an absolute path without spaces or quotes, received "run/corium/wg0.key"' },
    ]],
    ['VpnGateway: a custom port-forwarding provider gluetun does not know', () => validateVpnGateway(gateway(gatewayFor('custom'), (p) => { p.portForwarding!.provider = 'nordvpn'; })), [
      { path: 'portForwarding.provider', code: 'provider', message: 'expected one of perfect privacy, private internet access, privatevpn, protonvpn, received "nordvpn"' },
    ]],
    ['VpnGateway: port-forwarding credentials for a provider that forwards itself', () => validateVpnGateway(gateway(gatewayFor('protonvpn'), (p) => { p.portForwarding!.credentialsSecret = { name: 'pia-credentials' }; })), [
      { path: 'portForwarding.credentialsSecret', code: 'forbidden', message: 'only for private internet access port forwarding over custom' },
    ]],
    ['VpnGateway: no node CIDRs', () => validateVpnGateway(gateway(nordvpnGateway(), (p) => { p.nodeCidrs = []; })), [
      { path: 'nodeCidrs', code: 'required', message: 'expected the node (LAN) CIDRs: kubelet probes to routed pods come from there' },
    ]],
    ['WireguardMesh: installK0s on a k3s mesh', () => validateWireguardMesh(mesh((p) => { p.distribution = 'k3s'; p.nodes[0].installK0s = {}; })), [
      { path: 'nodes[0].installK0s', code: 'distribution', message: 'installK0s installs k0s; the mesh\'s distribution is "k3s"' },
    ]],
    ['WireguardMesh: an address outside the network', () => validateWireguardMesh(mesh((p) => { p.nodes[2].address = '10.11.0.3'; })), [
      { path: 'nodes[2].address', code: 'outside-network', message: 'expected an address inside 10.10.0.0/24, received "10.11.0.3"' },
    ]],
    ['VpnGateway: a VXLAN network inside the cluster CIDRs', () => validateVpnGateway(gateway(nordvpnGateway(), (p) => { p.vxlanNetwork = '10.1.200.0/24'; })), [
      { path: 'vxlanNetwork', code: 'overlap', message: 'overlaps clusterCidrs[0]: the VXLAN, cluster and node networks must be distinct' },
    ]],
    ['WireguardMesh: an IPv6 overlay whose underlay leaves an MTU under 1280', () => validateWireguardMesh(mesh((p) => {
      p.network = 'fd10::/64';
      p.cni = 'calico';
      p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; });
      p.nodes[0].endpoint = '[2001:db8::1]';
      p.underlayMtu = 1340;
    })), [
      { path: 'underlayMtu', code: 'mtu-ipv6', message: 'the interface MTU derived from underlayMtu 1340 is 1260, below the 1280 an IPv6 overlay needs' },
    ]],
    ['WireguardMesh: an endpoint host name over 253 characters', () => validateWireguardMesh(mesh((p) => { p.nodes[0].endpoint = LONG_HOST; })), [
      { path: 'nodes[0].endpoint', code: 'endpoint', message: `expected host or host:port (an IPv6 host in brackets), received ${shown(LONG_HOST)}` },
    ]],
  ])('%s', (_n, validate, expected) => {
    expect(validate()).toEqual(expected);
  });

  it('WireguardMesh: a host-name endpoint is taken, with a warning that its dialling nodes reach it only once it resolves', () => {
    const props = mesh((p) => { p.nodes[0].endpoint = 'site-a.example.test'; });
    expect(validateWireguardMesh(props)).toEqual([]);
    expect(planWireguardMesh(props).warnings.filter((w) => w.code === 'hostname-endpoint')).toEqual([
      { path: 'nodes[0].endpoint', code: 'hostname-endpoint', message: 'endpoint "site-a.example.test" is a hostname: every node that dials it sets it only once its interface is up and the name resolves (DNS may need the overlay itself), and reaches this node only then; prefer an IP' },
    ]);
  });
});

describe('renderings that depend on an optional prop', () => {
  const settings = (props: VpnGatewayProps) => {
    const cm = planVpnGateway(props).objects.find((o) => o.kind === 'ConfigMap' && (o.metadata as { name: string }).name === 'vpn-gateway-settings') as unknown as { data: Record<string, string> };
    return cm.data;
  };

  it('a given cluster DNS address is the one the routed pods resolve with', () => {
    expect(settings(gateway(nordvpnGateway(), (p) => { p.clusterDnsIp = '10.152.183.53'; }))['settings.sh']).toContain('K8S_DNS_IPS="10.152.183.53"');
  });

  it('nat.conf forwards a port to the workload only when both are given', () => {
    const header = '# name ip ports: a routed workload with a fixed VXLAN address (pod-gateway nat.conf)\n';
    expect(settings(gatewayFor('protonvpn'))['nat.conf']).toBe(`${header}qbittorrent 5 tcp:6881,udp:6881\n`);
    expect(settings(gateway(gatewayFor('protonvpn'), (p) => { delete p.portForwarding!.toPort; }))['nat.conf']).toBe(header);
  });

  it('two routed workloads whose names agree in their first 55 characters get two kill switches, each on its own pods', () => {
    const policies = ['a', 'b'].map((w) => planRoute(nordvpnGateway(), { namespace: 'media', podLabels: { app: w }, name: `${'w'.repeat(53)}-${w}` }).objects.find((o) => o.kind === 'NetworkPolicy')!);
    expect(policies.map((o) => [(o.metadata as { name: string }).name, (o.spec as { podSelector: unknown }).podSelector])).toEqual([
      [`${'w'.repeat(38)}-b6cbf406-vpn-kill-switch`, { matchLabels: { app: 'a' } }],
      [`${'w'.repeat(38)}-6695ea4c-vpn-kill-switch`, { matchLabels: { app: 'b' } }],
    ]);
  });

  it('a policy with no excluded destination has no excludedCIDRs (Cilium takes the field out, not an empty list)', () => {
    const plan = planEgressSteering(steering((p) => { p.destinationCidrs = ['203.0.113.0/24']; delete p.lanCidrs; p.acknowledge = ['dns-wan', 'policy-delay', 'ignition-packages']; }));
    const policy = plan.objects.find((o) => o.kind === 'CiliumEgressGatewayPolicy') as unknown as { spec: Record<string, unknown> };
    expect(policy.spec.excludedCIDRs).toBeUndefined();
    expect(policy.spec.destinationCIDRs).toEqual(['203.0.113.0/24']);
  });
});

describe('texts that only differ with two of something', () => {
  it('a kill-switch set lists every CIDR, comma-separated, as nft reads it', () => {
    const table = renderKillSwitchTable({ node: 'gw-1', wanInterface: 'eth0', tunnelInterface: 'tun0', tunnelCidrs: ['10.2.0.2/32'], podCidrs: ['10.42.0.0/16', '10.44.0.0/16'] });
    expect(table).toContain('\t\telements = { 10.42.0.0/16, 10.44.0.0/16 }');
  });

  it('the Kyverno policy names every enforced namespace', () => {
    const plan = planEgressSteering(steering((p) => { p.namespaces = ['media', 'downloads']; p.enforceLabels!.namespaces = ['media', 'downloads']; }));
    const policy = plan.objects.find((o) => o.kind === 'ClusterPolicy') as unknown as { metadata: { annotations: Record<string, string> } };
    expect(policy.metadata.annotations['policies.kyverno.io/description']).toBe('Pods in media, downloads must say how they reach the internet: tunnelwright.dev/egress-class is one of vpn, direct.');
  });
});

describe('messages a caller reads', () => {
  it('a route to a workload whose name is not an object name', () => {
    const e = thrown(() => planRoute(nordvpnGateway(), { namespace: 'media', podLabels: { app: 'x' }, name: 'Q Bittorrent' }));
    expect(e instanceof ValidationError ? e.problems : e).toEqual([{ path: 'route.name', code: 'name', message: 'expected the workload\'s name, received "Q Bittorrent"' }]);
  });

  it('invalid gateway props name their construct', () => {
    expect(thrown(() => planVpnGateway(gateway(nordvpnGateway(), (p) => { p.nodeCidrs = []; })))?.message).toBe('invalid VpnGateway props:\nnodeCidrs: expected the node (LAN) CIDRs: kubelet probes to routed pods come from there');
  });

  it('an IPv6 overlay whose underlay leaves 1280 or more is taken (the control of the MTU refusal)', () => {
    expect(validateWireguardMesh(mesh((p) => {
      p.network = 'fd10::/64';
      p.cni = 'calico';
      p.nodes.forEach((n, i) => { n.address = `fd10::${i + 1}`; });
      p.nodes[0].endpoint = '[2001:db8::1]';
      p.underlayMtu = 1360;
    }))).toEqual([]);
  });
});

describe('problems in the order of the props', () => {
  it('puts a prop before its parts, list items by index, and each problem once', () => {
    const at = (path: string) => ({ path, code: 'c', message: 'm' });
    expect(sortProblems([at('a[10]'), at('a.b'), at('a[9]'), at('a'), at('a.b'), at('b')]).map((p) => p.path)).toEqual(['a', 'a[9]', 'a[10]', 'a.b', 'b']);
    // An item's own problem comes before its items' (a path ending in "]" has no empty last part to compare as 0).
    expect(sortProblems([at('a[0][0]'), at('a[0]')]).map((p) => p.path)).toEqual(['a[0]', 'a[0][0]']);
  });
});

describe('how a schema\'s refusal reads', () => {
  const problems = (schema: z.ZodType, input: unknown) => (parseWith(schema, input) as { problems: Problem[] }).problems;

  it('never echoes a secret prop, even where the check that refused it says nothing of what it received', () => {
    // Every secret prop today is a string checked later; a check added to the schema must not start echoing it.
    expect(problems(z.strictObject({ password: z.enum(['a', 'b']) }), { password: 'hunter2' })).toEqual([
      { path: 'password', code: 'enum', message: 'expected one of "a"|"b", received a value that is not one (not shown: it is secret)' },
    ]);
    // The control: the same check on a prop that is not secret shows the value.
    expect(problems(z.strictObject({ user: z.enum(['a', 'b']) }), { user: 'hunter2' })).toEqual([
      { path: 'user', code: 'enum', message: 'expected one of "a"|"b", received "hunter2"' },
    ]);
  });

  it('gives a refinement without a code of its own the code "invalid"', () => {
    expect(problems(z.string().refine((v) => v.length > 3, { message: 'expected more than 3 characters' }), 'ab')).toEqual([
      { path: '', code: 'invalid', message: 'expected more than 3 characters' },
    ]);
  });
});

describe('how a message shows a value', () => {
  it.each<[string, unknown, string]>([
    ['a short string, quoted', 'tun0', '"tun0"'],
    ['a string of 120 characters, whole', 'x'.repeat(120), JSON.stringify('x'.repeat(120))],
    ['a string of 121 characters, cut at 60 with its length', 'y'.repeat(121), `${JSON.stringify('y'.repeat(60))}… (121 characters)`],
    ['a number', 51820, '51820'],
    ['a boolean', false, 'false'],
    ['a bigint, by its kind', 10n, 'a bigint'],
    ['undefined', undefined, 'undefined'],
    ['a symbol, by its kind', Symbol('s'), 'a symbol'],
    ['a function, by its kind', () => 1, 'a function'],
    ['null', null, 'null'],
    ['a list, by its length', [1, 2, 3], 'an array of 3'],
    ['an object, never its fields', { privateKey: 'secret' }, 'an object'],
  ])('%s', (_name, value, shown) => {
    expect(describeValue(value)).toBe(shown);
  });
});

describe('durations', () => {
  it.each<[string, number | undefined]>([
    ['30s', 30], ['10m', 600], ['1h', 3600], ['1h30m', 5400], ['2m5s', 125], ['1h0m1s', 3601], ['0s', 0],
    ['', undefined], ['90', undefined], ['1m1h', undefined], ['1d', undefined], ['-1s', undefined], ['1.5h', undefined], [' 1h', undefined],
  ])('%j is %p seconds', (text, seconds) => {
    expect(durationSeconds(text)).toBe(seconds);
  });
});

describe('Secret references and the cluster name', () => {
  it('refuses a cluster that is no DNS label and a Secret reference that names no Secret or key, each with its path', () => {
    expect(validateVpnGateway({ ...nordvpnGateway(), cluster: 'Prod', wireguardPrivateKeySecret: { name: 'Bad_Name', key: 'a b' } })).toEqual([
      { path: 'cluster', code: 'format', message: 'expected a DNS label such as "prod", received "Prod"' },
      { path: 'wireguardPrivateKeySecret.key', code: 'format', message: 'expected a Secret key ([-._a-zA-Z0-9]+), received "a b"' },
      { path: 'wireguardPrivateKeySecret.name', code: 'format', message: 'expected the name of a Secret (a DNS subdomain), received "Bad_Name"' },
    ]);
    expect(validateVpnGateway({ ...nordvpnGateway(), cluster: 'prod-2', wireguardPrivateKeySecret: { name: 'nord.vpn-key', key: 'wg_key.v1' } })).toEqual([]);
  });
});

describe('a refusal names what it refuses', () => {
  // The first line of the thrown message is all a `cdk8s synth` or `pulumi up` log may show of it.
  it.each<[string, () => unknown, string]>([
    ['planVpnGateway', () => planVpnGateway({} as never), 'invalid VpnGateway props:'],
    ['planRoute', () => planRoute(nordvpnGateway(), { namespace: 'media', podLabels: {} } as never), 'invalid VpnGateway route:'],
    ['planEgressSteering', () => planEgressSteering({} as never), 'invalid EgressSteering props:'],
    ['planKillSwitch', () => planKillSwitch({} as never), 'invalid KillSwitch props:'],
    ['planHostKillSwitch', () => planHostKillSwitch({} as never), 'invalid host kill switch:'],
    ['planWireguardOverlayNode', () => planWireguardOverlayNode({} as never), 'invalid WireguardOverlayNode props:'],
    ['planWireguardMesh', () => planWireguardMesh({} as never), 'invalid WireguardMesh props:'],
    ['planEgressProbe', () => planEgressProbe({} as never), 'invalid EgressProbe props:'],
  ])('%s', (_name, plan, firstLine) => {
    const e = thrown(plan);
    expect(e).toBeInstanceOf(ValidationError);
    expect(e!.message.split('\n')[0]).toBe(firstLine);
  });
});
