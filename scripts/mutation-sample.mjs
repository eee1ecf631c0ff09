// npm run mutation:sample -- [size] [seed]: the mutation score over src/model, src/render and src/host, estimated
// from a uniform random sample of their mutants (a full run is ~6,400 mutants: hours on a 2-core machine).
// Lists every mutant with Stryker's own instrumenter, draws `size` of them with a seeded generator, runs Stryker on
// exactly those locations (not incremental: the local incremental file is left as it is), and prints the score
// with a 95 % Wilson interval, and each survivor. Writes reports/mutation/sample.json. Sampled from the mutants that
// contain no other mutant (see below).
// Static mutants (code that runs when a module loads: tables, patterns, messages built at the top level) are run and
// counted here, unlike in `npm run mutation` (ignoreStatic there): the score is printed with them and without them.
// A static mutant's run loads the test files that ran its code while loading (test/mutation/record-covering-files.js).
// `-- 150 330033 --part 2/6` runs only the 2nd of 6 interleaved parts of that sample (each a shorter Stryker run, for
// a shared machine); the run that completes the set tallies all the parts, as one run of the whole sample would.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Instrumenter } from '@stryker-mutator/instrumenter';

/** Runs Stryker (scripts/mutation.sh) on exactly `ranges`, not incremental; returns its JSON report. */
// `only`: the ids of the mutants to test (the others in the ranges run no test file: test/mutation/covering-files.js).
function runStryker(name, ranges, report = `reports/mutation/${name}-run.json`, only = undefined) {
  const config = `reports/mutation/${name}.stryker.config.json`;
  fs.mkdirSync(path.dirname(config), { recursive: true });
  const base = JSON.parse(fs.readFileSync('stryker.config.json', 'utf8'));
  fs.writeFileSync(config, JSON.stringify({ ...base, $schema: undefined, mutate: ranges, incremental: false, ignoreStatic: false, reporters: ['json', 'progress'], jsonReporter: { fileName: report } }, null, 2));
  const env = { ...process.env };
  if (only !== undefined) {
    const onlyFile = path.resolve(`reports/mutation/${name}.only.json`);
    fs.writeFileSync(onlyFile, JSON.stringify([...only]));
    env.TUNNELWRIGHT_MUTANTS_ONLY = onlyFile;
  }
  const run = spawnSync('bash', ['scripts/mutation.sh', config], { stdio: 'inherit', env });
  if (run.status !== 0) process.exit(run.status ?? 1);
  return JSON.parse(fs.readFileSync(report, 'utf8'));
}

/** A mutant no test killed: it survived, or no test reached it. */
const isOpen = (m) => m.status === 'Survived' || m.status === 'NoCoverage';

/**
 * The statuses of the report's mutants that `counted(file, m)` takes (a range also runs the mutants nested in it):
 * all of them, and split into the static ones (`m.static` in Stryker's report: the mutated code ran while a module
 * loaded or outside any test, such as a table built in a test's describe block) and the others. `staticOnly` are the
 * static ones no test covered while it ran, the ones `ignoreStatic` leaves out; the other static ones `ignoreStatic`
 * runs against their covering tests only.
 */
function tally(result, counted) {
  const counts = {};
  const byKind = { static: {}, notStatic: {}, staticOnly: {} };
  const survivors = [];
  for (const [file, f] of Object.entries(result.files)) {
    for (const m of f.mutants) {
      if (!counted(file, m)) continue;
      counts[m.status] = (counts[m.status] ?? 0) + 1;
      const kind = byKind[m.static ? 'static' : 'notStatic'];
      kind[m.status] = (kind[m.status] ?? 0) + 1;
      if (m.static && !(m.coveredBy?.length > 0)) byKind.staticOnly[m.status] = (byKind.staticOnly[m.status] ?? 0) + 1;
      if (isOpen(m)) survivors.push({ file, m });
    }
  }
  return { counts, byKind, matched: Object.values(counts).reduce((a, b) => a + b, 0), survivors };
}

/** Stryker's score (killed and timed out over those plus survived and uncovered) with its 95 % Wilson interval. */
function score(counts) {
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const valid = detected + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  if (valid === 0) return { valid, score: null, interval95: null };
  const p = detected / valid;
  const z = 1.96;
  const centre = (p + (z * z) / (2 * valid)) / (1 + (z * z) / valid);
  const half = (z * Math.sqrt((p * (1 - p)) / valid + (z * z) / (4 * valid * valid))) / (1 + (z * z) / valid);
  const pct = (x) => Number((x * 100).toFixed(1));
  return { valid, score: pct(p), interval95: [pct(centre - half), pct(centre + half)] };
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
    : JSON.parse(fs.readFileSync('reports/mutation/sample.json', 'utf8')).survivors.map((line) => line.replace(/ static$/, '').split(' ').slice(0, 1).concat(line.replace(/ static$/, '').split(' ').slice(2)).join(' '));
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
  const { counts, byKind, matched, survivors } = tally(runStryker('rerun', ranges), (file, m) => wantedNow.has(startKey(file, m)));
  const out = { of: survivorKeys.length, matched, counts, byKind, notFound: notFound.sort(), survivors: survivors.map(({ file, m }) => `${startKey(file, m)} ${m.status}`).sort() };
  fs.writeFileSync('reports/mutation/rerun.json', `${JSON.stringify(out, null, 2)}\n`);
  console.log(JSON.stringify(out, null, 2));
  process.exit(0);
}

const partAt = process.argv.indexOf('--part');
// `--part 2-4/6` runs parts 2, 3 and 4 in one Stryker run (one dry run for the three) and keeps each part's report.
const [partsText, partsOf] = partAt > 0 ? process.argv[partAt + 1].split('/') : ['1', '1'];
const parts = Number(partsOf);
const [part, lastPart = part] = partsText.split('-').map(Number);
const positional = process.argv.slice(2).filter((a, i, all) => a !== '--part' && all[i - 1] !== '--part');
const [size, seed] = [Number(positional[0] ?? 400), Number(positional[1] ?? 20261130)];
if (!(Number.isInteger(part) && Number.isInteger(lastPart) && Number.isInteger(parts) && part >= 1 && part <= lastPart && lastPart <= parts)) throw new Error(`--part wants i/n with 1 <= i <= n, not ${process.argv[partAt + 1]}`);
const noop = () => {};
const logger = Object.fromEntries(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].flatMap((l) => [[l, noop], [`is${l[0].toUpperCase()}${l.slice(1)}Enabled`, () => false]]));

// Every TypeScript file under the three folders, their sub-folders included (a construct's render may be a folder of
// files), less every index.ts: what stryker.config.json's `mutate` globs take.
const files = ['src/model', 'src/render', 'src/host'].flatMap((dir) => fs.readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.ts') && path.basename(f) !== 'index.ts').map((f) => path.join(dir, f))).sort();
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

// The parts interleave the shuffled sample (the i-th takes every n-th mutant from the i-th), so each is a sample too.
// Each part's report names the sample it belongs to; the run that finds every part of that sample tallies them all.
const partReport = (i) => (parts === 1 ? 'reports/mutation/sample-run.json' : `reports/mutation/sample-part-${i}-of-${parts}-run.json`);
const samplePart = { seed, size, parts };
const partOf = (i) => (i % parts) + 1;
const mine = sample.filter((_, i) => partOf(i) >= part && partOf(i) <= lastPart);
const partOfKey = new Map(sample.map((m, i) => [key(m.fileName, m.location, m.mutatorName, m.replacement), partOf(i)]));
// A range also takes the other mutants at the same place (a condition's `true`, `false` and operator mutants share
// one), two in three of a run's mutants. Stryker numbers the mutants of a run in the order it instruments them, so
// instrumenting the same ranges in the same file order here gives each mutant its id there: only the sampled ids run
// their tests; the others are reported survived with no test run, and are not counted. The ids are checked against
// the report below (a mismatch stops the tally).
// Stryker's file order is its crawl's (@stryker-mutator/core 9.6.1 dist/src/fs/project-reader.js `crawlDir`): depth
// first, each folder's entries in readdir order, which libuv's scandir sorts by name (strcmp). A folder's files come
// at the folder's name, so `vpn-gateway/route.ts` comes before `vpn-gateway-failover.ts` (the name `vpn-gateway` is
// a prefix of the other), where a sort of whole paths puts it after (`-` < `/`). The sample itself is still drawn
// from the path-sorted list above, so a seed draws the same mutants as before.
const crawlOrder = (a, b) => {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return x.length - y.length;
};
const mineByFile = new Map();
for (const m of mine) mineByFile.set(m.fileName, [...(mineByFile.get(m.fileName) ?? []), m.location]);
const { mutants: inRun } = await new Instrumenter(logger).instrument([...files].sort(crawlOrder).filter((f) => mineByFile.has(f)).map((name) => ({ name, content: fs.readFileSync(name, 'utf8'), mutate: mineByFile.get(name) })), { plugins: null, excludedMutations: [], ignorers: [] });
const mineKeys = new Set(mine.map((m) => key(m.fileName, m.location, m.mutatorName, m.replacement)));
const wantedIds = new Map(inRun.filter((m) => mineKeys.has(key(m.fileName, m.location, m.mutatorName, m.replacement))).map((m) => [String(m.id), key(m.fileName, m.location, m.mutatorName, m.replacement)]));
const runName = parts === 1 ? 'sample' : `sample-part-${part}${lastPart > part ? `-${lastPart}` : ''}-of-${parts}`;
const own = runStryker(runName, mine.map((m) => `${m.fileName}:${m.location.start.line + 1}:${m.location.start.column}-${m.location.end.line + 1}:${m.location.end.column}`), `reports/mutation/${runName}-run.json`, wantedIds.keys());
const reportKey = (file, m) => key(file, { start: { line: m.location.start.line - 1, column: m.location.start.column - 1 }, end: { line: m.location.end.line - 1, column: m.location.end.column - 1 } }, m.mutatorName, m.replacement);
const mismatched = Object.entries(own.files).flatMap(([file, f]) => f.mutants.filter((m) => mineKeys.has(reportKey(file, m)) !== (wantedIds.get(String(m.id)) === reportKey(file, m))));
if (mismatched.length > 0 || wantedIds.size !== mine.length) {
  console.error(`the mutant ids predicted for this run differ from Stryker's (${mismatched.length} mismatched, ${wantedIds.size} of ${mine.length} found): not tallied`);
  process.exit(1);
}
// Each part's report holds its own sampled mutants (a run of several parts is split again).
for (let i = part; i <= lastPart; i++) {
  const files = Object.fromEntries(Object.entries(own.files).map(([file, f]) => [file, { ...f, mutants: f.mutants.filter((m) => partOfKey.get(reportKey(file, m)) === i) }]));
  fs.writeFileSync(partReport(i), JSON.stringify({ ...own, files, samplePart: { ...samplePart, part: i } }));
}
const reports = [];
for (let i = 1; i <= parts; i++) {
  const r = fs.existsSync(partReport(i)) ? JSON.parse(fs.readFileSync(partReport(i), 'utf8')) : undefined;
  const theirs = r?.samplePart;
  if (theirs?.seed === seed && theirs.size === size && theirs.parts === parts && theirs.part === i) reports.push(r);
}
if (reports.length < parts) {
  const mineNow = tally(own, (file, m) => mineKeys.has(reportKey(file, m)));
  console.log(`part ${part}${lastPart > part ? `-${lastPart}` : ''} of ${parts} done (seed ${seed}, size ${size}): ${JSON.stringify(mineNow.byKind)}; ${parts - reports.length} part(s) still to run`);
  for (const { file, m } of mineNow.survivors) console.log(`  ${file}:${m.location.start.line}:${m.location.start.column} ${m.status} ${m.mutatorName} ${JSON.stringify(m.replacement)}${m.static ? ' static' : ''}`);
  process.exit(0);
}
// A part's run also holds the mutants at its places that were sampled into another part: each is counted in its own.
const result = { files: {} };
for (const r of reports) {
  for (const [file, f] of Object.entries(r.files)) {
    result.files[file] ??= { ...f, mutants: [] };
    result.files[file].mutants.push(...f.mutants.filter((m) => partOfKey.get(reportKey(file, m)) === r.samplePart.part));
  }
}
const { counts, byKind, matched, survivors: left } = tally(result, (file, m) => wanted.has(reportKey(file, m)));
const survivors = left.map(({ file, m }) => `${file}:${m.location.start.line}:${m.location.start.column} ${m.status} ${m.mutatorName} ${JSON.stringify(m.replacement)}${m.static ? ' static' : ''}`);
const all = score(counts);
const withoutStatics = score(byKind.notStatic);
const out = {
  seed, parts, mutants: mutants.length, containers: mutants.length - leaves.length, population: leaves.length, sampled: sample.length, matched, counts,
  score: all.score, interval95: all.interval95,
  static: { counts: byKind.static, ...score(byKind.static) },
  withoutStatics: { counts: byKind.notStatic, ...withoutStatics },
  staticOnly: { counts: byKind.staticOnly, ...score(byKind.staticOnly) },
  withoutStaticOnly: score(Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v - (byKind.staticOnly[k] ?? 0)]))),
  survivors: survivors.sort(),
};
fs.writeFileSync('reports/mutation/sample.json', `${JSON.stringify(out, null, 2)}\n`);
console.log(JSON.stringify({ ...out, survivors: survivors.length }, null, 2));
for (const s of out.survivors) console.log(`  ${s}`);
