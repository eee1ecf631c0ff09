// Jest setupFilesAfterEnv: each test file gets its own temporary directory, removed when the file's tests end.
// cdk8s's Testing.app() and the tests' own mkdtemp calls write under os.tmpdir() and never remove it. os.tmpdir() is
// answered with this directory for the file's run, on Node's own os module, which cdk8s shares (jest's copy of
// process.env does not reach it). TMPDIR itself is left alone: the system tests start programs inside mount
// namespaces whose /tmp does not hold this directory (OpenVPN's --tmp-dir defaults to $TMPDIR).
import * as fs from 'node:fs';
import * as path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const nodeOs: typeof import('node:os') = require('node:os');

const dir = fs.mkdtempSync(path.join(nodeOs.tmpdir(), 'tunnelwright-test-'));
const tmpdir = jest.spyOn(nodeOs, 'tmpdir').mockReturnValue(dir);

afterAll(() => {
  tmpdir.mockRestore();
  fs.rmSync(dir, { recursive: true, force: true });
});
