#!/usr/bin/env node
/**
 * Fails when a published declaration file (lib/**\/*.d.ts, less lib/zod.d.ts, which is not packed) names zod: zod is
 * bundled into lib/zod.js and is no dependency of the package, so a user's tsc cannot resolve `import("zod/mini")`
 * (TS2307 under cdk8s-cli's template tsconfig). A schema exported from src/ must be `@internal` (stripInternal).
 * Part of `compile`, after tsc.
 *
 *   node scripts/check-dts.mjs
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LIB = path.join(ROOT, 'lib');
const NOT_PACKED = new Set([path.join(LIB, 'zod.d.ts')]);

function* walk(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (e.name.endsWith('.d.ts') && !NOT_PACKED.has(p)) yield p;
  }
}

const found = [];
for (const file of walk(LIB)) {
  fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (/["']zod(\/[^"']*)?["']|["'][./]*zod["']/.test(line)) found.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
  });
}
if (found.length > 0) {
  process.stderr.write(`check-dts: ${found.length} published declarations name zod, which users do not have (mark the export @internal):\n${found.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write('check-dts: no published declaration names zod\n');
