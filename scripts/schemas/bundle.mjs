// Bundles the upstream schemas that tunnelwright/testing loads into the package's schemas/ folder, at pack time
// (npm's prepack; postpack removes the folder again). Nothing here is committed: the repository keeps only
// manifest.json (each file's upstream repo, path, commit and sha256) and the licence texts beside this script.
//
//   node scripts/schemas/bundle.mjs [--from DIR] [--out DIR] [--all]   copy and verify (default out: ./schemas)
//   node scripts/schemas/bundle.mjs --clean [--out DIR]         remove the bundled folder
//
// The source folder is --from, else $TUNNELWRIGHT_SCHEMAS, else ../shared/schemas beside the repository: a folder of
// byte-for-byte upstream copies. A file with a different sha256 stops the pack with the upstream location of the
// file, so a package never ships a schema other than the one its SOURCES.md names. A missing file (a fresh clone with
// nothing beside it: no npm package the project uses ships these files) is left out with a notice, and SOURCES.md and
// manifest.json in the bundle say which and where to fetch it (tunnelwright/testing names it when a check needs it);
// with --all, a missing file stops the bundle too (the tests, not the pack, are where CI=true requires every schema).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

function arg(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const out = path.resolve(arg('--out') ?? path.join(ROOT, 'schemas'));
if (process.argv.includes('--clean')) {
  fs.rmSync(out, { recursive: true, force: true });
  process.exit(0);
}

const from = path.resolve(arg('--from') ?? process.env.TUNNELWRIGHT_SCHEMAS ?? path.join(ROOT, '../shared/schemas'));
const manifest = JSON.parse(fs.readFileSync(path.join(HERE, 'manifest.json'), 'utf8'));
const licenceSource = { 'Apache-2.0.txt': path.join(ROOT, 'LICENSE') };

const problems = [];
const missing = [];
for (const f of manifest.files) {
  const src = path.join(from, f.file);
  const where = `${f.repo} ${f.path} at ${f.commit}`;
  if (!fs.existsSync(src)) {
    missing.push(f);
    if (process.argv.includes('--all')) problems.push(`${f.file}: missing from ${from} (fetch it from ${where})`);
    continue;
  }
  const sha = crypto.createHash('sha256').update(fs.readFileSync(src)).digest('hex');
  if (sha !== f.sha256) problems.push(`${f.file}: sha256 ${sha} in ${from}, expected ${f.sha256} (${where}); a newer upstream copy needs its commit and sha256 in scripts/schemas/manifest.json`);
}
if (problems.length > 0) {
  process.stderr.write(`bundle-schemas: cannot bundle tunnelwright/testing's schemas (pass --from DIR or set TUNNELWRIGHT_SCHEMAS):\n${problems.map((p) => `  ${p}\n`).join('')}`);
  process.exit(1);
}
const bundled = manifest.files.filter((f) => !missing.includes(f));

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(path.join(out, 'LICENSES'), { recursive: true });
for (const f of bundled) fs.copyFileSync(path.join(from, f.file), path.join(out, f.file));
for (const l of new Set(bundled.flatMap((f) => f.licenseFiles))) {
  fs.copyFileSync(licenceSource[l] ?? path.join(HERE, l), path.join(out, 'LICENSES', l));
}
// Read by tunnelwright/testing to say where a schema left out comes from.
fs.writeFileSync(path.join(out, 'manifest.json'), `${JSON.stringify({ files: manifest.files.map((f) => ({ ...f, bundled: !missing.includes(f) })) }, undefined, 1)}\n`);
const rows = bundled.map((f) => `| ${f.file} | ${f.what} | ${f.repo} | ${f.path} | ${f.commit} | ${f.sha256} | ${f.license}: ${f.licenseFiles.map((l) => `LICENSES/${l}`).join(', ')} |`);
const absent = missing.map((f) => `| ${f.file} | ${f.what} | ${f.repo} | ${f.path} | ${f.commit} | ${f.sha256} |`);
fs.writeFileSync(path.join(out, 'SOURCES.md'), [
  '# Schemas: where each file comes from',
  '',
  'Byte-for-byte copies of upstream files, bundled when this package was packed. `tunnelwright/testing` reads them',
  'from this folder when no schema directory is passed and `$TUNNELWRIGHT_SCHEMAS` is unset.',
  '',
  '| file | what it checks | upstream repo | path | commit | sha256 | licence |',
  '|---|---|---|---|---|---|---|',
  ...rows,
  '',
  ...(missing.length > 0 ? [
    '## Not bundled',
    '',
    'This package was packed without these files: a check that needs one fails, naming it. Fetch it from its upstream',
    'location, check its sha256, and pass the folder holding it (with the files above) as the schema directory or in',
    '`$TUNNELWRIGHT_SCHEMAS`.',
    '',
    '| file | what it checks | upstream repo | path | commit | sha256 |',
    '|---|---|---|---|---|---|',
    ...absent,
    '',
  ] : []),
].join('\n'));
process.stderr.write(`bundle-schemas: ${bundled.length} of ${manifest.files.length} schemas from ${from} into ${out}\n`);
if (missing.length > 0) process.stderr.write(`bundle-schemas: not bundled (missing from ${from}; listed in SOURCES.md): ${missing.map((f) => f.file).join(', ')}\n`);
