import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { renderHostArtefacts, planWireguardMesh, ValidationError } from '../../src';
import { App, WireguardMesh, WireguardOverlayNode } from '../../src/cdk8s';
import { emitObject } from '../../src/cdk8s/base';
import { KEYS, kubeadmHaMesh, siteA, threeNodeMesh } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';
import * as cloudInit from '../../src/host/cloud-init';
import { captureStderr, expectWarnings } from '../helpers/stderr-guard';

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tw-cdk8s-'));
}

function listFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.relative(dir, path.join(d.parentPath, d.name))).sort();
}

/** What `fn` writes to stdout, kept off the test output. */
function captureStdout(fn: () => void): string {
  const chunks: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    fn();
  } finally {
    spy.mockRestore();
  }
  return chunks.join('');
}

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'cdk8s App control: a chart with manifests beside host artefacts still writes its <chart>.k8s.yaml': ['overlay/mesh: mtu', 'overlay/mesh: nodes[0].installK0s', 'overlay/mesh: nodes[1].installK0s', 'overlay/mesh: nodes[2].installK0s'],
  'cdk8s App writes the manifests, then each node\'s merged user-data, ignition.json and interface config': ['overlay/mesh: mtu', 'overlay/mesh: nodes[0].installK0s', 'overlay/mesh: nodes[1].installK0s', 'overlay/mesh: nodes[2].installK0s'],
  'cdk8s App writes artefacts that embed a secret 0600': ['lab/node: wireguard[0].privateKey', 'lab/node: wireguard[0].nodeAddress'],
  'cdk8s App a second synth over existing host files rewrites each with the new content and mode (0644 to 0600 when it now embeds a key, and back)': ['lab/node: wireguard[0].nodeAddress', 'lab/node: wireguard[0].privateKey', 'lab/node: wireguard[0].nodeAddress', 'lab/node: wireguard[0].nodeAddress'],
  'cdk8s App merges two constructs on one node and refuses, writing nothing, when they write one path differently': ['overlay/mesh: mtu', 'overlay/mesh: nodes[0].installK0s', 'overlay/mesh: nodes[1].installK0s', 'overlay/mesh: nodes[2].installK0s', 'overlay/extra: wireguard[0].nodeAddress'],
  'cdk8s App renders each node\'s cloud-config once: the text measured for the user-data size warning is the one written': ['overlay/mesh: mtu', 'overlay/mesh: nodes[0].installK0s', 'overlay/mesh: nodes[1].installK0s', 'overlay/mesh: nodes[2].installK0s'],
  'cdk8s App writes a plan changed after construction as it now is, in user-data and ignition.json alike': ['lab/node: wireguard[0].nodeAddress'],
  'cdk8s App writes a mesh node whose interface gained a peer after planning with that peer, in user-data and wg0.conf alike': ['overlay/mesh: mtu', 'overlay/mesh: nodes[0].installK0s', 'overlay/mesh: nodes[1].installK0s', 'overlay/mesh: nodes[2].installK0s'],
  'cdk8s App checkHosts gives Ignition configs of its own, not the construct\'s object': ['overlay/mesh: mtu', 'overlay/mesh: nodes[0].installK0s', 'overlay/mesh: nodes[1].installK0s', 'overlay/mesh: nodes[2].installK0s'],
  'cdk8s App refuses one node given two Ignition versions': ['overlay/wg0: wireguard[0].nodeAddress'],
  'cdk8s App merges the distinct parts of two constructs on one node into one user-data': ['overlay/wg0: wireguard[0].nodeAddress'],
  'cdk8s App exposes, as cloudConfig, ignition and wireguardConfigs, exactly what the App writes for the node': ['c/n: wireguard[0].nodeAddress'],
  'cdk8s App writes two kubeadm controllers\' user-data: the first inits at the controlPlaneEndpoint, the second joins, as the core plans them': ['ha/mesh: cni'],
});

describe('cdk8s App', () => {
  it('writes two kubeadm controllers\' user-data: the first inits at the controlPlaneEndpoint, the second joins, as the core plans them', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    new WireguardMesh(new Chart(app, 'ha'), 'mesh', kubeadmHaMesh());
    app.synth();
    const written = (n: string) => fs.readFileSync(path.join(outdir, 'hosts', n, 'user-data'), 'utf8');
    const plan = planWireguardMesh(kubeadmHaMesh());
    for (const node of ['site-a', 'site-b']) expect(written(node)).toBe(renderHostArtefacts(plan.nodes[node].host).cloudConfig);
    expect(written('site-a')).toContain('controlPlaneEndpoint: api.cluster.internal:6443');
    expect(written('site-b')).toContain('kind: JoinConfiguration');
  });
  it('renders each node\'s cloud-config once: the text measured for the user-data size warning is the one written', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const render = jest.spyOn(cloudInit, 'renderCloudConfig');
    new WireguardMesh(new Chart(app, 'overlay'), 'mesh', threeNodeMesh());
    app.synth();
    // Issue 30: three nodes, three renderings (each under 16 KiB, so each was measured); before, six.
    expect(render).toHaveBeenCalledTimes(3);
    const written = ['site-a', 'site-b', 'site-c'].map((n) => fs.readFileSync(path.join(outdir, 'hosts', n, 'user-data'), 'utf8'));
    expect(written).toEqual(planWireguardMesh(threeNodeMesh()).hosts.map((h) => renderHostArtefacts(h).cloudConfig));
  });

  it('writes a plan changed after construction as it now is, in user-data and ignition.json alike', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const node = new WireguardOverlayNode(new Chart(app, 'lab'), 'node', siteA());
    node.plan.hosts[0].commands.push('echo added-after-construction');
    app.synth();
    const dir = path.join(outdir, 'hosts', node.plan.hosts[0].node);
    expect(fs.readFileSync(path.join(dir, 'user-data'), 'utf8')).toContain('echo added-after-construction');
    expect(fs.readFileSync(path.join(dir, 'ignition.json'), 'utf8')).toContain('echo added-after-construction');
  });

  it('writes a mesh node whose interface gained a peer after planning with that peer, in user-data and wg0.conf alike', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const mesh = new WireguardMesh(new Chart(app, 'overlay'), 'mesh', threeNodeMesh());
    mesh.plan.nodes['site-a'].wireguard.peers.push({ comment: 'site-d', publicKey: KEYS.c.publicKey, allowedIPs: ['10.10.0.4/32'] });
    app.synth();
    const dir = path.join(outdir, 'hosts', 'site-a');
    expect(fs.readFileSync(path.join(dir, 'wg0.conf'), 'utf8')).toContain('10.10.0.4/32');
    expect(fs.readFileSync(path.join(dir, 'user-data'), 'utf8')).toContain('10.10.0.4/32');
    expect(fs.readFileSync(path.join(dir, 'user-data'), 'utf8')).toBe(renderHostArtefacts(mesh.plan.hosts.find((h) => h.node === 'site-a')!).cloudConfig);
  });

  it('checkHosts gives Ignition configs of its own, not the construct\'s object', () => {
    const app = new App({ outdir: tmp() });
    const mesh = new WireguardMesh(new Chart(app, 'overlay'), 'mesh', threeNodeMesh());
    const own = mesh.nodes['site-b'].ignition;
    const checked = app.checkHosts().hosts.find((h) => h.node === 'site-b')!;
    expect(checked.ignition).toEqual(own);
    expect(checked.ignition).not.toBe(own);
  });

  it('control: a chart with manifests beside host artefacts still writes its <chart>.k8s.yaml', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const chart = new Chart(app, 'overlay');
    new WireguardMesh(chart, 'mesh', threeNodeMesh());
    emitObject(chart, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data: {} } as never);
    app.synth();
    expect(fs.readFileSync(path.join(outdir, 'overlay.k8s.yaml'), 'utf8')).toContain('kind: ConfigMap');
  });

  it('writes the manifests, then each node\'s merged user-data, ignition.json and interface config', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const chart = new Chart(app, 'overlay');
    const mesh = new WireguardMesh(chart, 'mesh', threeNodeMesh());
    let stdout = '';
    const { lines } = captureStderr(() => {
      stdout = captureStdout(() => app.synth());
    });
    // A chart with only host artefacts writes no empty overlay.k8s.yaml.
    expect(listFiles(outdir)).toEqual([
      'hosts/site-a/ignition.json', 'hosts/site-a/user-data', 'hosts/site-a/wg0.conf',
      'hosts/site-b/ignition.json', 'hosts/site-b/user-data', 'hosts/site-b/wg0.conf',
      'hosts/site-c/ignition.json', 'hosts/site-c/user-data', 'hosts/site-c/wg0.conf',
    ]);
    // Synth says where each node's files went, on stderr (the cdk8s CLI prints the app's stderr, never its stdout).
    expect(lines.filter((l) => l.startsWith('host files: '))).toEqual(['site-a', 'site-b', 'site-c'].map((n) => `host files: ${outdir}/hosts/${n}/ (user-data, ignition.json, wg0.conf)`));
    expect(stdout).toBe('');
    // The day-2 file is the interface config the node runs, 0600, and the construct exposes the same text.
    const conf = fs.readFileSync(path.join(outdir, 'hosts/site-b/wg0.conf'), 'utf8');
    expect(conf).toBe(planWireguardMesh(threeNodeMesh()).nodes['site-b'].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content);
    expect(mesh.nodes['site-b'].wireguardConfigs).toEqual({ 'wg0.conf': conf });
    expect(fs.statSync(path.join(outdir, 'hosts/site-b/wg0.conf')).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(outdir, 'hosts/site-b/user-data'), 'utf8')).toBe(mesh.nodes['site-b'].cloudConfig);
    expect(JSON.parse(fs.readFileSync(path.join(outdir, 'hosts/site-b/ignition.json'), 'utf8'))).toEqual(mesh.nodes['site-b'].ignition);
    expect(fs.statSync(path.join(outdir, 'hosts/site-b/user-data')).mode & 0o777).toBe(0o644);
    expect(mesh.nodes['site-c'].cloudConfig).toBe(renderHostArtefacts(planWireguardMesh(threeNodeMesh()).nodes['site-c'].host).cloudConfig);
  });

  it('writes artefacts that embed a secret 0600', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const props = siteA();
    const { privateKeyFrom: _f, ...iface } = props.wireguard[0];
    new WireguardOverlayNode(new Chart(app, 'lab'), 'node', { ...props, wireguard: [{ ...iface, privateKey: KEYS.a.privateKey }] });
    app.synth();
    for (const f of ['user-data', 'ignition.json']) expect(fs.statSync(path.join(outdir, 'hosts/site-a', f)).mode & 0o777).toBe(0o600);
  });

  it('a second synth over existing host files rewrites each with the new content and mode (0644 to 0600 when it now embeds a key, and back)', () => {
    const outdir = tmp();
    const props = siteA();
    const { privateKeyFrom: _f, ...iface } = props.wireguard[0];
    const inline = { ...props, wireguard: [{ ...iface, privateKey: KEYS.a.privateKey }] };
    const synth = (p: typeof props) => {
      const app = new App({ outdir });
      const node = new WireguardOverlayNode(new Chart(app, 'lab'), 'node', p);
      const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        app.synth();
      } finally {
        write.mockRestore();
      }
      return node;
    };
    const seen = () => Object.fromEntries(['user-data', 'ignition.json', 'wg0.conf'].map((f) => {
      const file = path.join(outdir, 'hosts/site-a', f);
      return [f, { mode: (fs.statSync(file).mode & 0o777).toString(8), text: fs.readFileSync(file, 'utf8') }];
    }));
    const expected = (node: WireguardOverlayNode, mode: string) => ({
      'user-data': { mode, text: node.cloudConfig },
      'ignition.json': { mode, text: `${JSON.stringify(node.ignition, undefined, 2)}\n` },
      'wg0.conf': { mode: '600', text: node.wireguardConfigs['wg0.conf'] },
    });
    const fromFile = synth(props);
    expect(seen()).toEqual(expected(fromFile, '644'));
    // Someone loosened the interface config by hand: the next synth takes it back to 0600.
    fs.chmodSync(path.join(outdir, 'hosts/site-a/wg0.conf'), 0o644);
    const withKey = synth(inline);
    expect(withKey.cloudConfig).toContain(KEYS.a.privateKey);
    expect(seen()).toEqual(expected(withKey, '600'));
    // And back: the key gone, the files readable again, with the new text.
    const again = synth(props);
    expect(seen()).toEqual(expected(again, '644'));
    expect(fs.readFileSync(path.join(outdir, 'hosts/site-a/user-data'), 'utf8')).not.toContain(KEYS.a.privateKey);
  });

  it('merges two constructs on one node and refuses, writing nothing, when they write one path differently', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const chart = new Chart(app, 'overlay');
    new WireguardMesh(chart, 'mesh', threeNodeMesh());
    new WireguardOverlayNode(chart, 'extra', siteA());
    const error = thrown(() => app.synth());
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems.map((p) => `${p.path} ${p.code}`)).toEqual(['overlay/extra:/etc/wireguard/wg0.conf host-file-conflict', 'overlay/extra:/etc/k0s/k0s.yaml host-file-conflict']);
    expect(listFiles(outdir)).toEqual([]);
  });

  it('refuses one node given two Ignition versions', () => {
    const a = new App({ outdir: tmp() });
    const chart = new Chart(a, 'overlay');
    const props = siteA();
    new WireguardOverlayNode(chart, 'wg0', props);
    new WireguardOverlayNode(chart, 'wg1', { ...props, ignitionVersion: '3.5.0', wireguard: [{ ...props.wireguard[0], name: 'wg1', address: '10.20.0.1/24', listenPort: 51821, nodeAddress: false }] });
    expect(a.checkHosts().problems).toEqual([{ path: 'overlay/wg1:ignitionVersion', code: 'ignition-version', message: 'node "site-a" gets Ignition 3.5.0 here but 3.4.0 from overlay/wg0: one machine takes one config' }]);
  });

  it('merges the distinct parts of two constructs on one node into one user-data', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const chart = new Chart(app, 'overlay');
    const props = siteA();
    new WireguardOverlayNode(chart, 'wg0', props);
    new WireguardOverlayNode(chart, 'wg1', { ...props, wireguard: [{ ...props.wireguard[0], name: 'wg1', address: '10.20.0.1/24', listenPort: 51821, nodeAddress: false }] });
    app.synth();
    const userData = fs.readFileSync(path.join(outdir, 'hosts/site-a/user-data'), 'utf8');
    expect(userData).toContain('path: /etc/wireguard/wg0.conf');
    expect(userData).toContain('path: /etc/wireguard/wg1.conf');
    expect(userData.match(/path: \/opt\/tunnelwright\/bin\/resolve-secret/g)).toHaveLength(1);
  });

  it('records warnings on the construct and on stderr', () => {
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const chart = new Chart(new App({ outdir: tmp() }), 'c');
      const props = siteA();
      const node = new WireguardOverlayNode(chart, 'n', { ...props, installK0s: {}, wireguard: [{ ...props.wireguard[0], peers: [{ ...props.wireguard[0].peers[0], endpoint: 'b.example.net:51820' }] }] });
      expect(node.warnings.map((w) => w.code)).toEqual(['hostname-endpoint']);
      expect(node.node.metadata.map((m) => m.data)).toEqual(['wireguard[0].peers[0].endpoint: endpoint "b.example.net:51820" is a hostname: tunnelwright-wg0-endpoints.service sets it once the interface is up and retries until the name resolves (DNS may need the overlay itself); until then this peer is unreachable, while the interface, its other peers and the distribution start without waiting; prefer an IP']);
      expect(write).toHaveBeenCalledWith(expect.stringContaining('warning: c/n:\n  wireguard[0].peers[0].endpoint: endpoint "b.example.net:51820"'));
    } finally {
      write.mockRestore();
    }
  });

  it('exposes, as cloudConfig, ignition and wireguardConfigs, exactly what the App writes for the node', () => {
    const outdir = tmp();
    const app = new App({ outdir });
    const node = new WireguardOverlayNode(new Chart(app, 'c'), 'n', siteA());
    app.synth();
    expect(fs.readFileSync(path.join(outdir, 'hosts/site-a/user-data'), 'utf8')).toBe(node.cloudConfig);
    expect(JSON.parse(fs.readFileSync(path.join(outdir, 'hosts/site-a/ignition.json'), 'utf8'))).toEqual(node.ignition);
    expect(Object.entries(node.wireguardConfigs).map(([name, text]) => [name, fs.readFileSync(path.join(outdir, 'hosts/site-a', name), 'utf8') === text])).toEqual([['wg0.conf', true]]);
    expect(node.cloudConfig).toMatch(/^#cloud-config\n/);
    expect(node.cloudConfig).toContain('wg-quick@wg0');
  });

  it('never gives a cluster-scoped object the chart namespace', () => {
    const chart = new Chart(new App({ outdir: tmp() }), 'c', { namespace: 'apps' });
    emitObject(chart, { apiVersion: 'cilium.io/v2', kind: 'CiliumEgressGatewayPolicy', metadata: { name: 'p' }, spec: {} });
    emitObject(chart, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm', namespace: 'vpn' }, data: {} });
    expect(chart.toJson().map((o: { kind: string; metadata: unknown }) => [o.kind, o.metadata])).toEqual([
      ['CiliumEgressGatewayPolicy', { name: 'p' }],
      ['ConfigMap', { name: 'm', namespace: 'vpn' }],
    ]);
  });
});
