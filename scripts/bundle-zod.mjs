#!/usr/bin/env node
/**
 * Issue 30: `lib/zod.js` as one file. tsc compiles `src/zod.ts` to a re-export of the `zod` package; this script
 * replaces that file with a bundle of the same zod (the exact version in package-lock.json) in which zod's locale
 * index holds English only. Requiring `zod` reads 95 files, 50 of them locales that tunnelwright never uses (its
 * messages are zod's English ones); the bundle is one file and loads in about a third of the time (bench/run.ts).
 *
 * The copy is private: a user's own `zod` (and its `z.config`, its locale) is another module, and neither one sees
 * the other's settings. test/model/zod-bundle.test.ts runs the validation rules through this bundle and through the
 * package and expects the same problems.
 *
 *   node scripts/bundle-zod.mjs [--outfile lib/zod.js]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const at = process.argv.indexOf('--outfile');
const outfile = path.resolve(at > 0 ? process.argv[at + 1] : path.join(ROOT, 'lib', 'zod.js'));
const require = createRequire(path.join(ROOT, 'package.json'));
const zodDir = path.dirname(require.resolve('zod/package.json'));
const { version } = JSON.parse(fs.readFileSync(path.join(zodDir, 'package.json'), 'utf8'));

/** zod's `locales/index.js` (every language, imported by zod's core for `z.locales`) as English only. */
const englishOnly = {
  name: 'english-only',
  setup(build) {
    build.onResolve({ filter: /\/locales\/index\.js$/ }, (args) => {
      const file = path.resolve(args.resolveDir, args.path);
      return file === path.join(zodDir, 'v4', 'locales', 'index.js') ? { path: file, namespace: 'english-only' } : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: 'english-only' }, () => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: path.join(zodDir, 'v4', 'locales'),
    }));
  },
};

const licence = fs.readFileSync(path.join(zodDir, 'LICENSE'), 'utf8').trim();
const result = await esbuild.build({
  stdin: { contents: "export { z } from 'zod';", resolveDir: ROOT, sourcefile: 'tunnelwright-zod.js' },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  plugins: [englishOnly],
  metafile: true,
  logLevel: 'warning',
  banner: { js: `/*! zod ${version} (https://github.com/colinhacks/zod), bundled by tunnelwright (scripts/bundle-zod.mjs) with English messages only.\n${licence}\n*/` },
});
const inputs = Object.keys(result.metafile.inputs);
if (inputs.some((f) => /\/locales\/(?!en\.js$|index\.js$)[^/]+\.js$/.test(f))) throw new Error(`bundle-zod: a locale besides English was bundled: ${inputs.join(', ')}`);
if (result.warnings.length > 0) throw new Error(`bundle-zod: esbuild warned: ${result.warnings.map((w) => w.text).join('; ')}`);
// tsc's declaration for the re-export names the zod package's types (nothing in lib/ imports it, and zod is not a
// dependency of the package), and tsc's source map is the re-export's: the bundle is zod's own readable code.
for (const ext of ['.d.ts', '.d.ts.map', '.js.map']) fs.rmSync(outfile.replace(/\.js$/, ext), { force: true });
process.stdout.write(`bundle-zod: zod ${version}, ${inputs.length} files -> ${path.relative(ROOT, outfile)} (${fs.statSync(outfile).size} bytes)\n`);
