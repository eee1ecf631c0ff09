// npm run mutation:sample -- [size] [seed]: the mutation score over src/model, src/render and src/host, estimated
// from a uniform random sample of their mutants (a full run is ~6,400 mutants: hours on a 2-core machine).
// Lists every mutant with Stryker's own instrumenter, draws `size` of them with a seeded generator, runs Stryker on
// exactly those locations (not incremental: the committed incremental file is left as it is), and prints the score
// with a 95 % Wilson interval, and each survivor. Writes reports/mutation/sample.json. Sampled from the mutants that
// contain no other mutant (see below).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Instrumenter } from '@stryker-mutator/instrumenter';

/** Runs Stryker (scripts/mutation.sh) on exactly `ranges`, not incremental; returns its JSON report. */
function runStryker(name, ranges) {
  const report = `reports/mutation/${name}-run.json`;
  const config = `reports/mutation/${name}.stryker.config.json`;
  fs.mkdirSync(path.dirname(config), { recursive: true });
  const base = JSON.parse(fs.readFileSync('stryker.config.json', 'utf8'));
  fs.writeFileSync(config, JSON.stringify({ ...base, $schema: undefined, mutate: ranges, incremental: false, reporters: ['json', 'progress'], jsonReporter: { fileName: report } }, null, 2));
  const run = spawnSync('bash', ['scripts/mutation.sh', config], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
  return JSON.parse(fs.readFileSync(report, 'utf8'));
}

/** A mutant no test killed: it survived, or no test reached it. */
const isOpen = (m) => m.status === 'Survived' || m.status === 'NoCoverage';

/** The statuses of the report's mutants that `counted(file, m)` takes (a range also runs the mutants nested in it). */
function tally(result, counted) {
  const counts = {};
  const survivors = [];
  for (const [file, f] of Object.entries(result.files)) {
    for (const m of f.mutants) {
      if (!counted(file, m)) continue;
      counts[m.status] = (counts[m.status] ?? 0) + 1;
      if (isOpen(m)) survivors.push({ file, m });
    }
  }
  return { counts, matched: Object.values(counts).reduce((a, b) => a + b, 0), survivors };
}

/** A report mutant by where it starts, what it does and its replacement (a survivor line without its status). */
const startKey = (file, m) => `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} ${JSON.stringify(m.replacement)}`;

// `npm run mutation:sample -- --rerun`: the last sample's survivors only, against the suite and sources as they are now
// (after tests and fixes written against them): how many of them it kills. Reads reports/mutation/sample.json and
// sample-run.json. A survivor is found again by its line's text (sources move between runs); one whose line is gone or
// no longer unique is listed as not found.
// `--rerun <report.json>` does the same for the survivors (and uncovered mutants) of any Stryker JSON report, such as
// a narrowed `npm run mutation`'s reports/mutation/mutation.json.
if (process.argv[2] === '--rerun') {
  const given = process.argv[3];
  const run = JSON.parse(fs.readFileSync(given ?? 'reports/mutation/sample-run.json', 'utf8'));
  // Each survivor's key: from the report itself, or from the sample's survivor lines without their status.
  const survivorKeys = given
    ? Object.entries(run.files).flatMap(([file, f]) => f.mutants.filter(isOpen).map((m) => startKey(file, m)))
    : JSON.parse(fs.readFileSync('reports/mutation/sample.json', 'utf8')).survivors.map((line) => line.split(' ').slice(0, 1).concat(line.split(' ').slice(2)).join(' '));
  const wantedSurvivors = new Set(survivorKeys);
  const targets = Object.entries(run.files).flatMap(([file, f]) => f.mutants.filter((m) => wantedSurvivors.has(startKey(file, m))).map((m) => ({ file, m, text: f.source.split('\n')[m.location.start.line - 1] })));
  const moved = [];
  const notFound = [];
  for (const t of targets) {
    const now = fs.existsSync(t.file) ? fs.readFileSync(t.file, 'utf8').split('\n') : [];
    const at = now.flatMap((line, i) => (line === t.text ? [i + 1] : []));
    if (at.length === 1) moved.push({ ...t, delta: at[0] - t.m.location.start.line });
    else notFound.push(startKey(t.file, t.m));
  }
  // Each survivor where it is now: its key to count it by, and its range to run.
  const now = moved.map(({ file, m, delta }) => ({ file, start: { ...m.location.start, line: m.location.start.line + delta }, end: { ...m.location.end, line: m.location.end.line + delta }, m }));
  const wantedNow = new Set(now.map(({ file, start, end, m }) => startKey(file, { ...m, location: { start, end } })));
  const ranges = now.map(({ file, start, end }) => `${file}:${start.line}:${start.column - 1}-${end.line}:${end.column - 1}`);
  const { counts, matched, survivors } = tally(runStryker('rerun', ranges), (file, m) => wantedNow.has(startKey(file, m)));
  const out = { of: survivorKeys.length, matched, counts, notFound: notFound.sort(), survivors: survivors.map(({ file, m }) => `${startKey(file, m)} ${m.status}`).sort() };
  fs.writeFileSync('reports/mutation/rerun.json', `${JSON.stringify(out, null, 2)}\n`);
  console.log(JSON.stringify(out, null, 2));
  process.exit(0);
}

const [size, seed] = [Number(process.argv[2] ?? 400), Number(process.argv[3] ?? 20261130)];
const noop = () => {};
const logger = Object.fromEntries(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].flatMap((l) => [[l, noop], [`is${l[0].toUpperCase()}${l.slice(1)}Enabled`, () => false]]));

const files = ['src/model', 'src/render', 'src/host'].flatMap((dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'index.ts').map((f) => path.join(dir, f))).sort();
const { mutants } = await new Instrumenter(logger).instrument(files.map((name) => ({ name, content: fs.readFileSync(name, 'utf8'), mutate: true })), { plugins: null, excludedMutations: [], ignorers: [] });

// mulberry32: the same seed draws the same sample from the same sources.
let state = seed >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
// A range takes every mutant inside it, so a mutant that contains others (an emptied block, object or list) would
// bring its whole body into the run. The population is the mutants that contain no other (their count is printed
// beside the containers'); containers are the mutants most often killed, so leaving them out lowers the estimate.
const before = (a, b) => a.line < b.line || (a.line === b.line && a.column <= b.column);
const same = (a, b) => a.line === b.line && a.column === b.column;
const inside = (inner, outer) => before(outer.location.start, inner.location.start) && before(inner.location.end, outer.location.end)
  && !(same(outer.location.start, inner.location.start) && same(outer.location.end, inner.location.end));
const byFile = new Map();
for (const m of mutants) byFile.set(m.fileName, [...(byFile.get(m.fileName) ?? []), m]);
const leaves = mutants.filter((m) => !byFile.get(m.fileName).some((o) => inside(o, m)));
const pool = [...leaves];
for (let i = pool.length - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  [pool[i], pool[j]] = [pool[j], pool[i]];
}
const sample = pool.slice(0, Math.min(size, pool.length));
const key = (file, loc, mutator, replacement) => `${file}:${loc.start.line}:${loc.start.column}-${loc.end.line}:${loc.end.column}:${mutator}:${replacement}`;
const wanted = new Set(sample.map((m) => key(m.fileName, m.location, m.mutatorName, m.replacement)));
const ranges = sample.map((m) => `${m.fileName}:${m.location.start.line + 1}:${m.location.start.column}-${m.location.end.line + 1}:${m.location.end.column}`);

const result = runStryker('sample', ranges);
const { counts, matched, survivors: left } = tally(result, (file, m) => wanted.has(key(file, { start: { line: m.location.start.line - 1, column: m.location.start.column - 1 }, end: { line: m.location.end.line - 1, column: m.location.end.column - 1 } }, m.mutatorName, m.replacement)));
const survivors = left.map(({ file, m }) => `${file}:${m.location.start.line}:${m.location.start.column} ${m.status} ${m.mutatorName} ${JSON.stringify(m.replacement)}`);
const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
const valid = detected + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
const p = detected / valid;
const z = 1.96;
const centre = (p + (z * z) / (2 * valid)) / (1 + (z * z) / valid);
const half = (z * Math.sqrt((p * (1 - p)) / valid + (z * z) / (4 * valid * valid))) / (1 + (z * z) / valid);
const out = { seed, mutants: mutants.length, containers: mutants.length - leaves.length, population: leaves.length, sampled: sample.length, matched, counts, score: Number((p * 100).toFixed(1)), interval95: [Number(((centre - half) * 100).toFixed(1)), Number(((centre + half) * 100).toFixed(1))], survivors: survivors.sort() };
fs.writeFileSync('reports/mutation/sample.json', `${JSON.stringify(out, null, 2)}\n`);
console.log(JSON.stringify({ ...out, survivors: survivors.length }, null, 2));
for (const s of out.survivors) console.log(`  ${s}`);
