import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { checkCloudConfig, checkIgnition, checkKubeObjects } from '../src/testing';
import { kubeletRefusals } from './helpers/kubelet-start';
import { describeWithSchemas, SCHEMA_DIR } from './helpers/schemas';

const EXAMPLES = path.resolve(__dirname, '..', 'examples');
const cdk8sExamples = fs.readdirSync(EXAMPLES).filter((d) => fs.existsSync(path.join(EXAMPLES, d, 'cdk8s.yaml'))).sort();

/** Runs an example's main.ts (as `cdk8s synth` does) into a temporary outdir; returns it and what went to stderr. */
function synthExample(name: string): { outdir: string; stderr: string } {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), `tw-example-${name}-`));
  const saved = process.env.CDK8S_OUTDIR;
  process.env.CDK8S_OUTDIR = outdir;
  const chunks: string[] = [];
  const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });
  // Nothing of a synth goes to stdout (the cdk8s CLI never shows it): the App says where the host files went on stderr.
  const out = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
  try {
    jest.isolateModules(() => require(path.join(EXAMPLES, name, 'main.ts')));
  } finally {
    spy.mockRestore();
    out.mockRestore();
    if (saved === undefined) delete process.env.CDK8S_OUTDIR;
    else process.env.CDK8S_OUTDIR = saved;
  }
  return { outdir, stderr: chunks.join('') };
}

/** The warning lines (construct warnings and the App's) in what a synth wrote to stderr. */
function warningsIn(stderr: string): string[] {
  return stderr.split('\n').filter((l) => /^warning: /.test(l) || /^ {2}\S/.test(l));
}

describe('every cdk8s example synthesizes without an unacknowledged warning', () => {
  it.each(cdk8sExamples)('%s', (name) => {
    const { stderr } = synthExample(name);
    expect(warningsIn(stderr)).toEqual([]);
  });

  it('control: the homelab example without its acknowledgements and its Namespace warns', () => {
    const source = fs.readFileSync(path.join(EXAMPLES, 'homelab', 'main.ts'), 'utf8');
    const stripped = source.replace(/^ *acknowledge: .*$/m, '').replace(/^ *new kplus\.Namespace\(.*$/m, '');
    expect(stripped).not.toEqual(source);
    const dir = fs.mkdtempSync(path.join(EXAMPLES, 'homelab', '.control-'));
    try {
      fs.writeFileSync(path.join(dir, 'main.ts'), stripped.replace(/from 'tunnelwright\/cdk8s'/, "from '../../../src/cdk8s'"));
      const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-example-control-'));
      const chunks: string[] = [];
      const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        chunks.push(String(chunk));
        return true;
      });
      const out = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
      process.env.CDK8S_OUTDIR = outdir;
      try {
        jest.isolateModules(() => require(path.join(dir, 'main.ts')));
      } finally {
        spy.mockRestore();
        out.mockRestore();
        delete process.env.CDK8S_OUTDIR;
      }
      const text = chunks.join('');
      expect(text).toContain('namespace media is not in this app');
      expect(text).toContain('forwards outside names over the WAN');
      expect(text).toContain('Cilium applies the policy to a new pod shortly after it starts');
      expect(text).toContain('Ignition cannot');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeWithSchemas('every cdk8s example synthesizes artefacts that pass their checks', () => {
  it('has examples', () => expect(cdk8sExamples.length).toBeGreaterThanOrEqual(3));

  it.each(cdk8sExamples)('%s', (name) => {
    const { outdir } = synthExample(name);
    const manifests = fs.readdirSync(outdir).filter((f) => f.endsWith('.k8s.yaml'));
    const objects = manifests.flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(outdir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
    expect(checkKubeObjects(objects, SCHEMA_DIR)).toEqual([]);
    // Every pod template passes the kubelet's runAsNonRoot check (cdk8s-plus sets runAsNonRoot; root images need it off).
    expect(kubeletRefusals(objects)).toEqual([]);
    const hosts = fs.existsSync(path.join(outdir, 'hosts')) ? fs.readdirSync(path.join(outdir, 'hosts')) : [];
    for (const node of hosts) {
      expect(checkCloudConfig(fs.readFileSync(path.join(outdir, 'hosts', node, 'user-data'), 'utf8'), SCHEMA_DIR)).toEqual([]);
      expect(checkIgnition(JSON.parse(fs.readFileSync(path.join(outdir, 'hosts', node, 'ignition.json'), 'utf8')), SCHEMA_DIR)).toEqual([]);
    }
    expect(objects.length + hosts.length).toBeGreaterThan(0);
  });
});

describe('examples/port-forwarding (qBittorrent behind ProtonVPN)', () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, read by path
  const objects = (): Record<string, any>[] => {
    const { outdir } = synthExample('port-forwarding');
    return fs.readdirSync(outdir).filter((f) => f.endsWith('.k8s.yaml'))
      .flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(outdir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
  };

  it('routes the cdk8s-plus StatefulSet of one replica with the port-sync sidecar, its quantities intact', () => {
    const all = objects();
    expect(all.filter((o) => o.metadata.name === 'qbittorrent').map((o) => o.kind)).toEqual(['StatefulSet']);
    const sts = all.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'qbittorrent')!;
    expect(sts.spec.replicas).toBe(1);
    // Parallel: a reverted bad template heals itself (OrderedReady waits for the broken pod to be Ready first).
    expect(sts.spec.podManagementPolicy).toBe('Parallel');
    // The headless Service cdk8s-plus adds for it.
    expect(all.find((o) => o.kind === 'Service' && o.metadata.name === sts.spec.serviceName)!.spec.clusterIP).toBe('None');
    // No hostname: the StatefulSet controller names the pod qbittorrent-0, and nat.conf holds what client_init.sh cuts from it.
    expect(sts.spec.template.spec.hostname).toBeUndefined();
    const nat = all.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'qbittorrent-vpn-route')!.data['nat.conf'] as string;
    expect(nat.split('\n').filter((l) => l && !l.startsWith('#'))).toEqual(['qbittorrent 5']);
    const containers = sts.spec.template.spec.containers as { name: string; resources?: unknown; env?: { name: string; value?: string }[] }[];
    expect(containers.map((c) => c.name)).toEqual(['qbittorrent', 'vpn-route-sidecar', 'vpn-port-sync']);
    const sync = containers[2];
    // cdk8s-plus' L1 re-maps quantities after the patch: a plain string came out as null before the fix.
    expect(sync.resources).toEqual({ requests: { cpu: '5m', memory: '16Mi' }, limits: { memory: '64Mi' } });
    expect(sync.env).toEqual(expect.arrayContaining([{ name: 'APP', value: 'qbittorrent' }]));
  });

  it('names the Secrets the user creates and emits the port-forward alerts as a PrometheusRule', () => {
    const all = objects();
    expect(all.filter((o) => o.kind === 'Secret')).toEqual([]);
    const text = JSON.stringify(all);
    for (const secret of ['protonvpn-wireguard', 'gluetun-control', 'qbittorrent-webui']) expect(text).toContain(`"${secret}"`);
    const rule = all.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.metadata).toMatchObject({ name: 'qbittorrent-port-forward', namespace: 'monitoring' });
    const alerts = rule.spec.groups.flatMap((g: { rules: { alert: string }[] }) => g.rules.map((r) => r.alert));
    expect(alerts).toEqual(expect.arrayContaining(['VPNForwardedPortNotListening', 'VPNNoForwardedPort']));
  });
});

describe('examples/kill-switch (a pod and its node fail closed)', () => {
  it('fences the scraper\'s pods to allowCidrs and writes the node\'s nftables table into both host files', () => {
    const { outdir } = synthExample('kill-switch');
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, read by path
    const objects: Record<string, any>[] = fs.readdirSync(outdir).filter((f) => f.endsWith('.k8s.yaml'))
      .flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(outdir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    expect(policies.map((p) => p.spec.podSelector.matchLabels)).toEqual([{ 'app.kubernetes.io/name': 'scraper' }]);
    const cidrs = policies[0].spec.egress.flatMap((r: { to?: { ipBlock?: { cidr: string } }[] }) => (r.to ?? []).map((t) => t.ipBlock?.cidr)).filter(Boolean);
    expect(cidrs).toEqual(expect.arrayContaining(['10.42.0.0/16', '10.43.0.0/16', '192.168.1.0/24', '185.236.200.1/32']));
    expect(cidrs).not.toContain('0.0.0.0/0');
    expect(fs.readdirSync(path.join(outdir, 'hosts'))).toEqual(['gw-1']);
    expect(fs.readFileSync(path.join(outdir, 'hosts', 'gw-1', 'user-data'), 'utf8')).toContain('table inet tunnelwright_killswitch');
    expect(fs.readFileSync(path.join(outdir, 'hosts', 'gw-1', 'ignition.json'), 'utf8')).toContain('tunnelwright_killswitch');
  });
});

describe('examples/wireguard-overlay-node (one node by hand)', () => {
  it('writes the node\'s host files and one config per interface, with its peers and without a key', () => {
    const { outdir } = synthExample('wireguard-overlay-node');
    const dir = path.join(outdir, 'hosts', 'vps-w1');
    expect(fs.readdirSync(dir).sort()).toEqual(['ignition.json', 'user-data', 'wg0.conf', 'wg1.conf']);
    const wg0 = fs.readFileSync(path.join(dir, 'wg0.conf'), 'utf8');
    expect(wg0.match(/^\[Peer\]$/gm)).toHaveLength(2);
    expect(wg0).toContain('PersistentKeepalive = 25');
    // The private keys are read on the node at boot: no file carries a PrivateKey line with a value.
    for (const f of fs.readdirSync(dir)) expect(fs.readFileSync(path.join(dir, f), 'utf8')).not.toMatch(/PrivateKey = [A-Za-z0-9+/]{43}=/);
  });
});
