// Jest setupFilesAfterEnv: a test that writes to stderr (process.stderr.write, console.warn, console.error) without
// capturing it fails, with what it wrote. Tests capture the warnings they expect (jest.spyOn(process.stderr, 'write')
// or pulumi.log.warn mocked) and assert them; a test's own spy takes over this guard's, so what it captures never
// reaches it. Lines starting with "notice: " (a suite skipped for a missing tool, outside CI) are let through. The
// guard is jest's spies, installed before and removed after each test: nothing of it stays under process.stderr.write
// when the reporter prints a failure (issue 47).
import { stderrGuard, type StderrGuard } from './stderr-guard';

let guard: StderrGuard | undefined;

beforeEach(() => {
  guard = stderrGuard();
});

afterEach(() => {
  const written = guard?.take() ?? [];
  guard?.restore();
  guard = undefined;
  if (written.length > 0) throw new Error(`this test wrote to stderr without capturing it (capture and assert the warnings a test expects):\n${written.join('').slice(0, 2000)}`);
});
