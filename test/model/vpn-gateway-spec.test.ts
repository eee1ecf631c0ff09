/**
 * VpnGateway's props parsed once (issue 42): `parseVpnGateway` turns props into the spec every plan of the gateway and
 * its routes is made from, with the defaults applied and the derived facts computed, or returns the problems.
 */
import * as fc from 'fast-check';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiObject, Chart, Testing } from 'cdk8s';
import { planRoute, planVpnGateway, VpnGatewayProps } from '../../src';
import { App, VpnGateway } from '../../src/cdk8s';
import { parseVpnGateway, VpnGatewaySpec } from '../../src/model/vpn-gateway';
import { gatewayFor, nordvpnGateway } from '../helpers/fixtures';

const spec = (p: VpnGatewayProps): VpnGatewaySpec => {
  const parsed = parseVpnGateway(p);
  expect(parsed.problems).toEqual([]);
  return parsed.spec!;
};
const proton = (pf: Record<string, unknown>): VpnGatewayProps => ({ ...gatewayFor('protonvpn'), portForwarding: { workload: 'seeder', workloadNamespace: 'media', ...pf } } as VpnGatewayProps);

describe('parseVpnGateway: the spec, defaults applied and facts derived once', () => {
  it.each<[string, VpnGatewayProps, Partial<Record<keyof VpnGatewaySpec, unknown>>]>([
    ['the defaults', nordvpnGateway(), {
      name: 'vpn-gateway', namespace: 'vpn-gateway', cluster: 'default', vxlanId: 42, vxlanPort: 4789, vxlanPrefix: '172.16.0', vxlanMtu: 1320,
      // kube-dns: the service CIDR (clusterCidrs[1]) + 10.
      clusterDnsIp: '10.152.183.10', clusterDomain: 'cluster.local', dnssec: true, dnsAddress: '1.1.1.1', createNamespace: true, tunDevice: 'runtime',
      provider: 'nordvpn', vpnType: 'wireguard', vpnTrafficPort: 51820, killSwitchFlavor: 'kubernetes',
      wireguard: { privateKey: { name: 'nordvpn-wireguard', key: 'private-key' } }, serverFilters: [['SERVER_COUNTRIES', 'Switzerland']],
      localCidrs: ['10.1.0.0/16', '10.152.183.0/24', '192.168.1.0/24'],
    }],
    ['Calico: the VXLAN on 8472 (Calico owns 4789)', { ...nordvpnGateway(), cni: 'calico' }, { vxlanPort: 8472, killSwitchFlavor: 'kubernetes' }],
    ['Cilium: 4789, and CiliumNetworkPolicy kill switches', { ...nordvpnGateway(), cni: 'cilium' }, { vxlanPort: 4789, killSwitchFlavor: 'cilium' }],
    ['a VXLAN network and pod MTU of one\'s own', { ...nordvpnGateway(), vxlanNetwork: '10.99.7.0/24', podMtu: 1300 }, { vxlanPrefix: '10.99.7', vxlanMtu: 1250 }],
    ['an IPv6 CIDR kept out, ztunnel\'s address kept local under Istio ambient', { ...nordvpnGateway(), nodeCidrs: ['192.168.1.0/24', 'fd00::/64'], mesh: 'istio-ambient' }, {
      localCidrs: ['10.1.0.0/16', '10.152.183.0/24', '192.168.1.0/24', '169.254.7.127/32'],
    }],
    ['OpenVPN: the credentials\' keys defaulted, the provider\'s OpenVPN port', gatewayFor('private internet access'), {
      provider: 'private internet access', vpnType: 'openvpn', openvpn: { credentials: { name: 'pia-credentials', userKey: 'username', passwordKey: 'password' } }, vxlanMtu: 1400,
    }],
    ['qBittorrent: its URL and the key of the control API key defaulted, the workload\'s fixed address', proton({ app: 'qbittorrent', controlApiKeySecret: { name: 'k' }, appCredentialsSecret: { name: 'login' } }), {
      portForwarding: {
        app: 'qbittorrent', appUrl: 'http://127.0.0.1:8080', controlApiKey: { name: 'k', key: 'api-key' }, appCredentials: { name: 'login', userKey: 'username', passwordKey: 'password' },
        syncPeriodSeconds: 15, workload: { name: 'seeder', namespace: 'media', address: '172.16.0.5' }, servedPorts: [8080, 9808],
      },
    }],
    ['Deluge: a password and no user (its Web UI reads none)', proton({ app: 'deluge', controlApiKeySecret: { name: 'k' }, appCredentialsSecret: { name: 'login' } }), {
      portForwarding: expect.objectContaining({ appUrl: 'http://127.0.0.1:8112', appCredentials: { name: 'login', passwordKey: 'password' }, servedPorts: [8112, 58846, 9808] }),
    }],
    ['slskd: a period given is its polling interval, no port-sync URL', proton({ app: 'slskd', controlApiKeySecret: { name: 'k' }, syncPeriodSeconds: 5 }), {
      portForwarding: expect.objectContaining({ app: 'slskd', syncPeriodSeconds: 5, syncPeriodGiven: 5, servedPorts: [5030, 5031] }),
    }],
    ['a toPort without an app', proton({ toPort: 6881 }), { portForwarding: expect.objectContaining({ toPort: 6881, workload: { name: 'seeder', namespace: 'media', address: '172.16.0.5' } }) }],
  ])('%s', (_name, props, expected) => {
    expect(spec(props)).toMatchObject(expected);
  });

  it('private internet access keeps its port: a state claim named after the gateway (64Mi), or the one given', () => {
    const custom = gatewayFor('custom');
    expect(spec({ ...custom, name: 'pia' }).portForwarding!.stateClaim).toEqual({ name: 'pia-gluetun-state', create: { size: '64Mi' } });
    expect(spec({ ...custom, portForwarding: { ...custom.portForwarding!, stateClaim: { existingClaim: 'mine' } } }).portForwarding!.stateClaim).toEqual({ name: 'mine' });
    // Control: ProtonVPN keeps no state, so no claim.
    expect(spec(proton({ toPort: 6881 })).portForwarding!.stateClaim).toBeUndefined();
  });

  it('returns the problems and no spec for props that do not parse', () => {
    const parsed = parseVpnGateway({ ...nordvpnGateway(), vxlanNetwork: '10.0.0.0/16' });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => p.path)).toEqual(['vxlanNetwork']);
  });

  it('property: writing a default out changes no object the gateway or its route plans', () => {
    const defaults = {
      name: 'vpn-gateway', namespace: 'vpn-gateway', cluster: 'default', vxlanNetwork: '172.16.0.0/24', podMtu: 1450, clusterDomain: 'cluster.local',
      clusterDnsIp: '10.152.183.10', dnssec: true, dnsAddress: '1.1.1.1', createNamespace: true, tunDevice: 'runtime', cni: 'other', mesh: 'none', vpnType: 'wireguard',
      wireguardPrivateKeySecret: { name: 'nordvpn-wireguard', key: 'private-key' },
    } as const;
    const target = { namespace: 'media', name: 'qbittorrent', podLabels: { app: 'qbittorrent' } };
    const implicit = nordvpnGateway();
    const plain = { gateway: planVpnGateway(implicit).objects, route: planRoute(implicit, target).objects };
    fc.assert(fc.property(fc.subarray(Object.keys(defaults) as (keyof typeof defaults)[], { minLength: 1 }), (keys) => {
      const explicit = { ...implicit, ...Object.fromEntries(keys.map((k) => [k, defaults[k]])) } as VpnGatewayProps;
      expect({ gateway: planVpnGateway(explicit).objects, route: planRoute(explicit, target).objects }).toEqual(plain);
    }));
  });
});

describe('the adapters parse once', () => {
  it('cdk8s: a route made after the props object was changed follows the gateway as it was built', () => {
    const props = { ...nordvpnGateway() } as { -readonly [K in keyof VpnGatewayProps]: VpnGatewayProps[K] };
    const chart = new Chart(new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'tw-spec-')) }), 'media');
    new VpnGateway(chart, 'gateway', props);
    // A program that reuses its props object for a second gateway after building the first.
    props.vxlanNetwork = '10.99.0.0/24';
    props.cni = 'calico';
    const gateway = chart.node.findChild('gateway') as VpnGateway;
    gateway.route(new ApiObject(chart, 'qbittorrent', {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'qbittorrent', namespace: 'media' },
      spec: { selector: { matchLabels: { app: 'qbittorrent' } }, template: { metadata: { labels: { app: 'qbittorrent' } }, spec: { containers: [{ name: 'qbittorrent', image: 'qbittorrent' }] } } },
    }));
    const objects = Testing.synth(chart) as { kind: string; metadata: { name: string }; data?: Record<string, string> }[];
    const settings = (name: string) => Object.fromEntries(objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name)!.data!['settings.sh'].trim().split('\n').slice(1).map((l) => l.split('=')));
    const gatewaySide = settings('vpn-gateway-settings');
    const clientSide = settings('qbittorrent-vpn-route');
    // The client reaches the gateway on the gateway's VXLAN network and port, as built.
    expect(gatewaySide.VXLAN_IP_NETWORK).toBe('"172.16.0"');
    expect(clientSide.VXLAN_IP_NETWORK).toBe(gatewaySide.VXLAN_IP_NETWORK);
    expect(clientSide.VXLAN_PORT).toBe(gatewaySide.VXLAN_PORT);
  });
});
