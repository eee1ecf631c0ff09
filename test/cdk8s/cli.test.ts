import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Issue 47: the real `cdk8s synth` (cdk8s-cli, a dev dependency) on the mesh-only example shows where each node's
 * host files went. The CLI runs the app with its stdout piped into a buffer it never prints and its stderr inherited
 * (cdk8s-cli 2.207.60 lib/util.js, shell()), so only a line on stderr reaches the user; for an app of host files only,
 * beside its "No manifests synthesized".
 */
const ROOT = path.resolve(__dirname, '../..');
const EXAMPLE = path.join(ROOT, 'examples', 'wireguard-overlay');

describe('cdk8s synth (the real CLI) on an app of host files only', () => {
  it('prints each node\'s host files with their folder, beside the CLI\'s "No manifests synthesized", and writes them there', () => {
    // The example as written, importing the sources in place of the package (as the examples test's control does).
    const dir = fs.mkdtempSync(path.join(EXAMPLE, '.cli-'));
    try {
      fs.writeFileSync(path.join(dir, 'main.ts'), fs.readFileSync(path.join(EXAMPLE, 'main.ts'), 'utf8').replace("from 'tunnelwright/cdk8s'", "from '../../../src/cdk8s'"));
      fs.copyFileSync(path.join(EXAMPLE, 'cdk8s.yaml'), path.join(dir, 'cdk8s.yaml'));
      // --no-check-upgrade: the CLI would ask the npm registry for its newest version.
      const r = spawnSync(path.join(ROOT, 'node_modules/.bin/cdk8s'), ['synth', '--no-check-upgrade'], { cwd: dir, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' } });
      expect({ status: r.status, stdout: r.stdout }).toEqual({ status: 0, stdout: 'Synthesizing application\n' });
      const nodes = ['home-cp1', 'hetzner-w1', 'office-w2'];
      expect(r.stderr.split('\n').filter((l) => l.length > 0)).toEqual([
        ...nodes.map((n) => `host files: dist/hosts/${n}/ (user-data, ignition.json, wg0.conf)`),
        'No manifests synthesized',
      ]);
      for (const n of nodes) expect(fs.readdirSync(path.join(dir, 'dist', 'hosts', n)).sort()).toEqual(['ignition.json', 'user-data', 'wg0.conf']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
