/**
 * What each entry point loads. Issue 30 loaded the validators and renderers on first use, through a loader that every
 * model and render module imported and that imported them back (a 19-file import circle). Issue 42 removed it: the
 * user's own command, `cdk8s synth` of each example, takes the same time with or without it (within 1.10x of the same
 * app without tunnelwright either way: bench/results/user.jsonl), so every entry point now loads what it exports, and
 * `npm run lint` refuses any import circle (dpdm). What stays is the yaml loader, which imports none of tunnelwright's
 * modules: a cdk8s app reuses the copy of yaml cdk8s loaded, never a second one. Each case runs in a fresh node process
 * (jest's module registry is not node's) and reads `require.cache`: which files were loaded, never how long anything took.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
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
      // A module by its path under model/ or render/ (a model folder by its name; a render folder's index by the folder's name).
      schemas: files.filter((f) => f.startsWith(src + '/model/')).map((f) => f.slice(src.length + '/model/'.length).split('/')[0].replace(/\\.ts$/, ''))
        .filter((m, i, all) => ${JSON.stringify(SCHEMA_MODULES)}.includes(m) && all.indexOf(m) === i).sort(),
      renderers: files.filter((f) => f.startsWith(src + '/render/')).map((f) => f.slice(src.length + 8, -3).replace(/\\/index$/, '')).sort(),
    }));`;
  const r = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', probe], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, TS_NODE_PROJECT: 'tsconfig.dev.json' } });
  if (r.status !== 0) throw new Error(`node failed: ${r.stderr}`);
  // The last line: an App's synth prints where the host files went before it.
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Loaded;
}

const ALL_SCHEMAS = [...SCHEMA_MODULES].sort();
/** Every module of src/render/ (the entry points export from each). */
const ALL_RENDERERS = fs.readdirSync(path.join(ROOT, 'src', 'render'), { recursive: true }).map(String).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3).replace(/\/index$/, '')).sort();
const EVERYTHING: Loaded = { zod: true, ownYaml: false, cdk8sYaml: false, schemas: ALL_SCHEMAS, renderers: ALL_RENDERERS };

describe('requiring an entry point loads what it exports, and no yaml of ours', () => {
  it.each([
    ['tunnelwright', "require('./src')", EVERYTHING],
    ['tunnelwright/pulumi', "require('./src/pulumi')", EVERYTHING],
    // cdk8s loads its own bundled yaml; ours is not loaded on top.
    ['tunnelwright/cdk8s', "require('./src/cdk8s')", { ...EVERYTHING, cdk8sYaml: true }],
  ])('%s', (_entry, code, expected) => {
    expect(loadedAfter(code)).toEqual(expected);
  });
});

describe('yaml is loaded once, when the first host file is rendered', () => {
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
    expect(after).toEqual({ ...EVERYTHING, cdk8sYaml: true });
  });

  it('without cdk8s loaded (a Pulumi program), rendering cloud-config loads our own yaml (control: requiring the core alone does not)', () => {
    const after = loadedAfter("const { renderCloudConfig } = require('./src'); renderCloudConfig({ node: 'n', packages: ['nftables'], files: [], units: [], dropins: [], commands: [] });");
    expect(after).toEqual({ ...EVERYTHING, ownYaml: true });
  });
});
