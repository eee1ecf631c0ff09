/**
 * EgressSteering's failover parsed once (issue 42): the spec carries every standby's tunnel parsed and the agents'
 * settings with their defaults, so render reads no raw props; and every candidate's host kill switch, which render now
 * writes without checking it again, is one the kill switch's own check accepts whenever the steering's model does.
 */
import * as fc from 'fast-check';
import type { EgressSteeringProps } from '../../src';
import { checkHostKillSwitchInput } from '../../src/model/kill-switch';
import { egressSteeringSpec, parseEgressSteering } from '../../src/model/egress-steering-spec';
import { failoverSteering } from '../helpers/fixtures';

type WgTunnel = Extract<EgressSteeringProps['tunnel'], { type: 'wireguard' }>;

describe('the failover spec', () => {
  it('applies the defaults and parses each standby\'s tunnel like gatewayNode\'s', () => {
    const s = egressSteeringSpec(failoverSteering());
    expect(s.failover).toEqual({
      standbys: [{ node: 'gw-2', tunnel: expect.objectContaining({ type: 'wireguard', address: '10.2.0.3/32', family: 4, from: '10.2.0.3' }) }],
      leaseDurationSeconds: 15, checkIntervalSeconds: 2, healthyChecks: 3, unhealthyChecks: 3, handshakeMaxAgeSeconds: 135,
      leaseNamespace: 'kube-system', dropPodTrafficOffTunnel: true,
    });
    // The standby's tunnel is parsed exactly as gatewayNode's is (the same function): only the address and key differ.
    expect({ ...s.failover!.standbys[0].tunnel, address: '', from: '', privateKeyFrom: {} }).toEqual({ ...s.tunnel, address: '', from: '', privateKeyFrom: {} });
  });

  it('keeps what the user gave', () => {
    const p = failoverSteering();
    const s = egressSteeringSpec({ ...p, failover: { ...p.failover!, leaseDurationSeconds: 30, checkIntervalSeconds: 5, healthyChecks: 2, unhealthyChecks: 4, handshakeMaxAgeSeconds: 200, leaseNamespace: 'egress', probeUrl: 'http://192.0.2.1/', dropPodTrafficOffTunnel: false } });
    expect(s.failover).toMatchObject({ leaseDurationSeconds: 30, checkIntervalSeconds: 5, healthyChecks: 2, unhealthyChecks: 4, handshakeMaxAgeSeconds: 200, leaseNamespace: 'egress', probeUrl: 'http://192.0.2.1/', dropPodTrafficOffTunnel: false });
  });

  it('property: writing the defaults out changes no spec', () => {
    const p = failoverSteering();
    const explicit = egressSteeringSpec({ ...p, failover: { ...p.failover!, leaseDurationSeconds: 15, checkIntervalSeconds: 2, healthyChecks: 3, unhealthyChecks: 3, handshakeMaxAgeSeconds: 135, leaseNamespace: 'kube-system', dropPodTrafficOffTunnel: true } });
    expect(explicit).toEqual(egressSteeringSpec(p));
  });
});

describe('every candidate\'s host kill switch passes the kill switch\'s own check whenever the steering\'s model accepts the props', () => {
  // Mostly names the model accepts (else most runs stop at its refusal), and names near the edges of both checks:
  // upper case, dots, dashes at the ends, 15+ characters, '/', empty.
  const name = fc.oneof(
    { arbitrary: fc.constantFrom('gw-1', 'gw-2', 'node.example', 'n'.repeat(63)), weight: 4 },
    { arbitrary: fc.constantFrom('-x', 'x-', 'X', 'a_b', '', 'n'.repeat(64), 'a..b', '.a'), weight: 1 },
    { arbitrary: fc.stringMatching(/^[a-zA-Z0-9._-]{0,70}$/), weight: 1 },
  );
  const iface = fc.oneof(fc.constantFrom('tun0', 'wg0', 'eth0', 'x'.repeat(15), 'x'.repeat(16), 'a/b', 'a b', '', '.', '..'), fc.stringMatching(/^[a-zA-Z0-9._:/-]{0,18}$/));
  const address = fc.oneof(
    { arbitrary: fc.constantFrom('10.2.0.2/32', '10.2.0.3/32', '10.2.0.2/24'), weight: 4 },
    { arbitrary: fc.constantFrom('10.2.0.0/24', '0.0.0.0/0', '0.0.0.0/1', '128.0.0.1/1', 'fd00::2/128', '::/0', '10.2.0.2', 'x'), weight: 1 },
  );

  it('property', () => {
    fc.assert(fc.property(name, name, iface, address, address, (node1, node2, ifname, a1, a2) => {
      const p = failoverSteering();
      const t = p.tunnel as WgTunnel;
      const props: EgressSteeringProps = {
        ...p, gatewayNode: node1, interface: ifname, tunnel: { ...t, address: a1 },
        failover: { ...p.failover!, standbys: [{ node: node2, tunnel: { ...(p.failover!.standbys[0].tunnel as WgTunnel), address: a2 } }] },
      };
      const parsed = parseEgressSteering(props);
      if (parsed.problems.length > 0) return;
      const s = parsed.spec!;
      const candidates = [{ node: s.gatewayNode, tunnel: s.tunnel }, ...s.failover!.standbys];
      for (const c of candidates) {
        const tunnelCidrs = c.tunnel?.type === 'wireguard' ? [c.tunnel.address] : [];
        expect(checkHostKillSwitchInput({ node: c.node, tunnelInterface: s.iface, tunnelCidrs })).toEqual([]);
      }
    }), { numRuns: 300 });
  });

  it('control: a candidate the model would refuse fails the kill switch\'s check too (the property is not vacuous)', () => {
    expect(checkHostKillSwitchInput({ node: 'Bad_Node', tunnelInterface: 'tun0', tunnelCidrs: ['10.2.0.2/32'] })).not.toEqual([]);
    expect(checkHostKillSwitchInput({ node: 'gw-1', tunnelInterface: 'x'.repeat(16), tunnelCidrs: ['10.2.0.2/32'] })).not.toEqual([]);
    expect(checkHostKillSwitchInput({ node: 'gw-1', tunnelInterface: 'tun0', tunnelCidrs: ['0.0.0.0/0'] })).not.toEqual([]);
    // And the property's generators reach props the model accepts (else it would test nothing).
    const p = failoverSteering();
    expect(parseEgressSteering({ ...p, interface: 'wg0' }).problems).toEqual([]);
  });
});
