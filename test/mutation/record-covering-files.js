// Stryker's dry run only (setupFilesAfterEnv in stryker.config.json): for each test of this file, the mutants it
// covers (Stryker's per-test coverage), appended as one line per file to .stryker-covering-files.jsonl in the
// sandbox. covering-files.js reads it back so that a mutant's run loads only the test files that cover it.
// Static mutants too (code run while a module loads or in a hook, outside any test: Stryker counts it in
// `mutantCoverage.static`, one counter object for the whole in-band run): the ids whose counter grew while this file
// ran are the static code this file executed. Jest loads every module afresh for each test file, so a file whose
// counters did not grow never ran that code, and a static mutant's run (ignoreStatic off) needs only the files that did.
const fs = require('node:fs');
const path = require('node:path');

if (process.env.__STRYKER_ACTIVE_MUTANT__ === undefined) {
  const mutants = new Set();
  const staticBefore = { ...(globalThis.__stryker__?.mutantCoverage?.static ?? {}) };
  afterEach(() => {
    const stryker = globalThis.__stryker__;
    const hit = stryker?.mutantCoverage?.perTest?.[stryker.currentTestId];
    for (const id of Object.keys(hit ?? {})) mutants.add(id);
  });
  afterAll(() => {
    const staticNow = globalThis.__stryker__?.mutantCoverage?.static ?? {};
    for (const [id, count] of Object.entries(staticNow)) if (count > (staticBefore[id] ?? 0)) mutants.add(id);
    const line = JSON.stringify({ file: expect.getState().testPath, mutants: [...mutants] });
    fs.appendFileSync(path.join(process.cwd(), '.stryker-covering-files.jsonl'), `${line}\n`);
  });
}
