import { Problem } from '../../errors';
import type { VpnGatewaySpec } from './spec';

/** The problems of port-forwarding alerts for a gateway: slskd syncs its port itself, so no port-sync metrics exist to alert on. */
export function checkPortForwardAlerts(spec: VpnGatewaySpec): Problem[] {
  if (spec.portForwarding?.app !== 'slskd') return [];
  return [{ path: 'portForwarding.app', code: 'no-metrics', message: 'no port-forwarding alerts for slskd: slskd polls gluetun itself and no port-sync sidecar serves the metrics these rules read; watch slskd\'s own VPN state (its log: "Waiting for VPN client")' }];
}
