// Jest's `filter` in Stryker's mutant runs (stryker.config.json): only the test files whose tests cover the active
// mutant are loaded (Stryker already narrows the tests by name, but jest loads every file to find them, and loading
// was most of each mutant's time). Without the dry run's record, or for a mutant it does not list, every file runs.
const fs = require('node:fs');
const path = require('node:path');

// TUNNELWRIGHT_MUTANTS_ONLY names a JSON list of mutant ids (scripts/mutation-sample.mjs): any other mutant runs no
// test file (Stryker then reports it survived, with no test run; the sample does not count it).
let byMutant;
let only;

function load() {
  const map = new Map();
  const file = path.join(process.cwd(), '.stryker-covering-files.jsonl');
  if (!fs.existsSync(file)) return map;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const { file: testFile, mutants } = JSON.parse(line);
    for (const id of mutants) {
      if (!map.has(id)) map.set(id, new Set());
      map.get(id).add(testFile);
    }
  }
  return map;
}

module.exports = async (testPaths) => {
  const id = process.env.__STRYKER_ACTIVE_MUTANT__;
  const all = { filtered: testPaths.map((test) => ({ test })) };
  if (id === undefined) return all;
  if (process.env.TUNNELWRIGHT_MUTANTS_ONLY) {
    only ??= new Set(JSON.parse(fs.readFileSync(process.env.TUNNELWRIGHT_MUTANTS_ONLY, 'utf8')));
    if (!only.has(id)) return { filtered: [] };
  }
  byMutant ??= load();
  const files = byMutant.get(id);
  if (files === undefined) return all;
  return { filtered: testPaths.filter((p) => files.has(p)).map((test) => ({ test })) };
};
