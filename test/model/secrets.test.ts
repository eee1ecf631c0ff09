import * as fc from 'fast-check';
import * as pulumi from '@pulumi/pulumi';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import {
  planEgressProbe, planEgressSteering, planKillSwitch, planVpnGateway, planWireguardMesh, planWireguardOverlayNode, publicKeyFromPrivate,
  validateEgressProbe, validateEgressSteering, validateKillSwitch, validateVpnGateway, validateWireguardMesh, validateWireguardOverlayNode, ValidationError,
} from '../../src';
import * as cdk from '../../src/cdk8s';
import { gatewayFor, gatewayProbe, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';
import { recordResources } from '../helpers/pulumi';
import { runs } from '../helpers/runs';

/**
 * Whatever string field of whatever construct a WireGuard key, an API token or a password lands in, it never comes
 * back: not in validate*'s problems, a thrown error, a warning, a non-Secret object (cdk8s) or a registered resource
 * or log line (Pulumi under mocks). Fields meant for a key (`publicKey`, `privateKey`, `presharedKey`,
 * `wireguardPublicKey`) and a key URL (`url`, which may carry a token by design) are where such values belong and are
 * left out. The value is refused with code `secret-value` at its path, saying what it looks like and where it belongs.
 */
const seen = recordResources();
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'.split('');
const chars = (set: string[], min: number, max: number) => fc.array(fc.constantFrom(...set), { minLength: min, maxLength: max }).map((a) => a.join(''));
const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => Buffer.from(b));

/** Real WireGuard keys: any 32 bytes are a private key (X25519 clamps at use); its public key as `wg pubkey` computes it. */
const wireguardKey = bytes(32).chain((b) => fc.constantFrom(b.toString('base64'), publicKeyFromPrivate(b.toString('base64'))));
const token = fc.oneof(
  chars(ALNUM, 36, 36).map((s) => `ghp_${s}`),
  chars([...ALNUM, '-', '_'], 20, 20).map((s) => `glpat-${s}`),
  chars(ALNUM, 24, 24).map((s) => `xoxb-1234567890-${s}`),
  chars('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.split(''), 16, 16).map((s) => `AKIA${s}`),
  fc.tuple(bytes(12), bytes(24), bytes(32)).map(([a, b, c]) => `eyJ${a.toString('base64url')}.eyJ${b.toString('base64url')}.${c.toString('base64url')}`),
  bytes(20).map((b) => b.toString('hex')),
  bytes(32).map((b) => b.toString('base64url')),
);
/** Passwords as generators make them: upper and lower case, digits and symbols, 12 to 32 characters. */
const password = fc
  .tuple(chars('ABCDEFGHJKLMNPQRSTUVWXYZ'.split(''), 1, 4), chars('abcdefghijkmnopqrstuvwxyz'.split(''), 1, 10), chars('0123456789'.split(''), 1, 6), chars('!@#$%^&*()+=?~'.split(''), 1, 4), chars(ALNUM, 8, 8))
  .chain((parts) => fc.shuffledSubarray(parts.join('').split(''), { minLength: parts.join('').length }).map((a) => a.join('')));
const secret = fc.oneof(wireguardKey, token, password);
/** The secret as given: a string, or nested in a wrong-typed value (a list, an object). */
const placed = fc.tuple(secret, fc.constantFrom<'raw' | 'list' | 'object'>('raw', 'list', 'object'));

const KEY_FIELDS = /^(publicKey|privateKey|presharedKey|wireguardPublicKey|url)$/;

/** Every path to a string in a value. */
function stringPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return [prefix];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringPaths(v, [...prefix, i]));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringPaths(v, [...prefix, k]));
  return [];
}
function withValue(base: unknown, at: (string | number)[], value: unknown): unknown {
  if (at.length === 0) return value;
  const copy = Array.isArray(base) ? [...base] : { ...(base as Record<string, unknown>) };
  const [head, ...rest] = at;
  (copy as Record<string | number, unknown>)[head] = withValue((base as Record<string | number, unknown>)[head], rest, value);
  return copy;
}

interface Construct {
  readonly name: string;
  readonly fixture: () => unknown;
  readonly validate: (p: unknown) => unknown;
  readonly plan: (p: unknown) => { objects: readonly { kind: string }[]; warnings: readonly unknown[] };
  readonly cdk8s: (chart: Chart, p: unknown) => unknown;
  readonly pulumi: (p: unknown) => unknown;
}
const CONSTRUCTS: Construct[] = [
  { name: 'WireguardOverlayNode', fixture: siteA, validate: validateWireguardOverlayNode, plan: (p) => planWireguardOverlayNode(p as never), cdk8s: (c, p) => new cdk.WireguardOverlayNode(c, 'n', p as never), pulumi: (p) => new tw.WireguardOverlayNode('n', p as never) },
  { name: 'WireguardMesh', fixture: threeNodeMesh, validate: validateWireguardMesh, plan: (p) => ({ objects: [], warnings: planWireguardMesh(p as never).warnings }), cdk8s: (c, p) => new cdk.WireguardMesh(c, 'm', p as never), pulumi: (p) => new tw.WireguardMesh('m', p as never) },
  { name: 'KillSwitch', fixture: qbittorrentKillSwitch, validate: validateKillSwitch, plan: (p) => planKillSwitch(p as never), cdk8s: (c, p) => new cdk.KillSwitch(c, 'k', p as never), pulumi: (p) => new tw.KillSwitch('k', p as never) },
  ...['nordvpn', 'mullvad', 'custom', 'private internet access'].map((provider): Construct => ({
    name: `VpnGateway (${provider})`, fixture: () => gatewayFor(provider), validate: validateVpnGateway, plan: (p) => planVpnGateway(p as never), cdk8s: (c, p) => new cdk.VpnGateway(c, 'g', p as never), pulumi: (p) => new tw.VpnGateway('g', p as never),
  })),
  { name: 'EgressSteering (OpenVPN)', fixture: prodSteering, validate: validateEgressSteering, plan: (p) => planEgressSteering(p as never), cdk8s: (c, p) => new cdk.EgressSteering(c, 's', p as never), pulumi: (p) => new tw.EgressSteering('s', p as never) },
  { name: 'EgressSteering (WireGuard)', fixture: wireguardSteering, validate: validateEgressSteering, plan: (p) => planEgressSteering(p as never), cdk8s: (c, p) => new cdk.EgressSteering(c, 's', p as never), pulumi: (p) => new tw.EgressSteering('s', p as never) },
  { name: 'EgressProbe', fixture: gatewayProbe, validate: validateEgressProbe, plan: (p) => planEgressProbe(p as never), cdk8s: (c, p) => new cdk.EgressProbe(c, 'p', p as never), pulumi: (p) => new tw.EgressProbe('p', p as never) },
];

function must(ok: boolean, message: string): void {
  if (!ok) throw new Error(message);
}
/** Runs `f`; a ValidationError's message is returned as text to scan, any other exception fails. */
function attempt(f: () => unknown): { value?: unknown; error?: string } {
  try {
    return { value: f() };
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return { error: `${e.message}\n${JSON.stringify(e.problems)}` };
  }
}
const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-secrets-'));
afterAll(() => fs.rmSync(outdir, { recursive: true, force: true }));

describe('a key, a token or a password in any string field is never echoed', () => {
  const counts: Record<string, number> = {};
  afterAll(() => process.stdout.write(`secret property: ${JSON.stringify(counts)} (construct: inputs)\n`));

  it.each(CONSTRUCTS.map((c) => [c.name, c] as const))('%s', (name, c) => {
    const base = c.fixture();
    const fields = stringPaths(base).filter((p) => !KEY_FIELDS.test(String(p[p.length - 1])));
    expect(fields.length).toBeGreaterThan(3);
    counts[name] = 0;
    fc.assert(
      fc.property(fc.nat({ max: fields.length - 1 }), placed, (i, [value, how]) => {
        const at = fields[i];
        const input = withValue(base, at, how === 'raw' ? value : how === 'list' ? [value] : { value });
        const where = ` (${name} at ${JSON.stringify(at)}: ${how})`;
        const problems = JSON.stringify(c.validate(input));
        must(!problems.includes(value), `validate echoes it${where}`);
        must(problems.includes('"secret-value"'), `validate does not refuse it as a secret${where}: ${problems.slice(0, 400)}`);
        const planned = attempt(() => c.plan(input));
        must(planned.error !== undefined, `plan accepted it${where}`);
        must(!planned.error!.includes(value), `the thrown error echoes it${where}`);
        // cdk8s: the construct refuses it; nothing synthesized holds it.
        const app = new cdk.App({ outdir });
        const chart = new Chart(app, 'c');
        const built = attempt(() => c.cdk8s(chart, input));
        must(built.error !== undefined && !built.error.includes(value), `cdk8s echoes or accepts it${where}`);
        must(!JSON.stringify(chart.toJson().filter((o: { kind: string }) => o.kind !== 'Secret')).includes(value), `a cdk8s object holds it${where}`);
        // Pulumi: refused before any registration; no log line holds it.
        tw.resetRegistry();
        const warn = jest.spyOn(pulumi.log, 'warn').mockImplementation(() => Promise.resolve());
        const made = attempt(() => c.pulumi(input));
        const logged = JSON.stringify(warn.mock.calls.map((call) => call[0]));
        warn.mockRestore();
        must(made.error !== undefined && !made.error.includes(value), `Pulumi echoes or accepts it${where}`);
        must(!logged.includes(value), `a Pulumi log line holds it${where}`);
        must(!JSON.stringify(seen.filter((r) => !/Secret$/.test(String(r.inputs.kind ?? r.type)))).includes(value), `a registered Pulumi resource holds it${where}`);
        counts[name]++;
      }),
      { seed: 20261201, numRuns: runs(150) },
    );
  });

  it.each([
    ['a WireGuard key as a Secret name', 'wireguardPrivateKeySecret.name', 'OFCo9jme+tsrIJZcDrZo1ZCxPTDiLhDSQPRhoBV/eEU=',
      'this looks like a WireGuard key, which is never taken inline here (not shown): put a private key in a Secret, key `private-key`, and pass its name (or, on a host, in a root-only file named by `privateKeyFrom`); a public key belongs in a `publicKey` prop'],
    ['a GitHub token as a server hostname', 'serverHostnames[0]', `ghp_${'a1B2c3D4e5'.repeat(3)}a1B2c3`,
      "this looks like an API token, which is never taken inline here (not shown): put it in a Secret and pass the Secret's name (a `…Secret` prop), never the value"],
    ['a password as a country', 'serverCountries[0]', 'Tr0ub4dor&3x!',
      'this looks like a password, which is never taken inline here (not shown): put it in a Secret, key `password`, and pass its name (`openvpnCredentialsSecret` or `credentialsSecret`)'],
  ])('%s: the whole message', (_what, at, value, message) => {
    const props = gatewayFor('nordvpn') as unknown as Record<string, unknown>;
    const input = at === 'wireguardPrivateKeySecret.name' ? { ...props, wireguardPrivateKeySecret: { name: value } } : at === 'serverHostnames[0]' ? { ...props, serverHostnames: [value] } : { ...props, serverCountries: [value] };
    expect(validateVpnGateway(input)).toEqual([{ path: at, code: 'secret-value', message }]);
  });
});

describe('where a secret is, and what is inside a secret field (issue 47)', () => {
  const RANDOM = 'Kx9dF3mP2qR7vT1wZ5aBc8';
  const TOKEN_LOOK = "this looks like a token or key (a long random string), which is never taken inline here (not shown): put it in a Secret and pass the Secret's name (a `…Secret` prop), never the value";
  const KEY = 'OFCo9jme+tsrIJZcDrZo1ZCxPTDiLhDSQPRhoBV/eEU=';
  const withKeyFrom = (file: string) => ({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], privateKeyFrom: { file } }] });
  const withPeerKey = (publicKey: unknown) => ({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], peers: [{ ...siteA().wireguard[0].peers[0], publicKey: publicKey as string }, siteA().wireguard[0].peers[1]] }] });
  it.each<[string, () => unknown, unknown[]]>([
    // A path is where a secret is: a vault agent's sink or a mounted Secret may have a random name.
    ['a file path with a random name is taken', () => validateWireguardOverlayNode(withKeyFrom(`/run/secrets/${RANDOM}`)), []],
    ['a path of random segments is taken', () => validateWireguardOverlayNode(withKeyFrom(`/run/k/${RANDOM}/${RANDOM}`)), []],
    ['control: the same random name alone, where a path belongs, is still refused', () => validateWireguardOverlayNode(withKeyFrom(RANDOM)),
      [{ path: 'wireguard[0].privateKeyFrom.file', code: 'secret-value', message: TOKEN_LOOK }]],
    ['control: the same random name in a field that is no path is refused', () => validateWireguardOverlayNode({ ...siteA(), node: RANDOM }),
      [{ path: 'node', code: 'secret-value', message: TOKEN_LOOK }]],
    ['a WireGuard key pasted where its file belongs is refused, a leading "/" or not', () => validateWireguardOverlayNode(withKeyFrom(`/${KEY.slice(1)}`)),
      [{ path: 'wireguard[0].privateKeyFrom.file', code: 'secret-value', message: 'this looks like a WireGuard key, which is never taken inline here (not shown): put a private key in a Secret, key `private-key`, and pass its name (or, on a host, in a root-only file named by `privateKeyFrom`); a public key belongs in a `publicKey` prop' }]],
    // An object given to a key field: refused at the field; nothing inside it (its keys included) is named.
    ['an object holding the key under a key field', () => validateWireguardOverlayNode(withPeerKey({ value: KEY, [RANDOM]: 1, hunter2hunter2: 'x' })),
      [{ path: 'wireguard[0].peers[0].publicKey', code: 'type', message: 'expected string, received a value of the wrong type (not shown: it is secret)' }]],
    ['a list holding the key under a key field', () => validateWireguardOverlayNode(withPeerKey(['hunter2hunter2'])),
      [{ path: 'wireguard[0].peers[0].publicKey', code: 'type', message: 'expected string, received a value of the wrong type (not shown: it is secret)' }]],
  ])('%s', (_name, run, expected) => {
    expect(run()).toEqual(expected);
  });
});
