/** What reached stderr uncaptured since the last take(). */
export interface StderrGuard {
  take(): string[];
}

/**
 * Puts a recording function under process.stderr.write, console.warn and console.error: it passes every write on and
 * keeps it for take(). A test's own jest.spyOn(...) wraps this function, so what the test captures never arrives here.
 */
export function stderrGuard(): StderrGuard {
  let written: string[] = [];
  const keep = (text: string): void => {
    if (text.length > 0 && !text.startsWith('notice: ')) written.push(text);
  };
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    keep(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  for (const level of ['warn', 'error'] as const) {
    const original = console[level].bind(console);
    console[level] = (...args: unknown[]) => {
      keep(`console.${level}: ${args.map(String).join(' ')}\n`);
      original(...args);
    };
  }
  return {
    take: () => {
      const out = written;
      written = [];
      return out;
    },
  };
}

/**
 * Runs `fn` with stderr captured: its value and what it wrote, one entry per line. Tests that expect warnings assert
 * them from here (the guard in quiet.ts fails any test that lets them through).
 */
export function captureStderr<T>(fn: () => T): { value: T; lines: string[] } {
  const written: string[] = [];
  const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => (written.push(String(chunk)), true));
  try {
    const value = fn();
    return { value, lines: written.join('').split('\n').filter((l) => l.length > 0) };
  } finally {
    write.mockRestore();
  }
}

/** The prop paths of the warning lines cdk8s printed (`  path: message` under a `warning: <construct>:` header). */
export function warnedPaths(lines: readonly string[]): string[] {
  return lines.filter((l) => l.startsWith('  ')).map((l) => l.trim().split(': ')[0]);
}

/**
 * For a test file whose constructs warn: records, in each test, what reaches stderr (cdk8s's `warning: <construct>:`
 * blocks) and console.warn (pulumi.log.warn without an engine), keeps it from the guard, and after the test asserts the
 * warnings' prop paths (`<construct>: <path>` for cdk8s, `<path>` for Pulumi) against `expected[<test name>]`
 * (default: none). Functions are replaced by hand, not with jest.spyOn, so a test's own spy still wraps them.
 */
export function expectWarnings(expected: Readonly<Record<string, readonly string[]>>): void {
  let written: string[] = [];
  let restore: (() => void) | undefined;
  beforeEach(() => {
    written = [];
    const write = process.stderr.write;
    const warn = console.warn;
    process.stderr.write = ((chunk: string | Uint8Array) => (written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')), true)) as typeof process.stderr.write;
    console.warn = (...args: unknown[]) => {
      written.push(`${args.map(String).join(' ')}\n`);
    };
    restore = () => {
      process.stderr.write = write;
      console.warn = warn;
    };
  });
  afterEach(() => {
    restore?.();
    const name = expect.getState().currentTestName ?? '';
    expect({ test: name, warned: warningPaths(written.join('')) }).toEqual({ test: name, warned: expected[name] ?? [] });
  });
}

/** `<construct>: <path>` per cdk8s warning line, `<path>` per Pulumi warning line, other lines whole. */
export function warningPaths(text: string): string[] {
  let header = '';
  const out: string[] = [];
  for (const line of text.split('\n').filter((l) => l.length > 0)) {
    const block = /^warning: ([^:]+):$/.exec(line);
    if (block) header = block[1];
    else if (line.startsWith('  ')) out.push(`${header}: ${line.trim().split(': ')[0]}`);
    else if (line.startsWith('warning: [runtime] ')) out.push(line.slice('warning: [runtime] '.length).split(': ')[0]);
    else if (!line.startsWith('warning: ') && line.includes(': ')) out.push(line.split(': ')[0]);
    else out.push(line);
  }
  return out;
}
