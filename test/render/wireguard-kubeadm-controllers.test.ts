/**
 * kubeadm with several controllers (issue 46): a stable controlPlaneEndpoint, the first controller's kubeadm init
 * (--upload-certs, the certificate key in its InitConfiguration), a JoinConfiguration with `controlPlane` for the
 * others, and the secrets read from files on the node by tunnelwright-kubeadm at run time, never in user-data.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { planWireguardMesh, renderHostArtefacts, WireguardMeshProps, WireguardOverlayNodeProps } from '../../src';
import { checkWireguardMesh } from '../../src/model/wireguard-mesh';
import { checkWireguardOverlayNode } from '../../src/model/wireguard-overlay-node';
import { KUBEADM_PLACEHOLDERS, KUBEADM_SCRIPT_PATH, KUBEADM_SECRETS_DIR } from '../../src/render/wireguard-overlay-node';
import { KUBEADM_SCRIPT } from '../../src/render/wireguard-overlay-node/kubeadm';
import { siteA, threeNodeMesh } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from '../system/tools';

type Doc = Record<string, unknown>;
const CONFIG = '/etc/kubernetes/tunnelwright-kubeadm.yaml';

/** Two kubeadm controllers (site-a, site-b) and a worker, with a controlPlaneEndpoint. */
function ha(extra: Partial<WireguardMeshProps> = {}): WireguardMeshProps {
  const mesh = threeNodeMesh();
  return {
    ...mesh, distribution: 'kubeadm', controlPlaneEndpoint: 'api.cluster.internal', podCidrs: ['10.244.0.0/16'], cni: 'flannel', ...extra,
    nodes: mesh.nodes.map((n, i) => (i === 1 ? { ...n, role: 'controller' as const } : n)),
  };
}
const docsOf = (mesh: WireguardMeshProps, node: string): Doc[] => {
  const file = planWireguardMesh(mesh).nodes[node].host.files.find((f) => f.path === CONFIG);
  return file ? parseAllDocuments(file.content).map((d) => d.toJSON() as Doc) : [];
};
const kinds = (docs: Doc[]) => docs.map((d) => d.kind);

describe('kubeadm with several controllers over the mesh', () => {
  it('the first controller inits with the endpoint and uploads its certificates; the second joins its control plane on its own overlay address', () => {
    const first = docsOf(ha(), 'site-a');
    expect(kinds(first)).toEqual(['InitConfiguration', 'ClusterConfiguration']);
    expect(first[0]).toMatchObject({ localAPIEndpoint: { advertiseAddress: '10.10.0.1' }, certificateKey: KUBEADM_PLACEHOLDERS.certificateKey });
    expect(first[1]).toMatchObject({ controlPlaneEndpoint: 'api.cluster.internal:6443', networking: { podSubnet: '10.244.0.0/16' } });
    const second = docsOf(ha(), 'site-b');
    expect(kinds(second)).toEqual(['JoinConfiguration']);
    expect(second[0]).toEqual({
      apiVersion: 'kubeadm.k8s.io/v1beta4', kind: 'JoinConfiguration',
      discovery: { bootstrapToken: { apiServerEndpoint: 'api.cluster.internal:6443', token: KUBEADM_PLACEHOLDERS.token, caCertHashes: [KUBEADM_PLACEHOLDERS.caCertHash] } },
      controlPlane: { localAPIEndpoint: { advertiseAddress: '10.10.0.2' }, certificateKey: KUBEADM_PLACEHOLDERS.certificateKey },
      nodeRegistration: { kubeletExtraArgs: [{ name: 'node-ip', value: '10.10.0.2' }] },
    });
    expect(docsOf(ha(), 'site-c')).toEqual([]);
  });

  it('each controller gets tunnelwright-kubeadm and the command in its values; the worker neither', () => {
    const plan = planWireguardMesh(ha());
    const script = (node: string) => plan.nodes[node].host.files.find((f) => f.path === KUBEADM_SCRIPT_PATH);
    expect(script('site-a')).toMatchObject({ mode: 0o755, content: KUBEADM_SCRIPT });
    expect(script('site-b')).toMatchObject({ mode: 0o755, content: KUBEADM_SCRIPT });
    expect(script('site-c')).toBeUndefined();
    expect((plan.nodes['site-b'].values.kubeadm as Doc).command).toBe(KUBEADM_SCRIPT_PATH);
  });

  it('control: one controller without an endpoint writes kubeadm init\'s config as before, with no placeholder and no script', () => {
    const mesh = { ...threeNodeMesh(), distribution: 'kubeadm' as const };
    const [init, cluster] = docsOf(mesh, 'site-a');
    expect(init.certificateKey).toBeUndefined();
    expect(cluster.controlPlaneEndpoint).toBeUndefined();
    expect(planWireguardMesh(mesh).nodes['site-a'].host.files.map((f) => f.path)).not.toContain(KUBEADM_SCRIPT_PATH);
  });

  it('the user-data carries placeholders and where the secrets go, no value', () => {
    const { cloudConfig } = renderHostArtefacts(planWireguardMesh(ha()).nodes['site-b'].host);
    for (const p of Object.values(KUBEADM_PLACEHOLDERS)) expect(cloudConfig).toContain(p);
    expect(cloudConfig).toContain(`filled from ${KUBEADM_SECRETS_DIR}/`);
  });

  it('the script reads the secrets where the library says (its defaults are KUBEADM_SECRETS_DIR and the config path)', () => {
    expect(KUBEADM_SCRIPT).toContain(`SECRETS=\${TUNNELWRIGHT_KUBEADM_SECRETS:-${KUBEADM_SECRETS_DIR}}`);
    expect(KUBEADM_SCRIPT).toContain(`CONFIG=\${TUNNELWRIGHT_KUBEADM_CONFIG:-${CONFIG}}`);
    for (const [name, p] of [['certificate-key', KUBEADM_PLACEHOLDERS.certificateKey], ['bootstrap-token', KUBEADM_PLACEHOLDERS.token], ['ca-cert-hash', KUBEADM_PLACEHOLDERS.caCertHash]]) {
      expect(KUBEADM_SCRIPT).toContain(`grep -q '${p}' "$CONFIG"`);
      expect(KUBEADM_SCRIPT).toContain(`secret ${name} `);
    }
  });
});

/**
 * The fields kubeadm's types have, per kind, as their json tags (kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go
 * and v1beta3/types.go at v1.31.0: InitConfiguration, ClusterConfiguration, JoinConfiguration, JoinControlPlane,
 * Discovery, BootstrapTokenDiscovery, APIEndpoint, APIServer, Networking, NodeRegistrationOptions). Every key the
 * library writes must be one of them (kubeadm's strict decoding refuses an unknown field), of the type it has there.
 */
type Field = 'string' | 'string[]' | 'args' | Record<string, unknown>;
const apiEndpoint = { advertiseAddress: 'string', bindPort: 'number' };
const nodeRegistration = { name: 'string', criSocket: 'string', taints: 'array', kubeletExtraArgs: 'args', ignorePreflightErrors: 'string[]', imagePullPolicy: 'string' };
const TYPES: Record<string, Record<string, Field | string>> = {
  InitConfiguration: { apiVersion: 'string', kind: 'string', bootstrapTokens: 'array', dryRun: 'boolean', nodeRegistration, localAPIEndpoint: apiEndpoint, certificateKey: 'string', skipPhases: 'string[]', patches: {} },
  ClusterConfiguration: {
    apiVersion: 'string', kind: 'string', etcd: {}, networking: { serviceSubnet: 'string', podSubnet: 'string', dnsDomain: 'string' }, kubernetesVersion: 'string', controlPlaneEndpoint: 'string',
    apiServer: { extraArgs: 'args', extraVolumes: 'array', certSANs: 'string[]', timeoutForControlPlane: 'string' }, controllerManager: {}, scheduler: {}, dns: {}, certificatesDir: 'string', imageRepository: 'string', featureGates: {}, clusterName: 'string',
  },
  JoinConfiguration: {
    apiVersion: 'string', kind: 'string', dryRun: 'boolean', nodeRegistration, caCertPath: 'string',
    discovery: { bootstrapToken: { token: 'string', apiServerEndpoint: 'string', caCertHashes: 'string[]', unsafeSkipCAVerification: 'boolean' }, file: { kubeConfigPath: 'string' }, tlsBootstrapToken: 'string', timeout: 'string' },
    controlPlane: { localAPIEndpoint: apiEndpoint, certificateKey: 'string' }, skipPhases: 'string[]', patches: {},
  },
};

/** The paths of `value` that the type does not have, or have another type (v1beta3 kubeletExtraArgs is a map, v1beta4 a list of {name, value}). */
function unknownFields(value: unknown, type: Field | string, at: string, v4: boolean): string[] {
  if (type === 'args') {
    const ok = v4 ? Array.isArray(value) && value.every((a) => typeof a?.name === 'string' && typeof a?.value === 'string' && Object.keys(a).length === 2) : typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((x) => typeof x === 'string');
    return ok ? [] : [`${at} (not kubeadm.k8s.io/${v4 ? 'v1beta4' : 'v1beta3'} extra args)`];
  }
  if (type === 'string[]') return Array.isArray(value) && value.every((x) => typeof x === 'string') ? [] : [`${at} (not a list of strings)`];
  if (type === 'array') return Array.isArray(value) ? [] : [`${at} (not a list)`];
  if (typeof type === 'string') return typeof value === type ? [] : [`${at} (not a ${type})`];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${at} (not an object)`];
  return Object.entries(value).flatMap(([k, v]) => (k in type ? unknownFields(v, (type as Record<string, Field>)[k], `${at}.${k}`, v4) : [`${at}.${k} (no such field)`]));
}

describe('the configs against kubeadm\'s v1beta3 and v1beta4 types', () => {
  const cases: [string, WireguardMeshProps][] = [];
  for (const kubernetesVersion of ['1.30', '1.31']) {
    cases.push([`${kubernetesVersion} several controllers`, ha({ kubernetesVersion })]);
    cases.push([`${kubernetesVersion} one controller`, { ...threeNodeMesh(), distribution: 'kubeadm', kubernetesVersion, podCidrs: ['10.244.0.0/16'], cni: 'flannel' }]);
  }
  it.each(cases)('%s: every field of every controller\'s config is one of its kind\'s', (_n, mesh) => {
    const plan = planWireguardMesh(mesh);
    const v4 = mesh.kubernetesVersion === '1.31';
    let docs = 0;
    for (const node of ['site-a', 'site-b']) {
      const file = plan.nodes[node].host.files.find((f) => f.path === CONFIG);
      for (const d of file ? parseAllDocuments(file.content).map((x) => x.toJSON() as Doc) : []) {
        docs += 1;
        expect(d.apiVersion).toBe(v4 ? 'kubeadm.k8s.io/v1beta4' : 'kubeadm.k8s.io/v1beta3');
        expect(unknownFields(d, TYPES[String(d.kind)], String(d.kind), v4)).toEqual([]);
      }
    }
    expect(docs).toBe(mesh.controlPlaneEndpoint ? 3 : 2);
  });
  it('control: the check finds a field kubeadm does not have, and v1beta3\'s map of extra args in a v1beta4 document', () => {
    expect(unknownFields({ kind: 'JoinConfiguration', controlPlane: { certificateKeyFile: '/x' } }, TYPES.JoinConfiguration, 'JoinConfiguration', true)).toEqual(['JoinConfiguration.controlPlane.certificateKeyFile (no such field)']);
    expect(unknownFields({ nodeRegistration: { kubeletExtraArgs: { 'node-ip': '10.10.0.1' } } }, TYPES.JoinConfiguration, 'J', true)).toEqual(['J.nodeRegistration.kubeletExtraArgs (not kubeadm.k8s.io/v1beta4 extra args)']);
  });
});

describe('controlPlaneEndpoint and kubeadmJoin: the rules', () => {
  const mesh = (extra: Partial<WireguardMeshProps>) => checkWireguardMesh(ha(extra));
  it.each<[string, Partial<WireguardMeshProps>, { problems: string[]; warnings: string[] }]>([
    ['a DNS name', {}, { problems: [], warnings: [] }],
    ['a load balancer outside the overlay network', { controlPlaneEndpoint: '192.0.2.10:6443' }, { problems: [], warnings: [] }],
    ['several controllers without one', { controlPlaneEndpoint: undefined }, { problems: ['controlPlaneEndpoint:kubeadm-controllers'], warnings: [] }],
    ['a virtual IP inside the overlay network that no node owns', { controlPlaneEndpoint: '10.10.0.100' }, { problems: ['controlPlaneEndpoint:control-plane-endpoint'], warnings: [] }],
    ['a worker\'s overlay address', { controlPlaneEndpoint: '10.10.0.3:6443' }, { problems: ['controlPlaneEndpoint:control-plane-endpoint'], warnings: [] }],
    ['one controller\'s overlay address', { controlPlaneEndpoint: '10.10.0.2' }, { problems: [], warnings: ['controlPlaneEndpoint:control-plane-endpoint'] }],
    ['not an endpoint', { controlPlaneEndpoint: 'https://api:6443' }, { problems: ['controlPlaneEndpoint:endpoint'], warnings: [] }],
    ['on k0s', { distribution: 'k0s', podCidrs: undefined, cni: undefined }, { problems: ['controlPlaneEndpoint:distribution'], warnings: [] }],
  ])('mesh, %s', (_n, extra, expected) => {
    const r = mesh(extra);
    expect(r.problems.map((p) => `${p.path}:${p.code}`)).toEqual(expected.problems);
    expect(r.warnings.filter((w) => w.path === 'controlPlaneEndpoint').map((p) => `${p.path}:${p.code}`)).toEqual(expected.warnings);
  });

  const node = (extra: Partial<WireguardOverlayNodeProps>): WireguardOverlayNodeProps => ({ ...siteA(), distribution: 'kubeadm', role: 'controller', cni: 'other', ...extra } as WireguardOverlayNodeProps);
  it.each<[string, Partial<WireguardOverlayNodeProps>, string[]]>([
    ['a joining controller with the endpoint', { kubeadmJoin: true, controlPlaneEndpoint: 'api.cluster.internal' }, []],
    ['a joining controller without it', { kubeadmJoin: true }, ['controlPlaneEndpoint:required']],
    ['kubeadmJoin on a worker', { kubeadmJoin: true, role: 'worker', controlPlaneEndpoint: 'api.cluster.internal' }, ['kubeadmJoin:kubeadm-join']],
    ['kubeadmJoin on k3s', { kubeadmJoin: true, distribution: 'k3s', cni: undefined }, ['kubeadmJoin:kubeadm-join']],
  ])('node, %s', (_n, extra, expected) => {
    expect(checkWireguardOverlayNode(node(extra)).problems.map((p) => `${p.path}:${p.code}`)).toEqual(expected);
  });
  it('a standalone joining controller writes the JoinConfiguration at the endpoint', () => {
    const spec = checkWireguardOverlayNode(node({ kubeadmJoin: true, controlPlaneEndpoint: '[fd10::1]' })).spec!;
    expect(spec).toMatchObject({ controlPlaneEndpoint: '[fd10::1]:6443', kubeadmControlPlane: 'join' });
  });
});

/**
 * tunnelwright-kubeadm as the operator runs it, against a kubeadm stand-in on PATH that records its arguments, the mode
 * of the config it is given and its content, and refuses what kubeadm refuses: a flag beside --config that kubeadm does
 * not allow there ("can not mix '--config' with arguments", validation.go ValidateMixedArguments).
 */
const KEY = 'f'.repeat(8) + '0123456789abcdef'.repeat(3) + '0'.repeat(8);
const TOKEN = 'abcdef.0123456789abcdef';
const HASH = `sha256:${'a'.repeat(64)}`;
function lab(role: 'site-a' | 'site-b', secrets: Record<string, string>, args: string[] = []) {
  const dir = tmpdir('c-kubeadm-');
  const f = (n: string) => path.join(dir, n);
  fs.mkdirSync(f('bin'));
  fs.mkdirSync(f('secrets'));
  for (const [n, v] of Object.entries(secrets)) fs.writeFileSync(f(`secrets/${n}`), v, { mode: 0o600 });
  fs.writeFileSync(f('config.yaml'), planWireguardMesh(ha()).nodes[role].host.files.find((x) => x.path === CONFIG)!.content);
  fs.writeFileSync(f('bin/kubeadm'), [
    '#!/bin/sh',
    `echo "$*" > ${f('args')}`,
    'for a in "$@"; do case "$a" in --certificate-key*|--token*|--discovery-token-ca-cert-hash*) echo "can not mix \'--config\' with arguments [${a#--}]" >&2; exit 1;; esac; done',
    `stat -c %a "$3" > ${f('mode')}`,
    `cp "$3" ${f('given')}`,
    '',
  ].join('\n'), { mode: 0o755 });
  fs.writeFileSync(f('tunnelwright-kubeadm'), KUBEADM_SCRIPT, { mode: 0o755 });
  const r = run('sh', [f('tunnelwright-kubeadm'), ...args], { env: { PATH: `${f('bin')}:${process.env.PATH}`, TUNNELWRIGHT_KUBEADM_CONFIG: f('config.yaml'), TUNNELWRIGHT_KUBEADM_SECRETS: f('secrets'), TUNNELWRIGHT_KUBEADM_RUNDIR: f('run') } });
  const read = (n: string) => (fs.existsSync(f(n)) ? fs.readFileSync(f(n), 'utf8') : undefined);
  return { r, args: read('args')?.trim(), mode: read('mode')?.trim(), given: read('given'), left: fs.existsSync(f('run')) ? fs.readdirSync(f('run')) : [], run: f('run') };
}

describeWithTools('tunnelwright-kubeadm', ['sh', 'sed', 'grep', 'stat'], () => {
  const all = { 'certificate-key': `${KEY}\n`, 'bootstrap-token': `${TOKEN}\n`, 'ca-cert-hash': `${HASH}\n` };
  it('a joining controller: kubeadm join with the config, its secrets filled from the files, 0600, removed after', () => {
    const { r, args, mode, given, left, run: rundir } = lab('site-b', all, ['--v=2']);
    expect(r.status).toBe(0);
    expect(args).toBe(`join --config ${rundir}/kubeadm.yaml --v=2`);
    expect(mode).toBe('600');
    const doc = parseAllDocuments(given!)[0].toJSON() as { discovery: { bootstrapToken: Doc }; controlPlane: Doc };
    expect(doc.controlPlane.certificateKey).toBe(KEY);
    expect(doc.discovery.bootstrapToken).toMatchObject({ token: TOKEN, caCertHashes: [HASH], apiServerEndpoint: 'api.cluster.internal:6443' });
    expect(given).not.toMatch(/@[a-z-]+@/);
    expect(left).toEqual([]);
  });
  it('the first controller: kubeadm init --upload-certs with the certificate key, needing no token', () => {
    const { r, args, given } = lab('site-a', { 'certificate-key': KEY });
    expect(r.status).toBe(0);
    expect(args).toMatch(/^init --config \S+\/kubeadm\.yaml --upload-certs$/);
    expect((parseAllDocuments(given!)[0].toJSON() as Doc).certificateKey).toBe(KEY);
  });
  it.each<[string, Record<string, string>]>([
    ['the certificate key is missing', { 'bootstrap-token': TOKEN, 'ca-cert-hash': HASH }],
    ['the certificate key is not 64 hex digits (a sed or YAML injection is one)', { ...all, 'certificate-key': `${KEY.slice(0, 60)}/;e/` }],
    ['the token is missing', { 'certificate-key': KEY, 'ca-cert-hash': HASH }],
    ['the CA hash is not sha256:<hex>', { ...all, 'ca-cert-hash': 'a'.repeat(64) }],
  ])('%s: exit 2 before kubeadm runs, the value not shown', (_n, secrets) => {
    const { r, args, left } = lab('site-b', secrets);
    expect(r.status).toBe(2);
    expect(args).toBeUndefined();
    expect(left).toEqual([]);
    for (const v of Object.values(secrets)) expect(r.stderr).not.toContain(v.trim());
  });
  it('control: the stand-in refuses a secret passed as a flag beside --config, as kubeadm does', () => {
    const { r } = lab('site-a', { 'certificate-key': KEY }, [`--certificate-key=${KEY}`]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('can not mix');
  });
});
