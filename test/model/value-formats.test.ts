/**
 * Texts the library hands to another program whole: a systemd unit name (EgressConformance's tunnelUnit, which the
 * check stops and starts with systemctl) and a PersistentVolumeClaim size (a Kubernetes quantity). Each is refused at
 * synth time unless all of it has the form, not only its start or its end.
 */
import { validateEgressConformance, validateVpnGateway, VpnGatewayProps } from '../../src';
import { gatewayFor, homelabConformance } from '../helpers/fixtures';
import { mutated } from '../helpers/mutable';

describe('EgressConformance tunnelUnit: a systemd service name, all of it', () => {
  const withUnit = (unit: string) => mutated(homelabConformance(), (p) => {
    delete (p.egressSteerings![0].steering as { tunnel?: unknown }).tunnel;
    p.egressSteerings![0].tunnelUnit = unit;
  });
  it.each([
    ['wg-quick@tun0.service', true],
    ['openvpn-client@pia.service', true],
    ['a.service', true],
    ['wg-quick@tun0.service.d', false],
    ['wg-quick@tun0.service; reboot', false],
    ['/etc/systemd/system/x.service', false],
    ['x y.service', false],
    ['.service', false],
    ['wg-quick@tun0.socket', false],
  ])('%p accepted: %p', (unit, ok) => {
    const problems = validateEgressConformance(withUnit(unit));
    expect(problems.filter((p) => p.path === 'egressSteerings[0].tunnelUnit').map((p) => p.code)).toEqual(ok ? [] : ['format']);
    // Control: nothing else is refused.
    expect(problems.filter((p) => p.path !== 'egressSteerings[0].tunnelUnit')).toEqual([]);
  });
});

describe('VpnGateway portForwarding.stateClaim.size: a quantity in Ki, Mi, Gi or Ti, all of it', () => {
  const withSize = (size: string): VpnGatewayProps => {
    const base = gatewayFor('private internet access');
    return { ...base, portForwarding: { ...base.portForwarding, stateClaim: { storageClassName: 'local-path', size } } } as VpnGatewayProps;
  };
  it.each([
    ['64Mi', true],
    ['128Mi', true],
    ['1Gi', true],
    ['64MiB', false],
    ['64Mi ', false],
    ['x64Mi', false],
    ['Mi', false],
  ])('%p accepted: %p', (size, ok) => {
    const problems = validateVpnGateway(withSize(size));
    expect(problems.filter((p) => p.path === 'portForwarding.stateClaim.size').length).toBe(ok ? 0 : 1);
    // Control: nothing else is refused.
    expect(problems.filter((p) => p.path !== 'portForwarding.stateClaim.size')).toEqual([]);
  });
});
