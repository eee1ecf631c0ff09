import { spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkCloudConfig, checkIgnition, checkKubeObjects, closeSchema, CUSTOM_RESOURCE_SCHEMAS, packagedSchemaDir, resolveSchemaDir } from '../../src/testing';
import { describeWithSchemas, itWithSchemas, SCHEMA_DIR } from '../helpers/schemas';

describe('closeSchema', () => {
  it('closes object schemas that list properties, but not the parts of an allOf', () => {
    const closed = closeSchema({
      type: 'object',
      properties: { a: { type: 'object', properties: { b: { type: 'string' } } }, m: { type: 'object', additionalProperties: { type: 'string' } } },
      allOf: [{ $ref: '#/$defs/part' }, { properties: { c: { type: 'string' } } }],
      $defs: { part: { properties: { d: { type: 'string' } } } },
    });
    expect(closed).toEqual({
      type: 'object',
      additionalProperties: false,
      properties: { d: {}, c: {}, a: { type: 'object', additionalProperties: false, properties: { b: { type: 'string' } } }, m: { type: 'object', additionalProperties: { type: 'string' } } },
      allOf: [{ $ref: '#/$defs/part' }, { properties: { c: { type: 'string' } } }],
      $defs: { part: { properties: { d: { type: 'string' } } } },
    });
  });
});

describe('resolveSchemaDir', () => {
  it('says what to do when no directory is given and the checkout was not packed', () => {
    const saved = process.env.TUNNELWRIGHT_SCHEMAS;
    delete process.env.TUNNELWRIGHT_SCHEMAS;
    try {
      expect(packagedSchemaDir()).toBeUndefined();
      expect(() => resolveSchemaDir()).toThrow('tunnelwright/testing: no schema directory: this copy of tunnelwright was not packed with its schemas (a checkout: run `node scripts/schemas/bundle.mjs`), so pass one or set TUNNELWRIGHT_SCHEMAS to a folder with the upstream schemas (cloud-config, Ignition, Cilium, Kyverno, PrometheusRule)');
      // An empty variable is no directory either.
      process.env.TUNNELWRIGHT_SCHEMAS = '';
      expect(() => resolveSchemaDir()).toThrow('tunnelwright/testing: no schema directory');
      expect(() => resolveSchemaDir('/nonexistent/schemas')).toThrow('tunnelwright/testing: schema directory /nonexistent/schemas does not exist');
    } finally {
      if (saved !== undefined) process.env.TUNNELWRIGHT_SCHEMAS = saved;
      else delete process.env.TUNNELWRIGHT_SCHEMAS;
    }
  });
});

describe('a package packed where the schemas are absent (a fresh clone with nothing beside it)', () => {
  const ROOT = path.resolve(__dirname, '../..');
  const bundle = (from: string) => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bundle-'));
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/schemas/bundle.mjs'), '--from', from, '--out', out], { encoding: 'utf8' });
    return { out, status: r.status, stderr: r.stderr };
  };

  it('still packs: bundles none, lists each schema left out with its source, and a check that needs one names it', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-no-schemas-'));
    const { out, status, stderr } = bundle(empty);
    expect(status).toBe(0);
    expect(stderr.split('\n')[0]).toBe(`bundle-schemas: 0 of 8 schemas from ${empty} into ${out}`);
    expect(fs.readdirSync(out).sort()).toEqual(['LICENSES', 'SOURCES.md', 'manifest.json']);
    expect(fs.readFileSync(path.join(out, 'SOURCES.md'), 'utf8')).toContain('| schema-cloud-config-v1.json | #cloud-config (draft-04) | canonical/cloud-init | cloudinit/config/schemas/schema-cloud-config-v1.json |');
    expect(() => checkCloudConfig('#cloud-config\n', out)).toThrow(`tunnelwright/testing: schema schema-cloud-config-v1.json is missing from ${out} (this package was packed without it: see its SOURCES.md): fetch #cloud-config (draft-04) from canonical/cloud-init cloudinit/config/schemas/schema-cloud-config-v1.json at 04eacd06ee60de9dbb9e7be784be20dab7342c1a (sha256 ba057d1e4f798bdd3b545b44a99ab3e5680c3c4d1562f82ed790a48a6989417a) into a folder with the other schemas, and pass that folder or set TUNNELWRIGHT_SCHEMAS to it`);
    // --all: every schema or no bundle.
    const all = spawnSync(process.execPath, [path.join(ROOT, 'scripts/schemas/bundle.mjs'), '--from', empty, '--out', out, '--all'], { encoding: 'utf8' });
    expect(all.status).toBe(1);
    expect(all.stderr).toContain('schema-cloud-config-v1.json: missing from');
  });

  itWithSchemas('control: from the upstream copies, bundles all eight and lists none as left out', () => {
    const { out, status } = bundle(SCHEMA_DIR);
    expect(status).toBe(0);
    expect(fs.readdirSync(out).filter((f) => f.endsWith('.json') || f.endsWith('.yaml')).length).toBe(9);
    expect(fs.readFileSync(path.join(out, 'SOURCES.md'), 'utf8')).not.toContain('Not bundled');
    expect(checkCloudConfig('#cloud-config\npackages: [nftables]\n', out)).toEqual([]);
  });
});

/** The package ships the schemas the checks load, bundled at pack time (test/system/testing-package.test.ts packs it). */
describeWithSchemas('the schemas bundled into the package', () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../scripts/schemas/manifest.json'), 'utf8')) as { files: { file: string; sha256: string; licenseFiles: string[] }[] };

  it('are exactly the files the checks load', () => {
    const loaded = [...Object.values(CUSTOM_RESOURCE_SCHEMAS), 'schema-cloud-config-v1.json', 'ignition-v3_4-schema.json', 'ignition-v3_5-schema.json'].sort();
    expect(manifest.files.map((f) => f.file).sort()).toEqual(loaded);
  });

  it('are pinned to the copies the tests read (a newer upstream copy needs its commit and sha256 in the manifest)', () => {
    const differing = manifest.files.filter((f) => crypto.createHash('sha256').update(fs.readFileSync(path.join(SCHEMA_DIR, f.file))).digest('hex') !== f.sha256);
    expect(differing.map((f) => f.file)).toEqual([]);
  });

  it('each name a licence text the bundler can copy', () => {
    const here = path.resolve(__dirname, '../../scripts/schemas');
    const missing = [...new Set(manifest.files.flatMap((f) => f.licenseFiles))].filter((l) => l !== 'Apache-2.0.txt' && !fs.existsSync(path.join(here, l)));
    expect(missing).toEqual([]);
  });
});

describeWithSchemas('the output checks catch what the real tools let through', () => {
  it('fails a cloud-config with permissions 0999 (cloud-init schema accepts it)', () => {
    const text = '#cloud-config\nwrite_files:\n  - path: /etc/x\n    permissions: 0999\n    content: x\n';
    expect(checkCloudConfig(text, SCHEMA_DIR)).toEqual(['/write_files/0/permissions: must be string']);
    const quoted = text.replace('0999', "'0999'");
    expect(checkCloudConfig(quoted, SCHEMA_DIR)).toEqual(["/write_files/0/permissions: expected an octal mode such as '0600', received \"0999\""]);
  });

  it('fails an unknown cloud-config key and an unknown field of a file', () => {
    expect(checkCloudConfig('#cloud-config\nwrite_filez: []\n', SCHEMA_DIR)).toEqual(['/: must NOT have additional properties (write_filez)']);
    expect(checkCloudConfig('#cloud-config\nwrite_files:\n  - path: /x\n    mode: "0600"\n', SCHEMA_DIR)).toEqual(['/write_files/0: must NOT have additional properties (mode)']);
  });

  it('fails an Ignition file with an unknown field and a mode in octal text', () => {
    const config = { ignition: { version: '3.4.0' }, storage: { files: [{ path: '/x', mode: '0600', contnets: {} }] } };
    expect(checkIgnition(config, SCHEMA_DIR)).toEqual(['/storage/files/0/mode: must be integer,null', '/storage/files/0: must NOT have additional properties (contnets)']);
  });

  it('fails a custom resource with an unknown field and a cluster-scoped object with a namespace', () => {
    const policy = { apiVersion: 'cilium.io/v2', kind: 'CiliumEgressGatewayPolicy', metadata: { name: 'p', namespace: 'x', labels: { 'app.kubernetes.io/managed-by': 'tunnelwright' } }, spec: { selectors: [], destinationCIDRs: ['0.0.0.0/0'], egressGateway: { nodeSelector: {}, interfaces: 'tun0' } } };
    expect(checkKubeObjects([policy], SCHEMA_DIR)).toEqual([
      'CiliumEgressGatewayPolicy/p: /metadata/namespace: a cluster-scoped CiliumEgressGatewayPolicy has no namespace',
      'CiliumEgressGatewayPolicy/p: /spec/egressGateway: must NOT have additional properties (interfaces)',
    ]);
  });

  it('passes the Namespace cdk8s writes in a namespaced chart (the chart\'s namespace on it), as the App accepts it; control: a tunnelwright object with a namespace still fails', () => {
    const { Chart, Testing } = require('cdk8s') as typeof import('cdk8s');
    const kplus = require('cdk8s-plus-28') as typeof import('cdk8s-plus-28');
    const { App, VpnGateway } = require('../../src/cdk8s') as typeof import('../../src/cdk8s');
    const { nordvpnGateway } = require('../helpers/fixtures') as typeof import('../helpers/fixtures');
    const app = new App({ outdir: require('node:fs').mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'tw-ns-')) });
    const chart = new Chart(app, 'media', { namespace: 'media' });
    new kplus.Namespace(chart, 'media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
    const gateway = new VpnGateway(chart, 'vpn', nordvpnGateway());
    gateway.route(new kplus.Deployment(chart, 'qbittorrent', { podMetadata: { labels: { app: 'qbittorrent' } }, containers: [{ image: 'lscr.io/linuxserver/qbittorrent:5.0.3', securityContext: { ensureNonRoot: false } }] }));
    const objects = Testing.synth(chart) as { kind: string; metadata: { name: string; namespace?: string } }[];
    expect(objects.filter((o) => o.kind === 'Namespace').map((o) => `${o.metadata.name} ${o.metadata.namespace}`)).toEqual(['media media', 'vpn-gateway undefined']);
    expect(checkKubeObjects(objects, SCHEMA_DIR)).toEqual([]);
    // The App reads that Namespace: no problem and no Pod Security warning for the routed workload.
    expect(app.checkHosts()).toMatchObject({ problems: [], warnings: [] });
    const ours = { ...objects.find((o) => o.metadata.name === 'vpn-gateway')!, metadata: { name: 'vpn-gateway', namespace: 'media', labels: { 'app.kubernetes.io/managed-by': 'tunnelwright' } } };
    expect(checkKubeObjects([ours], SCHEMA_DIR)).toEqual(['Namespace/vpn-gateway: /metadata/namespace: a cluster-scoped Namespace has no namespace']);
  });

  it('fails a CiliumNetworkPolicy rule with a misspelt field (oneOf branches stay constraints, the rule stays closed)', () => {
    const cnp = { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'k', namespace: 'a' }, spec: { endpointSelector: {}, egress: [{ toCIDRSets: [{ cidr: '10.0.0.0/8' }] }] } };
    expect(checkKubeObjects([cnp], SCHEMA_DIR)).toEqual(['CiliumNetworkPolicy/k: /spec/egress/0: must NOT have additional properties (toCIDRSets)']);
  });

  it('fails a core object that kubernetes-models rejects', () => {
    const np = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'n', namespace: 'a' }, spec: { podSelector: {}, policyTypes: ['Egres'] } };
    expect(checkKubeObjects([np], SCHEMA_DIR)).toEqual(['NetworkPolicy/n: data/spec/policyTypes/0 must be equal to one of the allowed values']);
  });
});

describe('tunnelwright/testing\'s optional peers', () => {
  it('says what to install when one is missing', () => {
    const { requirePeer } = require('../../src/testing/peers') as typeof import('../../src/testing/peers');
    expect(() => requirePeer('kubernetes-models-that-is-not-installed')).toThrow('tunnelwright/testing needs kubernetes-models-that-is-not-installed, an optional peer dependency: npm install --save-dev ajv ajv-formats ajv-draft-04 kubernetes-models @kubernetes-models/prometheus-operator');
  });
});
