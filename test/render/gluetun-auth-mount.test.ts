/**
 * gluetun's control-server role file (the role that lets the workload's API key read only GET /v1/portforward) is
 * written once, by the gateway pod's gluetun-auth init container; every container that runs afterwards, gluetun
 * first (root, NET_ADMIN, reachable on the VXLAN), gets it read-only from the kubelet, so no running container can
 * widen the role for itself or for the key.
 */
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import type { Container as IContainer } from 'kubernetes-types/core/v1';
import { planVpnGateway, VpnGatewayProps } from '../../src';
import { gatewayFor } from '../helpers/fixtures';

const withApp = (app: Record<string, unknown>): VpnGatewayProps => ({
  ...gatewayFor('protonvpn'),
  portForwarding: { workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' }, ...app },
});
const podOf = (p: VpnGatewayProps) => (planVpnGateway(p).objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment).spec!.template.spec!;
/** The containers that mount the volume, and whether each may write it. */
const mounts = (cs: IContainer[] | undefined, volume: string) => (cs ?? []).flatMap((c) => (c.volumeMounts ?? []).filter((m) => m.name === volume).map((m) => [c.name, m.readOnly === true ? 'read-only' : 'writable']));

describe('the gateway pod\'s gluetun-auth volume', () => {
  it.each([
    ['qbittorrent', { app: 'qbittorrent' }],
    ['slskd', { app: 'slskd' }],
    ['a command', { app: 'command', command: 'true' }],
  ])('with port forwarding to %s: written by its init container only, read-only to every running container', (_n, app) => {
    const pod = podOf(withApp(app));
    expect(mounts(pod.initContainers, 'gluetun-auth')).toEqual([['gluetun-auth', 'writable']]);
    const running = mounts(pod.containers, 'gluetun-auth');
    expect(running.map(([name]) => name)).toContain('gluetun');
    expect(running.filter(([, how]) => how !== 'read-only')).toEqual([]);
    // gluetun reads its roles from that volume.
    const gluetun = pod.containers.find((c) => c.name === 'gluetun')!;
    const dir = gluetun.volumeMounts!.find((m) => m.name === 'gluetun-auth')!.mountPath;
    expect(gluetun.env!.find((e) => e.name === 'HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH')!.value).toMatch(new RegExp(`^${dir}/`));
  });
});
