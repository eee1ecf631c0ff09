#!/usr/bin/env node
/**
 * Issue 30: `lib/zod.js` as one file. tsc compiles `src/zod.ts` to a re-export of names from `zod/mini`; this script
 * replaces that file with a bundle of the same zod (the exact version in package-lock.json) built from `src/zod.ts`
 * itself, so that it holds those names and what they reach, and nothing else (zod marks its modules free of side
 * effects, and zod/mini is written function by function for this), with a locale index that holds English only.
 * Requiring `zod` reads 95 files, 50 of them locales that tunnelwright never uses (its messages are zod's English
 * ones), and the classic build's whole API comes to about 390 KB bundled, most of it compiled at every start; the
 * bundle of what tunnelwright uses is about 65 KB (bench/run.ts measures the difference).
 *
 * The copy is private. zod 4.5+ keeps its config (locale, memoizer, jitless) and its registry on `globalThis`
 * (`__zod_globalConfig` in v4/core/core.js, `__zod_globalRegistry` in v4/core/registries.js), shared by every zod
 * copy in the process: the first to build a schema sets the English locale and a memoizer for all, and a user's
 * `z.config()` or `import "zod/compile"` reaches tunnelwright's schemas. In the bundle both are objects of its own
 * (the build fails if zod stops naming them where this script expects). test/model/zod-bundle.test.ts runs the
 * validation rules through this bundle and through the package and expects the same problems, and checks the
 * isolation both ways.
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
      // A path relative to the package: the bundle's comments name it, and no builder's folder is published.
      return file === path.join(zodDir, 'v4', 'locales', 'index.js') ? { path: 'zod/v4/locales/index.js', namespace: 'english-only' } : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: 'english-only' }, () => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: path.join(zodDir, 'v4', 'locales'),
    }));
  },
};

/** The global each file shares through `globalThis`, and how many times the file names `globalThis` (zod 4.6.7). */
const SHARED = { 'core.js': ['__zod_globalConfig', 3], 'registries.js': ['__zod_globalRegistry', 2] };

/** zod's process-wide config and registry as the bundle's own objects. */
const privateGlobals = {
  name: 'private-globals',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]core[\\/](core|registries)\.js$/ }, (args) => {
      const [name, count] = SHARED[path.basename(args.path)];
      const text = fs.readFileSync(args.path, 'utf8');
      const uses = text.split('globalThis').length - 1;
      const named = text.split(`globalThis.${name}`).length - 1 + text.split(`globalThis).${name}`).length - 1;
      if (uses !== count || named !== count) throw new Error(`bundle-zod: ${path.relative(zodDir, args.path)} names globalThis.${name} ${uses} times, not ${count}: read it again before bundling`);
      const contents = `const __tunnelwright = {};\n${text.replaceAll('globalThis', '__tunnelwright')}`;
      if (contents.includes('globalThis')) throw new Error(`bundle-zod: ${args.path} still names globalThis`);
      return { contents, loader: 'js' };
    });
  },
};

const licence = fs.readFileSync(path.join(zodDir, 'LICENSE'), 'utf8').trim();
const result = await esbuild.build({
  entryPoints: [path.join(ROOT, 'src', 'zod.ts')],
  bundle: true,
  treeShaking: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  plugins: [englishOnly, privateGlobals],
  absWorkingDir: ROOT,
  metafile: true,
  logLevel: 'warning',
  banner: { js: `/*! zod ${version} (https://github.com/colinhacks/zod), zod/mini's functions that tunnelwright uses, bundled by tunnelwright (scripts/bundle-zod.mjs) with English messages only.\n${licence}\n*/` },
});
const inputs = Object.keys(result.metafile.inputs);
if (inputs.some((f) => /\/locales\/(?!en\.js$|index\.js$)[^/]+\.js$/.test(f))) throw new Error(`bundle-zod: a locale besides English was bundled: ${inputs.join(', ')}`);
if (result.warnings.length > 0) throw new Error(`bundle-zod: esbuild warned: ${result.warnings.map((w) => w.text).join('; ')}`);
const text = fs.readFileSync(outfile, 'utf8');
if (text.includes('globalThis')) throw new Error('bundle-zod: the bundle names globalThis');
if (text.includes(ROOT)) throw new Error(`bundle-zod: the bundle names the build folder ${ROOT}`);
// tsc's lib/zod.d.ts, .d.ts.map and .js.map (the re-export's) stay, so that `tsc --build` finds its outputs and
// builds incrementally; .npmignore keeps them out of the package (the bundle is zod's own readable code, unmapped).
process.stdout.write(`bundle-zod: zod ${version}, ${inputs.length} files -> ${path.relative(ROOT, outfile)} (${fs.statSync(outfile).size} bytes)\n`);
