import { Chart } from 'cdk8s';
import * as pulumi from '@pulumi/pulumi';
import {
  egressAlertGroups, egressProbeAlertGroups, planEgressSteering, planKillSwitch, planRoute, planWireguardOverlayNode, renderHostArtefacts, validateKillSwitch, validateWireguardMesh,
} from '../src';
import { App, WireguardMesh, WireguardOverlayNode } from '../src/cdk8s';
import { gatewayProbe, KEYS, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from './helpers/fixtures';
import { recordResources, valueOf } from './helpers/pulumi';

/**
 * The behaviours that planted bugs once changed without failing any test (issue "Tests that catch real bugs"), each
 * asserted as a user or the consuming program sees it.
 */
recordResources();
const tw = require('../src/pulumi') as typeof import('../src/pulumi');

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

  it('compares whole addresses for duplicates in a mesh (not one octet)', () => {
    const nodes = threeNodeMesh().nodes;
    const wide = { ...threeNodeMesh(), network: '10.10.0.0/16' };
    expect(validateWireguardMesh({ ...wide, nodes: [{ ...nodes[0], address: '10.10.1.5' }, { ...nodes[1], address: '10.10.2.5' }, { ...nodes[2], address: '10.10.3.5' }] })).toEqual([]);
    expect(validateWireguardMesh({ ...wide, nodes: [{ ...nodes[0], address: '10.10.1.5' }, { ...nodes[1], address: '10.10.1.5' }, { ...nodes[2], address: '10.10.3.5' }] }).map((p) => `${p.path} ${p.code}`)).toEqual(['nodes[1].address duplicate-address']);
  });
});
