// Jest setupFilesAfterEnv: a test that writes to stderr (process.stderr.write, console.warn, console.error) without
// capturing it fails, with what it wrote. Tests capture the warnings they expect (jest.spyOn(process.stderr, 'write')
// or pulumi.log.warn mocked) and assert them; a spy installed by a test sits over this guard, so what it captures never
// reaches it. Lines starting with "notice: " (a suite skipped for a missing tool, outside CI) are let through.
import { stderrGuard } from './stderr-guard';

const guard = stderrGuard();

beforeEach(() => {
  guard.take();
});

afterEach(() => {
  const written = guard.take();
  if (written.length > 0) throw new Error(`this test wrote to stderr without capturing it (capture and assert the warnings a test expects):\n${written.join('').slice(0, 2000)}`);
});
