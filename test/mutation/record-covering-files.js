// Stryker's dry run only (setupFilesAfterEnv in stryker.config.json): for each test of this file, the mutants it
// covers (Stryker's per-test coverage), appended as one line per file to .stryker-covering-files.jsonl in the
// sandbox. covering-files.js reads it back so that a mutant's run loads only the test files that cover it.
const fs = require('node:fs');
const path = require('node:path');

if (process.env.__STRYKER_ACTIVE_MUTANT__ === undefined) {
  const mutants = new Set();
  afterEach(() => {
    const stryker = globalThis.__stryker__;
    const hit = stryker?.mutantCoverage?.perTest?.[stryker.currentTestId];
    for (const id of Object.keys(hit ?? {})) mutants.add(id);
  });
  afterAll(() => {
    const line = JSON.stringify({ file: expect.getState().testPath, mutants: [...mutants] });
    fs.appendFileSync(path.join(process.cwd(), '.stryker-covering-files.jsonl'), `${line}\n`);
  });
}
