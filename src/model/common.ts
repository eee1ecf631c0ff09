import * as z from '../zod';
import { joinPath, Problem } from '../errors';
import { formatIp, Located, parseCidr, ParsedCidr, parseIp } from './net';
import { SecretLook, secretLook } from './secret-look';

export { secretLook } from './secret-look';
export type { SecretLook } from './secret-look';

/** A CIDR block such as `10.42.0.0/16` (or, where an interface address is meant, `10.10.0.1/24`). */
export type Cidr = string;
/** A duration such as `30s`, `10m`, `1h` or `1h30m`. */
export type Duration = string;

/** A key of a Kubernetes Secret in the construct's namespace. */
export interface SecretKeyRef {
  /** Name of the Secret. */
  readonly name: string;
  /** Key inside the Secret. @default - depends on the prop (documented there) */
  readonly key?: string;
}

/**
 * Where a host reads a secret at boot. A boot unit resolves it into a root-only file (0600) before its consumer
 * starts, and never logs the value.
 * - `{ file }`: an absolute path on the host, put there by something else (an agent, a mounted volume);
 *   with `waitFor`, the unit waits that long for it to appear.
 * - `{ url }`: an `https://` URL fetched at boot, retried until `waitFor`.
 */
export type SecretSource =
  | { readonly file: string; readonly waitFor?: Duration }
  | { readonly url: string; readonly waitFor?: Duration };

/** Longest `waitFor` accepted: one hour. */
export const MAX_WAIT_SECONDS = 3600;

import { durationSeconds } from './values';
export { durationSeconds } from './values';

/**
 * The message for a key field that holds no key. A key field's value is never echoed, public or not: a private key
 * pasted into a `publicKey` field is the common mistake.
 */
export const KEY_FIELD_MESSAGE = 'expected a WireGuard public key: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: key fields are never echoed)';

/** Quotes a received value for a message: any value at all, and never a whole object, a huge string or a secret. */
export function received(value: unknown): string {
  const deferred = deferredValue(value);
  if (deferred) return `received ${deferred}`;
  const look = secretLook(value);
  return look ? `received ${notShown(look)}` : `received ${describeValue(value)}`;
}

/**
 * A value that has none yet, as a message names it with what to do: a Pulumi `Output` (marked `__pulumiOutput`, as
 * `pulumi.Output.isInstance` reads it: @pulumi/pulumi output.js) or a Promise, in a prop the checks read when the
 * component is planned. Undefined for any other value.
 */
export function deferredValue(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if ((value as { __pulumiOutput?: unknown }).__pulumiOutput === true) {
    return 'a Pulumi Output, whose value is not known when the component is planned (this prop is checked then): pass a plain value, or create the component inside the Output\'s apply, `output.apply((v) => new Component(name, { ...args, prop: v }))` (`pulumi.all([...]).apply(...)` for several; a preview shows it once the value is known)';
  }
  if (typeof (value as { then?: unknown }).then === 'function') {
    return 'a Promise, whose value is not known when the component is planned (this prop is checked then): await it and pass its value';
  }
  return undefined;
}

/** A secret-looking value as a message names it: what it looks like and where it belongs, never the value. */
export function notShown(look: SecretLook): string {
  return `a value that looks like ${look.what} (not shown; ${look.where})`;
}

/** A value as a message shows it: primitives quoted (long strings cut), objects and the rest by their kind only. */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      if (secretLook(value)) return `a value that looks like ${secretLook(value)!.what} (not shown)`;
      return value.length > 120 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} characters)` : JSON.stringify(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'bigint':
      return 'a bigint';
    case 'undefined':
      return 'undefined';
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      return value === null ? 'null' : Array.isArray(value) ? `an array of ${value.length}` : 'an object';
  }
}

function custom(ctx: z.RefinementCtx, code: string, message: string): void {
  ctx.addIssue({ code: 'custom', message, params: { code } });
}

/** @internal */
export const cidrSchema = z.string().check(z.superRefine((v, ctx) => {
  if (!parseCidr(v)) custom(ctx, 'cidr', cidrMessage(v));
}));

/** Why a string is no CIDR: a prefix out of range, a missing prefix, or not one at all. */
function cidrMessage(v: string): string {
  const m = /^([^/]+)\/(\d+)$/.exec(v);
  const ip = parseIp(m ? m[1] : v);
  if (m && ip) {
    const bits = ip.family === 4 ? 32 : 128;
    return `expected a prefix length from 0 to ${bits} for an IPv${ip.family} address, ${received(v)}: /${m[2]} is out of range`;
  }
  if (ip) return `expected a CIDR with its prefix length such as ${v}/${ip.family === 4 ? 24 : 64}, ${received(v)} (a bare address)`;
  return `expected a CIDR such as 10.0.0.0/24, ${received(v)}`;
}

/**
 * A network CIDR (a route, a cluster range, an ipBlock): the address is the network's own. `10.42.0.1/16` is
 * refused with the network it names: iptables and ipBlock would take it, and silently mean 10.42.0.0/16.
 * @internal
 */
export const networkCidrSchema = z.string().check(z.superRefine((v, ctx) => {
  const c = parseCidr(v);
  if (!c) custom(ctx, 'cidr', cidrMessage(v));
  else if (c.address !== c.start) custom(ctx, 'host-bits', `expected a network address, ${received(v)}, which has host bits set: did you mean ${formatCidr(c.start, c.prefix, c.family)}?`);
}));

function formatCidr(start: bigint, prefix: number, family: ParsedCidr['family']): string {
  return `${formatIp(family, start)}/${prefix}`;
}

/** @internal */
export const ipSchema = z.string().check(z.superRefine((v, ctx) => {
  if (!parseIp(v)) custom(ctx, 'ip', `expected an IP address such as 203.0.113.7, ${received(v)}`);
}));

/** @internal */
export const durationSchema = z.string().check(z.superRefine((v, ctx) => {
  if (durationSeconds(v) === undefined) custom(ctx, 'duration', `expected a duration such as 30s, 10m or 1h, ${received(v)}`);
}));

/** @internal */
export function intInRange(min: number, max: number, what: string) {
  return z.number().check(z.superRefine((v, ctx) => {
    if (!Number.isInteger(v) || v < min || v > max) custom(ctx, 'range', `expected ${what}: an integer from ${min} to ${max}, ${received(v)}`);
  }));
}

/** @internal */
export const portSchema = intInRange(1, 65535, 'a port');

/** The cluster a construct belongs to; invariants such as unique VXLAN ids hold per cluster. */
/** @internal */
export const clusterSchema = z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { message: 'expected a DNS label such as "prod"' }));

/** @internal */
export const secretKeyRefSchema = z.strictObject({
  name: z.string().check(z.regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { message: 'expected the name of a Secret (a DNS subdomain)' })),
  key: z.optional(z.string().check(z.regex(/^[-._a-zA-Z0-9]+$/, { message: 'expected a Secret key ([-._a-zA-Z0-9]+)' }))),
});

/** @internal A Secret with a username and a password key (`CredentialsSecretRef`). */
export const credentialsSecretRefSchema = z.strictObject({
  name: secretKeyRefSchema.shape.name,
  userKey: secretKeyRefSchema.shape.key,
  passwordKey: secretKeyRefSchema.shape.key,
});

/** Query parameters that carry a credential: tokens, passwords, API keys, signed-URL signatures and credentials (S3, GCS, Azure SAS `sig`). */
const CREDENTIAL_PARAM = /(token|secret|passw(or)?d|pwd|signature|^sig$|credential|api[-_]?key|^auth)/i;

/**
 * What in a secret source URL is a credential, if anything: its user information (`https://user:pass@…`) or a query
 * parameter named like one (`?token=`, `X-Amz-Signature=`, `sig=`). The URL is written into the host's user-data or
 * Ignition config (then a 0600 curl config on the host), and a cloud's metadata service serves user-data to any
 * process on the node, pods included, unless the node blocks it (AWS `http://169.254.169.254/latest/user-data`,
 * GCP's `user-data` attribute, Azure's `userData`, OpenStack's `/openstack/latest/user_data`): a credential there is
 * readable by every workload on the node.
 */
export function urlCredential(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.username !== '' || parsed.password !== '') return 'user information (user:password@)';
  for (const name of parsed.searchParams.keys()) if (CREDENTIAL_PARAM.test(name)) return `the query parameter ${JSON.stringify(name)}`;
  return undefined;
}

function urlCredentialMessage(what: string): string {
  return `this URL carries a credential (${what}; the URL is not shown): tunnelwright writes a source URL into the host's user-data or Ignition config, which the cloud's metadata service serves to any process on the node, pods included. Keep the credential out of the URL: use a URL the node may fetch without one (allowed by its network or its instance identity), or put the secret in a file by another channel (an agent, a mounted volume) and use { file } with waitFor`;
}

/** @internal */
export const secretSourceSchema = z
  .strictObject({
    file: z.optional(z.string()),
    url: z.optional(z.string()),
    waitFor: z.optional(durationSchema),
  })
  .check(z.superRefine((v, ctx) => {
    const hasFile = v.file !== undefined;
    const hasUrl = v.url !== undefined;
    if (hasFile === hasUrl) {
      custom(ctx, 'secret-source', 'expected exactly one of `file` (an absolute path) or `url` (an https:// URL)');
      return;
    }
    if (hasFile && !/^\/[^\0\s'"\\$`]*$/.test(v.file!)) {
      ctx.addIssue({ code: 'custom', path: ['file'], message: `expected an absolute path without spaces or quotes, ${received(v.file)}`, params: { code: 'path' } });
    }
    if (hasUrl && !/^https:\/\/[^\s'"\\$`]+$/.test(v.url!)) {
      // The URL may carry a token: say what is wrong without echoing it.
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'expected an https:// URL without spaces or quotes', params: { code: 'url' } });
    } else if (hasUrl) {
      const credential = urlCredential(v.url!);
      if (credential) ctx.addIssue({ code: 'custom', path: ['url'], message: urlCredentialMessage(credential), params: { code: 'url-credential' } });
    }
    if (v.waitFor !== undefined) {
      const s = durationSeconds(v.waitFor);
      if (s !== undefined && (s < 1 || s > MAX_WAIT_SECONDS)) {
        ctx.addIssue({ code: 'custom', path: ['waitFor'], message: `expected a duration from 1s to 1h, ${received(v.waitFor)}`, params: { code: 'range' } });
      }
    }
  }));

/** Prop names whose values are secret: never echoed in a message. */
const SECRET_PROPS = /(privateKey|presharedKey|publicKey|PublicKey|password|apiKey|apikey)$/;

/** zod issues as Problems, with paths into the props as written (secret values redacted). */
/** @internal */
export function zodProblems(error: z.ZodError): Problem[] {
  const out: Problem[] = [];
  for (const issue of error.issues) {
    const path = joinPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) out.push({ path: joinPath([...issue.path, k]), code: 'unknown-prop', message: `unknown prop "${k}"` });
      continue;
    }
    const input = (issue as { input?: unknown }).input;
    // A discriminated union's issue is on its discriminator but carries the whole object: the value is the discriminator's.
    // zod sets `options` beside every `discriminator` (v4/core/schemas.js, "No matching discriminator").
    const { discriminator, options } = issue as { discriminator?: string; options?: unknown[] };
    const value = discriminator !== undefined && isRecord(input) ? input[discriminator] : input;
    const secret = SECRET_PROPS.test(String(issue.path[issue.path.length - 1]));
    let code: string;
    let message = discriminator !== undefined
      ? `expected one of ${options!.map((o) => JSON.stringify(o)).join('|')}`
      : issue.message.replace(/^Invalid input: /, '').replace(/^Invalid option: /, '');
    if (issue.code === 'custom') code = String((issue as { params?: { code?: string } }).params?.code ?? 'invalid');
    else if (value === undefined) {
      // Whatever the check, a prop left out is a required prop missing.
      code = 'required';
      message = `required: ${message.replace(/, received undefined$/, '')}`;
    } else if (deferredValue(value)) {
      // zod names the class ("received OutputImpl"): say what it is and what to do (issue 47).
      code = 'type';
      message = `${message.replace(/, received .*$/, '')}, ${received(value)}`;
    } else {
      code = issue.code === 'invalid_type' ? 'type' : issue.code === 'invalid_value' ? 'enum' : issue.code === 'invalid_format' ? 'format' : issue.code;
      // received() shows objects and lists by their kind only: they may hold secrets (a URL with a token, a credential).
      if (!message.includes('received')) message = `${message}, ${secret ? 'received a value that is not one (not shown: it is secret)' : received(value)}`;
      else if (secret) message = message.replace(/, received .*$/, ', received a value of the wrong type (not shown: it is secret)');
    }
    out.push({ path, code, message });
  }
  return out;
}

/** zod's English locale's messages, whatever the process's zod config says. */
let english: ReturnType<typeof z.locales.en>['localeError'] | undefined;
const englishMessages = () => (english ??= z.locales.en().localeError);

/** Parses with a zod schema: the value, or the problems. */
/** @internal */
export function parseWith<T>(schema: z.ZodType, input: unknown): { ok: true; value: T } | { ok: false; problems: Problem[] } {
  const secrets = secretValueProblems(input);
  // jitless: zod 4 compiles each object schema's parser with `new Function` on its first parse, which costs more than
  // the one parse a construct makes (issue 30); the checks and the issues are the same either way.
  // error: zod's English messages for this parse. zod keeps its config on globalThis, shared by every copy in the
  // process (v4/core/core.js `__zod_globalConfig`), so a user's `z.config(z.locales.de())` or `customError` would
  // otherwise rewrite these messages, which zodProblems reads as English.
  const r = schema.safeParse(input, { reportInput: true, jitless: true, error: englishMessages() });
  if (r.success && secrets.length === 0) return { ok: true, value: r.data as T };
  // A secret-looking value is refused once, by what it looks like: the schema's problem at the same path goes.
  const at = new Set(secrets.map((p) => p.path));
  return { ok: false, problems: [...secrets, ...(r.success ? [] : zodProblems(r.error).filter((p) => !at.has(p.path)))] };
}

/** Values quoted and listed for a message: all of them up to `max`, else the first `max` and how many there are. */
export function quotedList(values: readonly unknown[], max = 10): string {
  const shown = values.slice(0, max).map((v) => JSON.stringify(v)).join(', ');
  return values.length > max ? `${shown}, … (${values.length} in all)` : shown;
}

/** Fields meant for a key (a public key, or an inline private key where one is allowed) or a URL that may carry a token. */
const KEY_FIELDS = /^(publicKey|privateKey|presharedKey|wireguardPublicKey|url)$/;

/**
 * Fields that hold a path on a host: where a secret is, not a secret. A vault agent's sink or a mounted Secret may have
 * a random name (`/run/secrets/Kx9dF3mP2qR7vT1wZ5aB`), so an absolute path there is never refused as a secret (issue
 * 47); a WireGuard key pasted there still is (44 characters of base64 that end in "=", a path in name only).
 */
const PATH_FIELDS = /^(file|binary|textfileDirectory|mountPath)$/;

function isHostPath(text: string): boolean {
  return text.startsWith('/') && !/^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(text);
}

/**
 * Every string (value or object key) in the props that looks like a secret, outside the fields meant for one: such a
 * value would otherwise reach a ConfigMap, a label or an argument, readable by anyone who can read the object.
 * Linear in the size of the props; cycles are visited once.
 */
export function secretValueProblems(input: unknown): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<object>();
  const visit = (v: unknown, path: PropertyKey[]): void => {
    if (typeof v === 'string') {
      // A lone UTF-16 surrogate has no UTF-8 form: every file, URL and manifest it reached would fail to encode.
      if (!isWellFormedText(v)) out.push({ path: joinPath(path), code: 'unicode', message: 'expected text without lone UTF-16 surrogates (it has no UTF-8 form, so no file or manifest could hold it)' });
      const last = path[path.length - 1];
      if (typeof last === 'string' && (KEY_FIELDS.test(last) || (PATH_FIELDS.test(last) && isHostPath(v)))) return;
      const look = secretLook(v);
      if (look) out.push(secretProblem(joinPath(path), look, 'this looks like'));
      return;
    }
    if (typeof v !== 'object' || v === null || seen.has(v) || path.length > 32) return;
    // An object or a list given to a secret-bearing field: the schema refuses its type at the field; what is inside
    // (keys included) is the secret's, never named in a problem (issue 47).
    const field = path[path.length - 1];
    if (typeof field === 'string' && (KEY_FIELDS.test(field) || SECRET_PROPS.test(field))) return;
    seen.add(v);
    let entries: [string, unknown][];
    try {
      entries = Array.isArray(v) ? Array.from(v, (x, i) => [String(i), x] as [string, unknown]) : Object.entries(v);
    } catch {
      return;
    }
    for (const [k, x] of entries) {
      const key: PropertyKey = Array.isArray(v) ? Number(k) : k;
      const look = Array.isArray(v) ? undefined : secretLook(k);
      if (look) out.push(secretProblem(joinPath(path), look, 'a key of this object looks like'));
      else if (!Array.isArray(v) && RESERVED_KEYS.has(k)) out.push({ path: joinPath([...path, key]), code: 'reserved-key', message: RESERVED_KEYS.get(k)! });
      else visit(x, [...path, key]);
    }
  };
  visit(input, []);
  return out;
}

/**
 * Object keys no JavaScript program can carry through safely, refused wherever they appear in the props (a selector, a
 * label map, Helm values): cdk8s's serializer reads `obj.constructor.name` to tell a plain object from a class
 * instance and throws for any other (cdk8s src/_util.ts `sanitizeValue`), and assigning `__proto__` replaces an
 * object's prototype instead of adding a key, so the entry would vanish from every copy.
 */
const RESERVED_KEYS: ReadonlyMap<string, string> = new Map([
  ['constructor', 'a key named "constructor" cannot be written: cdk8s reads an object\'s `constructor` to tell a plain object from a class instance, so no manifest could hold it; rename the key'],
  ['__proto__', 'a key named "__proto__" cannot be written: assigning it replaces the object\'s prototype instead of adding a key, so it would vanish from every copy; rename the key'],
]);

function isWellFormedText(s: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function secretProblem(path: string, look: SecretLook, lead: string): Problem {
  return { path, code: 'secret-value', message: `${lead} ${look.what}, which is never taken inline here (not shown): ${look.where}` };
}

/** Runs semantic checks only over values that are well-formed (the schema reports the rest). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A list prop as a dense array (a sparse array's holes read as undefined), or none. */
export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? Array.from(v) : [];
}

export { redactProblems, sortProblems } from './problem-order';

/** The well-formed CIDRs of a list prop, each with its path (`key[i]`); malformed ones are the schema's to report. */
export function locatedCidrs(input: Record<string, unknown>, key: string): Located<ParsedCidr>[] {
  return asArray(input[key]).flatMap((c, i) => {
    const p = parseCidr(c);
    return p ? [{ value: p, at: `${key}[${i}]` }] : [];
  });
}
