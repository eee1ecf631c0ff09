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

/** Shannon entropy of a string, in bits per character. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}

/**
 * A long string of mixed classes that changes class often (random text does about every other character; words,
 * camelCase names and versions rarely do), with high entropy: a token, not a name.
 */
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

const IN_A_SECRET = 'put it in a Secret and pass the Secret\'s name (a `…Secret` prop), never the value';

/**
 * Whether a string looks like a secret: a WireGuard key (base64 of 32 bytes), a known API token or a JWT, a PEM
 * block, a URL with a password, a password (upper and lower case, digits and symbols) or a long high-entropy string.
 * Such a value is never echoed in a message, whatever field it is in; outside the fields meant for keys it is refused.
 */
export function secretLook(value: unknown): SecretLook | undefined {
  if (typeof value !== 'string' || value.length < 8) return undefined;
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
