import { checkClaims, planWireguardOverlayNode, validateEgressSteering, validateKillSwitch, validateVpnGateway, validateWireguardOverlayNode, ValidationError, vpnGatewayClaims } from '../../src';
import * as pulumi from '@pulumi/pulumi';
import { nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA } from '../helpers/fixtures';

const PROVIDERS_TEXT = 'expected one of "nordvpn", "protonvpn", "mullvad", "surfshark", "ivpn", "windscribe", "airvpn", "fastestvpn", "private internet access", "custom" (or "pia")';

const OUTPUT = 'a Pulumi Output, whose value is not known when the component is planned (this prop is checked then): pass a plain value, or create the component inside the Output\'s apply, `output.apply((v) => new Component(name, { ...args, prop: v }))` (`pulumi.all([...]).apply(...)` for several; a preview shows it once the value is known)';

/** Refusals a new user meets first, each with its whole message: what is wrong and what to do. */
describe('errors that say what to do', () => {
  it.each<[string, () => unknown, unknown[]]>([
    ['a prefix out of range is not a missing prefix', () => validateVpnGateway({ ...nordvpnGateway(), nodeCidrs: ['10.42.0.0/33'] }),
      [{ path: 'nodeCidrs[0]', code: 'cidr', message: 'expected a prefix length from 0 to 32 for an IPv4 address, received "10.42.0.0/33": /33 is out of range' }]],
    ['a missing prefix', () => validateVpnGateway({ ...nordvpnGateway(), nodeCidrs: ['192.168.1.0'] }),
      [{ path: 'nodeCidrs[0]', code: 'cidr', message: 'expected a CIDR with its prefix length such as 192.168.1.0/24, received "192.168.1.0" (a bare address)' }]],
    ['host bits in a gateway network CIDR', () => validateVpnGateway({ ...nordvpnGateway(), nodeCidrs: ['10.42.0.1/16'] }),
      [{ path: 'nodeCidrs[0]', code: 'host-bits', message: 'expected a network address, received "10.42.0.1/16", which has host bits set: did you mean 10.42.0.0/16?' }]],
    ['host bits in a kill switch allow CIDR (an ipBlock)', () => validateKillSwitch({ ...qbittorrentKillSwitch(), allowCidrs: ['10.42.0.1/16', '10.43.0.0/16'] }),
      [{ path: 'allowCidrs[0]', code: 'host-bits', message: 'expected a network address, received "10.42.0.1/16", which has host bits set: did you mean 10.42.0.0/16?' }]],
    ['host bits in an IPv6 LAN CIDR', () => validateEgressSteering({ ...prodSteering(), lanCidrs: ['fd00::1/64'] }),
      [{ path: 'lanCidrs[0]', code: 'host-bits', message: 'expected a network address, received "fd00::1/64", which has host bits set: did you mean fd00::/64?' }]],
    ['a WireGuard interface address keeps its host part (the control)', () => validateWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], address: '10.10.0.1/24' }] }), []],
    ['a misspelt provider', () => validateVpnGateway({ ...nordvpnGateway(), vpnProvider: 'nordpvn' }),
      [{ path: 'vpnProvider', code: 'provider', message: `${PROVIDERS_TEXT}, received "nordpvn": did you mean "nordvpn"?` }]],
    ['a provider in the wrong case with a typo', () => validateVpnGateway({ ...nordvpnGateway(), vpnProvider: 'Mulvad' }),
      [{ path: 'vpnProvider', code: 'provider', message: `${PROVIDERS_TEXT}, received "Mulvad": did you mean "mullvad"?` }]],
    ['a provider near none (no guess)', () => validateVpnGateway({ ...nordvpnGateway(), vpnProvider: 'expressvpn' }),
      [{ path: 'vpnProvider', code: 'provider', message: `${PROVIDERS_TEXT}, received "expressvpn"` }]],
    ['two gateways with one (default) VXLAN id', () => checkClaims([{ construct: 'us', claims: vpnGatewayClaims(nordvpnGateway()) }, { construct: 'eu', claims: vpnGatewayClaims({ ...nordvpnGateway(), name: 'eu', wireguardPrivateKeySecret: { name: 'eu-key' } }) }]),
      [{ path: 'eu:vxlanId', code: 'claimed-twice', message: 'VXLAN id 42 (the default) in cluster "default" is already claimed by us:vxlanId: set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' }]],
    ['two gateways with one VXLAN id written', () => checkClaims([{ construct: 'us', claims: vpnGatewayClaims({ ...nordvpnGateway(), vxlanId: 7 }) }, { construct: 'eu', claims: vpnGatewayClaims({ ...nordvpnGateway(), vxlanId: 7, name: 'eu', wireguardPrivateKeySecret: { name: 'eu-key' } }) }]),
      [{ path: 'eu:vxlanId', code: 'claimed-twice', message: 'VXLAN id 7 in cluster "default" is already claimed by us:vxlanId: set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' }]],
    // Issue 47: the prop the user wrote, not the default derived from it (clusterDnsIp), with what to add.
    ['cluster CIDRs without the service range', () => validateVpnGateway({ ...nordvpnGateway(), clusterCidrs: ['10.42.0.0/16'] }),
      [{ path: 'clusterCidrs', code: 'service-cidr', message: 'has no service CIDR to take the kube-dns address from: add the cluster\'s service CIDR as clusterCidrs[1] (k3s: 10.43.0.0/16, kubeadm: 10.96.0.0/12; kube-dns is its .10), or set clusterDnsIp to the kube-dns ClusterIP (kubectl -n kube-system get service kube-dns)' }]],
    ['two gateways with one WireGuard key Secret', () => checkClaims([{ construct: 'us', claims: vpnGatewayClaims(nordvpnGateway()) }, { construct: 'eu', claims: vpnGatewayClaims({ ...nordvpnGateway(), name: 'eu', vxlanId: 43 }) }]),
      [{ path: 'eu:wireguardPrivateKeySecret', code: 'claimed-twice', message: 'WireGuard key vpn-gateway/nordvpn-wireguard (a key used by two gateways steals the session) is already claimed by us:wireguardPrivateKeySecret: give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' }]],
    ['a Pulumi Output in a prop the checks read', () => validateVpnGateway({ ...nordvpnGateway(), vxlanId: pulumi.output(43) as never }),
      [{ path: 'vxlanId', code: 'type', message: `expected number, received ${OUTPUT}` }]],
    ['a Pulumi Output in a list of CIDRs', () => validateVpnGateway({ ...nordvpnGateway(), nodeCidrs: [pulumi.output('192.168.1.0/24') as never] }),
      [{ path: 'nodeCidrs[0]', code: 'type', message: `expected string, received ${OUTPUT}` }]],
    ['a Promise in a prop the checks read', () => validateVpnGateway({ ...nordvpnGateway(), vxlanId: Promise.resolve(43) as never }),
      [{ path: 'vxlanId', code: 'type', message: 'expected number, received a Promise, whose value is not known when the component is planned (this prop is checked then): await it and pass its value' }]],
    ['an object of another class is still named by its kind only (the control)', () => validateVpnGateway({ ...nordvpnGateway(), vxlanId: new Date(0) as never }),
      [{ path: 'vxlanId', code: 'type', message: 'expected number, received Date' }]],
  ])('%s', (_name, run, expected) => {
    expect(run()).toEqual(expected);
  });
});

describe('text that cannot be encoded', () => {
  it.each([
    ['a lone high surrogate in a key URL', '\ud800'],
    ['a lone low surrogate in a key URL', '\udc00'],
  ])('%s is a ValidationError, never a URIError', (_name, bad) => {
    const props = { ...siteA(), wireguard: [{ ...siteA().wireguard[0], privateKeyFrom: { url: `https://vault.example.test/${bad}` } }] };
    expect(validateWireguardOverlayNode(props)).toEqual([{ path: 'wireguard[0].privateKeyFrom.url', code: 'unicode', message: 'expected text without lone UTF-16 surrogates (it has no UTF-8 form, so no file or manifest could hold it)' }]);
    expect(() => planWireguardOverlayNode(props)).toThrow(ValidationError);
  });
  it('a surrogate pair (an emoji) is text like any other (the control)', () => {
    expect(validateWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], privateKeyFrom: { url: 'https://vault.example.test/\ud83d\ude00' } }] })).toEqual([]);
  });
});
