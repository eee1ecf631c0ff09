import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Where scripts/install-system-tools.sh unpacks the tools it does not install (promtool, blackbox exporter). */
export const TOOLS_BIN = path.resolve(__dirname, '../../.tools/bin');
const PATH = `${TOOLS_BIN}:${process.env.PATH ?? ''}:/usr/sbin:/sbin`;

export function which(tool: string): string | undefined {
  for (const dir of PATH.split(':')) {
    const p = path.join(dir, tool);
    if (dir && fs.existsSync(p)) return p;
  }
  return undefined;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, for assertions that any output (a warning) is a failure. */
  output: string;
}

/** Runs a command (no shell) with the tools' PATH. */
export function run(cmd: string, args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string; timeout?: number } = {}): Run {
  const r: SpawnSyncReturns<string> = spawnSync(cmd, args, { encoding: 'utf8', input: opts.input, cwd: opts.cwd, timeout: opts.timeout ?? 60_000, env: { ...process.env, PATH, ...opts.env } });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** Runs a shell script. */
export function sh(script: string, opts: { env?: Record<string, string>; timeout?: number } = {}): Run {
  return run('/bin/bash', ['-c', script], opts);
}

/**
 * Polls `pred` every 0.1 s for up to `limitSeconds`: the seconds it took to hold, or NaN if it never did. For a
 * positive claim ("the log says X"), in place of a fixed sleep, whose length a loaded machine outlasts. A `pred` that
 * throws (a file not written yet) has not held yet.
 */
export function secondsUntilTrue(pred: () => boolean, limitSeconds = 30): number {
  const t0 = Date.now();
  for (;;) {
    let holds = false;
    try {
      holds = pred();
    } catch {
      // not yet (a file not written yet)
    }
    if (holds) return (Date.now() - t0) / 1000;
    if (Date.now() - t0 >= limitSeconds * 1000) return NaN;
    sh('sleep 0.1');
  }
}

export function tmpdir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;

/** Third-party scripts the tests run (never copied into the repository): `$TUNNELWRIGHT_VENDOR`, else `../shared/vendor`. */
export const VENDOR_DIR = process.env.TUNNELWRIGHT_VENDOR ?? path.resolve(__dirname, '../../../shared/vendor');

/**
 * `describe` for tests that need real tools (and root, for network namespaces): skipped with a notice when one is
 * missing, except under CI=true, where that fails. A tool given as an absolute path (a vendored script) must exist.
 */
export function describeWithTools(name: string, tools: string[], fn: () => void, needsRoot = false): void {
  const missing = tools.filter((t) => (path.isAbsolute(t) ? !fs.existsSync(t) : !which(t)));
  if (needsRoot && !IS_ROOT) missing.push('(root)');
  if (missing.length === 0) {
    describe(name, fn);
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      it('has its tools', () => {
        throw new Error(`missing: ${missing.join(', ')}: run scripts/install-system-tools.sh (CI=true makes this a failure)`);
      });
    });
  } else {
    process.stderr.write(`notice: skipping "${name}": missing ${missing.join(', ')} (run scripts/install-system-tools.sh as root)\n`);
    describe.skip(name, fn);
  }
}

/** For setup code (beforeAll): throws with the command's output unless it succeeded. */
export function must(r: Run, what: string): Run {
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}):\n${r.output}`);
  return r;
}
