import * as fc from 'fast-check';
import {
  applyRoute, planEgressProbe, planEgressSteering, planHostKillSwitch, planKillSwitch, planRoute, planVpnGateway, planWireguardMesh, planWireguardOverlayNode,
  validateEgressProbe, validateEgressSteering, validateKillSwitch, validateVpnGateway, validateWireguardMesh, validateWireguardOverlayNode, ValidationError,
} from '../../src';
import { gatewayProbe, KEYS, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';
import { runs } from '../helpers/runs';

/**
 * Every public entry point, given malformed props as JavaScript callers and YAML-loaded configs produce them: a plan
 * or a ValidationError whose every problem has a path and a message, never another exception; no message or warning
 * holds a value given to a secret-bearing field or a whole user object (how long a call takes is the bench's, case
 * bad-input-worst). Fixed seed: the same
 * 10 000+ inputs every run.
 */
const SECRET_FIELDS = /(privateKey|presharedKey|publicKey|password|apiKey|url)$/i;
const MARKER = 'S3CR3T-marker-value-q9';

type Json = unknown;
const circular = (): Json => {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
};
const nullProto = (): Json => Object.assign(Object.create(null) as object, { name: 'x', extra: MARKER });
const sparse = (): Json => {
  const a: unknown[] = [];
  a[3] = '10.0.0.0/8';
  return a;
};
/** Hostile values: wrong types, BigInt, Symbol, circular and null-prototype objects, sparse arrays, prototype keys, huge values. */
const hostile = fc.oneof(
  fc.constantFrom<() => Json>(
    () => undefined, () => null, () => 0, () => -1, () => NaN, () => Infinity, () => 1e308, () => true, () => '', () => ' ', () => 'x'.repeat(1_000_000),
    () => 10n ** 30n, () => Symbol('s'), () => circular(), () => nullProto(), () => sparse(), () => [], () => ({}),
    () => JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {}}}'), () => ({ constructor: 'x', toString: 'y', hasOwnProperty: 1 }),
    () => Array.from({ length: 10_000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`), () => Array.from({ length: 10_000 }, () => ({})),
    () => [MARKER], () => ({ secretish: MARKER }), () => MARKER, () => '256.1.1.1/24', () => '1.2.3.4.5', () => '::ffff:1.2.3', () => 'fe80::1%eth0', () => '0x7f.0.0.1',
    () => '../../etc/passwd', () => 'a'.repeat(300), () => 'UPPER_case', () => '\u0000', () => '\u202e', () => new Date(0), () => () => 1, () => new Map(), () => Buffer.from('x'),
  ).map((f) => f()),
  fc.anything({ withBigInt: true, withNullPrototype: true, withSparseArray: true, withTypedArray: true, withMap: true, withSet: true, maxDepth: 2 }),
);

/** Every path of a plain value, to mutate one. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

/** A copy of `base` with `value` at `path` (or, for a key that is not there, added beside the others). */
function withValue(base: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = Array.isArray(base) ? [...base] : { ...(base as Record<string, unknown>) };
  const [head, ...rest] = path;
  (copy as Record<string | number, unknown>)[head] = withValue((base as Record<string | number, unknown>)[head], rest, value);
  return copy;
}

/**
 * What must never come back in a message: the value put into a secret-bearing field (every string inside it, keys
 * included, when it is an object or a list), or the marker inside an object (a whole user object is never echoed). A
 * plain string in another field may be quoted: that is the point of a message.
 */
function forbiddenFor(path: (string | number)[], value: unknown): string[] {
  const out: string[] = [];
  if (SECRET_FIELDS.test(String(path[path.length - 1] ?? ''))) {
    // Issue 47: under a secret-bearing field, every string inside the value is secret too, however deep (an object or
    // a list holding the key: `privateKey: { value: '…' }`), and so is every key of its objects.
    for (const text of stringsIn(value)) if (text.length > 8) out.push(text.slice(0, 200));
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && hasMarker(value)) out.push(MARKER);
  return out;
}

/** Every string in a value: itself, or the values and keys of its objects, lists, Maps and Sets (cycles once). */
function stringsIn(value: unknown, seen = new Set<unknown>()): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null || seen.has(value)) return [];
  seen.add(value);
  try {
    if (value instanceof Map) return [...value.entries()].flatMap(([k, v]) => [...stringsIn(k, seen), ...stringsIn(v, seen)]);
    if (value instanceof Set) return [...value].flatMap((v) => stringsIn(v, seen));
    if (Array.isArray(value)) return value.flatMap((v) => stringsIn(v, seen));
    return Object.entries(value).flatMap(([k, v]) => [k, ...stringsIn(v, seen)]);
  } catch {
    return [];
  }
}
function hasMarker(value: object): boolean {
  try {
    // A value inside the object; its keys may be named (an unknown prop is reported by its name).
    return Object.values(value).includes(MARKER);
  } catch {
    return false;
  }
}

/** Fails the property (fast-check reports the input) without an expect inside a branch. */
function must(ok: boolean, message: string): void {
  if (!ok) throw new Error(message);
}

/** A problem says where (a path; '' is the props themselves), what kind (a code) and what (a message). */
function wellFormed(p: unknown): boolean {
  const { path, code, message } = p as { path: unknown; code: unknown; message: unknown };
  return typeof path === 'string' && typeof code === 'string' && code.length > 0 && typeof message === 'string' && message.length > 0;
}

interface Entry {
  readonly name: string;
  readonly fixture: () => unknown;
  readonly call: (input: unknown) => unknown;
}

const route = { namespace: 'media', podLabels: { app: 'x' }, name: 'x' };
const ENTRIES: Entry[] = [
  { name: 'validateWireguardOverlayNode', fixture: siteA, call: (i) => validateWireguardOverlayNode(i) },
  { name: 'planWireguardOverlayNode', fixture: () => ({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], privateKeyFrom: undefined, privateKey: KEYS.a.privateKey }] }), call: (i) => planWireguardOverlayNode(i as never) },
  { name: 'validateWireguardMesh', fixture: threeNodeMesh, call: (i) => validateWireguardMesh(i) },
  { name: 'planWireguardMesh', fixture: threeNodeMesh, call: (i) => planWireguardMesh(i as never) },
  { name: 'validateKillSwitch', fixture: qbittorrentKillSwitch, call: (i) => validateKillSwitch(i) },
  { name: 'planKillSwitch', fixture: qbittorrentKillSwitch, call: (i) => planKillSwitch(i as never) },
  { name: 'planHostKillSwitch', fixture: () => qbittorrentKillSwitch().host, call: (i) => planHostKillSwitch(i as never) },
  { name: 'validateVpnGateway', fixture: nordvpnGateway, call: (i) => validateVpnGateway(i) },
  { name: 'planVpnGateway', fixture: nordvpnGateway, call: (i) => planVpnGateway(i as never) },
  { name: 'planRoute (gateway props)', fixture: nordvpnGateway, call: (i) => planRoute(i as never, route) },
  { name: 'planRoute (target)', fixture: () => route, call: (i) => planRoute(nordvpnGateway(), i as never) },
  { name: 'applyRoute (pod spec)', fixture: () => ({ containers: [{ name: 'app', image: 'x' }] }), call: (i) => applyRoute(i as never, planRoute(nordvpnGateway(), route)) },
  { name: 'validateEgressSteering', fixture: prodSteering, call: (i) => validateEgressSteering(i) },
  { name: 'planEgressSteering', fixture: wireguardSteering, call: (i) => planEgressSteering(i as never) },
  { name: 'validateEgressProbe', fixture: gatewayProbe, call: (i) => validateEgressProbe(i) },
  { name: 'planEgressProbe', fixture: gatewayProbe, call: (i) => planEgressProbe(i as never) },
];

const RUNS = runs(700);

describe('bad input: a plan or a ValidationError, never a crash or an echoed secret', () => {
  const figures: Record<string, { inputs: number; refused: number; planned: number }> = {};
  afterAll(() => {
    const total = Object.values(figures).reduce((n, f) => n + f.inputs, 0);
    process.stdout.write(`bad-input properties: ${total} inputs over ${ENTRIES.length} entry points, 0 crashes, 0 echoed secrets: ${JSON.stringify(figures)}\n`);
  });

  it.each(ENTRIES.map((e) => [e.name, e] as const))('%s', (name, entry) => {
    const f = (figures[name] = { inputs: 0, refused: 0, planned: 0 });
    const base = entry.fixture();
    const all = paths(base);
    fc.assert(
      fc.property(fc.nat({ max: all.length - 1 }), hostile, fc.boolean(), (i, value, whole) => {
        const path = whole && i % 7 === 0 ? [] : all[i];
        const input = withValue(base, path, value);
        const secrets = forbiddenFor(path, value);
        const echoes = (text: string) => secrets.some((x) => text.includes(x));
        const at = ` (${name} at ${JSON.stringify(path)})`;
        let result: unknown;
        try {
          result = entry.call(input);
        } catch (e) {
          must(e instanceof ValidationError, `threw ${(e as Error)?.name}: ${(e as Error)?.message?.slice(0, 300)}${at}`);
          const error = e as ValidationError;
          must(error.problems.length > 0, `a ValidationError without problems${at}`);
          for (const p of error.problems) must(wellFormed(p), `a problem without path, code or message${at}`);
          must(!echoes(error.message), `the error echoes a secret or a whole object${at}`);
          f.refused++;
          result = undefined;
        }
        // No time bound here (issue 30: a loaded machine made a timed test fail): `npm run bench` times the hostile
        // inputs (case bad-input-worst) against the second this test once asserted.
        if (result !== undefined) {
          f.planned++;
          const warnings = JSON.stringify((result as { warnings?: unknown }).warnings ?? []);
          must(!echoes(warnings), `a warning echoes a secret or a whole object${at}`);
          for (const w of ((result as { warnings?: unknown[] }).warnings ?? [])) must(wellFormed(w), `a warning without path, code or message${at}`);
          // A problems list (validate*) says where and what, for each problem, and echoes no secret either.
          if (Array.isArray(result)) {
            for (const p of result as unknown[]) must(wellFormed(p), `a problem without path, code or message${at}`);
            must(!echoes(JSON.stringify(result)), `a problem echoes a secret or a whole object${at}`);
          }
        }
        f.inputs++;
      }),
      { seed: 20261130, numRuns: RUNS },
    );
    expect(f.inputs).toBe(RUNS);
  });
});
