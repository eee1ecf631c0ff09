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
