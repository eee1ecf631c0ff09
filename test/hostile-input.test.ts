import * as pulumi from '@pulumi/pulumi';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { generateKeyPair, planWireguardMesh, ValidationError, WireguardMeshProps } from '../src';
import * as cdk from '../src/cdk8s';
import { gatewayFor, gatewayProbe, KEYS, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from './helpers/fixtures';
import { recordResources, settle } from './helpers/pulumi';

/**
 * Hostile input through the adapters, as a JavaScript caller or a YAML-loaded config hands it over (the fuzzer
 * found these): prototype-named keys in selectors and label maps, Symbol values and keys, a secret nested inside a
 * wrong-typed field, 10 000-entry lists and a 500-node hub mesh. Each construct, in cdk8s (built and serialized) and
 * in Pulumi (under mocks, settled), answers with a result or a ValidationError, never another exception, and the
 * secret reaches no error, warning, log line, serialized object or registered resource. The time these take is a
 * bench case (`npm run bench`: hostile-input), not asserted here.
 */
const seen = recordResources();
const tw = require('../src/pulumi') as typeof import('../src/pulumi');

interface Construct {
  readonly name: string;
  readonly fixture: () => unknown;
  readonly cdk8s: (chart: Chart, p: unknown) => unknown;
  readonly pulumi: (p: unknown) => unknown;
}
const CONSTRUCTS: Construct[] = [
  { name: 'WireguardOverlayNode', fixture: siteA, cdk8s: (c, p) => new cdk.WireguardOverlayNode(c, 'n', p as never), pulumi: (p) => new tw.WireguardOverlayNode('n', p as never) },
  { name: 'WireguardMesh', fixture: threeNodeMesh, cdk8s: (c, p) => new cdk.WireguardMesh(c, 'm', p as never), pulumi: (p) => new tw.WireguardMesh('m', p as never) },
  { name: 'KillSwitch', fixture: qbittorrentKillSwitch, cdk8s: (c, p) => new cdk.KillSwitch(c, 'k', p as never), pulumi: (p) => new tw.KillSwitch('k', p as never) },
  { name: 'VpnGateway', fixture: () => gatewayFor('nordvpn'), cdk8s: (c, p) => new cdk.VpnGateway(c, 'g', p as never), pulumi: (p) => new tw.VpnGateway('g', p as never) },
  { name: 'EgressSteering (OpenVPN)', fixture: prodSteering, cdk8s: (c, p) => new cdk.EgressSteering(c, 's', p as never), pulumi: (p) => new tw.EgressSteering('s', p as never) },
  { name: 'EgressSteering (WireGuard)', fixture: wireguardSteering, cdk8s: (c, p) => new cdk.EgressSteering(c, 's', p as never), pulumi: (p) => new tw.EgressSteering('s', p as never) },
  { name: 'EgressProbe', fixture: gatewayProbe, cdk8s: (c, p) => new cdk.EgressProbe(c, 'p', p as never), pulumi: (p) => new tw.EgressProbe('p', p as never) },
];

type Path = (string | number)[];
/** Every path in a value, with what is there. */
function paths(value: unknown, prefix: Path = []): { at: Path; value: unknown }[] {
  const here = [{ at: prefix, value }];
  if (Array.isArray(value)) return [...here, ...value.flatMap((v, i) => paths(v, [...prefix, i]))];
  if (value !== null && typeof value === 'object') return [...here, ...Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, k]))];
  return here;
}
function withValue(base: unknown, at: Path, value: unknown): unknown {
  if (at.length === 0) return value;
  const copy = Array.isArray(base) ? [...base] : { ...(base as Record<string, unknown>) };
  const [head, ...rest] = at;
  (copy as Record<string | number, unknown>)[head] = withValue((base as Record<string | number, unknown>)[head], rest, value);
  return copy;
}
/** A copy of an object with one more own key, as JSON.parse makes it (an own `__proto__` too). */
function withKey(obj: object, key: string, value: unknown): object {
  const copy = { ...obj };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-hostile-'));
afterAll(() => fs.rmSync(outdir, { recursive: true, force: true }));

interface Outcome {
  /** The ValidationError's message, when refused. */
  readonly error?: string;
  /** Everything the run showed: serialized cdk8s objects, stderr, Pulumi log lines and registered resources. */
  readonly shown: string;
}

/** Builds and serializes the construct in cdk8s; a ValidationError is an outcome, any other exception fails the test. */
function viaCdk8s(c: Construct, props: unknown): Outcome {
  const stderr: string[] = [];
  const write = jest.spyOn(process.stderr, 'write').mockImplementation((s) => (stderr.push(String(s)), true));
  try {
    const chart = new Chart(new cdk.App({ outdir }), 'c');
    try {
      c.cdk8s(chart, props);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      return { error: e.message, shown: `${e.message}\n${JSON.stringify(e.problems)}\n${stderr.join('')}` };
    }
    // Serialized as synth would: cdk8s's sanitizer over every object.
    const objects = JSON.stringify(chart.toJson());
    const node = Object.values(chart.node.findAll()).map((x) => (x as { cloudConfig?: unknown }).cloudConfig).filter((x) => typeof x === 'string');
    return { shown: `${objects}\n${node.join('\n')}\n${stderr.join('')}` };
  } finally {
    write.mockRestore();
  }
}

/** Builds the component under mocks and waits for every registration; same rules. */
async function viaPulumi(c: Construct, props: unknown): Promise<Outcome> {
  tw.resetRegistry();
  seen.length = 0;
  const logged: string[] = [];
  const warn = jest.spyOn(pulumi.log, 'warn').mockImplementation((m) => (logged.push(String(m)), Promise.resolve()));
  try {
    try {
      c.pulumi(props);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      return { error: e.message, shown: `${e.message}\n${JSON.stringify(e.problems)}\n${logged.join('\n')}` };
    }
    await settle();
    return { shown: `${JSON.stringify(seen)}\n${logged.join('\n')}` };
  } finally {
    warn.mockRestore();
  }
}

describe('prototype-named keys: refused where no program could carry them, written where they are ordinary keys', () => {
  const selector = (key: string) => ({ ...qbittorrentKillSwitch(), selector: withKey({ app: 'qbittorrent' }, key, 'x') });
  const ks = CONSTRUCTS.find((c) => c.name === 'KillSwitch')!;

  it.each([
    ['constructor', 'selector.constructor: a key named "constructor" cannot be written: cdk8s reads an object\'s `constructor` to tell a plain object from a class instance, so no manifest could hold it; rename the key'],
    ['__proto__', 'selector["__proto__"]: expected a label key ([prefix/]name, name ≤ 63 characters), received "__proto__"\nselector.__proto__: a key named "__proto__" cannot be written: assigning it replaces the object\'s prototype instead of adding a key, so it would vanish from every copy; rename the key'],
  ])('a selector key %s is a ValidationError in cdk8s and in Pulumi, with its whole message', async (key, message) => {
    expect(viaCdk8s(ks, selector(key)).error).toBe(`invalid KillSwitch props at c/k:\n${message}`);
    expect((await viaPulumi(ks, selector(key))).error).toBe(`invalid KillSwitch props at k:\n${message}`);
  });

  it.each(['prototype', 'toString', 'hasOwnProperty'])('a selector key %s is an ordinary label key: it reaches the NetworkPolicy in both adapters', async (key) => {
    const built = viaCdk8s(ks, selector(key));
    expect(built.error).toBeUndefined();
    expect(built.shown).toContain(`"matchLabels":{"app":"qbittorrent","${key}":"x"}`);
    const made = await viaPulumi(ks, selector(key));
    expect(made.error).toBeUndefined();
    expect(made.shown).toContain(`"matchLabels":{"app":"qbittorrent","${key}":"x"}`);
  });

  it('control: without the guard, cdk8s itself cannot serialize a "constructor" key (the crash the guard turns into a ValidationError)', () => {
    const chart = new Chart(new cdk.App({ outdir }), 'c');
    new (require('cdk8s') as typeof import('cdk8s')).ApiObject(chart, 'o', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'o', labels: withKey({}, 'constructor', 'x') as Record<string, string> } });
    expect(() => chart.toJson()).toThrow("can't render non-simple object of type 'undefined'");
  });
});

describe.each(CONSTRUCTS.map((c) => [c.name, c] as const))('%s: every path given a hostile value or key answers with a result or a ValidationError', (_name, c) => {
  const base = c.fixture();
  const all = paths(base);
  const objects = all.filter((p) => p.value !== null && typeof p.value === 'object' && !Array.isArray(p.value));
  const cases: [string, unknown][] = [
    ...all.map((p) => [`Symbol at ${JSON.stringify(p.at)}`, withValue(base, p.at, Symbol('hostile'))] as [string, unknown]),
    ...objects.flatMap((p) => ['constructor', '__proto__', 'prototype'].map((k) => [`key ${k} in ${JSON.stringify(p.at)}`, withValue(base, p.at, withKey(p.value as object, k, 'x'))] as [string, unknown])),
    ...objects.map((p) => [`Symbol key in ${JSON.stringify(p.at)}`, withValue(base, p.at, { ...(p.value as object), [Symbol('k')]: 'x' })] as [string, unknown]),
  ];

  it(`cdk8s (${cases.length} inputs)`, () => {
    const crashed: string[] = [];
    for (const [what, props] of cases) {
      try {
        viaCdk8s(c, props);
      } catch (e) {
        crashed.push(`${what}: ${(e as Error)?.message?.slice(0, 200)}`);
      }
    }
    expect(crashed).toEqual([]);
  });

  it(`Pulumi (${cases.length} inputs)`, async () => {
    const crashed: string[] = [];
    for (const [what, props] of cases) {
      try {
        await viaPulumi(c, props);
      } catch (e) {
        crashed.push(`${what}: ${(e as Error)?.message?.slice(0, 200)}`);
      }
    }
    expect(crashed).toEqual([]);
  });
});

describe('a secret nested inside a wrong-typed field reaches no output', () => {
  const key = generateKeyPair().privateKey;
  const gw = CONSTRUCTS.find((c) => c.name === 'VpnGateway')!;
  const placements: [string, unknown][] = [
    ['an object in wireguardPrivateKeySecret.name', { ...gatewayFor('nordvpn'), wireguardPrivateKeySecret: { name: { nested: key } } }],
    ['a list in serverCountries', { ...gatewayFor('nordvpn'), serverCountries: [[key]] }],
    ['an object in a number field (vxlanId)', { ...gatewayFor('nordvpn'), vxlanId: { value: key } }],
    ['a deep object in an unknown prop', { ...gatewayFor('nordvpn'), extra: { a: { b: [{ c: key }] } } }],
  ];

  it.each(placements)('%s: a ValidationError that does not show it, in cdk8s and in Pulumi (nothing registered holds it)', async (_what, props) => {
    const built = viaCdk8s(gw, props);
    expect(built.error).toBeDefined();
    expect(built.shown).not.toContain(key);
    const made = await viaPulumi(gw, props);
    expect(made.error).toBeDefined();
    expect(made.shown).not.toContain(key);
  });

  it('control: the scan sees the key where it is shown (a Secret the props name is not a place for it, but an inline overlay key is echoed nowhere either)', () => {
    expect(JSON.stringify({ nested: key })).toContain(key);
  });
});

/** A 10 000-entry list in place of each list in each fixture: its first entry repeated (strings made distinct). */
function hugeList(first: unknown): unknown[] {
  return Array.from({ length: 10_000 }, (_, i) => {
    if (typeof first !== 'string') return first;
    const cidr = /^(\d+)\.\d+\.\d+\.\d+\/\d+$/.exec(first);
    return cidr ? `${cidr[1]}.${i >> 8}.${i & 255}.0/24` : `${first}-${i}`;
  });
}

describe('10 000-entry lists: a result or a ValidationError in both adapters', () => {
  it.each(CONSTRUCTS.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const base = c.fixture();
    const lists = paths(base).filter((p) => Array.isArray(p.value) && (p.value as unknown[]).length > 0);
    expect(lists.length).toBeGreaterThan(0);
    const answered: string[] = [];
    for (const p of lists) {
      const props = withValue(base, p.at, hugeList((p.value as unknown[])[0]));
      const built = viaCdk8s(c, props);
      const made = await viaPulumi(c, props);
      // A message lists each problem once: it grows with the list, never with its square.
      expect(Math.max(...[built, made].map((o) => o.error?.length ?? 0))).toBeLessThan(10_000 * 1_000);
      answered.push(`${JSON.stringify(p.at)}: ${built.error ? 'refused' : 'planned'}/${made.error ? 'refused' : 'planned'}`);
    }
    expect(answered).toHaveLength(lists.length);
  });
});

describe('two 10 000-entry lists checked against each other', () => {
  it('EgressSteering: 10 000 enforced namespaces none of 10 000 steered ones: one problem each, the steered ones listed ten at a time', () => {
    const props = { ...prodSteering(), namespaces: Array.from({ length: 10_000 }, (_, i) => `ns-${i}`), enforceLabels: { namespaces: Array.from({ length: 10_000 }, (_, i) => `other-${i}`) } };
    const built = viaCdk8s(CONSTRUCTS.find((c) => c.name === 'EgressSteering (OpenVPN)')!, props);
    const lines = built.error!.split('\n').slice(1);
    expect(lines).toHaveLength(10_000);
    expect(lines[9_999]).toBe('enforceLabels.namespaces[9999]: expected a namespace the policy steers (namespaces: "ns-0", "ns-1", "ns-2", "ns-3", "ns-4", "ns-5", "ns-6", "ns-7", "ns-8", "ns-9", … (10000 in all)): Kyverno would admit pods of class vpn in other-9999, and they would leave by the WAN; add other-9999 to namespaces, or leave it out here');
  });
});

/** A hub-and-spoke mesh of `n` nodes: the hub has the endpoint, every spoke dials it. */
function hubMesh(n: number): WireguardMeshProps {
  return {
    network: '10.10.0.0/16',
    listenPort: 51820,
    topology: { hub: 'n-0' },
    nodes: Array.from({ length: n }, (_, i) => ({
      node: `n-${i}`,
      address: `10.10.${(i + 1) >> 8}.${(i + 1) & 255}`,
      publicKey: i === 0 ? KEYS.a.publicKey : generateKeyPair().publicKey,
      privateKeyFrom: { file: '/run/keys/wg0.key' },
      ...(i === 0 ? { endpoint: '203.0.113.10' } : {}),
      installK0s: {},
    })),
  };
}

describe('a 500-node hub mesh', () => {
  it('plans: the hub peers with 499 spokes, each spoke with the hub only, in cdk8s and in Pulumi', async () => {
    const props = hubMesh(500);
    const plan = planWireguardMesh(props);
    expect(Object.keys(plan.nodes)).toHaveLength(500);
    const peersOf = (node: string) => plan.nodes[node].wireguard.peers.length;
    expect([peersOf('n-0'), peersOf('n-1'), peersOf('n-499')]).toEqual([499, 1, 1]);
    const mesh = CONSTRUCTS.find((c) => c.name === 'WireguardMesh')!;
    expect(viaCdk8s(mesh, props).error).toBeUndefined();
    expect((await viaPulumi(mesh, props)).error).toBeUndefined();
  });
});
