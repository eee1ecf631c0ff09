import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiObject, Chart } from 'cdk8s';
import type { Container as IContainer, PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { applyRoute, planEgressProbe, planRoute, planVpnGateway, ValidationError } from '../../src';
import { App, VpnGateway } from '../../src/cdk8s';
import { checkPodSecurity, namespacePolicy, PodSecurityLevel, PodSecurityNeed, podSecurityNeeds, requiredLevel } from '../../src/model/pod-security';
import { gatewayProbe, nordvpnGateway } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';

const podOf = (objects: { kind: string; spec?: unknown }[]) => ((objects.find((o) => o.kind === 'Deployment') as { spec: { template: { spec: IPodSpec } } }).spec.template.spec);
const plain: IPodSpec = { containers: [{ name: 'app', image: 'nginx' }] };

/** A pod that meets the restricted level, its container changed by `fn`. */
function restrictedPod(fn: (c: IContainer) => void = () => undefined): IPodSpec {
  const c: IContainer = { name: 'app', image: 'nginx', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } };
  fn(c);
  return { securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } }, containers: [c] };
}

/** Each pod the library makes, the level it needs, and why. */
const pods: [string, IPodSpec, PodSecurityLevel, string][] = [
  ['the gateway', podOf(planVpnGateway(nordvpnGateway()).objects), 'privileged', 'container gateway-init is privileged'],
  ['a routed workload', applyRoute(plain, planRoute(nordvpnGateway(), { namespace: 'media', podLabels: { app: 'x' }, name: 'x' })), 'privileged', 'container vpn-route-init adds NET_ADMIN, NET_RAW'],
  ['the probe routed through a gateway', podOf(planEgressProbe(gatewayProbe()).objects), 'privileged', 'container vpn-route-init adds NET_ADMIN, NET_RAW'],
  ['the probe of an EgressSteering class', podOf(planEgressProbe({ ...gatewayProbe(), via: { egressSteering: {} } }).objects), 'restricted', 'it meets the restricted level'],
  ['a plain pod (runtime defaults)', plain, 'baseline', 'container app may run as root'],
  ['a pod on the host network', { ...plain, hostNetwork: true }, 'privileged', 'the pod shares a host namespace'],
  ['a restricted pod with a Localhost seccomp profile', { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } }, containers: [{ name: 'app', image: 'nginx', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }] }, 'restricted', 'it meets the restricted level'],
  ['a pod adding a baseline capability', { containers: [{ name: 'app', image: 'nginx', securityContext: { capabilities: { add: ['CHOWN', 'NET_BIND_SERVICE'] } } }] }, 'baseline', 'container app may run as root'],
  ['a pod adding it as CAP_CHOWN (the admission plugin compares names as written)', { containers: [{ name: 'app', image: 'nginx', securityContext: { capabilities: { add: ['CAP_CHOWN'] } } }] }, 'privileged', 'container app adds CAP_CHOWN'],
  ['a non-root pod that keeps its capabilities', { containers: [{ name: 'app', image: 'nginx', securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false } }] }, 'baseline', 'container app does not drop ALL capabilities'],
  // Each control of the Pod Security Standards the reader covers, one at a time: `restrictedPod` meets them all.
  ['a restricted pod (the control of the rows below)', restrictedPod(), 'restricted', 'it meets the restricted level'],
  ['a restricted pod adding NET_BIND_SERVICE (the one capability restricted allows)', restrictedPod((c) => { c.securityContext!.capabilities!.add = ['NET_BIND_SERVICE']; }), 'restricted', 'it meets the restricted level'],
  ['a pod with a host port', restrictedPod((c) => { c.ports = [{ containerPort: 80 }, { containerPort: 443, hostPort: 8443 }]; }), 'privileged', 'container app uses a host port'],
  ['a pod with container ports only', restrictedPod((c) => { c.ports = [{ containerPort: 80 }]; }), 'restricted', 'it meets the restricted level'],
  ['a pod sharing the host\'s PIDs', { ...restrictedPod(), hostPID: true }, 'privileged', 'the pod shares a host namespace'],
  ['a pod sharing the host\'s IPC', { ...restrictedPod(), hostIPC: true }, 'privileged', 'the pod shares a host namespace'],
  ['a pod with a hostPath volume', { ...restrictedPod(), volumes: [{ name: 'cache', emptyDir: {} }, { name: 'modules', hostPath: { path: '/lib/modules' } }] }, 'privileged', 'volume modules is a hostPath'],
  ['a pod with an emptyDir volume only', { ...restrictedPod(), volumes: [{ name: 'cache', emptyDir: {} }] }, 'restricted', 'it meets the restricted level'],
  ['a privileged init container', { ...restrictedPod(), initContainers: [{ name: 'setup', image: 'busybox', securityContext: { privileged: true } }] }, 'privileged', 'container setup is privileged'],
  ['a pod that runs as UID 0 unless its container says otherwise, and the container does', { ...restrictedPod((c) => { c.securityContext!.runAsUser = 1000; }), securityContext: { runAsNonRoot: true, runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } } }, 'restricted', 'it meets the restricted level'],
  ['a pod that runs as UID 0, its container silent', { ...restrictedPod(), securityContext: { runAsNonRoot: true, runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } } }, 'baseline', 'container app may run as root'],
  ['a non-root pod whose container runs as UID 0', restrictedPod((c) => { c.securityContext!.runAsUser = 0; }), 'baseline', 'container app may run as root'],
  ['a container that says runAsNonRoot: false over the pod\'s true', restrictedPod((c) => { c.securityContext!.runAsNonRoot = false; }), 'baseline', 'container app may run as root'],
  ['a container that leaves privilege escalation allowed', restrictedPod((c) => { delete c.securityContext!.allowPrivilegeEscalation; }), 'baseline', 'container app allows privilege escalation'],
  ['a restricted pod adding a baseline capability', restrictedPod((c) => { c.securityContext!.capabilities!.add = ['NET_BIND_SERVICE', 'CHOWN']; }), 'baseline', 'container app adds a capability'],
  ['a pod without a seccomp profile', { ...restrictedPod(), securityContext: { runAsNonRoot: true } }, 'baseline', 'container app sets no seccomp profile'],
  ['a pod whose seccomp profile is Unconfined', restrictedPod((c) => { c.securityContext!.seccompProfile = { type: 'Unconfined' }; }), 'baseline', 'container app sets no seccomp profile'],
];

describe('Pod Security: what each pod needs, against each level', () => {
  it.each(pods)('%s needs %s', (_what, spec, level, why) => {
    expect(requiredLevel(spec)).toEqual({ level, why });
  });

  const levels: PodSecurityLevel[] = ['privileged', 'baseline', 'restricted'];
  const matrix = pods.flatMap(([what, spec, need]) => levels.map((ns) => [what, ns, spec, levels.indexOf(ns) <= levels.indexOf(need)] as const));
  it.each(matrix)('%s in a namespace enforcing %s: admitted = %s', (what, ns, spec, admitted) => {
    const need = requiredLevel(spec);
    const { problems } = checkPodSecurity([{ namespace: 'media', what, need, at: 'c:route' }], new Map([['media', { 'pod-security.kubernetes.io/enforce': ns }]]));
    expect(problems.length === 0).toBe(admitted);
  });

  it('reads the labels the way the admission plugin does: unknown enforce is restricted, unknown audit/warn privileged, unknown version latest', () => {
    expect(namespacePolicy({
      'pod-security.kubernetes.io/enforce': 'Privileged', 'pod-security.kubernetes.io/enforce-version': 'v1.30',
      'pod-security.kubernetes.io/audit': 'strict', 'pod-security.kubernetes.io/warn': 'baseline', 'pod-security.kubernetes.io/warn-version': '1.30',
      'pod-security.kubernetes.io/audit-version': 'xv1.29',
    })).toEqual({
      enforce: { level: 'restricted', version: 'v1.30', invalid: 'Privileged' },
      audit: { level: 'privileged', version: 'latest', invalid: 'strict' },
      warn: { level: 'baseline', version: 'latest' },
    });
    expect(namespacePolicy({})).toEqual({});
  });

  it.each<[string | undefined, string]>([
    ['v1.30', 'v1.30'], ['v1.100', 'v1.100'], ['v1.0', 'v1.0'], ['latest', 'latest'], [undefined, 'latest'],
    ['v1.30x', 'latest'], ['v1.030', 'latest'], ['1.30', 'latest'],
  ])('reads an enforce-version label %j as %s', (label, version) => {
    const labels = { 'pod-security.kubernetes.io/enforce': 'baseline', ...(label === undefined ? {} : { 'pod-security.kubernetes.io/enforce-version': label }) };
    expect(namespacePolicy(labels).enforce).toEqual({ level: 'baseline', version });
  });
});

describe('VpnGateway and Pod Security at synth', () => {
  it('emits its namespace labelled for the level its pod needs, unless told not to', () => {
    const ns = planVpnGateway(nordvpnGateway()).objects[0];
    expect(ns).toEqual({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'vpn-gateway', labels: {
      'pod-security.kubernetes.io/enforce': 'privileged', 'pod-security.kubernetes.io/enforce-version': 'latest',
      'pod-security.kubernetes.io/audit': 'privileged', 'pod-security.kubernetes.io/warn': 'privileged', 'app.kubernetes.io/managed-by': 'tunnelwright',
    } } });
    expect(planVpnGateway({ ...nordvpnGateway(), createNamespace: false }).objects.some((o) => o.kind === 'Namespace')).toBe(false);
  });

  it.each([
    ['runtime', { capabilities: { add: ['NET_ADMIN'] } }, {}],
    ['privileged', { privileged: true }, {}],
    [{ resource: 'squat.ai/tun' }, { capabilities: { add: ['NET_ADMIN'] } }, { 'squat.ai/tun': '1' }],
  ] as const)('gets /dev/net/tun as chosen: %j', (tunDevice, securityContext, extra) => {
    const gluetun = podOf(planVpnGateway({ ...nordvpnGateway(), tunDevice }).objects).containers.find((c) => c.name === 'gluetun')!;
    expect(gluetun.securityContext).toEqual(securityContext);
    expect(gluetun.resources).toEqual({ requests: { cpu: '50m', memory: '256Mi', ...extra }, limits: { memory: '512Mi', ...extra } });
  });

  const synth = (nsLabels: Record<string, string> | undefined) => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-psa-'));
    const app = new App({ outdir });
    const chart = new Chart(app, 'media');
    if (nsLabels) new ApiObject(chart, 'media-ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'media', labels: nsLabels } });
    const gateway = new VpnGateway(chart, 'gateway', nordvpnGateway());
    gateway.route(new ApiObject(chart, 'qbittorrent', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'qbittorrent', namespace: 'media' }, spec: { selector: { matchLabels: { app: 'q' } }, template: { metadata: { labels: { app: 'q' } }, spec: plain } } }));
    return { app, outdir };
  };

  it('refuses, writing nothing, a namespace in the app whose enforced level rejects the routed workload, with the label to set', () => {
    const { app, outdir } = synth({ 'pod-security.kubernetes.io/enforce': 'baseline' });
    const error = thrown(() => app.synth());
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems).toEqual([{
      path: 'media/gateway:route(media/qbittorrent)',
      code: 'pod-security',
      message: 'namespace media enforces baseline, which rejects the routed Deployment media/qbittorrent (container vpn-route-init adds NET_ADMIN, NET_RAW): label it pod-security.kubernetes.io/enforce=privileged',
    }]);
    expect(fs.readdirSync(outdir)).toEqual([]);
  });

  it('admits it in a privileged namespace; warns with the level to set when the namespace is not in the app', () => {
    expect(synth({ 'pod-security.kubernetes.io/enforce': 'privileged' }).app.checkHosts()).toMatchObject({ problems: [], warnings: [] });
    const { warnings, problems } = synth(undefined).app.checkHosts();
    expect(problems).toEqual([]);
    expect(warnings.map((w) => `${w.path} ${w.code}`)).toEqual(['media/gateway:route(media/qbittorrent) pod-security']);
    expect(warnings[0].message).toContain('label it pod-security.kubernetes.io/enforce=privileged');
  });
});

describe('checkPodSecurity: each namespace state, with the label to set', () => {
  const need: PodSecurityNeed = { namespace: 'media', what: 'the routed Deployment media/qb', need: { level: 'privileged', why: 'container vpn-route-init adds NET_ADMIN, NET_RAW' }, at: 'media/gw:route(media/qb)' };
  const restricted: PodSecurityNeed = { ...need, what: 'the probe Deployment media/p', need: { level: 'restricted', why: 'it meets the restricted level' } };
  const ns = (labels?: Record<string, string>) => new Map(labels ? [['media', labels]] : []);
  const L = 'pod-security.kubernetes.io';
  it.each<[string, PodSecurityNeed, Map<string, Record<string, string>>, object[], object[]]>([
    ['not in the app', need, ns(), [], [{ path: need.at, code: 'pod-security', message: `namespace media is not in this app: it must admit the routed Deployment media/qb at Pod Security level privileged (container vpn-route-init adds NET_ADMIN, NET_RAW); label it ${L}/enforce=privileged` }]],
    ['not in the app, for a restricted pod', restricted, ns(), [], []],
    ['in the app without an enforce label', need, ns({}), [], [{ path: need.at, code: 'pod-security', message: `namespace media sets no enforce level: the cluster's default decides whether the routed Deployment media/qb is admitted (it needs privileged: container vpn-route-init adds NET_ADMIN, NET_RAW); label it ${L}/enforce=privileged` }]],
    ['in the app without an enforce label, for a restricted pod', restricted, ns({}), [], []],
    ['enforcing a level the admission plugin cannot read', need, ns({ [`${L}/enforce`]: 'Privileged' }), [{ path: need.at, code: 'pod-security', message: `namespace media enforces "Privileged", which the admission plugin reads as restricted, which rejects the routed Deployment media/qb (container vpn-route-init adds NET_ADMIN, NET_RAW): label it ${L}/enforce=privileged` }], []],
    ['enforcing privileged, warning and auditing at baseline', need, ns({ [`${L}/enforce`]: 'privileged', [`${L}/warn`]: 'baseline', [`${L}/audit`]: 'restricted' }), [], [
      { path: need.at, code: 'pod-security', message: `namespace media warns at baseline: the routed Deployment media/qb is admitted but every create warns (container vpn-route-init adds NET_ADMIN, NET_RAW); label it ${L}/warn=privileged` },
      { path: need.at, code: 'pod-security', message: `namespace media audits at restricted: the routed Deployment media/qb is admitted but every create is audited (container vpn-route-init adds NET_ADMIN, NET_RAW); label it ${L}/audit=privileged` },
    ]],
    ['enforcing, warning and auditing at privileged', need, ns({ [`${L}/enforce`]: 'privileged', [`${L}/warn`]: 'privileged', [`${L}/audit`]: 'privileged' }), [], []],
  ])('a namespace %s', (_name, n, namespaces, problems, warnings) => {
    expect(checkPodSecurity([n], namespaces)).toEqual({ problems, warnings });
  });
});

describe('podSecurityNeeds: the pods a plan makes', () => {
  it('takes each workload (here the gateway Deployment), none of the other objects', () => {
    const needs = podSecurityNeeds(planVpnGateway(nordvpnGateway()).objects, 'media/gateway');
    expect(needs.map((n) => ({ ...n, need: n.need.level }))).toEqual([{ namespace: 'vpn-gateway', what: 'Deployment vpn-gateway/vpn-gateway', need: 'privileged', at: 'media/gateway' }]);
  });

  it('takes no workload without a namespace or without a pod template', () => {
    const deployment = (metadata: { name: string; namespace?: string }, spec: object) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata, spec });
    const template = { template: { spec: plain } };
    expect(podSecurityNeeds([
      deployment({ name: 'no-namespace' }, template),
      deployment({ name: 'no-template', namespace: 'media' }, {}),
      deployment({ name: 'app', namespace: 'media' }, template),
    ], 'c').map((n) => n.what)).toEqual(['Deployment media/app']);
  });
});
