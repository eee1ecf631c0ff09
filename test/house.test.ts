import * as fs from 'node:fs';
import * as path from 'node:path';

// Issue 42, "the house": one concern per file, none over about 400 lines, so the next capability lands in a room with
// space. A file that grows past the limit is split by concern (a construct with several parts is a folder).
const SRC = path.resolve(__dirname, '..', 'src');
const LIMIT = 400;
// Stryker's sandbox holds the instrumented sources (every mutant switched in, so each file is longer): the count is
// of the source tree, not of the sandbox's copy.
const IN_STRYKER_SANDBOX = SRC.split(path.sep).includes('.stryker-tmp');

function sourceFiles(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => path.join(dir, f));
}

function lines(file: string): number {
  return fs.readFileSync(file, 'utf8').split('\n').length - 1;
}

(IN_STRYKER_SANDBOX ? describe.skip : describe)('the house\'s source tree', () => {
  it(`no TypeScript file under src/ is over ${LIMIT} lines`, () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(50);
    const over = files.map((f) => ({ file: path.relative(SRC, f), lines: lines(f) })).filter((f) => f.lines > LIMIT);
    expect(over).toEqual([]);
  });
});

describe('the house', () => {

  it('control: the line count sees a file over the limit', () => {
    const tmp = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'tw-house-'));
    try {
      fs.writeFileSync(path.join(tmp, 'big.ts'), 'export const x = 1;\n'.repeat(LIMIT + 1));
      const [file] = sourceFiles(tmp);
      expect(lines(file)).toBe(LIMIT + 1);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
