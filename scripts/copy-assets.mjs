#!/usr/bin/env node
/**
 * Copies the scripts and templates the library writes (src/**\/*.{sh,awk,nft}) to the same place under lib/, where
 * the compiled modules read them (src/assets.ts). Part of `compile`; fails when a source has none to copy.
 *
 *   node scripts/copy-assets.mjs
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ASSET = /\.(sh|awk|nft)$/;

function* walk(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (ASSET.test(e.name)) yield p;
  }
}

let n = 0;
for (const src of walk(path.join(ROOT, 'src'))) {
  const dest = path.join(ROOT, 'lib', path.relative(path.join(ROOT, 'src'), src));
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.copyFileSync(src, dest);
  n += 1;
}
process.stdout.write(`copy-assets: ${n} scripts and templates into lib/\n`);
