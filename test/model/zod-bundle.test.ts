/**
 * Issue 30: the package's `lib/zod.js` is a one-file bundle of the zod/mini functions `src/zod.ts` names, with English
 * messages only (scripts/bundle-zod.mjs), not the zod package the sources are tested with. Every construct's validation runs here
 * through both, on the fixtures and on random corruptions of them, and must give the same problems: the same paths,
 * codes and messages, in the same order. The bundle is built fresh into a temporary folder from the zod in
 * node_modules, as `npm run compile` builds it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as fc from 'fast-check';
import { z } from 'zod';
import type * as Tw from '../../src';
import type * as Names from '../../src/zod';
import { gatewayFor, gatewayProbe, homelabConformance, nordvpnGateway, prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';

const ROOT = path.resolve(__dirname, '../..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-zod-bundle-'));
const bundle = path.join(dir, 'zod.js');
let built = '';
let viaBundle: typeof Tw;
let viaPackage: typeof Tw;
/** The zod package as viaPackage's modules see it (jest gives each isolated registry its own copy): a user's zod. */
let packageZod: typeof z;
/** The bundle as lib/ requires it. */
let bundled: typeof Names;

beforeAll(() => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/bundle-zod.mjs'), '--outfile', bundle], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bundle-zod failed: ${r.stderr}`);
  built = r.stdout;
  bundled = jest.requireActual<typeof Names>(bundle);
  jest.isolateModules(() => {
    jest.doMock('../../src/zod', () => jest.requireActual(bundle));
    viaBundle = jest.requireActual('../../src');
  });
  jest.dontMock('../../src/zod');
  jest.isolateModules(() => {
    viaPackage = jest.requireActual('../../src');
    packageZod = jest.requireActual<{ z: typeof z }>('zod').z;
  });
}, 60_000);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

type Validator = (tw: typeof Tw, props: unknown) => Tw.Problem[];
const CONSTRUCTS: [string, Validator, () => unknown][] = [
  ['WireguardOverlayNode', (tw, p) => tw.validateWireguardOverlayNode(p), siteA],
  ['WireguardMesh', (tw, p) => tw.validateWireguardMesh(p), threeNodeMesh],
  ['KillSwitch', (tw, p) => tw.validateKillSwitch(p), qbittorrentKillSwitch],
  ['VpnGateway (NordVPN)', (tw, p) => tw.validateVpnGateway(p), nordvpnGateway],
  ['VpnGateway (custom WireGuard)', (tw, p) => tw.validateVpnGateway(p), () => gatewayFor('custom')],
  ['EgressSteering (OpenVPN)', (tw, p) => tw.validateEgressSteering(p), prodSteering],
  ['EgressSteering (WireGuard)', (tw, p) => tw.validateEgressSteering(p), wireguardSteering],
  ['EgressProbe', (tw, p) => tw.validateEgressProbe(p), gatewayProbe],
  ['EgressConformance', (tw, p) => tw.validateEgressConformance(p), homelabConformance],
];

describe('the bundle is what the package ships', () => {
  it('is built from the zod in node_modules, English only, and is not that module', () => {
    const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/zod/package.json'), 'utf8')) as { version: string }).version;
    expect(built).toMatch(new RegExp(`^bundle-zod: zod ${version.replace(/\./g, '\\.')}, \\d+ files -> `));
    expect(bundled.string).not.toBe(jest.requireActual<typeof Names>('zod/mini').string);
    expect(Object.keys(bundled.locales)).toEqual(['en']);
    // The control: the package's zod has every locale.
    expect(Object.keys(z.locales).length).toBeGreaterThan(40);
  });

  it('holds the names src/zod.ts exports and no others (zod/mini\'s own index has hundreds)', () => {
    const names = Object.keys(jest.requireActual<typeof Names>('../../src/zod')).sort();
    expect(Object.keys(bundled).sort()).toEqual(names);
    expect(names).toContain('strictObject');
    // The control: what tree-shaking left out is there in the package.
    expect(Object.keys(jest.requireActual<Record<string, unknown>>('zod/mini')).length).toBeGreaterThan(names.length * 5);
  });

  it('keeps English messages when the user sets another locale or a customError on their zod', () => {
    const props = { ...qbittorrentKillSwitch(), allowCidrs: 'not a list', namespace: 7 };
    const before = viaBundle.validateKillSwitch(props);
    expect(before).toEqual([
      { path: 'allowCidrs', code: 'type', message: 'expected array, received string' },
      { path: 'namespace', code: 'type', message: 'expected string, received number' },
    ]);
    for (const setting of [packageZod.locales.de(), { customError: () => 'kaputt' }]) {
      packageZod.config(setting);
      try {
        expect(viaBundle.validateKillSwitch(props)).toEqual(before);
        expect(viaPackage.validateKillSwitch(props)).toEqual(before);
        // The control: the setting reached the zod package, so a parse there without tunnelwright's English map reads
        // it. The bundle's zod keeps a config of its own, which the user's setting does not reach: zod/mini sets no
        // locale there, so its bare message is zod's fallback (tunnelwright passes the English map with each parse).
        const raw = (zz: Pick<typeof Names, 'string'>) => zz.string().safeParse(7).error!.issues[0].message;
        expect(raw(packageZod)).toMatch(/Ungültige Eingabe|kaputt/);
        expect(raw(bundled)).toBe('Invalid input');
      } finally {
        packageZod.config({ ...packageZod.locales.en(), customError: undefined });
      }
    }
  });
});

describe('the bundle leaves the process\'s zod state alone (zod 4.5+ shares its config and registry on globalThis)', () => {
  /** What a fresh node sees on globalThis after `code`. */
  const globalsAfter = (code: string) => {
    const r = spawnSync(process.execPath, ['-e', `${code}; process.stdout.write(JSON.stringify([typeof globalThis.__zod_globalConfig, typeof globalThis.__zod_globalRegistry]))`], { cwd: ROOT, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout) as string[];
  };

  it('validating through the bundle sets no locale or memoizer for a user\'s zod/mini; control: the zod package does', () => {
    const parse = "z.strictObject({ a: z.string() }).safeParse({ a: 7 }, { jitless: true })";
    expect(globalsAfter(`const z = require(${JSON.stringify(bundle)}); ${parse}`)).toEqual(['undefined', 'undefined']);
    expect(globalsAfter(`const z = require('zod/mini'); ${parse}`)).toEqual(['object', 'object']);
  });

  it('a user\'s jitless: false or zod/compile setting has no way in: the bundle names no globalThis and exports no config', () => {
    expect(fs.readFileSync(bundle, 'utf8')).not.toContain('globalThis');
    expect(Object.keys(bundled)).not.toContain('config');
    // The control: the package's zod keeps that config on globalThis, where any copy's `z.config()` writes it.
    expect(fs.readFileSync(path.join(ROOT, 'node_modules/zod/v4/core/core.js'), 'utf8')).toContain('globalThis.__zod_globalConfig');
  });
});

describe.each(CONSTRUCTS)('%s: the same problems through the bundle and the zod package', (_name, validate, fixture) => {
  it('for the fixture (none) and for no props at all (the required ones)', () => {
    expect(validate(viaBundle, fixture())).toEqual([]);
    const empty = validate(viaBundle, {});
    expect(empty.length).toBeGreaterThan(0);
    expect(empty).toEqual(validate(viaPackage, {}));
  });

  /** Every path into a value, with the value there. */
  const paths = (v: unknown, at: (string | number)[] = []): (string | number)[][] =>
    typeof v !== 'object' || v === null ? [at] : [at, ...Object.entries(v).flatMap(([k, x]) => paths(x, [...at, Array.isArray(v) ? Number(k) : k]))];
  const WRONG = [undefined, null, 0, -1, 1.5, 70000, '', 'x', 'not a cidr/99', '10.0.0.0/33', 'fd00::/129', true, [], [1], {}, { unknown: 1 }];

  it('for random corruptions of the fixture: one value replaced, or an unknown key added', () => {
    const base = fixture();
    const all = paths(base).filter((p) => p.length > 0);
    fc.assert(fc.property(fc.constantFrom(...all), fc.constantFrom(...WRONG), fc.boolean(), (at, wrong, addKey) => {
      const props = structuredClone(base) as Record<string | number, unknown>;
      let parent = props;
      for (const k of at.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
      if (addKey && typeof parent === 'object' && !Array.isArray(parent)) parent.surplusProp = wrong;
      else parent[at[at.length - 1]] = wrong;
      expect(validate(viaBundle, props)).toEqual(validate(viaPackage, props));
    }), { numRuns: 150, seed: 30 });
  });
});
