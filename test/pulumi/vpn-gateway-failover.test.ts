import { planVpnGateway, VpnGatewayProps } from '../../src';
import { nordvpnGateway } from '../helpers/fixtures';
import { recordResources, settle } from '../helpers/pulumi';
import { expectWarnings } from '../helpers/stderr-guard';

const seen = recordResources();
// Loaded after the mocks are in place, as Pulumi's own tests do.
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');

const props: VpnGatewayProps = { ...nordvpnGateway(), standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-standby' } } };

expectWarnings({
  'Pulumi VpnGateway with standby warns standby-same-server where both members may pick one city\'s server (control: a city each)': ['standby.servers'],
  'Pulumi VpnGateway with standby gives the standby\'s gluetun standby.servers in place of the gateway\'s filters; warns one server for both': ['standby.servers'],
});

describe('Pulumi VpnGateway with standby', () => {
  beforeEach(() => {
    tw.resetRegistry();
    seen.length = 0;
  });

  it('registers the core\'s objects: two StatefulSets, the Lease, its RBAC and the PodDisruptionBudget, and no Deployment', async () => {
    new tw.VpnGateway('ha', props);
    await settle();
    const kinds = seen.filter((r) => r.custom).map((r) => `${String(r.inputs.kind)} ${String((r.inputs.metadata as { name: string }).name)}`);
    const planned = planVpnGateway(props).objects.map((o) => `${o.kind} ${(o.metadata as { name: string }).name}`);
    expect(kinds.sort()).toEqual(planned.sort());
    expect(kinds).toEqual(expect.arrayContaining(['StatefulSet vpn-gateway-a', 'StatefulSet vpn-gateway-b', 'Lease vpn-gateway', 'Role vpn-gateway-failover', 'RoleBinding vpn-gateway-failover', 'ServiceAccount vpn-gateway-failover', 'PodDisruptionBudget vpn-gateway']));
    expect(kinds.some((k) => k.startsWith('Deployment'))).toBe(false);
    // The standby's pod mounts its own key.
    const b = seen.find((r) => r.inputs.kind === 'StatefulSet' && (r.inputs.metadata as { name: string }).name === 'vpn-gateway-b')!;
    const volumes = (b.inputs.spec as { template: { spec: { volumes: { name: string; projected?: { sources: { secret: { name: string } }[] } }[] } } }).template.spec.volumes;
    expect(volumes.find((v) => v.name === 'gluetun-secrets')!.projected!.sources[0].secret.name).toBe('nordvpn-wireguard-standby');
  });

  it('passes standby.probeUrl to both members\' failover agents', async () => {
    new tw.VpnGateway('probe', { ...props, standby: { ...props.standby!, probeUrl: 'https://10.8.0.1/check' } });
    await settle();
    type Sts = { template: { spec: { containers: { name: string; env: { name: string; value?: string }[] }[] } } };
    const urls = seen.filter((r) => r.inputs.kind === 'StatefulSet')
      .map((r) => (r.inputs.spec as Sts).template.spec.containers.find((c) => c.name === 'failover-agent')!.env.find((e) => e.name === 'PROBE_URL')?.value);
    expect(urls).toEqual(['https://10.8.0.1/check', 'https://10.8.0.1/check']);
  });

  it('gives the standby\'s gluetun standby.servers in place of the gateway\'s filters; warns one server for both', async () => {
    type Sts = { template: { spec: { containers: { name: string; env: { name: string; value?: string }[] }[] } } };
    const cities = () => seen.filter((r) => r.inputs.kind === 'StatefulSet')
      .map((r) => (r.inputs.spec as Sts).template.spec.containers.find((c) => c.name === 'gluetun')!.env.find((e) => e.name === 'SERVER_CITIES')?.value);
    const { serverCountries: _c, ...rest } = props;
    new tw.VpnGateway('one-server', { ...rest, serverHostnames: ['ch1.nordvpn.com'] });
    await settle();
    expect(seen.filter((r) => r.inputs.kind === 'StatefulSet')).toHaveLength(2);
    seen.length = 0;
    tw.resetRegistry(); // another program: the two gateways claim one VXLAN id and key
    new tw.VpnGateway('servers', { ...rest, serverCities: ['Zurich'], standby: { ...props.standby!, servers: { serverCities: ['Geneva'] } } });
    await settle();
    expect(cities()).toEqual(['Zurich', 'Geneva']);
  });

  it('warns standby-same-server where both members may pick one city\'s server (control: a city each)', async () => {
    const { serverCountries: _c, ...rest } = props;
    new tw.VpnGateway('same-city', { ...rest, serverCities: ['Zurich'] });
    await settle();
    tw.resetRegistry(); // another program: the two gateways claim one VXLAN id and key
    new tw.VpnGateway('a-city-each', { ...rest, serverCities: ['Zurich'], standby: { ...props.standby!, servers: { serverCities: ['Geneva'] } } });
    await settle();
    expect(seen.filter((r) => r.inputs.kind === 'StatefulSet')).toHaveLength(4);
  });

  it('refuses one key for both pods before it registers anything', async () => {
    expect(() => new tw.VpnGateway('shared', { ...props, standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' } } })).toThrow(/standby\.wireguardPrivateKeySecret: is the active gateway's key/);
    await settle();
    expect(seen).toEqual([]);
  });

  it('over OpenVPN: the standby mounts its own login; the gateway\'s Secret is refused before anything registers', async () => {
    const { wireguardPrivateKeySecret: _k, ...rest } = props;
    const ovpn = { ...rest, vpnType: 'openvpn' as const, openvpnCredentialsSecret: { name: 'nordvpn-openvpn' } };
    expect(() => new tw.VpnGateway('ovpn-shared', { ...ovpn, standby: { openvpnCredentialsSecret: { name: 'nordvpn-openvpn' } } })).toThrow(/standby\.openvpnCredentialsSecret: is the active gateway's login/);
    await settle();
    expect(seen).toEqual([]);
    new tw.VpnGateway('ovpn', { ...ovpn, standby: { openvpnCredentialsSecret: { name: 'nordvpn-openvpn-b' } } });
    await settle();
    type Sts = { template: { spec: { volumes: { name: string; projected?: { sources: { secret: { name: string } }[] } }[] } } };
    const logins = seen.filter((r) => r.inputs.kind === 'StatefulSet').map((r) => (r.inputs.spec as Sts).template.spec.volumes.find((v) => v.name === 'gluetun-secrets')!.projected!.sources[0].secret.name);
    expect(logins).toEqual(['nordvpn-openvpn', 'nordvpn-openvpn-b']);
  });
});
