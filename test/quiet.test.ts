import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The stderr guard every unit test runs under (test/helpers/quiet.ts, jest's setupFilesAfterEnv): a test that writes a
 * warning to stderr or the console without capturing it fails with what it wrote; the same write captured by the test
 * passes. Shown by running jest on a small test file under the same setup.
 */
const ROOT = path.resolve(__dirname, '..');

describe('a test that writes to stderr without capturing it fails', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-quiet-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('fails the uncaptured writes (process.stderr.write, console.warn, console.error) and passes the captured ones', () => {
    fs.writeFileSync(path.join(dir, 'noisy.test.js'), [
      "test('writes a warning to stderr', () => { process.stderr.write('warning: boom\\n'); });",
      "test('captures the warning it expects', () => {",
      "  const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);",
      "  process.stderr.write('warning: expected\\n');",
      "  expect(write).toHaveBeenCalledWith('warning: expected\\n');",
      '  write.mockRestore();',
      '});',
      "test('warns on the console', () => { console.warn('careful'); });",
      "test('errors on the console', () => { console.error('bad'); });",
      "test('writes nothing', () => { expect(1).toBe(1); });",
      "test('a notice is let through', () => { process.stderr.write('notice: skipping x\\n'); });",
    ].join('\n'));
    const config = {
      rootDir: dir,
      testMatch: ['<rootDir>/*.test.js'],
      setupFilesAfterEnv: [path.join(ROOT, 'test/helpers/quiet.ts')],
      transform: { '^.+\\.ts$': [require.resolve('ts-jest'), { tsconfig: path.join(ROOT, 'test/tsconfig.json') }] },
      testEnvironment: 'node',
      // No time bound (issue 30): the outer test's own bound is the only one.
      testTimeout: 600_000,
    };
    const out = path.join(dir, 'result.json');
    const r = spawnSync(process.execPath, [require.resolve('jest/bin/jest'), '--config', JSON.stringify(config), '--silent', '--json', `--outputFile=${out}`], { cwd: dir, encoding: 'utf8' });
    expect(r.status).toBe(1);
    const result = JSON.parse(fs.readFileSync(out, 'utf8')) as { testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[] };
    const tests = result.testResults[0].assertionResults.map((t) => [t.title, t.status, t.failureMessages.join('').split('\n')[0]]);
    const message = 'Error: this test wrote to stderr without capturing it (capture and assert the warnings a test expects):';
    expect(tests).toEqual([
      ['writes a warning to stderr', 'failed', message],
      ['captures the warning it expects', 'passed', ''],
      ['warns on the console', 'failed', message],
      ['errors on the console', 'failed', message],
      ['writes nothing', 'passed', ''],
      ['a notice is let through', 'passed', ''],
    ]);
    const failures = result.testResults[0].assertionResults.map((t) => t.failureMessages.join(''));
    expect(failures[0]).toContain('warning: boom');
    expect(failures[2]).toContain('console.warn: careful');
    expect(failures[3]).toContain('console.error: bad');
  }, 120_000);

  it('run in band, prints a failing test\'s reason after a file whose tests captured stderr with spies of their own', () => {
    // Issue 47: expectWarnings put its function under process.stderr.write by hand; a test's own spy then recorded it
    // as the function to restore, jest's teardown restored it after the file, and the reporter's account of the
    // failure went into it: the run printed only "1 failed".
    const sub = fs.mkdtempSync(path.join(dir, 'inband-'));
    fs.writeFileSync(path.join(sub, 'failing.test.js'), [
      `const { expectWarnings } = require(${JSON.stringify(path.join(ROOT, 'test/helpers/stderr-guard.ts'))});`,
      "expectWarnings({ 'captures its own warning': [] });",
      "test('captures its own warning', () => {",
      "  const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);",
      "  try { process.stderr.write('warning: x:\\n  y: z\\n'); } finally { write.mockRestore(); }",
      '});',
      "test('fails', () => { expect({ planted: 'received' }).toEqual({ planted: 'expected' }); });",
      "test('captures again, last', () => {",
      "  const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);",
      "  try { process.stderr.write('warning: x:\\n  y: z\\n'); } finally { write.mockRestore(); }",
      '});',
    ].join('\n'));
    const config = {
      rootDir: sub,
      testMatch: ['<rootDir>/*.test.js'],
      setupFilesAfterEnv: [path.join(ROOT, 'test/helpers/quiet.ts')],
      transform: { '^.+\\.ts$': [require.resolve('ts-jest'), { tsconfig: path.join(ROOT, 'test/tsconfig.json') }] },
      testEnvironment: 'node',
      testTimeout: 600_000,
    };
    const r = spawnSync(process.execPath, [require.resolve('jest/bin/jest'), '--config', JSON.stringify(config), '--runInBand', '--ci'], { cwd: sub, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' } });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('Tests:       1 failed, 2 passed, 3 total');
    // The reason, in band: the test's name, the diff and the line.
    expect(r.stderr).toContain('● fails');
    expect(r.stderr).toContain('-   "planted": "expected",');
    expect(r.stderr).toContain('+   "planted": "received",');
  }, 120_000);
});
