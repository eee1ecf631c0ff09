import * as pulumi from '@pulumi/pulumi';
import { Problem, ValidationError } from '../../src';
import { gatewayProbe, homelabConformance, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';
import { recordResources, settle } from '../helpers/pulumi';
import { thrown } from '../helpers/thrown';

/**
 * The cross-construct invariants as a Pulumi program sees them: two components that must clash, built one after the
 * other under mocks. The second one throws (naming itself, the prop and the earlier component) and registers nothing;
 * the same two with the clash removed both register. The parity suites compare each component with the core and so
 * share its blind spots: only a clash between two components shows that a component still registers its claims, its
 * VXLAN endpoint and its host files.
 */
const seen = recordResources();
// Loaded after the mocks are in place, as Pulumi's own tests do.
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');

let warn: jest.SpyInstance;
beforeEach(() => {
  tw.resetRegistry();
  seen.length = 0;
  // Gateways warn about their namespace's Pod Security level (the program's Namespaces cannot be read): expected here.
  warn = jest.spyOn(pulumi.log, 'warn').mockImplementation(() => Promise.resolve());
});
afterEach(() => warn.mockRestore());

const gatewayNoKey = () => {
  const { wireguardPrivateKeySecret: _k, ...rest } = nordvpnGateway();
  return rest;
};
const killSwitchToGateway = () => {
  const { host: _h, ...props } = qbittorrentKillSwitch();
  return props;
};
const steering = () => {
  const { tunnel: _t, enforceLabels: _e, ...base } = prodSteering();
  return { ...base, acknowledge: ['kube-state-metrics' as const] };
};

type Build = () => unknown;
/** One claimed-twice problem per object the second component names as the first did. */
const sameObjects = (second: string, first: string, cluster: string, objects: string[]): Problem[] => objects.map((o) => ({
  path: `${second}:name`, code: 'claimed-twice', message: `${o} in cluster "${cluster}" (one object: the second to apply replaces the first; set a distinct name on one of them) is already claimed by ${first}:name`,
}));
const fileTwice = (second: string, first: string, files: string[]): Problem[] => files.map((f) => ({
  path: `${second}:${f}`, code: 'host-file-conflict', message: `node "site-a": ${f} is also written by ${first} with different content; one machine takes one version of a file`,
}));
/** [what, the first component, the second (must be refused), the problems, the second without the clash (must pass)] */
const CLASHES: [string, Build, Build, Problem[], Build][] = [
  ['two VpnGateways with one (default) VXLAN id',
    () => new tw.VpnGateway('us', { ...nordvpnGateway(), name: 'us' }),
    () => new tw.VpnGateway('eu', { ...nordvpnGateway(), name: 'eu', wireguardPrivateKeySecret: { name: 'eu-key' } }),
    [{ path: 'eu:vxlanId', code: 'claimed-twice', message: 'VXLAN id 42 (the default) in cluster "default" is already claimed by us:vxlanId: set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' }],
    () => new tw.VpnGateway('eu', { ...nordvpnGateway(), name: 'eu', wireguardPrivateKeySecret: { name: 'eu-key' }, vxlanId: 43 })],
  ['two VpnGateways with one WireGuard key Secret',
    () => new tw.VpnGateway('us', { ...nordvpnGateway(), name: 'us' }),
    () => new tw.VpnGateway('eu', { ...nordvpnGateway(), name: 'eu', vxlanId: 43 }),
    [{ path: 'eu:wireguardPrivateKeySecret', code: 'claimed-twice', message: 'WireGuard key vpn-gateway/nordvpn-wireguard (a key used by two gateways steals the session) is already claimed by us:wireguardPrivateKeySecret: give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' }],
    () => new tw.VpnGateway('eu', { ...nordvpnGateway(), name: 'eu', vxlanId: 43, wireguardPrivateKeySecret: { name: 'eu-key' } })],
  ['two VpnGateways in two clusters pinned to one server with one key',
    () => new tw.VpnGateway('prod', { ...gatewayNoKey(), cluster: 'prod', wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, serverHostnames: ['ch1.nordvpn.com'] }),
    () => new tw.VpnGateway('dev', { ...gatewayNoKey(), cluster: 'dev', wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, serverHostnames: ['ch1.nordvpn.com'] }),
    [{ path: 'dev:serverHostnames[0]', code: 'claimed-twice', message: 'VPN server ch1.nordvpn.com with the credential vpn-gateway/nordvpn-wireguard/private-key (two gateways on one server and account steal each other\'s session) is already claimed by prod:serverHostnames[0]' }],
    () => new tw.VpnGateway('dev', { ...gatewayNoKey(), cluster: 'dev', wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, serverHostnames: ['ch2.nordvpn.com'] })],
  ['a KillSwitch after a Calico VpnGateway, on the default VXLAN port',
    () => new tw.VpnGateway('gateway', { ...nordvpnGateway(), cni: 'calico' }),
    () => new tw.KillSwitch('qbittorrent', killSwitchToGateway()),
    [{ path: 'qbittorrent:vxlanPort', code: 'vxlan-port', message: 'VXLAN to the gateway pods is allowed on UDP 4789, but the gateway gateway uses 8472 (derived from its cni): set vxlanPort: 8472' }],
    () => new tw.KillSwitch('qbittorrent', { ...killSwitchToGateway(), vxlanPort: 8472 })],
  ['a Calico VpnGateway after the KillSwitch that reaches it on the default VXLAN port',
    () => new tw.KillSwitch('qbittorrent', killSwitchToGateway()),
    () => new tw.VpnGateway('gateway', { ...nordvpnGateway(), cni: 'calico' }),
    [{ path: 'qbittorrent:vxlanPort', code: 'vxlan-port', message: 'VXLAN to the gateway pods is allowed on UDP 4789, but the gateway gateway uses 8472 (derived from its cni): set vxlanPort: 8472' }],
    () => new tw.VpnGateway('gateway', nordvpnGateway())],
  ['two KillSwitches with one policy name',
    () => new tw.KillSwitch('a', killSwitchToGateway()),
    () => new tw.KillSwitch('b', killSwitchToGateway()),
    sameObjects('b', 'a', 'default', ['NetworkPolicy media/qbittorrent-kill-switch']),
    () => new tw.KillSwitch('b', { ...killSwitchToGateway(), name: 'qbittorrent-2' })],
  ['two EgressSteerings claiming one class\'s pods (one namespace, then all)',
    () => new tw.EgressSteering('media', { ...prodSteering(), name: 'media-egress' }),
    () => {
      const { tunnel: _t, namespaces: _n, ...all } = prodSteering();
      return new tw.EgressSteering('everything', { ...all, name: 'all-egress', gatewayNode: 'prod-gw-2' });
    },
    [{ path: 'everything:vpnClass', code: 'claimed-twice', message: 'pods with tunnelwright.dev/egress-class=vpn in cluster "prod" is already claimed by media:namespaces[0]' }],
    () => {
      const { tunnel: _t, namespaces: _n, ...all } = prodSteering();
      return new tw.EgressSteering('everything', { ...all, name: 'all-egress', gatewayNode: 'prod-gw-2', vpnClass: 'vpn-us' });
    }],
  ['two EgressSteerings in two clusters on one OpenVPN server and account',
    () => new tw.EgressSteering('prod', prodSteering()),
    () => new tw.EgressSteering('dev', { ...prodSteering(), cluster: 'dev', gatewayNode: 'dev-gw' }),
    [{ path: 'dev:tunnel.remote', code: 'claimed-twice', message: 'VPN server nl-amsterdam.privacy.network:1198 with the credential /etc/openvpn/pia/credentials (two gateways on one server and account steal each other\'s session) is already claimed by prod:tunnel.remote' }],
    () => new tw.EgressSteering('dev', { ...prodSteering(), cluster: 'dev', gatewayNode: 'dev-gw', tunnel: { ...(prodSteering().tunnel as object), remote: 'ch-zurich.privacy.network:1198' } as never })],
  ['two EgressSteerings in two clusters on one WireGuard server and key',
    () => new tw.EgressSteering('prod', { ...wireguardSteering(), cluster: 'prod' }),
    () => new tw.EgressSteering('dev', { ...wireguardSteering(), cluster: 'dev', gatewayNode: 'dev-gw' }),
    [{ path: 'dev:tunnel.peer.endpoint', code: 'claimed-twice', message: 'VPN server 198.51.100.7:51820 with the key /run/corium/vpn.key is already claimed by prod:tunnel.peer.endpoint' }],
    () => new tw.EgressSteering('dev', { ...wireguardSteering(), cluster: 'dev', gatewayNode: 'dev-gw', tunnel: { ...(wireguardSteering().tunnel as object), privateKeyFrom: { file: '/run/corium/vpn-dev.key' } } as never })],
  ['two EgressSteerings with one policy name in one cluster',
    () => new tw.EgressSteering('nl', steering()),
    () => new tw.EgressSteering('us', { ...steering(), vpnClass: 'vpn-us', gatewayNode: 'prod-gw-us', monitoring: undefined, kubeconfigFrom: undefined }),
    sameObjects('us', 'nl', 'prod', ['CiliumEgressGatewayPolicy vpn-egress', 'ServiceAccount kube-system/vpn-egress-resteer', 'Secret kube-system/vpn-egress-resteer-token', 'ClusterRole vpn-egress-resteer', 'ClusterRoleBinding vpn-egress-resteer', 'ValidatingAdmissionPolicy vpn-egress-resteer-scope', 'ValidatingAdmissionPolicyBinding vpn-egress-resteer-scope']),
    () => new tw.EgressSteering('us', { ...steering(), name: 'vpn-egress-us', vpnClass: 'vpn-us', gatewayNode: 'prod-gw-us', monitoring: undefined, kubeconfigFrom: undefined })],
  ['two EgressProbes with one name in a namespace',
    () => new tw.EgressProbe('a', gatewayProbe()),
    () => new tw.EgressProbe('b', { ...gatewayProbe(), directTwin: false, monitoring: undefined }),
    sameObjects('b', 'a', 'default', ['ConfigMap media/egress-probe-config', 'Deployment media/egress-probe', 'Service media/egress-probe', 'ConfigMap media/egress-probe-vpn-route', 'NetworkPolicy media/egress-probe-vpn-kill-switch', 'Probe media/egress-probe-vpn-ipv4', 'PrometheusRule monitoring/media-egress-probe']),
    () => new tw.EgressProbe('b', { ...gatewayProbe(), name: 'egress-probe-2', directTwin: false, monitoring: undefined })],
  ['a WireguardOverlayNode that writes a mesh node\'s wg0.conf differently',
    () => new tw.WireguardMesh('overlay', threeNodeMesh()),
    () => new tw.WireguardOverlayNode('extra', siteA()),
    fileTwice('extra', 'overlay', ['/etc/wireguard/wg0.conf', '/etc/k0s/k0s.yaml']),
    () => new tw.WireguardOverlayNode('extra', { ...siteA(), node: 'site-d' })],
  ['a WireguardMesh over a node a WireguardOverlayNode already configured differently',
    () => new tw.WireguardOverlayNode('extra', siteA()),
    () => new tw.WireguardMesh('overlay', threeNodeMesh()),
    fileTwice('overlay', 'extra', ['/etc/wireguard/wg0.conf', '/etc/k0s/k0s.yaml']),
    () => new tw.WireguardMesh('overlay', { ...threeNodeMesh(), nodes: threeNodeMesh().nodes.map((n) => ({ ...n, node: `m-${n.node}` })) })],
  ['two EgressConformance checks with one name in a namespace',
    () => new tw.EgressConformance('a', homelabConformance()),
    () => new tw.EgressConformance('b', homelabConformance()),
    sameObjects('b', 'a', 'default', [
      'Deployment media/egress-conformance-g0-vpn', 'ConfigMap media/egress-conformance-g0-vpn-vpn-route', 'NetworkPolicy media/egress-conformance-g0-vpn-vpn-kill-switch', 'Deployment media/egress-conformance-g0-direct',
      'Deployment media/egress-conformance-s0-vpn', 'Deployment media/egress-conformance-s0-direct', 'Deployment media/egress-conformance-s0-agent', 'ConfigMap media/egress-conformance',
    ]),
    () => new tw.EgressConformance('b', { ...homelabConformance(), name: 'egress-conformance-2' })],
];

describe('cross-construct invariants through Pulumi (two components that must clash, under mocks)', () => {
  it.each(CLASHES)('refuses %s: the second throws and registers nothing; without the clash both register', async (_what, first, second, problems, fixed) => {
    first();
    await settle();
    const before = seen.map((r) => r.name);
    const error = thrown(second) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.problems).toEqual(problems);
    expect(error.message).toBe(`invalid Pulumi program:\n${problems.map((p) => `${p.path}: ${p.message}`).join('\n')}`);
    await settle();
    expect(seen.map((r) => r.name)).toEqual(before);
    // Control: the same program with the clash removed registers the second component.
    fixed();
    await settle();
    expect(seen.length).toBeGreaterThan(before.length);
  });
});
