/**
 * The standby's own VPN server (issue 43, audit finding 4). gluetun keeps the servers that match every filter given
 * (one value of each, case-insensitively: internal/storage/filter.go:50-139 at v3.41.1) and picks one of their
 * addresses at random at each connect (internal/provider/utils/pick.go:45-56, vpn/run.go:21-43): with the same narrow
 * filters both gateway pods can land on one server, whose outage takes both down. `standby.servers` gives the standby
 * pod's gluetun filters of its own; both pods pinned to one server, or filters that may meet, warn.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { checkClaims, planVpnGateway, VpnGatewayProps, vpnGatewayClaims } from '../../src';
import { App, VpnGateway } from '../../src/cdk8s';
import { parseVpnGateway } from '../../src/model/vpn-gateway';
import { expectWarnings } from '../helpers/stderr-guard';
import { gatewayFor, nordvpnGateway } from '../helpers/fixtures';

type Env = { name: string; value?: string }[];
type Sts = { kind: string; metadata: { name: string }; spec: { template: { spec: { containers: { name: string; env: Env }[] } } } };

/** A NordVPN gateway with a standby on its own key; `servers` is the standby's own selection (none: the gateway's). */
const nord = (gateway: Partial<VpnGatewayProps>, servers?: Record<string, unknown>): VpnGatewayProps => {
  const { serverCountries: _c, ...base } = nordvpnGateway();
  return { ...base, ...gateway, standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-b' }, ...(servers ? { servers } : {}) } } as VpnGatewayProps;
};
/** A custom WireGuard gateway on 203.0.113.50 (no port forwarding: PIA's state claim refuses a standby). */
const custom = (servers?: Record<string, unknown>): VpnGatewayProps => {
  const { portForwarding: _pf, serverNames: _n, ...base } = gatewayFor('custom');
  return { ...base, standby: { wireguardPrivateKeySecret: { name: 'custom-b' }, wireguardAddresses: ['10.13.0.3/32'], ...(servers ? { servers } : {}) } } as VpnGatewayProps;
};
const OTHER_KEY = 'Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg=';
const gluetunEnv = (p: VpnGatewayProps, member: 'a' | 'b') => {
  const sts = planVpnGateway(p).objects.find((o) => o.kind === 'StatefulSet' && (o as unknown as Sts).metadata.name === `vpn-gateway-${member}`) as unknown as Sts;
  return Object.fromEntries(sts.spec.template.spec.containers.find((c) => c.name === 'gluetun')!.env.map((e) => [e.name, e.value]));
};
/** "path code" of each problem, and the warnings' codes at their paths. */
const findings = (p: VpnGatewayProps) => {
  const parsed = parseVpnGateway(p);
  return { problems: parsed.problems.map((x) => `${x.path} ${x.code}`), warnings: parsed.warnings.map((x) => `${x.path} ${x.code}`) };
};

describe('the standby\'s server: warned when it is the gateway\'s one server or the filters may meet', () => {
  const warned = ['standby.servers standby-same-server'];
  it.each<[string, VpnGatewayProps, string[], string[]]>([
    // Broad: gluetun picks among a country's servers at each connect (1 in n lands both on one, and a reconnect picks again).
    ['control: the gateway\'s country, taken by the standby (broad)', nord({ serverCountries: ['Switzerland'] }), [], []],
    ['control: no filter at all (the provider\'s every server)', nord({}), [], []],
    ['control: one region on both (broad)', nord({ serverRegions: ['Europe'] }), [], []],
    ['one hostname, taken by the standby', nord({ serverHostnames: ['ch1.nordvpn.com'] }), [], warned],
    ['one hostname, and the same one in standby.servers in another case', nord({ serverHostnames: ['ch1.nordvpn.com'] }, { serverHostnames: ['CH1.nordvpn.com'], serverCountries: ['Switzerland'] }), [], warned],
    ['control: one hostname each, not the same', nord({ serverHostnames: ['ch1.nordvpn.com'] }, { serverHostnames: ['ch2.nordvpn.com'] }), [], []],
    ['hostnames with one in common', nord({ serverHostnames: ['ch1.nordvpn.com', 'ch2.nordvpn.com'] }, { serverHostnames: ['ch2.nordvpn.com', 'ch3.nordvpn.com'] }), [], warned],
    ['control: hostnames with none in common', nord({ serverHostnames: ['ch1.nordvpn.com', 'ch2.nordvpn.com'] }, { serverHostnames: ['ch3.nordvpn.com'] }), [], []],
    ['one city, taken by the standby (a city may have one server)', nord({ serverCities: ['Zurich'] }), [], warned],
    ['two cities, the standby one of them', nord({ serverCities: ['Zurich', 'Geneva'] }, { serverCities: ['geneva'] }), [], warned],
    ['control: a city each', nord({ serverCities: ['Zurich'] }, { serverCities: ['Geneva'] }), [], []],
    ['control: kept apart by country though both name the city (each server has one country)', nord({ serverCountries: ['Switzerland'], serverCities: ['Zurich'] }, { serverCountries: ['Germany'], serverCities: ['Zurich'] }), [], []],
    ['control: a city for the gateway, a country for the standby (broad)', nord({ serverCities: ['Zurich'] }, { serverCountries: ['Germany'] }), [], []],
    ['a hostname for the gateway, a city for the standby (different fields, both narrow)', nord({ serverHostnames: ['ch1.nordvpn.com'] }, { serverCities: ['Zurich'] }), [], warned],
    ['one server name, taken by the standby (ProtonVPN)', nord({ vpnProvider: 'protonvpn', serverNames: ['CH#10'] }), [], warned],
    ['control: a server name each (ProtonVPN)', nord({ vpnProvider: 'protonvpn', serverNames: ['CH#10'] }, { serverNames: ['CH#11'] }), [], []],
    ['custom: the gateway\'s endpoint, taken by the standby', custom(), [], warned],
    ['custom: the same endpoint in standby.servers, another public key', custom({ vpnEndpointIp: '203.0.113.50', wireguardPublicKey: OTHER_KEY }), [], warned],
    ['control: custom, the standby\'s own endpoint', custom({ vpnEndpointIp: '203.0.113.51', wireguardPublicKey: OTHER_KEY }), [], []],
  ])('%s', (_, props, problems, warnings) => {
    expect(findings(props)).toEqual({ problems, warnings });
  });

  it.each<[string, VpnGatewayProps, string[]]>([
    ['custom: standby.servers without the server\'s public key (it replaces the gateway\'s endpoint as a whole)', custom({ vpnEndpointIp: '203.0.113.51' }), ['standby.servers.wireguardPublicKey required']],
    ['custom: standby.servers with a hostname for an endpoint', custom({ vpnEndpointIp: 'vpn.example', wireguardPublicKey: OTHER_KEY }), ['standby.servers.vpnEndpointIp ip']],
    ['custom: a second server name', custom({ vpnEndpointIp: '203.0.113.51', wireguardPublicKey: OTHER_KEY, serverNames: ['a', 'b'] }), ['standby.servers.serverNames filter']],
    ['a filter the provider has not (NordVPN has no server names)', nord({ serverCountries: ['Switzerland'] }, { serverNames: ['x'] }), ['standby.servers.serverNames filter']],
    ['an endpoint on a provider that is not custom', nord({ serverCountries: ['Switzerland'] }, { vpnEndpointIp: '203.0.113.51' }), ['standby.servers.vpnEndpointIp forbidden']],
    ['a public key on OpenVPN', { ...(({ wireguardPrivateKeySecret: _k, ...p }) => p)(nordvpnGateway()), vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'o' }, standby: { openvpnCredentialsSecret: { name: 'o-b' }, servers: { wireguardPublicKey: OTHER_KEY } } } as VpnGatewayProps, ['standby.servers.wireguardPublicKey forbidden']],
    ['a field that is no filter', nord({}, { serverCountry: ['Germany'] }), ['standby.servers.serverCountry unknown-prop']],
    ['an empty filter value', nord({}, { serverCities: [''] }), ['standby.servers.serverCities[0] too_small']],
  ])('checks standby.servers as the gateway\'s filters: %s', (_, props, expected) => {
    expect(findings(props).problems).toEqual(expected);
  });

  it('control: the same checks on the gateway\'s own props report at the gateway\'s paths', () => {
    const c = custom({ vpnEndpointIp: '203.0.113.51', wireguardPublicKey: OTHER_KEY });
    expect(findings({ ...c, wireguardPublicKey: undefined, serverNames: ['a', 'b'] }).problems).toEqual(['serverNames filter', 'wireguardPublicKey required']);
  });

  it('the warnings name the prop to set and the server, in the user\'s words', () => {
    const [pinned] = planVpnGateway(nord({ serverHostnames: ['ch1.nordvpn.com'] })).warnings;
    expect(pinned.message).toContain('serverHostnames "ch1.nordvpn.com"');
    expect(pinned.message).toContain('give standby.servers a server of its own');
    const [warning] = planVpnGateway(nord({ serverCities: ['Zurich', 'Geneva'] }, { serverCities: ['GENEVA'] })).warnings;
    expect(warning.message).toContain('both allow serverCities "Geneva"');
    expect(warning.message).toContain('acknowledge \'standby-same-server\'');
    const [different] = planVpnGateway(nord({ serverHostnames: ['ch1.nordvpn.com'] }, { serverCities: ['Zurich'] })).warnings;
    expect(different.message).toContain('they filter different fields');
  });

  it('acknowledge \'standby-same-server\' silences the warning (control: without it, it is there)', () => {
    const p = nord({ serverCities: ['Zurich'] });
    expect(planVpnGateway(p).warnings.map((w) => w.code)).toEqual(['standby-same-server']);
    expect(planVpnGateway({ ...p, acknowledge: ['standby-same-server'] }).warnings).toEqual([]);
    // One server for both (a self-hosted endpoint): acknowledged, it synthesizes with neither problem nor warning.
    expect(findings({ ...custom(), acknowledge: ['standby-same-server'] })).toEqual({ problems: [], warnings: [] });
  });

  it('a gateway without standby is not checked for it', () => {
    const { standby: _s, ...p } = nord({ serverHostnames: ['ch1.nordvpn.com'] });
    expect(findings(p)).toEqual({ problems: [], warnings: [] });
  });
});

describe('the standby pod\'s gluetun gets standby.servers in place of the gateway\'s filters, and nothing else changes', () => {
  const withoutServers = (env: Record<string, string | undefined>) => Object.fromEntries(Object.entries(env).filter(([k]) => !/^SERVER_|^WIREGUARD_(ENDPOINT_IP|PUBLIC_KEY|ADDRESSES)$/.test(k)));

  it('filters: -b has only its own (a filter it leaves out is not the gateway\'s), -a the gateway\'s', () => {
    const p = nord({ serverCountries: ['Switzerland'], serverCities: ['Zurich'] }, { serverCities: ['Geneva', 'Bern'] });
    const [a, b] = [gluetunEnv(p, 'a'), gluetunEnv(p, 'b')];
    expect([a.SERVER_COUNTRIES, a.SERVER_CITIES]).toEqual(['Switzerland', 'Zurich']);
    expect([b.SERVER_COUNTRIES, b.SERVER_CITIES]).toEqual([undefined, 'Geneva,Bern']);
    expect(withoutServers(b)).toEqual(withoutServers(a));
  });

  it('over OpenVPN the same: -b\'s gluetun filters are standby.servers\'', () => {
    const { wireguardPrivateKeySecret: _k, serverCountries: _c, ...base } = nordvpnGateway();
    const p: VpnGatewayProps = { ...base, vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'o' }, serverHostnames: ['ch1.nordvpn.com'], standby: { openvpnCredentialsSecret: { name: 'o-b' }, servers: { serverHostnames: ['at1.nordvpn.com'] } } };
    expect(findings(p)).toEqual({ problems: [], warnings: [] });
    expect([gluetunEnv(p, 'a').SERVER_HOSTNAMES, gluetunEnv(p, 'b').SERVER_HOSTNAMES]).toEqual(['ch1.nordvpn.com', 'at1.nordvpn.com']);
    expect(withoutServers(gluetunEnv(p, 'b'))).toEqual(withoutServers(gluetunEnv(p, 'a')));
  });

  it('without standby.servers, -b has the gateway\'s filters', () => {
    const p = nord({ serverCountries: ['Switzerland'] });
    expect(gluetunEnv(p, 'b').SERVER_COUNTRIES).toBe('Switzerland');
    expect(gluetunEnv(p, 'b')).toEqual(gluetunEnv(p, 'a'));
  });

  it('custom: -b connects to its own endpoint with its own addresses, on the gateway\'s port', () => {
    const p = custom({ vpnEndpointIp: '203.0.113.51', wireguardPublicKey: OTHER_KEY });
    const [a, b] = [gluetunEnv(p, 'a'), gluetunEnv(p, 'b')];
    expect([a.WIREGUARD_ENDPOINT_IP, a.WIREGUARD_PUBLIC_KEY, a.WIREGUARD_ADDRESSES]).toEqual(['203.0.113.50', p.wireguardPublicKey, '10.13.0.2/32']);
    expect([b.WIREGUARD_ENDPOINT_IP, b.WIREGUARD_PUBLIC_KEY, b.WIREGUARD_ADDRESSES]).toEqual(['203.0.113.51', OTHER_KEY, '10.13.0.3/32']);
    expect(b.WIREGUARD_ENDPOINT_PORT).toBe(a.WIREGUARD_ENDPOINT_PORT);
    expect(withoutServers(b)).toEqual(withoutServers(a));
  });

  it('each member claims its pinned server with its own credential across an App', () => {
    const claims = vpnGatewayClaims(custom({ vpnEndpointIp: '203.0.113.51', wireguardPublicKey: OTHER_KEY })).map((c) => `${c.path} ${c.key}`);
    expect(claims.filter((k) => k.includes(' vpn-server/'))).toEqual([
      'vpnEndpointIp vpn-server/custom/203.0.113.50:1337/vpn-gateway/nordvpn-wireguard/private-key',
      'standby.servers.vpnEndpointIp vpn-server/custom/203.0.113.51:1337/vpn-gateway/custom-b/private-key',
    ]);
  });

  it.each<[string, VpnGatewayProps, string[]]>([
    ['a second gateway on the first one\'s standby key', { ...nordvpnGateway(), name: 'eu', vxlanId: 43, wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-b' } }, ['eu:wireguardPrivateKeySecret claimed-twice']],
    ['a second gateway whose standby has the first one\'s key', { ...nordvpnGateway(), name: 'eu', vxlanId: 43, wireguardPrivateKeySecret: { name: 'eu-a' }, standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' } } }, ['eu:standby.wireguardPrivateKeySecret claimed-twice']],
    ['control: a second gateway with keys of its own', { ...nordvpnGateway(), name: 'eu', vxlanId: 43, wireguardPrivateKeySecret: { name: 'eu-a' }, standby: { wireguardPrivateKeySecret: { name: 'eu-b' } } }, []],
  ])('two gateways of an App: %s', (_, second, expected) => {
    const first = nord({ serverCountries: ['Switzerland'] });
    expect(checkClaims([{ construct: 'us', claims: vpnGatewayClaims(first) }, { construct: 'eu', claims: vpnGatewayClaims(second) }]).map((p) => `${p.path} ${p.code}`)).toEqual(expected);
  });
});

describe('cdk8s: the VpnGateway construct takes standby.servers through the core', () => {
  expectWarnings({
    'cdk8s: the VpnGateway construct takes standby.servers through the core warns standby-same-server on the construct': ['test/gateway: standby.servers'],
    'cdk8s: the VpnGateway construct takes standby.servers through the core warns one server for both, and synthesizes it': ['test/gateway: standby.servers'],
  });
  const chart = () => new Chart(new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'srv-cdk8s-')) }), 'test');
  it('writes -b with its own filters', () => {
    const c = chart();
    new VpnGateway(c, 'gateway', nord({ serverCities: ['Zurich'] }, { serverCities: ['Geneva'] }));
    const b = c.toJson().find((o: { kind: string; metadata: { name: string } }) => o.kind === 'StatefulSet' && o.metadata.name === 'vpn-gateway-b') as Sts;
    expect(b.spec.template.spec.containers.find((x) => x.name === 'gluetun')!.env.find((e) => e.name === 'SERVER_CITIES')!.value).toBe('Geneva');
  });
  it('warns standby-same-server on the construct', () => {
    const gw = new VpnGateway(chart(), 'gateway', nord({ serverCities: ['Zurich'] }));
    expect(gw.warnings.map((w) => w.code)).toEqual(['standby-same-server']);
  });
  it('warns one server for both, and synthesizes it', () => {
    const gw = new VpnGateway(chart(), 'gateway', custom());
    expect(gw.warnings.map((w) => `${w.code}: ${w.message}`)).toEqual([expect.stringMatching(/^standby-same-server: the standby \(without standby\.servers it takes the gateway's server filters\) connects to the gateway's one server/)]);
  });
});

describe('standby.servers against gluetun\'s server list, as the gateway\'s filters (serverFilterFindings)', () => {
  /** The library with a server-filter table holding NordVPN's Swiss cities over WireGuard (the shipped table may be empty). */
  const withTable = (): typeof import('../../src') => {
    let lib: typeof import('../../src') | undefined;
    jest.isolateModules(() => {
      jest.doMock('../../src/model/gluetun-servers.json', () => ({ gluetun: 'v3.41.1', source: 'internal/storage/servers.json', providers: { nordvpn: { wireguard: { serverCountries: ['Switzerland'], serverCities: ['Geneva', 'Zurich'] } } } }));
      lib = require('../../src') as typeof import('../../src');
    });
    jest.dontMock('../../src/model/gluetun-servers.json');
    return lib!;
  };
  it('refuses a city gluetun does not know at the standby\'s path, with the pinned image; control: a known one', () => {
    const lib = withTable();
    const at = (p: VpnGatewayProps) => lib.validateVpnGateway(p).map((x) => `${x.path} ${x.code}`);
    expect(at(nord({ serverCities: ['Zurich'] }, { serverCities: ['Genva'] }))).toEqual(['standby.servers.serverCities[0] unknown-server-filter']);
    expect(lib.validateVpnGateway(nord({ serverCities: ['Zurich'] }, { serverCities: ['Genva'] }))[0].message).toContain('did you mean "Geneva"?');
    expect(at(nord({ serverCities: ['Zurich'] }, { serverCities: ['Geneva'] }))).toEqual([]);
    // The gateway's own filter at the gateway's path.
    expect(at(nord({ serverCities: ['Zurch'] }, { serverCities: ['Geneva'] }))).toEqual(['serverCities[0] unknown-server-filter']);
  });
});
