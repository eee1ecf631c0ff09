import { Problem } from '../errors';
import { secretLook } from './secret-look';

// How problems reach the user: redacted (nothing quoted that looks like a secret) and in the order of the props.

/**
 * The safety net behind `received()`: any quoted string in a problem's path or message that looks like a secret
 * (a check that quoted a value itself, an object key in a path) is replaced by what it looks like.
 */
export function redactProblems(problems: readonly Problem[]): Problem[] {
  return problems.map((p) => {
    // Below a secret-bearing field (`privateKey: { value: '…' }`), the keys and values of what was given are the
    // secret's: the problem is reported at the field, and nothing quoted in it is shown (issue 47).
    const inside = SECRET_FIELD_INSIDE.exec(p.path);
    const path = inside ? p.path.slice(0, inside.index + inside[0].length) : redactQuoted(p.path);
    const message = inside ? p.message.replace(/"(?:[^"\\]|\\.)*"/g, '(not shown: inside a secret field)') : redactQuoted(p.message);
    return path === p.path && message === p.message ? p : { ...p, path, message };
  });
}

/** A secret-bearing field (a key, a password, an API key, a URL that may carry a token) with a path below it. */
const SECRET_FIELD_INSIDE = /(?:^|[.:])(?:privateKey|presharedKey|publicKey|[A-Za-z]*PublicKey|password|apiKey|apikey|url)(?=[.[])/;

function redactQuoted(text: string): string {
  if (!text.includes('"')) return text;
  return text.replace(/"((?:[^"\\]|\\.)*)"/g, (whole, inner: string) => {
    let value: unknown = inner;
    try {
      value = JSON.parse(whole);
    } catch {
      // not JSON: the text between the quotes
    }
    const look = secretLook(value);
    return look ? `(a value that looks like ${look.what}, not shown)` : whole;
  });
}

/** Problems in the order of the props (stable across runs). Each path is split once: O(n log n) comparisons of parts. */
export function sortProblems(problems: Problem[]): Problem[] {
  const seen = new Set<string>();
  const keyed: { p: Problem; parts: string[] }[] = [];
  for (const p of redactProblems(problems)) {
    const k = `${p.path}\0${p.code}\0${p.message}`;
    if (seen.has(k)) continue;
    seen.add(k);
    keyed.push({ p, parts: p.path.split(/[.[\]]+/).filter(Boolean) });
  }
  return keyed.sort((a, b) => compareParts(a.parts, b.parts)).map((k) => k.p);
}

function compareParts(x: readonly string[], y: readonly string[]): number {
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] === y[i]) continue;
    const nx = Number(x[i]);
    const ny = Number(y[i]);
    if (Number.isInteger(nx) && Number.isInteger(ny)) return nx - ny;
    return x[i] < y[i] ? -1 : 1;
  }
  return x.length - y.length;
}
