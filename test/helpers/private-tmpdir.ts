// Jest setupFilesAfterEnv: each test file gets its own temporary directory, removed when the file's tests end.
// cdk8s's Testing.app() and the tests' own mkdtemp calls write synth output under os.tmpdir() and never remove it.
// os.tmpdir() is answered with this directory for the file's run (on Node's own os module, which cdk8s shares:
// jest's copy of process.env does not reach it), and TMPDIR is set for the programs the tests start.
import * as fs from 'node:fs';
import * as path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nodeOs: typeof import('node:os') = require('node:os');

const previous = process.env.TMPDIR;
const dir = fs.mkdtempSync(path.join(nodeOs.tmpdir(), 'tunnelwright-test-'));
const tmpdir = jest.spyOn(nodeOs, 'tmpdir').mockReturnValue(dir);
process.env.TMPDIR = dir;

afterAll(() => {
  tmpdir.mockRestore();
  if (previous === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = previous;
  fs.rmSync(dir, { recursive: true, force: true });
});
