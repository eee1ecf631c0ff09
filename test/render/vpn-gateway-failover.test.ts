import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { stringify } from 'yaml';
import { failoverAlertGroups, planVpnGateway, validateVpnGateway, VpnGatewayProps } from '../../src';
import { App, VpnGateway } from '../../src/cdk8s';
import { nordvpnGateway } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from '../system/tools';

type Obj = { kind: string; metadata: { name: string; namespace?: string }; spec?: any; rules?: any[] }; // eslint-disable-line @typescript-eslint/no-explicit-any

const standby = (extra: Partial<VpnGatewayProps> = {}): VpnGatewayProps => ({ ...nordvpnGateway(), standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-standby' } }, ...extra });
const objects = (p: VpnGatewayProps) => planVpnGateway(p).objects as unknown as Obj[];

describe('VpnGateway standby: refusals', () => {
  it.each([
    ['no key of its own', { standby: {} }, 'standby.wireguardPrivateKeySecret', 'required'],
    ['the active gateway\'s key', { standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' } } }, 'standby.wireguardPrivateKeySecret', 'shared-credential'],
    ['the active gateway\'s key, its key named', { standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard', key: 'private-key' } } }, 'standby.wireguardPrivateKeySecret', 'shared-credential'],
    ['a provider that assigns addresses per key, without the standby\'s', { vpnProvider: 'mullvad', serverCountries: undefined, wireguardAddresses: ['10.64.1.2/32'], standby: { wireguardPrivateKeySecret: { name: 'b' } } }, 'standby.wireguardAddresses', 'required'],
    ['the active key\'s preshared key, none for the standby', { wireguardPresharedKeySecret: { name: 'psk' }, standby: { wireguardPrivateKeySecret: { name: 'b' } } }, 'standby.wireguardPresharedKeySecret', 'required'],
    ['a lease shorter than three checks', { standby: { wireguardPrivateKeySecret: { name: 'b' }, leaseSeconds: 4 } }, 'standby.leaseSeconds', 'range'],
    ['a second probe URL with a space in it (the agent splits them on spaces)', { standby: { wireguardPrivateKeySecret: { name: 'b' }, probeUrl: ['http://1.1.1.1/', 'http://8.8.8.8/ x'] } }, 'standby.probeUrl[1]', 'url'],
    ['an empty list of probe URLs', { standby: { wireguardPrivateKeySecret: { name: 'b' }, probeUrl: [] } }, 'standby.probeUrl', 'too_small'],
    ['a probe that is not an http(s) URL', { standby: { wireguardPrivateKeySecret: { name: 'b' }, probeUrl: 'tcp://1.1.1.1:443' } }, 'standby.probeUrl', 'url'],
    ['a probe URL with a credential in it', { standby: { wireguardPrivateKeySecret: { name: 'b' }, probeUrl: 'https://probe:vgt-s3cret@check.example/' } }, 'standby.probeUrl', 'secret-value'],
    ['a probe URL with a token parameter', { standby: { wireguardPrivateKeySecret: { name: 'b' }, probeUrl: 'https://check.example/?token=vgt-s3cret' } }, 'standby.probeUrl', 'secret-value'],
  ])('refuses %s', (_, extra, at, code) => {
    const problems = validateVpnGateway({ ...nordvpnGateway(), ...extra });
    expect(problems.map((p) => p.path)).toContain(at);
    expect(problems.find((p) => p.path === at)!.code).toBe(code);
    // Each with what to do, and never the URL's credential.
    expect(problems.find((p) => p.path === at)!.message.length).toBeGreaterThan(20);
    expect(JSON.stringify(problems)).not.toContain('vgt-s3cret');
  });

  it.each([
    ['by default, to two operators\' resolvers in turn (one operator\'s outage is not a dead tunnel)', {}, 'http://1.1.1.1/ http://8.8.8.8/'],
    ['to the URL the user gives', { probeUrl: 'https://10.8.0.1/check' }, 'https://10.8.0.1/check'],
    ['to the URLs the user gives, in their order', { probeUrl: ['https://10.8.0.1/check', 'http://192.0.2.7/'] }, 'https://10.8.0.1/check http://192.0.2.7/'],
    ['never with probeUrl false (gluetun\'s health server only)', { probeUrl: false as const }, undefined],
  ])('each member\'s agent probes out of gluetun\'s tunnel interface %s', (_, extra, url) => {
    const p: VpnGatewayProps = { ...standby(), standby: { wireguardPrivateKeySecret: { name: 'b' }, ...extra } };
    expect(validateVpnGateway(p)).toEqual([]);
    for (const s of objects(p).filter((o) => o.kind === 'StatefulSet')) {
      const containers: { name: string; env: { name: string; value?: string }[] }[] = s.spec.template.spec.containers;
      const env = (c: string, name: string) => containers.find((x) => x.name === c)!.env.find((e) => e.name === name)?.value;
      expect(env('failover-agent', 'PROBE_URL')).toBe(url);
      // The interface is checked (it must exist and be up) with or without a probe.
      expect(env('failover-agent', 'PROBE_INTERFACE')).toBe(env('gluetun', 'VPN_INTERFACE'));
    }
  });

  it('refuses a standby with PIA port forwarding (a ReadWriteOnce claim two nodes cannot share)', () => {
    const pia: VpnGatewayProps = {
      ...nordvpnGateway(), vpnProvider: 'custom', vpnEndpointIp: '203.0.113.7', vpnEndpointPort: 1337, wireguardPublicKey: 'x'.repeat(43) + '=', wireguardAddresses: ['10.5.0.2/32'],
      serverNames: ['ch'], serverCountries: undefined, portForwarding: { provider: 'private internet access', credentialsSecret: { name: 'pia' } },
      standby: { wireguardPrivateKeySecret: { name: 'b' } },
    };
    expect(validateVpnGateway(pia).map((p) => p.code)).toContain('state-claim');
    // control: the same gateway without standby has no such problem
    expect(validateVpnGateway({ ...pia, standby: undefined }).map((p) => p.code)).not.toContain('state-claim');
  });

  it('control: with the standby\'s own addresses and preshared key, nothing is refused; the standby pod mounts its own', () => {
    const p: VpnGatewayProps = { ...nordvpnGateway(), vpnProvider: 'mullvad', serverCountries: undefined, wireguardAddresses: ['10.64.1.2/32'], wireguardPresharedKeySecret: { name: 'psk-a' }, standby: { wireguardPrivateKeySecret: { name: 'b' }, wireguardAddresses: ['10.64.7.9/32'], wireguardPresharedKeySecret: { name: 'psk-b' } } };
    expect(validateVpnGateway(p)).toEqual([]);
    const sts = objects(p).filter((o) => o.kind === 'StatefulSet');
    const env = sts.map((s) => s.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'WIREGUARD_ADDRESSES').value);
    expect(env).toEqual(['10.64.1.2/32', '10.64.7.9/32']);
    const psk = sts.map((s) => s.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'gluetun-secrets').projected.sources[1].secret.name);
    expect(psk).toEqual(['psk-a', 'psk-b']);
  });

  it('accepts the valid standby', () => {
    expect(validateVpnGateway(standby())).toEqual([]);
  });
});

/**
 * A warm OpenVPN standby keeps its tunnel up beside the holder's: with one login, an OpenVPN server that names sessions
 * by user (username-as-common-name) and has no duplicate-cn closes the older session at each new connect (OpenVPN
 * 2.6.22 src/openvpn/multi.c:1363 multi_delete_dup, called at :2548-2550; the netns lab counts the holder's failed
 * requests). So the standby's own login is required, and the active gateway's refused unless the user says the
 * provider allows several sessions on one login.
 */
describe('VpnGateway standby over OpenVPN: its own login', () => {
  const openvpn = (sb: Record<string, unknown>, extra: Partial<VpnGatewayProps> = {}): VpnGatewayProps => {
    const { wireguardPrivateKeySecret: _k, ...rest } = nordvpnGateway();
    return { ...rest, vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'nordvpn-openvpn' }, standby: sb as VpnGatewayProps['standby'], ...extra };
  };
  const wireguard = (sb: Record<string, unknown>): VpnGatewayProps => ({ ...nordvpnGateway(), standby: sb as VpnGatewayProps['standby'] });
  const codes = (p: VpnGatewayProps) => validateVpnGateway(p).map((x) => `${x.path} ${x.code}`);
  it.each<[string, VpnGatewayProps, string[]]>([
    ['no login of its own', openvpn({}), ['standby.openvpnCredentialsSecret required']],
    ['the active gateway\'s Secret', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn' } }), ['standby.openvpnCredentialsSecret shared-credential']],
    ['the active gateway\'s Secret and username key, another password key', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn', userKey: 'username', passwordKey: 'password-b' } }), ['standby.openvpnCredentialsSecret shared-credential']],
    ['control: the active gateway\'s Secret, another username key (a second login in it)', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn', userKey: 'username-b', passwordKey: 'password-b' } }), []],
    ['the active gateway\'s Secret, sharedOpenvpnLogin false', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn' }, sharedOpenvpnLogin: false }), ['standby.openvpnCredentialsSecret shared-credential']],
    ['a WireGuard key on an OpenVPN standby', openvpn({ openvpnCredentialsSecret: { name: 'o-b' }, wireguardPrivateKeySecret: { name: 'k' } }), ['standby.wireguardPrivateKeySecret forbidden']],
    ['an OpenVPN login on a WireGuard standby', wireguard({ wireguardPrivateKeySecret: { name: 'b' }, openvpnCredentialsSecret: { name: 'o-b' } }), ['standby.openvpnCredentialsSecret forbidden']],
    ['sharedOpenvpnLogin on a WireGuard standby', wireguard({ wireguardPrivateKeySecret: { name: 'b' }, sharedOpenvpnLogin: true }), ['standby.sharedOpenvpnLogin forbidden']],
    ['control: its own login', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn-b' } }), []],
    ['control: the active gateway\'s Secret with sharedOpenvpnLogin (the provider allows several sessions)', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn' }, sharedOpenvpnLogin: true }), []],
    ['control: the same Secret name on WireGuard is a key of its own kind (refused only as the active key)', wireguard({ wireguardPrivateKeySecret: { name: 'nordvpn-openvpn' } }), []],
    ['control: the active key on WireGuard is refused whatever sharedOpenvpnLogin says', wireguard({ wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' } }), ['standby.wireguardPrivateKeySecret shared-credential']],
  ])('%s', (_, props, expected) => {
    expect(codes(props)).toEqual(expected);
  });

  it('each refusal says what to do, in the user\'s words', () => {
    const [shared] = validateVpnGateway(openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn' } }));
    expect(shared.message).toContain('duplicate-cn');
    expect(shared.message).toContain('sharedOpenvpnLogin: true');
    const [required] = validateVpnGateway(openvpn({}));
    expect(required.message).toContain('a login of its own');
  });

  it('the standby pod mounts its own login as gluetun\'s OpenVPN files, the active pod the gateway\'s; nothing else differs', () => {
    const p = openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn-b', userKey: 'user', passwordKey: 'pass' } });
    const [a, b] = objects(p).filter((o) => o.kind === 'StatefulSet');
    const login = (s: Obj) => s.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'gluetun-secrets').projected.sources[0].secret;
    expect(login(a)).toEqual({ name: 'nordvpn-openvpn', items: [{ key: 'username', path: 'openvpn_user' }, { key: 'password', path: 'openvpn_password' }] });
    expect(login(b)).toEqual({ name: 'nordvpn-openvpn-b', items: [{ key: 'user', path: 'openvpn_user' }, { key: 'pass', path: 'openvpn_password' }] });
    // gluetun reads the same files in both pods; its interface (tun0, what the agent probes out of) is the same.
    const gluetun = (s: Obj) => s.spec.template.spec.containers.find((c: { name: string }) => c.name === 'gluetun');
    expect(gluetun(b).env).toEqual(gluetun(a).env);
    expect(gluetun(a).env).toEqual(expect.arrayContaining([{ name: 'OPENVPN_USER_SECRETFILE', value: expect.stringMatching(/openvpn_user$/) }, { name: 'VPN_INTERFACE', value: 'tun0' }]));
    const rest = (s: Obj) => JSON.stringify({ ...s, metadata: {}, spec: { ...s.spec, selector: {}, updateStrategy: {}, template: { ...s.spec.template, metadata: {}, spec: { ...s.spec.template.spec, volumes: s.spec.template.spec.volumes.filter((v: { name: string }) => v.name !== 'gluetun-secrets'), containers: s.spec.template.spec.containers.filter((c: { name: string }) => c.name !== 'failover-agent') } } } });
    expect(rest(b)).toBe(rest(a));
    // With the opt-in, both mount the gateway's Secret.
    const [sa, sb] = objects(openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn' }, sharedOpenvpnLogin: true })).filter((o) => o.kind === 'StatefulSet');
    expect(login(sb)).toEqual(login(sa));
  });

  it('cdk8s: the VpnGateway construct writes the plan\'s objects, -b with its own login; and refuses the gateway\'s Secret', () => {
    const p = openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn-b' } });
    const chart = new Chart(new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'vgf-cdk8s-')) }), 'vpn');
    new VpnGateway(chart, 'gateway', p);
    const written = chart.toJson() as Obj[];
    expect(written.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual(objects(p).map((o) => `${o.kind} ${o.metadata.name}`));
    const b = written.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'vpn-gateway-b')!;
    expect(b.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'gluetun-secrets').projected.sources[0].secret.name).toBe('nordvpn-openvpn-b');
    const other = new Chart(new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'vgf-cdk8s-')) }), 'vpn');
    expect(() => new VpnGateway(other, 'gateway', openvpn({ openvpnCredentialsSecret: { name: 'nordvpn-openvpn' } }))).toThrow(/standby\.openvpnCredentialsSecret/);
  });

  it('ProtonVPN port forwarding: the +pmp warning names the standby\'s login too; control: without standby it does not', () => {
    const proton = (sb?: Record<string, unknown>) => ({ ...openvpn(sb ?? {}), vpnProvider: 'protonvpn', portForwarding: { toPort: 6881, workload: 'qbittorrent', workloadNamespace: 'media' }, ...(sb ? {} : { standby: undefined }) }) as VpnGatewayProps;
    const warning = (p: VpnGatewayProps) => planVpnGateway(p).warnings.find((w) => w.code === 'protonvpn-openvpn-pmp')!.message;
    expect(warning(proton({ openvpnCredentialsSecret: { name: 'proton-b' } }))).toContain('standby.openvpnCredentialsSecret');
    expect(warning(proton())).not.toContain('standby');
  });
});

describe('VpnGateway standby: the plan', () => {
  const objs = objects(standby());
  const sts = objs.filter((o) => o.kind === 'StatefulSet');

  it('two StatefulSets of one pod, never on one node, each with its own key and the agent; no Deployment', () => {
    expect(objs.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual(expect.arrayContaining([
      'StatefulSet vpn-gateway-a', 'StatefulSet vpn-gateway-b', 'Lease vpn-gateway', 'ServiceAccount vpn-gateway-failover', 'Role vpn-gateway-failover', 'RoleBinding vpn-gateway-failover', 'PodDisruptionBudget vpn-gateway',
    ]));
    expect(objs.some((o) => o.kind === 'Deployment')).toBe(false);
    const keys = sts.map((s) => s.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'gluetun-secrets').projected.sources[0].secret.name);
    expect(keys).toEqual(['nordvpn-wireguard', 'nordvpn-wireguard-standby']);
    for (const s of sts) {
      expect(s.spec.replicas).toBe(1);
      const anti = s.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0];
      expect(anti.topologyKey).toBe('kubernetes.io/hostname');
      // The anti-affinity selects both members: it must match the other StatefulSet's pods.
      const other = sts.find((x) => x !== s)!;
      expect(Object.entries(anti.labelSelector.matchLabels).every(([k, v]) => other.spec.template.metadata.labels[k] === v)).toBe(true);
      const agent = s.spec.template.spec.containers.find((c: { name: string }) => c.name === 'failover-agent');
      expect(agent.securityContext.capabilities).toEqual({ drop: ['ALL'], add: ['NET_ADMIN'] });
      expect(agent.env.find((e: { name: string }) => e.name === 'PEER_POD').value).toBe(other.metadata.name + '-0');
    }
  });

  it('each pod is Ready by its agent\'s verdict; the holder that is not Ready leaves the clients\' DNS answer; a drain may evict a pod whose tunnel is down', () => {
    for (const s of sts) {
      const agent = s.spec.template.spec.containers.find((c: { name: string }) => c.name === 'failover-agent');
      const probe = agent.readinessProbe;
      expect(probe.exec.command.slice(0, 2)).toEqual(['/bin/sh', '-c']);
      // A healthy holder is not flipped by slow execs: three failures in a row, each allowed 5 s, at least 15 s.
      expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(5);
      expect(probe.timeoutSeconds).toBeLessThanOrEqual(probe.periodSeconds);
      expect(probe.periodSeconds * probe.failureThreshold).toBeGreaterThanOrEqual(15);
      // The verdict's directory, where both scripts read and write it (their default: the agent sets no STATE_DIR).
      expect(agent.volumeMounts.find((m: { name: string }) => m.name === 'failover-state').mountPath).toBe('/run/failover');
      expect(agent.env.map((e: { name: string }) => e.name)).not.toContain('STATE_DIR');
    }
    // Headless, the role's pod whether Ready or not: the label is the health decision, and a holder not Ready for
    // another reason (a kubelet restart, a container restart) stays the name's answer. Control: a gateway without
    // standby keeps readiness as its only decision.
    const svc = objs.find((o) => o.kind === 'Service')!;
    expect(svc.spec.clusterIP).toBe('None');
    expect(svc.spec.publishNotReadyAddresses).toBe(true);
    const alone = planVpnGateway(nordvpnGateway()).objects.find((o) => o.kind === 'Service') as unknown as { spec: { publishNotReadyAddresses?: boolean } };
    expect(alone.spec.publishNotReadyAddresses ?? false).toBe(false);
    const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget')!;
    expect(pdb.spec).toMatchObject({ minAvailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow' });
  });

  it('the Service selects only the pod labelled active; the Role names the one Lease and the two pods, and grants no create', () => {
    const svc = objs.find((o) => o.kind === 'Service')!;
    expect(svc.spec.selector['tunnelwright.io/role']).toBe('active');
    const role = objs.find((o) => o.kind === 'Role')!;
    expect(role.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['vpn-gateway'], verbs: ['get', 'update'] },
      { apiGroups: [''], resources: ['pods'], resourceNames: ['vpn-gateway-a-0', 'vpn-gateway-b-0'], verbs: ['patch'] },
    ]);
    for (const s of sts) expect(s.spec.template.spec.serviceAccountName).toBe('vpn-gateway-failover');
    const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget')!;
    expect(pdb.spec.minAvailable).toBe(1);
  });

  it('the emitted agent, run as its container runs it, calls the API at the kubelet\'s KUBERNETES_SERVICE_HOST:PORT (gluetun owns resolv.conf)', () => {
    const agent = sts[0].spec.template.spec.containers.find((c: { name: string }) => c.name === 'failover-agent');
    expect(agent.env.map((e: { name: string }) => e.name)).not.toContain('API_URL');
    if (spawnSync('busybox', ['true']).status !== 0) return;
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'vgf-emitted-'));
    const bin = path.join(d, 'bin');
    fs.mkdirSync(bin);
    for (const a of ['sh', 'cat', 'cut', 'sed', 'head', 'date', 'mkdir', 'mv', 'sleep', 'printf', 'echo', 'rm', 'kill', 'ip']) fs.symlinkSync('/usr/bin/busybox', path.join(bin, a));
    // curl: records its arguments, answers as for an unreachable server.
    fs.writeFileSync(path.join(bin, 'curl'), '#!/bin/sh\necho "$*" >>"$CURL_CALLS"\nprintf 000\nexit 7\n', { mode: 0o755 });
    const env: Record<string, string> = Object.fromEntries(agent.env.filter((e: { value?: string }) => e.value !== undefined).map((e: { name: string; value: string }) => [e.name, e.value]));
    const calls = path.join(d, 'curl.calls');
    const child = spawn('/usr/bin/busybox', ['sh', ...agent.command.slice(1)], {
      env: { ...env, PATH: bin, POD_NAME: 'vpn-gateway-a-0', STATE_DIR: path.join(d, 'state'), CURL_CALLS: calls, KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' },
      stdio: 'ignore',
    });
    try {
      const t0 = Date.now();
      while (!(fs.existsSync(calls) && fs.readFileSync(calls, 'utf8').includes('/leases/')) && Date.now() - t0 < 10_000) spawnSync('sleep', ['0.1']);
      const api = fs.readFileSync(calls, 'utf8').split('\n').filter((l) => l.includes('/api'));
      expect(api.length).toBeGreaterThan(0);
      for (const l of api) expect(l.split(' ').at(-1)).toMatch(/^https:\/\/10\.96\.0\.1:443\/api/);
    } finally {
      child.kill('SIGKILL');
      fs.rmSync(d, { recursive: true, force: true });
    }
  });

  it('the ServiceAccount token reaches the failover agent only: no automount, one projected token mounted by no other container', () => {
    type C = { name: string; volumeMounts?: { name: string; mountPath: string }[]; env?: { name: string; value?: string }[] };
    for (const s of sts) {
      const pod = s.spec.template.spec;
      expect(pod.automountServiceAccountToken).toBe(false);
      const tokenVolumes = pod.volumes.filter((v: { projected?: { sources: { serviceAccountToken?: unknown }[] } }) => v.projected?.sources.some((x) => x.serviceAccountToken)).map((v: { name: string }) => v.name);
      expect(tokenVolumes).toHaveLength(1);
      const all: C[] = [...(pod.initContainers ?? []), ...pod.containers];
      const mounting = all.filter((c) => (c.volumeMounts ?? []).some((m) => tokenVolumes.includes(m.name) || m.mountPath.startsWith('/var/run/secrets/kubernetes.io')));
      expect(mounting.map((c) => c.name)).toEqual(['failover-agent']);
      // The agent reads its token where the volume is mounted.
      const agent = mounting[0];
      const at = agent.volumeMounts!.find((m) => m.name === tokenVolumes[0])!.mountPath;
      expect(agent.env!.find((e) => e.name === 'SA_DIR')!.value).toBe(at);
    }
  });

  it('a change never replaces both members at once: -a rolls, -b only when its pod is deleted', () => {
    const strategy = Object.fromEntries(sts.map((s) => [s.metadata.name, s.spec.updateStrategy?.type ?? 'RollingUpdate']));
    expect(strategy).toEqual({ 'vpn-gateway-a': 'RollingUpdate', 'vpn-gateway-b': 'OnDelete' });
  });

  it('control: without standby, one Deployment and nothing of the failover', () => {
    const plain = objects(nordvpnGateway());
    expect(plain.filter((o) => ['Deployment', 'StatefulSet', 'Lease', 'Role', 'PodDisruptionBudget'].includes(o.kind)).map((o) => o.kind)).toEqual(['Deployment']);
  });

  it('cdk8s: the VpnGateway construct writes the same objects', () => {
    const chart = new Chart(new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'vgf-cdk8s-')) }), 'vpn');
    new VpnGateway(chart, 'gateway', standby());
    const kinds = (chart.toJson() as Obj[]).map((o) => `${o.kind} ${o.metadata.name}`);
    expect(kinds).toEqual(objs.map((o) => `${o.kind} ${o.metadata.name}`));
  });
});

describeWithTools('the failover alerts under promtool', ['promtool'], () => {
  const dir = tmpdir('vgf-prom-');
  const groups = failoverAlertGroups(standby());
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const rule = (name: string) => groups[0].rules.find((r) => r.alert === name) as { labels: Record<string, string>; annotations: Record<string, string> };
  const fired = (name: string, labels: Record<string, string>) => [{ exp_labels: { ...rule(name).labels, ...labels }, exp_annotations: rule(name).annotations }];
  // Series as kube-state-metrics names them (internal/store/lease.go, endpoint.go, pod.go); a second gateway in
  // another namespace ("other") is the control in each.
  const owner = (ns: string, holder: string, values: string) => ({ series: `kube_lease_owner{lease="vpn-gateway", namespace="${ns}", owner_kind="", owner_name="", lease_holder="${holder}"}`, values });
  const ready = (ns: string, pod: string, values: string) => ({ series: `kube_pod_status_ready{namespace="${ns}", pod="${pod}", uid="u-${pod}", condition="true"}`, values });
  // kube-state-metrics writes one series per condition value (internal/store/pod.go, kube_pod_status_ready: true, false,
  // unknown), the one that holds at 1: a pod not ready is condition="false" 1 and condition="true" 0.
  const readyAll = (ns: string, pod: string, trueValues: string, falseValues: string) => [
    ready(ns, pod, trueValues),
    { series: `kube_pod_status_ready{namespace="${ns}", pod="${pod}", uid="u-${pod}", condition="false"}`, values: falseValues },
    { series: `kube_pod_status_ready{namespace="${ns}", pod="${pod}", uid="u-${pod}", condition="unknown"}`, values: '0x30' },
  ];
  const address = (ns: string, ip: string, values: string) => ({ series: `kube_endpoint_address{namespace="${ns}", endpoint="vpn-gateway", port_protocol="UDP", port_number="4789", port_name="vxlan", ip="${ip}", ready="true"}`, values });
  const tests = [
    {
      name: 'the role moves from a to b at 5m; the other namespace keeps one holder',
      input_series: [owner('vpn-gateway', 'vpn-gateway-a-0', '1x4'), owner('vpn-gateway', 'vpn-gateway-b-0', '_x4 1x20'), owner('other', 'vpn-gateway-a-0', '1x25')],
      alert_rule_test: [
        { eval_time: '3m', alertname: 'VPNGatewayRoleMoved', exp_alerts: [] },
        { eval_time: '6m', alertname: 'VPNGatewayRoleMoved', exp_alerts: fired('VPNGatewayRoleMoved', { namespace: 'vpn-gateway', lease: 'vpn-gateway' }) },
        { eval_time: '24m', alertname: 'VPNGatewayRoleMoved', exp_alerts: [] },
      ],
    },
    {
      // The standby's agent verdict unhealthy (its tunnel interface gone while gluetun still answers 200): its pod is
      // not ready from 2m on, for good in this namespace; in the other, a standby not ready for 4 minutes only (a
      // reconnect shorter than standbyFor) and the holder ready throughout.
      name: 'the standby not ready from 2m on, condition series as kube-state-metrics writes them; a 4-minute gap in the other namespace',
      input_series: [
        ...readyAll('vpn-gateway', 'vpn-gateway-a-0', '1x30', '0x30'), ...readyAll('vpn-gateway', 'vpn-gateway-b-0', '1x2 0x28', '0x2 1x28'),
        ...readyAll('other', 'vpn-gateway-a-0', '1x30', '0x30'), ...readyAll('other', 'vpn-gateway-b-0', '1x2 0x3 1x24', '0x2 1x3 0x24'),
      ],
      alert_rule_test: [
        { eval_time: '11m', alertname: 'VPNGatewayNoHealthyStandby', exp_alerts: [] },
        { eval_time: '13m', alertname: 'VPNGatewayNoHealthyStandby', exp_alerts: fired('VPNGatewayNoHealthyStandby', { namespace: 'vpn-gateway' }) },
        { eval_time: '29m', alertname: 'VPNGatewayNoHealthyStandby', exp_alerts: fired('VPNGatewayNoHealthyStandby', { namespace: 'vpn-gateway' }) },
      ],
    },
    {
      name: 'b not ready from 2m on; both ready in the other namespace',
      input_series: [ready('vpn-gateway', 'vpn-gateway-a-0', '1x30'), ready('vpn-gateway', 'vpn-gateway-b-0', '1x2 0x28'), ready('other', 'vpn-gateway-a-0', '1x30'), ready('other', 'vpn-gateway-b-0', '1x30')],
      alert_rule_test: [
        { eval_time: '8m', alertname: 'VPNGatewayNoHealthyStandby', exp_alerts: [] },
        { eval_time: '13m', alertname: 'VPNGatewayNoHealthyStandby', exp_alerts: fired('VPNGatewayNoHealthyStandby', { namespace: 'vpn-gateway' }) },
      ],
    },
    {
      // _x3: no sample at 0-2m; stale: the address gone at 7m.
      name: 'two ready addresses behind the name from 3m to 6m; one in the other namespace',
      input_series: [address('vpn-gateway', '10.1.0.5', '1x10'), address('vpn-gateway', '10.1.0.9', '_x3 1x3 stale'), address('other', '10.1.0.7', '1x10')],
      alert_rule_test: [
        { eval_time: '3m', alertname: 'VPNGatewayTwoHolders', exp_alerts: [] },
        { eval_time: '5m', alertname: 'VPNGatewayTwoHolders', exp_alerts: fired('VPNGatewayTwoHolders', { namespace: 'vpn-gateway', endpoint: 'vpn-gateway' }) },
        { eval_time: '8m', alertname: 'VPNGatewayTwoHolders', exp_alerts: [] },
      ],
    },
    {
      name: 'renewed every minute until 5m, then not (renew time in seconds since the epoch, as time() at eval)',
      input_series: [{ series: 'kube_lease_renew_time{lease="vpn-gateway"}', values: '0+60x5 300x10' }, { series: 'kube_lease_renew_time{lease="another"}', values: '0+60x15' }],
      alert_rule_test: [
        { eval_time: '5m', alertname: 'VPNGatewayLeaseNotRenewed', exp_alerts: [] },
        { eval_time: '8m', alertname: 'VPNGatewayLeaseNotRenewed', exp_alerts: fired('VPNGatewayLeaseNotRenewed', { lease: 'vpn-gateway' }) },
      ],
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('promtool check rules accepts them', () => {
    const r = run('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(r.output).toBe(`Checking ${path.join(dir, 'rules.yaml')}\n  SUCCESS: 4 rules found\n\n`);
  });

  it('promtool test rules: each fires on its gateway only, and is silent before and after', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });

  it('refuses the alerts for a gateway without standby', () => {
    expect(() => failoverAlertGroups(nordvpnGateway())).toThrow(/standby/);
  });
});

describe('failover alerts for a gateway without standby', () => {
  it('are refused with the path and what to do; control: with standby they are made', () => {
    let thrown: unknown;
    try { failoverAlertGroups(nordvpnGateway()); } catch (e) { thrown = e; }
    expect((thrown as { problems?: { path: string; code: string; message: string }[] }).problems).toEqual([
      { path: 'standby', code: 'no-standby', message: 'failover alerts are for a gateway with standby: without one there is no Lease, no role and no second pod to watch' },
    ]);
    expect(failoverAlertGroups({ ...nordvpnGateway(), standby: { wireguardPrivateKeySecret: { name: 'b' } } }).flatMap((g) => g.rules).length).toBe(4);
  });
});
