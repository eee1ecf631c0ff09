import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import { applyRoute, planRoute, planVpnGateway, PORT_SYNC_SCRIPT, portForwardAlertGroups, validateVpnGateway, VpnGatewayProps } from '../../src';
import { gatewayFor } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';
import { describeWithTools, run, tmpdir, VENDOR_DIR } from '../system/tools';

const qbit = (pf: Record<string, unknown> = {}): VpnGatewayProps => ({
  ...gatewayFor('protonvpn'),
  portForwarding: { app: 'qbittorrent', workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' }, ...pf },
});
const target = { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent', kind: 'StatefulSet' as const };

/** A container's environment as the kubelet sets it (plain values only). */
const envOf = (c: { env?: { name: string; value?: string }[] }): Record<string, string> => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? '']));

describe('port forwarding to an app: refusals', () => {
  it.each<[string, Record<string, unknown>, { path: string; code: string; message: string }[]]>([
    ['toPort with a torrent client', { toPort: 6881 }, [{ path: 'portForwarding.toPort', code: 'translation', message: 'refused with qbittorrent: a torrent client announces its own listen port to trackers and peers, so a port translated to toPort is a port nobody forwards; leave toPort out (the forwarded port reaches the same port on the workload, and port-sync sets qbittorrent\'s listen port to it)' }]],
    ['no control API key', { controlApiKeySecret: undefined }, [{ path: 'portForwarding.controlApiKeySecret', code: 'required', message: 'required with app: a Secret key holding the API key of the gluetun control-server role that grants only GET /v1/portforward (the same Secret in the gateway\'s and the workload\'s namespace)' }]],
    ['no workload', { workload: undefined, workloadNamespace: undefined }, [{ path: 'portForwarding.workload', code: 'required', message: 'required with app: the name of the routed workload that receives the forwarded port' }]],
    ['no workload namespace', { workloadNamespace: undefined }, [{ path: 'portForwarding.workloadNamespace', code: 'required', message: 'required with workload: the routed workload\'s namespace (a workload of the same name in another namespace must not get its fixed address)' }]],
    ['an app URL with app command', { app: 'command', command: 'true', appUrl: 'http://127.0.0.1:8080' }, [{ path: 'portForwarding.appUrl', code: 'forbidden', message: 'not with app "command": your command reaches the app itself' }]],
    ['command without app command', { command: 'echo $PORT' }, [{ path: 'portForwarding.command', code: 'forbidden', message: 'only with app "command"' }]],
    ['app command without command', { app: 'command' }, [{ path: 'portForwarding.command', code: 'required', message: 'required with app "command": the POSIX sh command that gives the app its port ($PORT)' }]],
    ['an API key for Transmission', { app: 'transmission', appApiKeySecret: { name: 'k' } }, [{ path: 'portForwarding.appApiKeySecret', code: 'forbidden', message: 'only with app "qbittorrent" (WebUI API keys, qBittorrent 5.2.0 and later)' }]],
    ['toPort with Transmission', { app: 'transmission', toPort: 51413 }, [{ path: 'portForwarding.toPort', code: 'translation', message: 'refused with transmission: a torrent client announces its own listen port to trackers and peers, so a port translated to toPort is a port nobody forwards; leave toPort out (the forwarded port reaches the same port on the workload, and port-sync sets transmission\'s listen port to it)' }]],
    ['toPort with Deluge', { app: 'deluge', appCredentialsSecret: { name: 'deluge-web' }, toPort: 6881 }, [{ path: 'portForwarding.toPort', code: 'translation', message: 'refused with deluge: a torrent client announces its own listen port to trackers and peers, so a port translated to toPort is a port nobody forwards; leave toPort out (the forwarded port reaches the same port on the workload, and port-sync sets deluge\'s listen port to it)' }]],
    ['Deluge without its Web UI password', { app: 'deluge' }, [{ path: 'portForwarding.appCredentialsSecret', code: 'required', message: 'required with app "deluge": a Secret whose password key holds the Deluge Web UI password (its JSON-RPC always needs a login)' }]],
    ['toPort with slskd', { app: 'slskd', toPort: 50300 }, [{ path: 'portForwarding.toPort', code: 'translation', message: 'refused with slskd: slskd tells the Soulseek server its own listen port, so a port translated to toPort is a port nobody forwards; leave toPort out (the forwarded port reaches the same port on the workload, and slskd takes it as its listen port)' }]],
    ['a login for slskd', { app: 'slskd', appCredentialsSecret: { name: 'slskd-web' } }, [{ path: 'portForwarding.appCredentialsSecret', code: 'forbidden', message: 'not with app "slskd": slskd reads gluetun\'s control server itself (SLSKD_VPN_*), so nothing logs in to slskd; only controlApiKeySecret is needed' }]],
    ['an app URL for slskd', { app: 'slskd', appUrl: 'http://127.0.0.1:5030' }, [{ path: 'portForwarding.appUrl', code: 'forbidden', message: 'not with app "slskd": slskd reads gluetun\'s control server itself (SLSKD_VPN_*), so nothing logs in to slskd; only controlApiKeySecret is needed' }]],
    ['an API key for slskd', { app: 'slskd', appApiKeySecret: { name: 'k' } }, [{ path: 'portForwarding.appApiKeySecret', code: 'forbidden', message: 'only with app "qbittorrent" (WebUI API keys, qBittorrent 5.2.0 and later)' }]],
    ['slskd without the control API key', { app: 'slskd', controlApiKeySecret: undefined }, [{ path: 'portForwarding.controlApiKeySecret', code: 'required', message: 'required with app: a Secret key holding the API key of the gluetun control-server role that grants only GET /v1/portforward (the same Secret in the gateway\'s and the workload\'s namespace)' }]],
    ['appContainer without slskd', { appContainer: 'qbittorrent' }, [{ path: 'portForwarding.appContainer', code: 'forbidden', message: 'only with app "slskd": the container that gets slskd\'s SLSKD_VPN_* environment' }]],
    ['an appContainer that is no container name', { app: 'slskd', appContainer: 'Slskd_Main' }, [{ path: 'portForwarding.appContainer', code: 'name', message: 'expected a container name (a DNS label), received "Slskd_Main"' }]],
    ['an existing claim with a size (and a claim at all for ProtonVPN)', { stateClaim: { existingClaim: 'mine', size: '1Gi' } }, [
      { path: 'portForwarding.stateClaim', code: 'forbidden', message: 'gluetun keeps no port-forwarding state for protonvpn (only private internet access keeps its port, in /gluetun/piaportforward.json): remove stateClaim; no claim is made' },
      { path: 'portForwarding.stateClaim', code: 'conflict', message: 'existingClaim names a claim you made: size and storageClassName are only for the claim the library creates' },
    ]],
  ])('refuses %s', (_name, pf, problems) => {
    expect(validateVpnGateway(qbit(pf))).toEqual(problems);
  });

  it('keeps toPort for an app that needs a fixed port (Plex\'s 32400), with app "command"', () => {
    expect(validateVpnGateway(qbit({ app: 'command', command: 'true', toPort: 32400 }))).toEqual([]);
  });

  // The whole messages: what runs two pods, and what to do (a StatefulSet of one replica).
  const sts = (name: string, first = `${name}-0`) => `make it a StatefulSet with replicas 1 (portForwarding.workload names it; a cdk8s-plus StatefulSet needs a container port or \`service\`): its controller starts ${first} again only once the old pod is gone`;
  const replicaSetWhy = 'starts the replacement pod as soon as the old one is terminating (a pod delete, a drain, an eviction';
  const heldWhy = 'and both hold the one fixed VXLAN address until the old one is killed, since pod-gateway\'s sidecar ignores SIGTERM';
  it.each<[string, object, { path: string; code: string; message: string }[]]>([
    ['a Deployment', { kind: 'Deployment' }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a Deployment: its ReplicaSet ${replicaSetWhy}; \`Recreate\` covers rollouts only), ${heldWhy}; ${sts('qbittorrent')}` }]],
    ['a Deployment of one replica (the kind is what counts)', { kind: 'Deployment', replicas: 1 }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a Deployment: its ReplicaSet ${replicaSetWhy}; \`Recreate\` covers rollouts only), ${heldWhy}; ${sts('qbittorrent')}` }]],
    ['no kind (the default, a Deployment)', { kind: undefined }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a Deployment (route.kind unset: the default): its ReplicaSet ${replicaSetWhy}; \`Recreate\` covers rollouts only), ${heldWhy}; ${sts('qbittorrent')}` }]],
    ['a Deployment with ordinals.start 5 (the message names qbittorrent-5)', { kind: 'Deployment', ordinalsStart: 5 }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a Deployment: its ReplicaSet ${replicaSetWhy}; \`Recreate\` covers rollouts only), ${heldWhy}; ${sts('qbittorrent', 'qbittorrent-5')}` }]],
    ['a ReplicaSet', { kind: 'ReplicaSet' }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a ReplicaSet: the ReplicaSet controller ${replicaSetWhy}), ${heldWhy}; ${sts('qbittorrent')}` }]],
    ['a DaemonSet', { kind: 'DaemonSet' }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a DaemonSet: it runs a pod on every node it fits, and each would take the one fixed VXLAN address; ${sts('qbittorrent')}` }]],
    ['another kind (from JavaScript)', { kind: 'Job' }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a Job: only a StatefulSet never runs two pods of one replica at once, and two would both take the one fixed VXLAN address; ${sts('qbittorrent')}` }]],
    ['a kind that is no kind name', { kind: 42 }, [{ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is of kind 42: only a StatefulSet never runs two pods of one replica at once, and two would both take the one fixed VXLAN address; ${sts('qbittorrent')}` }]],
    ['a StatefulSet of two replicas', { replicas: 2 }, [{ path: 'route.replicas', code: 'two-pods', message: 'the port-forwarding workload media/qbittorrent has 2 replicas: they would all take the one fixed VXLAN address and one forwarded port; set replicas to 1' }]],
    ['a DaemonSet and three replicas: both, at once', { kind: 'DaemonSet', replicas: 3 }, [
      { path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload media/qbittorrent is a DaemonSet: it runs a pod on every node it fits, and each would take the one fixed VXLAN address; ${sts('qbittorrent')}` },
      { path: 'route.replicas', code: 'two-pods', message: 'the port-forwarding workload media/qbittorrent has 3 replicas: they would all take the one fixed VXLAN address and one forwarded port; set replicas to 1' },
    ]],
    ['replicas known only at deploy time (a Pulumi Output)', { replicas: { apply: () => 1 } }, [{ path: 'route.replicas', code: 'type', message: 'expected the port-forwarding workload media/qbittorrent\'s spec.replicas as a plain whole number (0 or 1), received an object: a value known only at deploy time (a Pulumi Output) cannot be checked for a second pod' }]],
    ['ordinals.start that is no whole number', { ordinalsStart: -1 }, [{ path: 'route.ordinalsStart', code: 'type', message: 'expected the port-forwarding workload media/qbittorrent\'s spec.ordinals.start as a plain whole number, received -1: its init container lets only the pod of that ordinal start' }]],
    ['replicas that are no whole number', { replicas: 1.5 }, [{ path: 'route.replicas', code: 'type', message: 'expected the port-forwarding workload media/qbittorrent\'s spec.replicas as a plain whole number (0 or 1), received 1.5: a value known only at deploy time (a Pulumi Output) cannot be checked for a second pod' }]],
  ])('refuses a forwarded workload that can run two pods: %s', (_name, t, problems) => {
    expect(thrown(() => planRoute(qbit(), { ...target, ...t } as never))).toMatchObject({ problems });
  });

  it.each([
    ['a StatefulSet (replicas unset: 1)', {}],
    ['a StatefulSet of one replica', { replicas: 1 }],
    ['a StatefulSet scaled to 0', { replicas: 0 }],
  ])('accepts %s', (_name, t) => {
    expect(planRoute(qbit(), { ...target, ...t }).objects.map((o) => o.metadata.name)).toEqual(['qbittorrent-vpn-route', 'qbittorrent-vpn-port-sync', 'qbittorrent-vpn-kill-switch']);
  });

  it('refuses only the forwarded workload: another Deployment or DaemonSet of the gateway is routed as before', () => {
    for (const kind of ['Deployment', 'DaemonSet'] as const) {
      expect(planRoute(qbit(), { ...target, name: 'sonarr', podLabels: { app: 'sonarr' }, kind, replicas: 3 }).objects.map((o) => o.metadata.name)).toEqual(['sonarr-vpn-route', 'sonarr-vpn-kill-switch']);
    }
    // Control: the same Deployment named as the forwarded workload is refused.
    expect(() => planRoute(qbit({ workload: 'sonarr' }), { ...target, name: 'sonarr', podLabels: { app: 'sonarr' }, kind: 'Deployment' })).toThrow('route.kind: the port-forwarding workload media/sonarr is a Deployment');
  });
});

describe('port forwarding to an app: what is rendered', () => {
  const gw = planVpnGateway(qbit());
  const deployment = gw.objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
  const gluetun = deployment.spec!.template.spec!.containers.find((c) => c.name === 'gluetun')!;
  const env = Object.fromEntries(gluetun.env!.map((e) => [e.name, e.value]));

  it('DNATs the forwarded port to the same port on the workload, and binds the control server to the VXLAN address', () => {
    // The DNAT itself: test/render/port-forward-up.test.ts runs the up command.
    expect(env.HTTP_CONTROL_SERVER_ADDRESS).toBe('172.16.0.1:8000');
    expect(env.HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH).toBe('/run/gluetun-auth/config.toml');
    const post = (gw.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['post-rules.txt'];
    expect(post).toContain('iptables -t nat -I POSTROUTING 1 -o vxlan0 -j RETURN\niptables -I INPUT 1 -i vxlan0 -p tcp --dport 8000 ! -s 172.16.0.5 -j DROP\n');
  });

  it.each(['qbittorrent', 'slskd', 'command'])('turns off gluetun\'s per-request control-server log with app %s (slskd polls twice every 2.5 s)', (app) => {
    const pf = app === 'command' ? { app, command: 'true' } : { app };
    const d = planVpnGateway(qbit(pf)).objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
    const g = d.spec!.template.spec!.containers.find((c) => c.name === 'gluetun')!;
    expect(g.env).toContainEqual({ name: 'HTTP_CONTROL_SERVER_LOG', value: 'off' });
  });

  it('leaves gluetun\'s control-server log at its default without port forwarding to an app', () => {
    expect(env.HTTP_CONTROL_SERVER_LOG).toBe('off');
    const d = planVpnGateway({ ...qbit(), portForwarding: undefined }).objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
    expect(d.spec!.template.spec!.containers.find((c) => c.name === 'gluetun')!.env!.map((e) => e.name)).not.toContain('HTTP_CONTROL_SERVER_LOG');
  });

  it('makes no claim for ProtonVPN, which gluetun keeps no port-forwarding state for; a stateClaim is refused with the reason', () => {
    expect(gw.objects.map((o) => o.kind)).not.toContain('PersistentVolumeClaim');
    expect(gluetun.volumeMounts!.map((m) => m.mountPath)).not.toContain('/gluetun');
    expect(deployment.spec!.template.spec!.volumes!.map((v) => v.name)).not.toContain('gluetun-state');
    expect(validateVpnGateway(qbit({ stateClaim: { storageClassName: 'local-path' } }))).toEqual([{ path: 'portForwarding.stateClaim', code: 'forbidden', message: 'gluetun keeps no port-forwarding state for protonvpn (only private internet access keeps its port, in /gluetun/piaportforward.json): remove stateClaim; no claim is made' }]);
  });

  describe('private internet access: /gluetun persisted (piaportforward.json)', () => {
    const stateOf = (p: VpnGatewayProps) => {
      const plan = planVpnGateway(p);
      const d = plan.objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
      return {
        claim: plan.objects.find((o) => o.kind === 'PersistentVolumeClaim') as unknown as { metadata: { name: string }; spec: Record<string, unknown> } | undefined,
        mount: d.spec!.template.spec!.containers.find((c) => c.name === 'gluetun')!.volumeMounts!.find((m) => m.mountPath === '/gluetun'),
        volume: d.spec!.template.spec!.volumes!.find((v) => v.name === 'gluetun-state'),
        warnings: plan.warnings,
      };
    };
    const pia = (claim?: Record<string, unknown>): VpnGatewayProps => {
      const base = gatewayFor('private internet access');
      return { ...base, portForwarding: { ...base.portForwarding, ...(claim ? { stateClaim: claim } : {}) } } as VpnGatewayProps;
    };
    const noClassWarning = { path: 'portForwarding.stateClaim.storageClassName', code: 'default-storage-class', message: 'the claim for gluetun\'s /gluetun (PIA keeps its forwarded port there) names no storage class: it binds only where the cluster has a default StorageClass; k0s and kubeadm install none, and there the claim stays Pending and the gateway never starts. Set storageClassName (kubectl get storageclass) or existingClaim' };

    it.each<[string, VpnGatewayProps, object | undefined, object[]]>([
      ['the default: a claim of the cluster\'s default class, and a warning', pia(), { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } }, [noClassWarning]],
      ['a storage class of yours: no warning', pia({ storageClassName: 'local-path', size: '16Mi' }), { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } }, storageClassName: 'local-path' }, []],
      ['PIA over custom WireGuard', gatewayFor('custom'), { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } }, [noClassWarning]],
    ])('%s', (_n, p, spec, warnings) => {
      const s = stateOf(p);
      expect(s.claim!.spec).toEqual(spec);
      expect(s.mount).toEqual({ name: 'gluetun-state', mountPath: '/gluetun' });
      expect(s.volume).toEqual({ name: 'gluetun-state', persistentVolumeClaim: { claimName: s.claim!.metadata.name } });
      expect(s.warnings).toEqual(warnings);
    });

    it('an existing claim of yours: mounted, none created, no warning', () => {
      const s = stateOf(pia({ existingClaim: 'gluetun-data' }));
      expect(s.claim).toBeUndefined();
      expect(s.volume).toEqual({ name: 'gluetun-state', persistentVolumeClaim: { claimName: 'gluetun-data' } });
      expect(s.warnings).toEqual([]);
    });
  });

  it('gives the StatefulSet the nat.conf key client_init.sh cuts from its pod name, no hostname of its own, and adds the port-sync sidecar', () => {
    const sts = planRoute(qbit({ workload: 'my-qbit' }), { ...target, name: 'my-qbit' });
    const lookup = 'my-qbit-0'.split('-')[0]; // client_init.sh: hostname | cut -d'-' -f1, hostname = pod name
    expect((sts.objects[0] as unknown as { data: Record<string, string> }).data['nat.conf']).toContain(`\n${lookup} 5\n`);
    expect(applyRoute({ containers: [{ name: 'qbittorrent', image: 'q' }] }, sts).hostname).toBeUndefined();
    expect(sts.extraContainers.map((c) => c.name)).toEqual(['vpn-port-sync']);
    expect(JSON.stringify(sts)).not.toMatch(/"name":"[A-Z_]*(KEY|PASSWORD)","value"/);
  });
});

describe('port forwarding: the sidecar\'s mounts', () => {
  // The API server refuses a pod whose volumeMount names no volume of the pod (spec.containers[].volumeMounts[].name);
  // the sidecar's volumes are the ones planRoute adds to the workload, and its script is run from its own mount.
  it('mounts only volumes the route adds, the script\'s ConfigMap where its command runs it', () => {
    const route = planRoute(qbit({ workload: 'my-qbit' }), { ...target, name: 'my-qbit' });
    const sync = route.extraContainers.find((c) => c.name === 'vpn-port-sync')!;
    const volumes = new Map(route.extraVolumes.map((v) => [v.name, v]));
    for (const m of sync.volumeMounts!) expect(volumes.has(m.name)).toBe(true);
    expect(sync.volumeMounts!.map((m) => m.mountPath).sort()).toEqual(['/port-sync', '/run/port-sync-secrets', '/tmp']);
    const script = sync.volumeMounts!.find((m) => m.mountPath === '/port-sync')!;
    expect(sync.command).toEqual(['/bin/sh', '/port-sync/port-sync.sh']);
    expect(volumes.get(script.name)!.configMap).toBeDefined();
    const secrets = sync.volumeMounts!.find((m) => m.mountPath === '/run/port-sync-secrets')!;
    expect(volumes.get(secrets.name)!.projected).toBeDefined();
    const tmp = sync.volumeMounts!.find((m) => m.mountPath === '/tmp')!;
    expect(volumes.get(tmp.name)!.emptyDir).toEqual({ medium: 'Memory', sizeLimit: '4Mi' });
  });

  it('runs the sidecar as nobody on a read-only root filesystem, writing only to its in-memory /tmp', () => {
    const route = planRoute(qbit({ workload: 'my-qbit' }), { ...target, name: 'my-qbit' });
    const sync = route.extraContainers.find((c) => c.name === 'vpn-port-sync')!;
    expect(sync.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 65534, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    // Its state (WORK, default /tmp/port-sync in PORT_SYNC_SCRIPT) and its metrics file are on the writable emptyDir.
    expect(PORT_SYNC_SCRIPT).toContain('WORK=${WORK:-/tmp/port-sync}');
    expect(sync.env).toContainEqual({ name: 'METRICS_FILE', value: '/tmp/port-sync/metrics' });
    expect(sync.volumeMounts!.filter((m) => !m.readOnly).map((m) => m.mountPath)).toEqual(['/tmp']);
  });

  // The script reads every secret from a file (PORT_SYNC_SCRIPT: secret_to "$GLUETUN_API_KEY_FILE" …; set -u stops it
  // on an unset one): each *_FILE variable must name the file the projected volume writes for that Secret's key.
  it.each<[string, Record<string, unknown>, Record<string, [string, string]>]>([
    ['a login', { appCredentialsSecret: { name: 'qbit-login' } }, { GLUETUN_API_KEY_FILE: ['gluetun-control', 'key'], APP_USERNAME_FILE: ['qbit-login', 'username'], APP_PASSWORD_FILE: ['qbit-login', 'password'] }],
    ['an API key', { appApiKeySecret: { name: 'qbit-api' } }, { GLUETUN_API_KEY_FILE: ['gluetun-control', 'key'], APP_API_KEY_FILE: ['qbit-api', 'api-key'] }],
  ])('points the script at the file each secret is mounted as (gluetun\'s API key and qBittorrent with %s)', (_name, pf, files) => {
    const route = planRoute(qbit({ workload: 'my-qbit', controlApiKeySecret: { name: 'gluetun-control', key: 'key' }, ...pf }), { ...target, name: 'my-qbit' });
    const sync = route.extraContainers.find((c) => c.name === 'vpn-port-sync')!;
    const mount = sync.volumeMounts!.find((m) => m.mountPath === '/run/port-sync-secrets')!;
    const sources = route.extraVolumes.find((v) => v.name === mount.name)!.projected!.sources!;
    const fileOf = ([secret, key]: [string, string]) => `${mount.mountPath}/${sources.find((s) => s.secret?.name === secret)!.secret!.items!.find((i) => i.key === key)!.path}`;
    const fileVars = Object.fromEntries(sync.env!.filter((e) => e.name.endsWith('_FILE') && e.name !== 'METRICS_FILE').map((e) => [e.name, e.value]));
    expect(fileVars).toEqual(Object.fromEntries(Object.entries(files).map(([name, ref]) => [name, fileOf(ref)])));
  });
});

describe('port forwarding to Deluge: the sidecar', () => {
  it('reaches the Web UI on 8112 and mounts only the password (Deluge has no username)', () => {
    const route = planRoute(qbit({ app: 'deluge', workload: 'deluge', appCredentialsSecret: { name: 'deluge-web' } }), { ...target, name: 'deluge' });
    const sync = route.extraContainers.find((c) => c.name === 'vpn-port-sync')!;
    const env = Object.fromEntries(sync.env!.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ APP: 'deluge', APP_URL: 'http://127.0.0.1:8112', APP_PASSWORD_FILE: '/run/port-sync-secrets/app-password' });
    expect(env.APP_USERNAME_FILE).toBeUndefined();
    const secrets = route.extraVolumes.find((v) => v.name === 'vpn-port-sync-secrets')!.projected!.sources!;
    expect(secrets).toContainEqual({ secret: { name: 'deluge-web', items: [{ key: 'password', path: 'app-password' }] } });
  });
});

describe('port forwarding to slskd: its own SLSKD_VPN_* integration', () => {
  const slskd = (pf: Record<string, unknown> = {}) => qbit({ app: 'slskd', workload: 'slskd', ...pf });
  const slskdTarget = { ...target, name: 'slskd', podLabels: { app: 'slskd' } };
  const pod = { containers: [{ name: 'slskd', image: 'slskd/slskd:0.26.0', env: [{ name: 'SLSKD_REMOTE_CONFIGURATION', value: 'true' }] }, { name: 'exporter', image: 'e' }] };

  it('sets slskd\'s VPN environment on its container, the API key from the Secret, and adds no port-sync sidecar', () => {
    const route = planRoute(slskd({ controlApiKeySecret: { name: 'gluetun-control', key: 'key' }, syncPeriodSeconds: 5 }), slskdTarget);
    expect(route.extraContainers).toEqual([]);
    expect(route.objects.some((o) => o.metadata.name === 'slskd-vpn-port-sync')).toBe(false);
    const spec = applyRoute(pod, route);
    expect(spec.containers.map((c) => c.name)).toEqual(['slskd', 'exporter', 'vpn-route-sidecar']);
    expect(spec.containers[0].env).toEqual([
      { name: 'SLSKD_REMOTE_CONFIGURATION', value: 'true' },
      { name: 'SLSKD_VPN', value: 'true' },
      { name: 'SLSKD_VPN_PORT_FORWARDING', value: 'true' },
      { name: 'SLSKD_VPN_GLUETUN_URL', value: 'http://172.16.0.1:8000' },
      { name: 'SLSKD_VPN_GLUETUN_API_KEY', valueFrom: { secretKeyRef: { name: 'gluetun-control', key: 'key' } } },
      { name: 'SLSKD_VPN_POLLING_INTERVAL', value: '5000' },
    ]);
    expect(spec.containers[1].env).toBeUndefined();
    // slskd's own default polling interval (2.5 s) unless a period is given.
    expect(planRoute(slskd(), slskdTarget).appEnv!.env.map((e) => e.name)).not.toContain('SLSKD_VPN_POLLING_INTERVAL');
  });

  it('puts the environment on the container appContainer names', () => {
    const spec = applyRoute({ containers: [{ name: 'sidecar', image: 's' }, { name: 'slskd', image: 'slskd/slskd' }] }, planRoute(slskd({ appContainer: 'slskd' }), slskdTarget));
    expect(spec.containers.map((c) => (c.env ?? []).length)).toEqual([0, 4, 0]);
  });

  it.each<[string, Record<string, unknown>, object, { path: string; code: string; message: string }]>([
    ['a container the pod does not have', { appContainer: 'soulseek' }, pod, { path: 'portForwarding.appContainer', code: 'container', message: 'the routed workload has no container "soulseek" (it has "slskd", "exporter"): name the container that runs slskd' }],
    ['a variable the container already sets', {}, { containers: [{ name: 'slskd', env: [{ name: 'SLSKD_VPN', value: 'false' }, { name: 'SLSKD_VPN_GLUETUN_API_KEY', value: 'x' }] }] }, { path: 'spec.containers[0].env', code: 'conflict', message: 'the container "slskd" already sets SLSKD_VPN, SLSKD_VPN_GLUETUN_API_KEY: remove them, the gateway sets slskd\'s VPN integration (the API key from portForwarding.controlApiKeySecret)' }],
  ])('refuses %s', (_name, pf, spec, problem) => {
    expect(thrown(() => applyRoute(spec as never, planRoute(slskd(pf), slskdTarget)))).toMatchObject({ problems: [problem] });
  });

  it('has no port-forwarding alerts (no sidecar serves the metrics)', () => {
    expect(thrown(() => portForwardAlertGroups(slskd()))).toMatchObject({ problems: [{ path: 'portForwarding.app', code: 'no-metrics' }] });
  });
});

describeWithTools('gluetun\'s auth file, as the gateway\'s init container writes it', ['sh', 'python3'], () => {
  // The init script run by sh (paths moved into a tmpdir), its TOML read by Python's tomllib: the role's routes.
  const roleOf = (pf: Record<string, unknown>) => {
    const dir = tmpdir('tw-pf-auth-');
    fs.mkdirSync(path.join(dir, 'key'));
    fs.writeFileSync(path.join(dir, 'key', 'api-key'), 'k3y-abc');
    const init = (planVpnGateway(qbit(pf)).objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment).spec!.template.spec!.initContainers!.find((c) => c.name === 'gluetun-auth')!;
    const script = init.command![2].replace(/\/run\/control-api-key/g, path.join(dir, 'key')).replace(/\/run\/gluetun-auth/g, dir);
    // Its values come by the container's environment, as the kubelet sets it.
    expect(run('sh', ['-c', script], { env: envOf(init) }).status).toBe(0);
    const r = run('python3', ['-c', 'import tomllib,json,sys; print(json.dumps(tomllib.load(open(sys.argv[1],"rb"))["roles"]))', path.join(dir, 'config.toml')]);
    return JSON.parse(r.stdout) as unknown[];
  };

  it.each<[string, Record<string, unknown>, string[]]>([
    ['port-sync (qBittorrent)', {}, ['GET /v1/portforward']],
    ['slskd', { app: 'slskd', workload: 'slskd' }, ['GET /v1/publicip/ip', 'GET /v1/portforward']],
  ])('grants %s only the routes it calls', (_name, pf, routes) => {
    expect(roleOf(pf)).toEqual([{ name: expect.any(String), routes, auth: 'apikey', apikey: 'k3y-abc' }]);
  });
});

describeWithTools('the port-forwarding alerts under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-pf-prom-');
  const groups = portForwardAlertGroups(qbit());
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const labels = 'app="qbittorrent", namespace="media", pod="qbittorrent-0"';
  // Each timeline has a second pod of the same app and namespace in another state (the control): its series must
  // neither raise nor silence qbittorrent-0's alert (promtool's exp_alerts is the whole set that fires).
  const series = (fwd: string, app: string, pod = 'qbittorrent-0') => [
    { series: `tunnelwright_port_forward_forwarded_port{app="qbittorrent", namespace="media", pod="${pod}"}`, values: fwd },
    { series: `tunnelwright_port_forward_app_listen_port{app="qbittorrent", namespace="media", pod="${pod}"}`, values: app },
  ];
  const rule = (name: string) => (groups[0].rules.find((r) => r.alert === name) as { labels: Record<string, string>; annotations: Record<string, string> });
  const fired = (name: string, pod = 'qbittorrent-0') => [{ exp_labels: { ...rule(name).labels, app: 'qbittorrent', namespace: 'media', pod }, exp_annotations: { summary: rule(name).annotations.summary, description: rule(name).annotations.description.replace('{{ $labels.namespace }}/{{ $labels.pod }}', `media/${pod}`), runbook: rule(name).annotations.runbook } }];
  const tests = [
    // A reconnect: the port changes at 10m and the app follows within a minute: silent. The control keeps the old
    // port: it alone fires, once its mismatch lasted 5m.
    {
      name: 'a reconnect the sidecar follows',
      input_series: [...series('41234x10 42345x20', '41234x11 42345x19'), ...series('41234x10 42345x20', '41234x30', 'qbittorrent-1')],
      alert_rule_test: [{ eval_time: '12m', alertname: 'VPNForwardedPortNotListening', exp_alerts: [] }, { eval_time: '16m', alertname: 'VPNForwardedPortNotListening', exp_alerts: fired('VPNForwardedPortNotListening', 'qbittorrent-1') }],
    },
    // The app stays on the old port: fires once the mismatch lasted 5m; the control followed: silent.
    {
      name: 'the app keeps the old port',
      input_series: [...series('41234x10 42345x20', '41234x30'), ...series('41234x10 42345x20', '41234x11 42345x19', 'qbittorrent-1')],
      alert_rule_test: [{ eval_time: '14m', alertname: 'VPNForwardedPortNotListening', exp_alerts: [] }, { eval_time: '16m', alertname: 'VPNForwardedPortNotListening', exp_alerts: fired('VPNForwardedPortNotListening') }],
    },
    // No port at all: not a mismatch; VPNNoForwardedPort after 15m. The control has its port: silent.
    {
      name: 'no forwarded port',
      input_series: [...series('0x30', '6881x30'), ...series('41234x30', '41234x30', 'qbittorrent-1')],
      alert_rule_test: [{ eval_time: '20m', alertname: 'VPNForwardedPortNotListening', exp_alerts: [] }, { eval_time: '20m', alertname: 'VPNNoForwardedPort', exp_alerts: fired('VPNNoForwardedPort') }],
    },
    // Credentials refused on qbittorrent-0 from 3m; qbittorrent-1 (the control) logs in: only qbittorrent-0 fires, after 1m.
    {
      name: 'a refused login',
      input_series: [
        { series: `tunnelwright_port_forward_login_refused{${labels}}`, values: '0x2 1x20' },
        { series: 'tunnelwright_port_forward_login_refused{app="qbittorrent", namespace="media", pod="qbittorrent-1"}', values: '0x22' },
      ],
      alert_rule_test: [{ eval_time: '3m', alertname: 'VPNPortSyncLoginRefused', exp_alerts: [] }, { eval_time: '5m', alertname: 'VPNPortSyncLoginRefused', exp_alerts: fired('VPNPortSyncLoginRefused') }],
    },
    // qBittorrent bound to eth0 on qbittorrent-0 from 3m (port-sync's app_bound_elsewhere); qbittorrent-1 (the control)
    // is bound to any interface: only qbittorrent-0 fires, after 1m, and not after the binding is undone at 10m.
    {
      name: 'qBittorrent bound to one interface',
      input_series: [
        { series: `tunnelwright_port_forward_app_bound_elsewhere{${labels}}`, values: '0x2 1x7 0x10' },
        { series: 'tunnelwright_port_forward_app_bound_elsewhere{app="qbittorrent", namespace="media", pod="qbittorrent-1"}', values: '0x20' },
      ],
      alert_rule_test: [
        { eval_time: '3m', alertname: 'VPNForwardedPortAppBoundElsewhere', exp_alerts: [] },
        { eval_time: '5m', alertname: 'VPNForwardedPortAppBoundElsewhere', exp_alerts: fired('VPNForwardedPortAppBoundElsewhere') },
        { eval_time: '12m', alertname: 'VPNForwardedPortAppBoundElsewhere', exp_alerts: [] },
      ],
    },
    // Scraped, then not (the sidecar gone, the PodMonitor deleted): fires 10m + 5m after the last sample; a series of
    // another namespace (the control) does not keep it quiet. While scraped: silent.
    {
      name: 'port-sync not scraped',
      input_series: [
        { series: `tunnelwright_port_forward_forwarded_port{${labels}}`, values: '41234x10' },
        { series: 'tunnelwright_port_forward_forwarded_port{app="qbittorrent", namespace="other", pod="qbittorrent-0"}', values: '41234x40' },
      ],
      alert_rule_test: [
        { eval_time: '10m', alertname: 'VPNPortSyncAbsent', exp_alerts: [] },
        { eval_time: '24m', alertname: 'VPNPortSyncAbsent', exp_alerts: [] },
        { eval_time: '27m', alertname: 'VPNPortSyncAbsent', exp_alerts: [{ exp_labels: { ...rule('VPNPortSyncAbsent').labels, namespace: 'media' }, exp_annotations: { ...rule('VPNPortSyncAbsent').annotations } }] },
      ],
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('promtool check rules accepts them', () => {
    const r = run('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(r.output).toBe(`Checking ${path.join(dir, 'rules.yaml')}\n  SUCCESS: 5 rules found\n\n`);
  });

  it('promtool test rules: silent through a reconnect, fires when the app keeps the old port, no port is forwarded or the login is refused', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });
});

describeWithTools('the port-forwarding alerts for app "command" under promtool', ['promtool'], () => {
  // port-sync cannot read a command-driven app's port: app_listen_port is the port the command last succeeded with (0:
  // none yet). A command that keeps failing (or is stopped by its timeout) leaves it behind the forwarded port.
  const dir = tmpdir('tw-pf-prom-cmd-');
  const command = portForwardAlertGroups(qbit({ app: 'command', command: 'echo "$PORT" > /shared/port' }));
  fs.writeFileSync(path.join(dir, 'command.yaml'), stringify({ groups: command }));
  // Each timeline beside a second pod (soulseek-1, the control) whose command follows every port: it never fires and
  // never silences soulseek-0.
  const one = (fwd: string, app: string, pod: string) => [
    { series: `tunnelwright_port_forward_forwarded_port{app="command", namespace="media", pod="${pod}"}`, values: fwd },
    { series: `tunnelwright_port_forward_app_listen_port{app="command", namespace="media", pod="${pod}"}`, values: app },
  ];
  const series = (fwd: string, app: string) => [...one(fwd, app, 'soulseek-0'), ...one('41234x10 42345x20', '41234x11 42345x19', 'soulseek-1')];
  const firedFor = (name: string) => {
    const rule = command[0].rules.find((r) => r.alert === name) as { labels: Record<string, string>; annotations: Record<string, string> };
    return [{ exp_labels: { ...rule.labels, app: 'command', namespace: 'media', pod: 'soulseek-0' }, exp_annotations: { summary: rule.annotations.summary, description: rule.annotations.description.replace('{{ $labels.namespace }}/{{ $labels.pod }}', 'media/soulseek-0'), runbook: rule.annotations.runbook } }];
  };
  const testsFor = (failing: unknown[]) => stringify({
    rule_files: ['command.yaml'], evaluation_interval: '1m',
    tests: [
      // The metrics of port-sync's lab with COMMAND='exit 1': forwarded 51413, app_listen_port 0 (never succeeded).
      { interval: '1m', name: 'a command that never succeeds', input_series: series('51413x30', '0x30'), alert_rule_test: [{ eval_time: '4m', alertname: 'VPNForwardedPortCommandFailing', exp_alerts: [] }, { eval_time: '10m', alertname: 'VPNForwardedPortCommandFailing', exp_alerts: failing }] },
      // It succeeded at 41234, then fails at 42345 from 10m on: the metric keeps 41234.
      { interval: '1m', name: 'a command that fails after a reconnect', input_series: series('41234x10 42345x20', '41234x30'), alert_rule_test: [{ eval_time: '25m', alertname: 'VPNForwardedPortCommandFailing', exp_alerts: failing }] },
      // A reconnect the command follows within a minute, and no port at all: silent.
      { interval: '1m', name: 'a reconnect the command follows', input_series: series('41234x10 42345x20', '41234x11 42345x19'), alert_rule_test: [{ eval_time: '25m', alertname: 'VPNForwardedPortCommandFailing', exp_alerts: [] }] },
      {
        interval: '1m', name: 'no forwarded port', input_series: series('0x30', '0x30'),
        alert_rule_test: [{ eval_time: '20m', alertname: 'VPNForwardedPortCommandFailing', exp_alerts: [] }, { eval_time: '14m', alertname: 'VPNNoForwardedPort', exp_alerts: [] }, { eval_time: '20m', alertname: 'VPNNoForwardedPort', exp_alerts: firedFor('VPNNoForwardedPort') }],
      },
    ],
  });

  it('has VPNForwardedPortCommandFailing, VPNPortSyncAbsent and VPNNoForwardedPort: promtool check rules finds 3 rules', () => {
    expect(command[0].rules.map((r) => r.alert)).toEqual(['VPNForwardedPortCommandFailing', 'VPNPortSyncAbsent', 'VPNNoForwardedPort']);
    const r = run('promtool', ['check', 'rules', path.join(dir, 'command.yaml')]);
    expect(r.output).toBe(`Checking ${path.join(dir, 'command.yaml')}\n  SUCCESS: 3 rules found\n\n`);
  });

  it('promtool test rules: fires after 5m while the command keeps failing, silent through a reconnect it follows and with no port; control: expecting silence on the failure fails', () => {
    fs.writeFileSync(path.join(dir, 'command-tests.yaml'), testsFor(firedFor('VPNForwardedPortCommandFailing')));
    expect(run('promtool', ['test', 'rules', 'command-tests.yaml'], { cwd: dir }).output).toBe('Unit Testing:  command-tests.yaml\n  SUCCESS\n\n');
    fs.writeFileSync(path.join(dir, 'command-silent.yaml'), testsFor([]));
    expect(run('promtool', ['test', 'rules', 'command-silent.yaml'], { cwd: dir }).status).not.toBe(0);
  });
});

describeWithTools('port forwarding: only the StatefulSet\'s first pod takes the fixed VXLAN address', ['busybox', path.join(VENDOR_DIR, 'pod-gateway-v1.13.0', 'bin', 'client_init.sh')], () => {
  // What client_init.sh does with the pod's hostname and nat.conf (pod-gateway v1.13.0 bin/client_init.sh:42-44, :54),
  // its own lines, run by a stand-in for /bin/client_init.sh that prints the entry it found.
  const dir = tmpdir('tw-pf-init-');
  // Read when the tests run, not when jest collects them: a skipped describe's body still runs at collection.
  let lookup: string[] = [];
  beforeAll(() => {
    const vendor = fs.readFileSync(path.join(VENDOR_DIR, 'pod-gateway-v1.13.0', 'bin', 'client_init.sh'), 'utf8').split('\n');
    lookup = [vendor.find((l) => l.includes('HOSTNAME_REAL=$(hostname | cut'))!.trim(), vendor.find((l) => l.startsWith('NAT_ENTRY='))!.replace('/config/nat.conf', path.join(dir, 'nat.conf'))];
  });
  const initFor = (t: object) => planRoute(qbit(), { ...target, ...t }).initContainer;
  /** Runs a container's command, with its environment, as the pod hostnamed `hostname` would (busybox sh, `hostname` answered by a stub on PATH). */
  const runAs = (hostname: string, { command, env }: { command?: string[]; env?: { name: string; value?: string }[] }, natConf: string) => {
    fs.mkdirSync(path.join(dir, hostname, 'bin'), { recursive: true });
    fs.writeFileSync(path.join(dir, hostname, 'bin', 'hostname'), `#!/bin/sh\necho ${hostname}\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'client_init.sh'), `#!/bin/sh\n${lookup.join('\n')}\necho "took: $NAT_ENTRY"\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'nat.conf'), natConf);
    const [shell, flag, script] = command!.length === 1 ? ['/bin/sh', '-c', 'exec /bin/client_init.sh'] : command!;
    expect([shell, flag]).toEqual(['/bin/sh', '-c']);
    return run('busybox', ['sh', '-c', script.replace('/bin/client_init.sh', path.join(dir, 'client_init.sh'))], { env: { ...envOf({ env }), PATH: `${path.join(dir, hostname, 'bin')}:${process.env.PATH}`, KUBERNETES_SERVICE_HOST: '10.96.0.1' } });
  };
  const natConf = (planRoute(qbit(), target).objects[0] as unknown as { data: Record<string, string> }).data['nat.conf'];

  it('qbittorrent-0 runs client_init.sh and takes .5', () => {
    expect(natConf).toContain('\nqbittorrent 5\n');
    const r = runAs('qbittorrent-0', initFor({}), natConf);
    expect(r).toMatchObject({ status: 0, stdout: 'took: qbittorrent 5\n' });
  });

  it('qbittorrent-1 (kubectl scale, an HPA) exits 1 with the reason and never runs client_init.sh; control: without the check it takes .5', () => {
    const r = runAs('qbittorrent-1', initFor({}), natConf);
    expect(r).toEqual({ status: 1, stdout: '', stderr: 'vpn-route-init: this pod is qbittorrent-1, not qbittorrent-0: only qbittorrent-0 may take the forwarded workload\'s fixed VXLAN address (a second replica of the StatefulSet qbittorrent, from kubectl scale, an autoscaler or a replicas patch, would take it too); scale qbittorrent to 1\n', output: expect.any(String) });
    // Control: pod-gateway's own command, as routed before (and for workloads that forward nothing).
    expect(runAs('qbittorrent-1', { command: ['/bin/client_init.sh'] }, natConf)).toMatchObject({ status: 0, stdout: 'took: qbittorrent 5\n' });
  });

  it('with ordinals.start 3 only qbittorrent-3 starts; qbittorrent-0 is refused', () => {
    expect(runAs('qbittorrent-3', initFor({ ordinalsStart: 3 }), natConf)).toMatchObject({ status: 0, stdout: 'took: qbittorrent 5\n' });
    expect(runAs('qbittorrent-0', initFor({ ordinalsStart: 3 }), natConf)).toMatchObject({ status: 1, stdout: '' });
  });

  it.each<[string, string, number, string]>([
    ['the FQDN of qbittorrent-0 (setHostnameAsFQDN: true) runs client_init.sh (before: refused)', 'qbittorrent-0.qbittorrent.media.svc.cluster.local', 0, 'took: qbittorrent 5\n'],
    ['the FQDN of qbittorrent-1 is refused', 'qbittorrent-1.qbittorrent.media.svc.cluster.local', 1, ''],
    ['qbittorrent-0-1.fqdn is refused (only the first label counts, whole)', 'qbittorrent-0-1.qbittorrent.media.svc.cluster.local', 1, ''],
    ['qbittorrent-1.fqdn is refused', 'qbittorrent-1.fqdn', 1, ''],
  ])('hostname as FQDN: %s', (_n, hostname, status, stdout) => {
    expect(runAs(hostname, initFor({}), natConf)).toMatchObject({ status, stdout });
  });

  it('leaves a workload that forwards nothing with pod-gateway\'s own command', () => {
    expect(planRoute(qbit(), { ...target, name: 'sonarr', podLabels: { app: 'sonarr' } }).initContainer.command).toEqual(['/bin/client_init.sh']);
  });
});

describe('the port-forwarding alerts\' runbooks', () => {
  const runbooks = fs.readFileSync(path.resolve(__dirname, '../../docs/runbooks.md'), 'utf8');
  const headings = [...runbooks.matchAll(/^## (\S+)$/gm)].map((m) => m[1]);
  it.each(['qbittorrent', 'transmission', 'deluge', 'command'])('with app %s: every alert carries its runbook, links its entry in docs/runbooks.md, and that entry exists', (app) => {
    const pf = app === 'command' ? { app, command: 'true' } : { app, appCredentialsSecret: { name: 'c' } };
    const rules = portForwardAlertGroups(qbit(pf), { runbookUrl: 'https://example.org/runbooks' })[0].rules as { alert: string; annotations: Record<string, string> }[];
    expect(rules.length).toBeGreaterThanOrEqual(2);
    for (const r of rules) {
      expect(r.annotations.runbook).toMatch(/^1\. .+\n2\. .+/);
      expect(r.annotations.runbook_url).toBe(`https://example.org/runbooks#${r.alert.toLowerCase()}`);
      expect(headings).toContain(r.alert);
    }
    // Control: no runbookUrl, no link.
    expect((portForwardAlertGroups(qbit(pf))[0].rules as { annotations: Record<string, string> }[]).map((r) => r.annotations.runbook_url)).toEqual(rules.map(() => undefined));
  });
});
