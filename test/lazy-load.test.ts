/**
 * Issue 30: requiring an entry point loads neither zod, nor a schema module, nor our copy of yaml; they load when the
 * first construct validates. Each case runs in a fresh node process (jest's module registry is not node's) and reads
 * `require.cache`: which files were loaded, never how long anything took.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { siteA } from './helpers/fixtures';

const ROOT = path.resolve(__dirname, '..');
const SCHEMA_MODULES = ['common', 'cni', 'kill-switch', 'vpn-gateway', 'wireguard-overlay-node', 'wireguard-mesh', 'egress-steering', 'egress-probe', 'egress-conformance'];

interface Loaded { zod: boolean; ownYaml: boolean; cdk8sYaml: boolean; schemas: string[]; renderers: string[] }

/** Runs `code` in a new node (TypeScript sources through ts-node) and says what `require.cache` then holds. */
function loadedAfter(code: string): Loaded {
  const probe = `
    ${code}
    const files = Object.keys(require.cache);
    // node keys require.cache by real path; Stryker's sandbox links node_modules to the repository's copy.
    const nm = require('node:fs').realpathSync(require('node:path').join(process.cwd(), 'node_modules'));
    const src = require('node:fs').realpathSync(require('node:path').join(process.cwd(), 'src'));
    process.stdout.write('\\n' + JSON.stringify({
      zod: files.some((f) => f.startsWith(nm + '/zod/')),
      ownYaml: files.some((f) => f.startsWith(nm + '/yaml/')),
      cdk8sYaml: files.some((f) => f.startsWith(nm + '/cdk8s/node_modules/yaml/')),
      schemas: files.filter((f) => f.startsWith(src + '/model/')).map((f) => require('node:path').basename(f, '.ts'))
        .filter((m) => ${JSON.stringify(SCHEMA_MODULES)}.includes(m)).sort(),
      renderers: files.filter((f) => f.startsWith(src + '/render/')).map((f) => require('node:path').basename(f, '.ts')).sort(),
    }));`;
  const r = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', probe], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, TS_NODE_PROJECT: 'tsconfig.dev.json' } });
  if (r.status !== 0) throw new Error(`node failed: ${r.stderr}`);
  // The last line (an App's synth says where the host files went on stderr; nothing else should be before it).
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Loaded;
}

const NOTHING: Loaded = { zod: false, ownYaml: false, cdk8sYaml: false, schemas: [], renderers: [] };
const ALL_RENDERERS = ['cni', 'config-hash', 'egress-conformance', 'egress-probe', 'egress-steering', 'kill-switch', 'port-sync', 'vpn-gateway', 'wireguard-mesh', 'wireguard-overlay-node'];

describe('requiring an entry point loads no validator, no serializer and (but for the core) no renderer', () => {
  it.each([
    // The core entry exports every renderer's functions; the adapters load a renderer when a construct of its kind
    // is first planned.
    ['tunnelwright', "require('./src')", { ...NOTHING, renderers: ALL_RENDERERS }],
    ['tunnelwright/pulumi', "require('./src/pulumi')", NOTHING],
    // cdk8s loads its own bundled yaml (its floor); ours is not loaded on top.
    ['tunnelwright/cdk8s', "require('./src/cdk8s')", { ...NOTHING, cdk8sYaml: true }],
  ])('%s', (_entry, code, expected) => {
    expect(loadedAfter(code)).toEqual(expected);
  });
});

describe('the first validation loads them (the control: the probe sees zod when it is there)', () => {
  it('validateKillSwitch loads zod and the schemas the kill switch needs', () => {
    const after = loadedAfter("const { validateKillSwitch } = require('./src'); if (validateKillSwitch({}).length === 0) throw new Error('expected problems');");
    expect(after.zod).toBe(true);
    expect(after.schemas).toEqual(expect.arrayContaining(['common', 'kill-switch']));
    expect(after.ownYaml).toBe(false);
  });

  it('a cdk8s synth writing cloud-config reuses the yaml cdk8s loaded (same major), never a second copy', () => {
    const after = loadedAfter(`
      const os = require('node:os'), fs = require('node:fs'), path = require('node:path');
      const { Chart } = require('cdk8s');
      const { App, WireguardOverlayNode } = require('./src/cdk8s');
      const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-lazy-'));
      const app = new App({ outdir });
      new WireguardOverlayNode(new Chart(app, 'c'), 'n', ${JSON.stringify(siteA())});
      app.synth();
      const userData = fs.readdirSync(outdir, { recursive: true }).filter((f) => String(f).endsWith('user-data'));
      fs.rmSync(outdir, { recursive: true, force: true });
      if (userData.length === 0) throw new Error('no user-data written');`);
    // Only the overlay node's renderer (and the CNI part it uses): no gateway, steering, probe or conformance code.
    expect(after).toEqual({ zod: true, ownYaml: false, cdk8sYaml: true, schemas: expect.arrayContaining(['common', 'wireguard-overlay-node']), renderers: ['cni', 'wireguard-overlay-node'] });
  });

  it('without cdk8s loaded (a Pulumi program), rendering cloud-config loads our own yaml', () => {
    const after = loadedAfter("const { renderCloudConfig } = require('./src'); renderCloudConfig({ node: 'n', packages: ['nftables'], files: [], units: [], dropins: [], commands: [] });");
    expect(after).toEqual({ zod: false, ownYaml: true, cdk8sYaml: false, schemas: [], renderers: ALL_RENDERERS });
  });
});
