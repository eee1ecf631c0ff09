/**
 * `npm run synth`: builds every cdk8s example (a folder of examples/ with a cdk8s.yaml) into dist/<example>/,
 * the way `cdk8s synth` does: its main.ts runs with CDK8S_OUTDIR pointing there.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '..');
const examples = fs.readdirSync(path.join(root, 'examples')).filter((d) => fs.existsSync(path.join(root, 'examples', d, 'cdk8s.yaml'))).sort();
let failed = 0;
for (const name of examples) {
  const outdir = path.join(root, 'dist', name);
  fs.rmSync(outdir, { recursive: true, force: true });
  const r = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', 'main.ts'], {
    cwd: path.join(root, 'examples', name),
    env: { ...process.env, CDK8S_OUTDIR: outdir },
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    failed++;
    process.stderr.write(`synth: examples/${name} failed\n`);
    continue;
  }
  const files = fs.readdirSync(outdir, { recursive: true }).length;
  process.stdout.write(`synth: examples/${name} -> dist/${name} (${files} entries)\n`);
}
process.exit(failed === 0 ? 0 : 1);
