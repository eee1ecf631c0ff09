import type { EgressSteeringProps } from '../../src';
import { checkEgressSteering } from '../../src/model/egress-steering';
import { failoverSteering, prodSteering } from '../helpers/fixtures';

const codes = (props: unknown) => checkEgressSteering(props).problems.map((p) => `${p.path} ${p.code}`);
const standby = failoverSteering().failover!.standbys[0];

describe('EgressSteering failover props', () => {
  it('accepts a gateway node and a standby, each with its own key', () => {
    expect(codes(failoverSteering())).toEqual([]);
  });

  it.each<[string, (p: EgressSteeringProps) => unknown, string[]]>([
    ['one candidate (no standby)', (p) => ({ ...p, failover: { standbys: [] } }), ['failover.standbys one-candidate']],
    ['the gateway node again as its standby', (p) => ({ ...p, failover: { standbys: [{ ...standby, node: 'gw-1' }] } }), ['failover.standbys[0].node duplicate-candidate']],
    ['one standby twice', (p) => ({ ...p, failover: { standbys: [standby, { ...standby, tunnel: { ...standby.tunnel!, privateKeyFrom: { file: '/run/k3' } } }] } }), ['failover.standbys[1].node duplicate-candidate']],
    ['one key for two hot gateways', (p) => ({ ...p, failover: { standbys: [{ ...standby, tunnel: { ...standby.tunnel!, privateKeyFrom: { file: '/run/corium/vpn.key' } } }] } }), ['failover.standbys[0].tunnel.privateKeyFrom shared-credential']],
    ['a standby without a tunnel of its own', (p) => ({ ...p, failover: { standbys: [{ node: 'gw-2' }] } }), ['failover.standbys[0].tunnel standby-tunnel']],
    ['egressIp (each candidate has its own address)', (p) => ({ ...p, egressIp: '10.2.0.2' }), ['egressIp failover-egress-ip']],
    ['a lease shorter than three checks', (p) => ({ ...p, failover: { ...p.failover!, leaseDurationSeconds: 5, checkIntervalSeconds: 2 } }), ['failover.leaseDurationSeconds lease-duration']],
    // interval 2 + 6 API calls × 2 s = 14 s between two renewals at worst; 15 (the default) is accepted above.
    ['a lease no longer than a check interval plus the calls of one loop at their timeout', (p) => ({ ...p, failover: { ...p.failover!, leaseDurationSeconds: 14, checkIntervalSeconds: 2 } }), ['failover.leaseDurationSeconds lease-duration']],
    ['a standby tunnel with a bad peer key, at its own path', (p) => ({ ...p, failover: { standbys: [{ ...standby, tunnel: { ...standby.tunnel!, peer: { ...(standby.tunnel as { peer: { publicKey: string; endpoint: string } }).peer, publicKey: 'nope' } } }] } }), ['failover.standbys[0].tunnel.peer.publicKey key']],
    ['zero checks', (p) => ({ ...p, failover: { ...p.failover!, unhealthyChecks: 0 } }), ['failover.unhealthyChecks range']],
  ])('refuses %s', (_what, change, expected) => {
    expect(codes(change(failoverSteering()))).toEqual(expected);
  });

  it('refuses one OpenVPN account for two hot gateways, and warns that OpenVPN without probeUrl is judged by its interface', () => {
    const p = prodSteering();
    const r = checkEgressSteering({ ...p, failover: { standbys: [{ node: 'prod-gw-2', tunnel: { ...p.tunnel!, remote: 'nl-rotterdam.privacy.network:1198' } }] } });
    expect(r.problems.map((x) => `${x.path} ${x.code}`)).toEqual(['failover.standbys[0].tunnel.credentialsFrom shared-credential']);
    expect(r.warnings.map((w) => w.code)).toContain('failover-probe');
    expect(JSON.stringify(r.problems)).not.toContain('/etc/openvpn/pia/credentials');
  });
});
