/**
 * planRoute reports a route's problems beside the gateway's own, all at once: when the gateway's props do not parse,
 * the port-forwarding workload is read from the props as given (forwardedWorkloadOf), and a Deployment named as that
 * workload is still refused for the second pod it can run.
 */
import { planRoute, ValidationError, VpnGatewayProps } from '../../src';
import { gatewayFor } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';

/** Gateway props that do not parse (a cluster CIDR that is no CIDR), with the port forwarding given. */
const refusedGateway = (pf: Record<string, unknown>): VpnGatewayProps => ({ ...gatewayFor('protonvpn'), clusterCidrs: ['not-a-cidr'], portForwarding: pf } as VpnGatewayProps);
const deployment = { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent', kind: 'Deployment' as const };
const pathsOf = (e: unknown) => (e as ValidationError).problems.map((p) => `${p.path} ${p.code}`);

describe('planRoute when the gateway props do not parse', () => {
  it.each<[string, Record<string, unknown>, boolean]>([
    ['forwarding to an app (no toPort): the workload is the forwarded one', { app: 'qbittorrent', workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } }, true],
    ['forwarding to a port (no app): the workload is the forwarded one', { toPort: 6881, workload: 'qbittorrent', workloadNamespace: 'media' }, true],
    // Control: neither toPort nor app names no forwarded workload (the workload fields alone forward nothing).
    ['neither toPort nor app: no forwarded workload', { workload: 'qbittorrent', workloadNamespace: 'media' }, false],
  ])('%s', (_name, pf, twoPods) => {
    const e = thrown(() => planRoute(refusedGateway(pf), deployment));
    expect(e).toBeInstanceOf(ValidationError);
    // The gateway's own problem, whatever else is refused.
    expect(pathsOf(e).some((p) => p.startsWith('clusterCidrs[0] '))).toBe(true);
    expect(pathsOf(e).includes('route.kind two-pods')).toBe(twoPods);
  });
});
