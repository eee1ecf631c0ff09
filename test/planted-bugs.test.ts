import * as path from 'node:path';
import { Chart } from 'cdk8s';
import * as pulumi from '@pulumi/pulumi';
import {
  egressAlertGroups, EgressProbeProps, egressProbeAlertGroups, planEgressProbe, planEgressSteering, planKillSwitch, planRoute, planVpnGateway, planWireguardOverlayNode, renderHostArtefacts, validateKillSwitch, validateWireguardMesh,
} from '../src';
import { App, WireguardMesh, WireguardOverlayNode } from '../src/cdk8s';
import { gatewayFor, gatewayProbe, KEYS, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from './helpers/fixtures';
import { recordResources, valueOf } from './helpers/pulumi';
import { expectWarnings } from './helpers/stderr-guard';
import { hostTools, withSetting } from './helpers/host-tools';

/**
 * The behaviours that planted bugs once changed without failing any test (issue "Tests that catch real bugs"), each
 * asserted as a user or the consuming program sees it.
 */
recordResources();
const tw = require('../src/pulumi') as typeof import('../src/pulumi');

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'behaviours planted bugs once changed unnoticed renders the Ignition version asked for, in the cdk8s constructs and the App': ['b/m: mtu', 'b/m: nodes[0].installK0s', 'b/m: nodes[1].installK0s', 'b/m: nodes[2].installK0s'],
  'behaviours planted bugs once changed unnoticed renders the Ignition version asked for in the Pulumi components': ['mtu', 'nodes[0].installK0s', 'nodes[1].installK0s', 'nodes[2].installK0s'],
});

describe('behaviours planted bugs once changed unnoticed', () => {
  it('refuses pod CIDRs that cover everything (every packet would count as pod-sourced), and accepts real ones', () => {
    const ks = qbittorrentKillSwitch();
    expect(validateKillSwitch({ ...ks, host: { ...ks.host!, podCidrs: ['0.0.0.0/1', '128.0.0.0/1'] } })).toEqual([
      { path: 'host.podCidrs', code: 'default-route', message: "expected the pods' own addresses, received CIDRs that cover all of IPv4: every packet would count as pod-sourced" },
    ]);
    expect(validateKillSwitch({ ...ks, host: { ...ks.host!, podCidrs: ['10.42.0.0/16', '10.43.0.0/16'] } })).toEqual([]);
  });

  it('drops, not accepts, tunnel- and pod-sourced traffic on the WAN: every drop rule\'s verdict', () => {
    const table = planKillSwitch(qbittorrentKillSwitch()).hosts[0].files[0].content;
    const verdicts = [...table.matchAll(/counter name "(\w+)" (accept|drop)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(verdicts).toEqual([
      // What the VPN side opens to the node through the tunnel (the input chain).
      'tunnel_inbound_dropped drop',
      'tunnel_via_tunnel accept', 'tunnel_via_tunnel accept', 'tunnel_via_wan_dropped drop', 'tunnel_via_wan_dropped drop',
      'pods_via_tunnel accept', 'pods_via_tunnel accept', 'pods_via_wan_dropped drop', 'pods_via_wan_dropped drop',
      'masqueraded_via_wan_dropped drop', 'masqueraded_via_wan_dropped drop',
    ]);
  });

  it('lets a routed workload\'s pods reach their gateway on the gateway\'s VXLAN port (Calico: 8472)', () => {
    const route = planRoute({ ...nordvpnGateway(), cni: 'calico' }, { namespace: 'media', podLabels: { app: 'q' }, name: 'q' });
    const policy = route.objects.find((o) => o.kind === 'NetworkPolicy') as unknown as { spec: { egress: { ports?: { protocol: string; port: number }[] }[] } };
    expect(policy.spec.egress.flatMap((e) => e.ports ?? []).filter((p) => p.protocol === 'UDP' && p.port !== 53)).toEqual([{ protocol: 'UDP', port: 8472 }]);
  });

  it('marks an inline preshared key secret: the file 0600, the artefacts secret', () => {
    const props = siteA();
    const { privateKeyFrom: _f, ...iface } = props.wireguard[0];
    const peers = [{ ...iface.peers[0], presharedKey: KEYS.psk }, iface.peers[1]];
    const host = planWireguardOverlayNode({ ...props, wireguard: [{ ...iface, privateKeyFrom: { file: '/run/k' }, peers }] }).hosts[0];
    const conf = host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!;
    expect({ mode: conf.mode, secret: conf.secret, artefacts: renderHostArtefacts(host).secret }).toEqual({ mode: 0o600, secret: true, artefacts: true });
  });

  it('keeps every alert\'s for: and severity', () => {
    const summary = (groups: { rules: Record<string, unknown>[] }[]) => groups[0].rules.map((r) => `${r.alert} for ${r.for} ${(r.labels as { severity: string }).severity}`);
    expect(summary(egressAlertGroups(prodSteering()))).toEqual(['VPNTunnelDown for 2m critical', 'VPNEgressSteeringStale for 5m critical', 'VPNTunnelReconnectLoop for 5m warning', 'VPNEgressUplinkLabelMissing for 10m warning']);
    expect(summary(egressAlertGroups({ ...wireguardSteering(), monitoring: {} })).slice(-1)).toEqual(['VPNTunnelHandshakeStale for 2m critical']);
    expect(summary(egressProbeAlertGroups({ ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'] } }))).toEqual(['VPNEgressLeak for 1m critical', 'VPNEgressProbeFailing for 10m warning', 'VPNEgressProbeAbsent for 120s warning', 'VPNDNSLeak for 1m critical', 'VPNDNSProbeFailing for 10m warning']);
  });

  it('enforces the egress class with Kyverno (Enforce, not Audit)', () => {
    const policy = planEgressSteering(prodSteering()).objects.find((o) => o.kind === 'ClusterPolicy') as unknown as { spec: { rules: { validate: { failureAction: string } }[] } };
    expect(policy.spec.rules.map((r) => r.validate.failureAction)).toEqual(['Enforce']);
  });

  it('renders the Ignition version asked for, in the cdk8s constructs and the App', () => {
    const app = new App({ outdir: require('node:fs').mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'tw-ign-')) });
    const node = new WireguardOverlayNode(new Chart(app, 'a'), 'n', { ...siteA(), installK0s: {}, ignitionVersion: '3.3.0' });
    const mesh = new WireguardMesh(new Chart(app, 'b'), 'm', { ...threeNodeMesh(), nodes: threeNodeMesh().nodes.map((n) => ({ ...n, node: `m-${n.node}` })), ignitionVersion: '3.5.0' });
    expect([node.ignition.ignition.version, mesh.nodes['m-site-b'].ignition.ignition.version]).toEqual(['3.3.0', '3.5.0']);
  });

  it('renders the Ignition version asked for in the Pulumi components', async () => {
    tw.resetRegistry();
    const mesh = new tw.WireguardMesh('ign', { ...threeNodeMesh(), ignitionVersion: '3.3.0' });
    expect((JSON.parse(await valueOf(mesh.nodes['site-a'].ignition)) as { ignition: { version: string } }).ignition.version).toBe('3.3.0');
    await valueOf(pulumi.output(1));
  });

  it.each(['3.3.0', '3.4.0', '3.5.0'] as const)('renders the Ignition version %s asked for in the Pulumi WireguardOverlayNode, and 3.4.0 when none is', async (version) => {
    tw.resetRegistry();
    const version0 = (text: string) => (JSON.parse(text) as { ignition: { version: string } }).ignition.version;
    const asked = new tw.WireguardOverlayNode(`ign-${version}`, { ...siteA(), node: `n-${version}`, installK0s: {}, ignitionVersion: version });
    const none = new tw.WireguardOverlayNode(`ign-default-${version}`, { ...siteA(), node: `d-${version}`, installK0s: {} });
    expect([version0(await valueOf(asked.ignition)), version0(await valueOf(none.ignition))]).toEqual([version, '3.4.0']);
    await valueOf(pulumi.output(1));
  });

  it('compares whole addresses for duplicates in a mesh (not one octet)', () => {
    const nodes = threeNodeMesh().nodes;
    const wide = { ...threeNodeMesh(), network: '10.10.0.0/16' };
    expect(validateWireguardMesh({ ...wide, nodes: [{ ...nodes[0], address: '10.10.1.5' }, { ...nodes[1], address: '10.10.2.5' }, { ...nodes[2], address: '10.10.3.5' }] })).toEqual([]);
    expect(validateWireguardMesh({ ...wide, nodes: [{ ...nodes[0], address: '10.10.1.5' }, { ...nodes[1], address: '10.10.1.5' }, { ...nodes[2], address: '10.10.3.5' }] }).map((p) => `${p.path} ${p.code}`)).toEqual(['nodes[1].address duplicate-address']);
  });
});

/**
 * The five bugs an independent review planted that only a golden file caught (issue 33), each now asserted as the
 * consuming program reads the output: Prometheus's label matchers, the kernel's routing tables, pod-gateway's
 * settings.sh on both ends of the VXLAN, Kyverno's pattern. Each was planted by hand once to see this fail.
 */
describe('behaviours only a golden file once showed', () => {
  /** A label matcher as Prometheus applies it: `=` exact, `=~` an RE2 regexp anchored at both ends. */
  const matches = (expr: string, label: string, value: string) => {
    const found = [...expr.matchAll(new RegExp(`\\b${label}(=~|=)"([^"]*)"`, 'g'))];
    return found.length > 0 && found.every(([, op, v]) => (op === '=' ? v === value : new RegExp(`^(?:${v})$`).test(value)));
  };
  type ProbeObject = { metadata: { namespace: string }; spec: { jobName: string; targets: { staticConfig: { labels: Record<string, string> } } } };
  it.each<[string, EgressProbeProps]>([
    ['one vpn module', gatewayProbe()],
    ['IPv4 and IPv6 vpn modules and the DNS checks', { ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true, vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'], wanIps: ['203.0.113.7', '2001:db8::7'], dnsLeak: { resolver: '10.43.0.10', leakedCidrs: ['192.0.2.0/24'] } }],
  ])('each probe alert\'s job and namespace matchers select exactly the Probe objects it is about (%s)', (_what, props) => {
    const probes = planEgressProbe(props).objects.filter((o) => o.kind === 'Probe') as unknown as ProbeObject[];
    const rules = egressProbeAlertGroups(props)[0].rules as { alert: string; expr: string }[];
    const about = (labels: Record<string, string>) => [
      ...(labels.egress_class === 'vpn' && !labels.check ? ['VPNEgressLeak', 'VPNEgressProbeFailing'] : []),
      'VPNEgressProbeAbsent',
      ...(labels.check === 'dns-leak' ? ['VPNDNSLeak'] : []),
      ...(labels.check === 'dns-resolves' ? ['VPNDNSProbeFailing'] : []),
    ];
    for (const r of rules) {
      // VPNEgressProbeAbsent is one absent_over_time per job, joined by `or`: each Probe must have its own term.
      const terms = r.alert === 'VPNEgressProbeAbsent' ? r.expr.split(' or ') : [r.expr];
      const selected = probes.filter((p) => terms.some((t) => matches(t, 'job', p.spec.jobName) && matches(t, 'namespace', p.metadata.namespace))).map((p) => p.spec.jobName);
      expect({ alert: r.alert, selected }).toEqual({ alert: r.alert, selected: probes.filter((p) => about(p.spec.targets.staticConfig.labels).includes(r.alert)).map((p) => p.spec.jobName) });
    }
  });

  it('puts the tunnel\'s default route only in the egress table: no route command of the up scripts touches the main table', () => {
    const openvpn = planEgressSteering(prodSteering()).hosts[0].files.find((f) => f.path === '/opt/tunnelwright/bin/egress-openvpn-up')!.content;
    const wireguard = planEgressSteering(wireguardSteering()).hosts[0].files.find((f) => f.path === '/etc/wireguard/tun0.conf')!.content;
    // `ip route add|replace|change` without `table` writes to main; wg-quick adds routes of its own unless Table = off.
    // The OpenVPN up script run against an `ip` stand-in (as OpenVPN runs it: dev and ifconfig_local in its
    // environment); wg-quick runs each PostUp line with bash.
    const tools = hostTools();
    const up = withSetting(withSetting(openvpn, 'LEARNT_DIR', path.join(tools.dir, 'learnt')), 'RESTEER', 'true');
    expect(tools.run(up, { dev: 'tun0', ifconfig_local: '10.8.0.2' }).status).toBe(0);
    const postUp = wireguard.split('\n').filter((l) => l.startsWith('PostUp = ')).map((l) => l.slice('PostUp = '.length).replace('%i', 'tun0')).filter((l) => !l.includes('egress-resteer'));
    expect(tools.run(postUp.join('\n')).status).toBe(0);
    const routes = tools.routes().map((r) => r.replace(/^route /, ''));
    expect(routes.length).toBeGreaterThanOrEqual(4);
    expect(routes.filter((r) => !/^(add|replace|change|append) .* table 51821( |$)/.test(r))).toEqual([]);
    expect(wireguard).toMatch(/^Table = off$/m);
  });

  it('gives the gateway and each routed client the same VXLAN id, port, network and MTU in pod-gateway\'s settings.sh', () => {
    const settings = (text: string) => Object.fromEntries(text.split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), JSON.parse(l.slice(l.indexOf('=') + 1)) as string]));
    const props = { ...gatewayFor('mullvad'), vxlanId: 77, vxlanNetwork: '172.30.7.0/24', cni: 'calico' as const, podMtu: 1400 };
    const gateway = settings((planVpnGateway(props).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['settings.sh']);
    const client = settings((planRoute(props, { namespace: 'media', podLabels: { app: 'q' }, name: 'q' }).objects[0] as unknown as { data: Record<string, string> }).data['settings.sh']);
    const shared = ['VXLAN_ID', 'VXLAN_PORT', 'VXLAN_IP_NETWORK', 'VPN_INTERFACE', 'VPN_INTERFACE_MTU'];
    expect(Object.fromEntries(shared.map((k) => [k, client[k]]))).toEqual(Object.fromEntries(shared.map((k) => [k, gateway[k]])));
    // pod-gateway's scripts read these (gateway_init.sh, client_init.sh): the id and network asked for, Calico's 8472.
    expect([gateway.VXLAN_ID, gateway.VXLAN_PORT, gateway.VXLAN_IP_NETWORK]).toEqual(['77', '8472', '172.30.7']);
  });

  it.each([[false, 'false'], [true, 'true'], [undefined, 'true']] as const)('writes dnssec: %s into the gateway\'s dnsmasq settings as GATEWAY_ENABLE_DNSSEC=%s', (dnssec, expected) => {
    const text = (planVpnGateway({ ...nordvpnGateway(), ...(dnssec === undefined ? {} : { dnssec }) }).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['settings.sh'];
    expect(text.split('\n').filter((l) => l.startsWith('GATEWAY_ENABLE_DNSSEC='))).toEqual([`GATEWAY_ENABLE_DNSSEC="${expected}"`]);
  });

  it('admits exactly the egress classes asked for: Kyverno\'s `a | b` pattern, alternative by alternative', () => {
    const classes = (enforceLabels: NonNullable<ReturnType<typeof prodSteering>['enforceLabels']>) => {
      const policy = planEgressSteering({ ...prodSteering(), enforceLabels }).objects.find((o) => o.kind === 'ClusterPolicy') as unknown as { spec: { rules: { validate: { pattern: { metadata: { labels: Record<string, string> } } } }[] } };
      // Kyverno splits a pattern value on `|` and admits a value equal to any alternative (trimmed).
      return policy.spec.rules[0].validate.pattern.metadata.labels['tunnelwright.dev/egress-class'].split('|').map((a) => a.trim());
    };
    expect(classes({ namespaces: ['media'], classes: ['vpn', 'direct', 'lan-only'] })).toEqual(['vpn', 'direct', 'lan-only']);
    expect(classes({ namespaces: ['media'] })).toEqual(['vpn', 'direct']);
  });
});
