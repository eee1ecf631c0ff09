import { secretLook } from './model/secret-look';

/**
 * One thing wrong with the props, located by a path into the props as the user wrote them.
 *
 * @example { path: 'wireguard[0].peers[2].allowedIPs[1]', code: 'cidr', message: 'expected a CIDR such as 10.0.0.0/24, received "10.0.0.300/24"' }
 */
export interface Problem {
  /** Where, in the props as written: `wireguard[0].peers[2].allowedIPs[1]`; a cross-construct problem is `<construct path>:<prop path>`. */
  readonly path: string;
  /** A stable, machine-readable code (`cidr`, `overlap`, `inline-secret`, …). */
  readonly code: string;
  /** What is wrong, the value received (secrets redacted) and what is expected. */
  readonly message: string;
}

/** Thrown by every `plan*` function and construct when the props are invalid: all problems at once. */
export class ValidationError extends Error {
  public declare readonly problems: Problem[];

  public constructor(problems: Problem[], subject = 'props') {
    super(`invalid ${subject}:\n${formatProblems(problems)}`);
    this.name = 'ValidationError';
    // Not enumerable: Node prints an uncaught error's enumerable fields after its message, which holds them already.
    Object.defineProperty(this, 'problems', { value: problems, enumerable: false, writable: false });
  }

  /** The same problems, for a subject named more precisely (a construct path). */
  public withSubject(subject: string): ValidationError {
    return new ValidationError(this.problems, subject);
  }
}

/** One line per problem: `path: message`. */
export function formatProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${p.path || '(root)'}: ${p.message}`).join('\n');
}

/** Renders a path as the user wrote it: `a[0].b["x.y/z"]`. */
export function joinPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    // A key that looks like a secret (a token pasted as a label key) is named by what it looks like, never shown.
    else if (secretLook(s)) out += `[(a key that looks like ${secretLook(s)!.what}, not shown)]`;
    else if (typeof s === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(String(s))}]`;
  }
  return out;
}

/** Prefixes every problem's path with `prefix` (for problems found in a nested part of the props). */
export function prefixProblems(prefix: string, problems: readonly Problem[]): Problem[] {
  return problems.map((p) => ({ ...p, path: p.path ? (p.path.startsWith('[') ? `${prefix}${p.path}` : `${prefix}.${p.path}`) : prefix }));
}

/** Throws a ValidationError when `problems` is not empty. */
export function throwIfProblems(problems: readonly Problem[], subject?: string): void {
  if (problems.length > 0) throw new ValidationError([...problems], subject);
}
