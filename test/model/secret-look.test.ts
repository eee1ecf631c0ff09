import * as fc from 'fast-check';
import { secretLook } from '../../src/model/secret-look';
import { runs } from '../helpers/runs';

/**
 * Issue 30: `secretLook` scans a string once (it used to test a regex per character, and to be called three times
 * per value). The per-character version it replaced is kept here, verbatim, as the oracle: on every string the new one
 * finds the same secret, with the same words, or none where the old found none.
 */
const WG_KEY_SHAPE = /^[A-Za-z0-9+/]{42}[A-Za-z0-9+/]=?$/;
const TOKEN_PREFIX = /^(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{16,}|xox[abposr]-[\w-]{10,}|sk-[\w-]{16,}|sk_(live|test)_\w{16,}|AKIA[0-9A-Z]{16}|hv[sb]\.[\w-]{20,}|npm_[A-Za-z0-9]{30,}|AIza[\w-]{30,})$/;
const JWT = /^eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}$/;
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}
function looksRandom(s: string): boolean {
  const cls = (c: string) => (/[A-Z]/.test(c) ? 0 : /[a-z]/.test(c) ? 1 : /[0-9]/.test(c) ? 2 : 3);
  let switches = 0;
  let digits = 0;
  for (let i = 0; i < s.length; i++) {
    if (cls(s[i]) === 2) digits++;
    if (i > 0 && cls(s[i]) !== cls(s[i - 1])) switches++;
  }
  const mixedCase = /[A-Z]/.test(s) && /[a-z]/.test(s);
  const hex = /^[a-f0-9]+$/.test(s) || /^[A-F0-9]+$/.test(s);
  if (hex) return s.length >= 32 && digits >= s.length / 5 && switches >= s.length / 4;
  return mixedCase && digits >= 2 && s.length >= 20 && switches >= (s.length - 1) / 3 && entropy(s) >= 3.5;
}
/** The previous implementation's answer: what it looks like, or undefined. */
function oldWhat(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length < 8) return undefined;
  const s = value.trim();
  if (WG_KEY_SHAPE.test(s)) return 'a WireGuard key';
  if (/-----BEGIN [A-Z ]+-----/.test(s)) return 'a PEM key or certificate';
  if (TOKEN_PREFIX.test(s) || JWT.test(s)) return 'an API token';
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]+@/i.test(s)) return 'a URL with a password in it';
  if (/^[a-z][a-z0-9+.-]*:\/\/[^?#\s]*[?#].*\b(token|key|password|passwd|secret|sig|signature|auth)=[^&\s]{8,}/i.test(s)) return 'a URL with a token in it';
  if (/\s/.test(s) || s.includes('://')) return undefined;
  const upper = /[A-Z]/.test(s);
  const lower = /[a-z]/.test(s);
  const digit = /[0-9]/.test(s);
  const symbol = /[!@#$%^&*()+=?~<>{}|;,'"`\\]/.test(s);
  if (s.length >= 10 && upper && lower && digit && symbol) return 'a password';
  if (s.length >= 20 && /^[A-Za-z0-9+/=_-]+$/.test(s) && looksRandom(s)) return 'a token or key (a long random string)';
  return undefined;
}

const pick = (chars: string) => fc.constantFrom(...chars.split(''));
/** Strings near the long-random-string test's edges: its own alphabet, hex of either case, lengths around 20 and 32. */
const tokenish = fc.oneof(
  fc.array(pick('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-'), { minLength: 8, maxLength: 70 }),
  fc.array(pick('abcdef0123456789'), { minLength: 8, maxLength: 70 }),
  fc.array(pick('ABCDEF0123456789'), { minLength: 8, maxLength: 70 }),
  fc.array(pick('Aa0'), { minLength: 18, maxLength: 40 }),
  fc.array(pick('Ab1Cd2Ef3-'), { minLength: 18, maxLength: 40 }),
  // Runs of one class: the class switches land anywhere around the thresholds (a quarter, a third of the length).
  fc.array(fc.tuple(pick('aAfF19Zz-'), fc.integer({ min: 1, max: 5 })).map(([c, k]) => c.repeat(k)), { minLength: 4, maxLength: 30 }),
  fc.array(fc.tuple(pick('af19'), fc.integer({ min: 1, max: 4 })).map(([c, k]) => c.repeat(k)), { minLength: 8, maxLength: 30 }),
  fc.array(fc.tuple(pick('AF19'), fc.integer({ min: 1, max: 4 })).map(([c, k]) => c.repeat(k)), { minLength: 8, maxLength: 30 }),
).map((cs) => cs.join(''));
/** Anything else: other symbols, spaces, non-ASCII, the other shapes' prefixes. */
const other = fc.oneof(
  fc.string({ minLength: 0, maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.tuple(fc.constantFrom('ghp_', 'sk-', 'https://u:', 'http://h/?token=', 'eyJ', '-----BEGIN KEY-----', ' ', 'AKIA'), fc.string({ maxLength: 40 })).map(([a, b]) => a + b),
  fc.array(pick('Aa1!@ \t.é'), { minLength: 8, maxLength: 30 }).map((cs) => cs.join('')),
);

describe('secretLook in one pass', () => {
  it('finds what the per-character version found, on every string', () => {
    fc.assert(
      fc.property(fc.oneof(tokenish, other), (s) => {
        expect(secretLook(s)?.what).toBe(oldWhat(s));
      }),
      { numRuns: runs(5000) },
    );
  });

  it.each([
    ['a random token (mixed case, digits)', 'hJ7kQ2xP9mW4vR8tY3zL6nB1'],
    ['a hex key, lower case', '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'],
    ['a hex key, upper case', '9F86D081884C7D659A2FEAA0C55AD015'],
    ['a WireGuard key', 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU='],
    ['a password', 'Tr0ub4dor&3x!'],
    ['a camelCase name (control)', 'egressSteeringGatewayNode'],
    ['a version (control)', 'v1.2.3-alpha.4'],
    ['a hex string too short (control)', 'deadbeef0123456789abcdef01234'],
    ['a hex string without digits enough (control)', 'abcdefabcdefabcdefabcdefabcdefab1'],
    // At the edges of each threshold (found by searching against the oracle): one step past any of them flips the answer.
    ['hex, 6 digits in 32 (a fifth is 6.4)', 'a1b2c3d4e5f6abcdefabcdefabcdefab'],
    ['hex but for a g', '111146d8eeb0d3dd87ggggaaaeed1ddbdb99ff5'],
    ['mixed classes, switching less than a third of the time', 'TTTWHeeeffR8rpee255WWW86677wlIJUGGGi'],
    ['mixed classes, entropy just under 3.5', 'CeDCCCEEAFb11C11hFF11gggCgDBG1GFheddE'],
  ])('%s: the same answer as before', (_what, s) => {
    expect(secretLook(s)?.what).toBe(oldWhat(s));
  });

  it('answers the same when asked again, and for another value between (the kept answer is per value)', () => {
    const token = 'hJ7kQ2xP9mW4vR8tY3zL6nB1';
    const name = 'egressSteeringGatewayNode';
    expect(secretLook(token)?.what).toBe('a token or key (a long random string)');
    expect(secretLook(token)?.what).toBe('a token or key (a long random string)');
    expect(secretLook(name)).toBeUndefined();
    expect(secretLook(token)?.what).toBe('a token or key (a long random string)');
    expect(secretLook(`${token.slice(0, -1)}${token.slice(-1)}`)?.what).toBe('a token or key (a long random string)');
  });

  it('a 1 MB string of one letter is no secret, and a 1 MB random token is one (the scan reaches the end)', () => {
    expect(secretLook('x'.repeat(1_000_000))).toBeUndefined();
    const big = Array.from({ length: 1_000_000 }, (_, i) => 'aB3kQ9zX7pL2mN5v'[(i * 7 + (i >> 4)) % 16]).join('');
    expect(secretLook(big)?.what).toBe(oldWhat(big));
  });
});
