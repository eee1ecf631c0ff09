/** What a secret-looking value looks like, and where it belongs instead of a prop. */
export interface SecretLook {
  /** `a WireGuard key`, `an API token`, … */
  readonly what: string;
  /** Where it belongs: `put it in a Secret, key \`private-key\`, and pass its name`. */
  readonly where: string;
}

const WG_KEY_SHAPE = /^[A-Za-z0-9+/]{42}[A-Za-z0-9+/]=?$/;
/** Prefixes of well-known API tokens (GitHub, GitLab, Slack, OpenAI-style, AWS, Vault, npm, Stripe, Google). */
const TOKEN_PREFIX = /^(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{16,}|xox[abposr]-[\w-]{10,}|sk-[\w-]{16,}|sk_(live|test)_\w{16,}|AKIA[0-9A-Z]{16}|hv[sb]\.[\w-]{20,}|npm_[A-Za-z0-9]{30,}|AIza[\w-]{30,})$/;
const JWT = /^eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}$/;

/**
 * A long string of mixed classes that changes class often (random text does about every other character; words,
 * camelCase names and versions rarely do), with high entropy: a token, not a name.
 *
 * One pass over the string (issue 30: a regex per character made a 1 MB prop cost half a second). Only ever called on
 * ASCII (`secretLook` tests `^[A-Za-z0-9+/=_-]+$` first), so code units are characters; the entropy sums the classes
 * in the order they first appear, as a `Map` of characters would. `test/model/secret-look.test.ts` holds it to the
 * per-character version it replaced.
 */
function looksRandom(s: string): boolean {
  const n = s.length;
  const counts = new Uint32Array(128);
  const order: number[] = [];
  let switches = 0;
  let digits = 0;
  let upper = false;
  let lower = false;
  let lowerHex = true; // every character in [a-f0-9]
  let upperHex = true; // every character in [A-F0-9]
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    const cls = c >= 65 && c <= 90 ? 0 : c >= 97 && c <= 122 ? 1 : c >= 48 && c <= 57 ? 2 : 3;
    if (cls === 0) upper = true;
    else if (cls === 1) lower = true;
    else if (cls === 2) digits++;
    if (!(cls === 2 || (c >= 97 && c <= 102))) lowerHex = false;
    if (!(cls === 2 || (c >= 65 && c <= 70))) upperHex = false;
    if (i > 0 && cls !== prev) switches++;
    prev = cls;
    const k = c & 127;
    if (counts[k]++ === 0) order.push(k);
  }
  if (n > 0 && (lowerHex || upperHex)) return n >= 32 && digits >= n / 5 && switches >= n / 4;
  if (!(upper && lower && digits >= 2 && n >= 20 && switches >= (n - 1) / 3)) return false;
  let h = 0;
  for (const k of order) h -= (counts[k] / n) * Math.log2(counts[k] / n);
  return h >= 3.5;
}

const IN_A_SECRET = 'put it in a Secret and pass the Secret\'s name (a `…Secret` prop), never the value';

/**
 * Whether a string looks like a secret: a WireGuard key (base64 of 32 bytes), a known API token or a JWT, a PEM
 * block, a URL with a password, a password (upper and lower case, digits and symbols) or a long high-entropy string.
 * Such a value is never echoed in a message, whatever field it is in; outside the fields meant for keys it is refused.
 */
export function secretLook(value: unknown): SecretLook | undefined {
  if (typeof value !== 'string' || value.length < 8) return undefined;
  // A value is looked at up to three times (its problem, the message's `received`, the secret scan): the last answer
  // is kept, so a long string is scanned once.
  if (value === last.value) return last.look;
  const look = lookOf(value);
  last.value = value;
  last.look = look;
  return look;
}

const last: { value: string | undefined; look: SecretLook | undefined } = { value: undefined, look: undefined };

function lookOf(value: string): SecretLook | undefined {
  const s = value.trim();
  if (WG_KEY_SHAPE.test(s)) {
    return { what: 'a WireGuard key', where: 'put a private key in a Secret, key `private-key`, and pass its name (or, on a host, in a root-only file named by `privateKeyFrom`); a public key belongs in a `publicKey` prop' };
  }
  if (/-----BEGIN [A-Z ]+-----/.test(s)) return { what: 'a PEM key or certificate', where: IN_A_SECRET };
  if (TOKEN_PREFIX.test(s) || JWT.test(s)) return { what: 'an API token', where: IN_A_SECRET };
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]+@/i.test(s)) return { what: 'a URL with a password in it', where: 'put the credentials in a Secret (or a root-only file) and pass its name or path, never in a URL' };
  if (/^[a-z][a-z0-9+.-]*:\/\/[^?#\s]*[?#].*\b(token|key|password|passwd|secret|sig|signature|auth)=[^&\s]{8,}/i.test(s)) return { what: 'a URL with a token in it', where: IN_A_SECRET };
  if (/\s/.test(s) || s.includes('://')) return undefined;
  const upper = /[A-Z]/.test(s);
  const lower = /[a-z]/.test(s);
  const digit = /[0-9]/.test(s);
  // Symbols that names, paths (`peers[0]`), versions and endpoints do not use.
  const symbol = /[!@#$%^&*()+=?~<>{}|;,'"`\\]/.test(s);
  if (s.length >= 10 && upper && lower && digit && symbol) return { what: 'a password', where: 'put it in a Secret, key `password`, and pass its name (`openvpnCredentialsSecret` or `credentialsSecret`)' };
  if (s.length >= 20 && /^[A-Za-z0-9+/=_-]+$/.test(s) && looksRandom(s)) return { what: 'a token or key (a long random string)', where: IN_A_SECRET };
  return undefined;
}
