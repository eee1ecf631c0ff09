/** What reached stderr uncaptured since the last take(); restore() removes the spies. */
export interface StderrGuard {
  take(): string[];
  restore(): void;
}

type Impl = (...args: never[]) => unknown;
const layers = new WeakMap<jest.SpyInstance, Impl[]>();

/**
 * Puts `impl` under `object[key]` as a layer of one jest spy (jest.spyOn, so jest restores the stream's own function
 * at a file's end: never a function of a test's, which would swallow the reporter's account of a failure, issue 47).
 * jest.spyOn on a spied method gives back the same spy, so layers stack on it: a test's own
 * `jest.spyOn(process.stderr, 'write').mockImplementation(...)` covers the layers beneath, and its mockRestore()
 * uncovers them again (not the stream's own write). Returns the function that removes this layer.
 */
function spyLayer<T extends object>(object: T, key: keyof T & string, impl: Impl): () => void {
  const spy = jest.spyOn(object as Record<string, Impl>, key) as unknown as jest.SpyInstance;
  let stack = layers.get(spy);
  if (!stack) {
    const remove = spy.mockRestore.bind(spy);
    const own: Impl[] = [];
    stack = own;
    layers.set(spy, own);
    spy.mockRestore = () => {
      if (own.length === 0) return remove();
      spy.mockReset();
      spy.mockImplementation(own[own.length - 1] as never);
    };
    (spy as unknown as { removeLayers: () => void }).removeLayers = remove;
  }
  stack.push(impl);
  spy.mockImplementation(impl as never);
  const own = stack;
  return () => {
    const at = own.lastIndexOf(impl);
    if (at >= 0) own.splice(at, 1);
    if (own.length > 0) spy.mockImplementation(own[own.length - 1] as never);
    else {
      layers.delete(spy);
      (spy as unknown as { removeLayers: () => void }).removeLayers();
    }
  };
}

/**
 * Records what is written to process.stderr.write, console.warn and console.error, passing it on, for take(); call
 * it in a beforeEach and restore() in the afterEach (quiet.ts does). The functions are layers of jest's own spies
 * (spyLayer): a test's own spy covers them, so what the test captures never arrives here.
 */
export function stderrGuard(): StderrGuard {
  let written: string[] = [];
  const keep = (text: string): void => {
    if (text.length > 0 && !text.startsWith('notice: ')) written.push(text);
  };
  const write = process.stderr.write.bind(process.stderr);
  const removers = [spyLayer(process.stderr, 'write', (chunk: string | Uint8Array, ...rest: unknown[]) => {
    keep(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  })];
  for (const level of ['warn', 'error'] as const) {
    const original = console[level].bind(console);
    removers.push(spyLayer(console, level, (...args: unknown[]) => {
      keep(`console.${level}: ${args.map(String).join(' ')}\n`);
      original(...args);
    }));
  }
  return {
    take: () => {
      const out = written;
      written = [];
      return out;
    },
    restore: () => removers.reverse().forEach((r) => r()),
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
 * (default: none). The recording is a layer of jest's own spy (spyLayer): a test's own jest.spyOn(process.stderr,
 * 'write') covers it, so what that test captures is not counted here.
 */
export function expectWarnings(expected: Readonly<Record<string, readonly string[]>>): void {
  let written: string[] = [];
  let removers: (() => void)[] = [];
  beforeEach(() => {
    written = [];
    removers = [
      spyLayer(process.stderr, 'write', (chunk: string | Uint8Array) => (written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')), true)),
      spyLayer(console, 'warn', (...args: unknown[]) => {
        written.push(`${args.map(String).join(' ')}\n`);
      }),
    ];
  });
  afterEach(() => {
    removers.reverse().forEach((r) => r());
    const name = expect.getState().currentTestName ?? '';
    expect({ test: name, warned: warningPaths(written.join('')) }).toEqual({ test: name, warned: expected[name] ?? [] });
  });
}

/**
 * `<construct>: <path>` per cdk8s warning line, `<path>` per Pulumi warning line, other lines whole; the App's
 * `host files: <dir> (…)` lines (where it wrote each node's files, not a warning) are left out.
 */
export function warningPaths(text: string): string[] {
  let header = '';
  const out: string[] = [];
  for (const line of text.split('\n').filter((l) => l.length > 0 && !l.startsWith('host files: '))) {
    const block = /^warning: ([^:]+):$/.exec(line);
    if (block) header = block[1];
    else if (line.startsWith('  ')) out.push(`${header}: ${line.trim().split(': ')[0]}`);
    else if (line.startsWith('warning: [runtime] ')) out.push(line.slice('warning: [runtime] '.length).split(': ')[0]);
    else if (!line.startsWith('warning: ') && line.includes(': ')) out.push(line.split(': ')[0]);
    else out.push(line);
  }
  return out;
}
