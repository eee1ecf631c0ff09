import * as fs from 'node:fs';
import * as path from 'node:path';
import { SCHEMA_DIR } from '../helpers/schemas';
import { describeWithTools, must, run, tmpdir } from './tools';

const ROOT = path.resolve(__dirname, '../..');
const MANIFEST = JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts/schemas/manifest.json'), 'utf8')) as { files: { file: string; sha256: string; licenseFiles: string[] }[] };
/** What the user's test loads: the framework and tunnelwright/testing's optional peers, as the project pins them. */
const PEERS = ['cdk8s', 'constructs', 'ajv', 'ajv-formats', 'ajv-draft-04', 'kubernetes-models', '@kubernetes-models/prometheus-operator'];

/**
 * Problems of the source maps in an unpacked package: every lib/**\/*.js names its own shipped .js.map, whose sources
 * are shipped src/*.ts files with the same text (inlineSources), and every lib/**\/*.d.ts names a shipped .d.ts.map
 * whose sources are shipped src/*.ts files ("go to definition" opens the source, not the declaration). lib/zod.js is
 * zod's own code bundled (scripts/bundle-zod.mjs): it has no map, and must say what it is.
 */
function sourceMapProblems(pkg: string, listing: readonly string[]): string[] {
  const shipped = new Set(listing);
  const out: string[] = [];
  const sourcesOf = (file: string, map: { sources: string[]; sourceRoot?: string }): string[] => map.sources.map((s) => path.relative(pkg, path.resolve(path.dirname(path.join(pkg, file)), map.sourceRoot ?? '', s)));
  for (const file of listing.filter((f) => f.startsWith('lib/'))) {
    if (file === 'lib/zod.js') {
      if (!fs.readFileSync(path.join(pkg, file), 'utf8').startsWith('/*! zod ')) out.push(`${file}: not the zod bundle`);
      if (shipped.has('lib/zod.js.map') || shipped.has('lib/zod.d.ts')) out.push(`${file}: tsc's map or declaration of the re-export is shipped beside the bundle`);
    } else if (file.endsWith('.js')) {
      const mapFile = `${file}.map`;
      const text = fs.readFileSync(path.join(pkg, file), 'utf8');
      if (!text.trimEnd().endsWith(`//# sourceMappingURL=${path.basename(mapFile)}`) || !shipped.has(mapFile)) {
        out.push(`${file}: no source map shipped`);
        continue;
      }
      const map = JSON.parse(fs.readFileSync(path.join(pkg, mapFile), 'utf8')) as { sources: string[]; sourceRoot?: string; sourcesContent?: string[] };
      sourcesOf(mapFile, map).forEach((src, i) => {
        if (!src.startsWith('src/') || !shipped.has(src)) out.push(`${file}: its map names ${src}, which the package does not ship`);
        else if (map.sourcesContent?.[i] !== fs.readFileSync(path.join(pkg, src), 'utf8')) out.push(`${file}: its map's inline source differs from the shipped ${src}`);
      });
    } else if (file.endsWith('.d.ts')) {
      const mapFile = `${file}.map`;
      const text = fs.readFileSync(path.join(pkg, file), 'utf8');
      if (!text.trimEnd().endsWith(`//# sourceMappingURL=${path.basename(mapFile)}`) || !shipped.has(mapFile)) {
        out.push(`${file}: no declaration map shipped`);
        continue;
      }
      for (const src of sourcesOf(mapFile, JSON.parse(fs.readFileSync(path.join(pkg, mapFile), 'utf8')))) if (!src.startsWith('src/') || !shipped.has(src)) out.push(`${mapFile}: names ${src}, which the package does not ship`);
    }
  }
  return out;
}

/**
 * What a user of `tunnelwright/testing` gets from the registry: `npm pack`, the tarball installed into a fresh project
 * (offline, from npm's cache; the peers linked from this checkout's node_modules at the versions it pins), and a
 * unit test run with Node's own test runner, with `$TUNNELWRIGHT_SCHEMAS` unset and the schema folder the project's
 * tests read (../shared/schemas) hidden under an empty tmpfs in a mount namespace. The checks find the schemas the
 * package ships in schemas/; without that folder the same test fails (the control).
 */
describeWithTools('tunnelwright/testing from the packed tarball on a fresh install, the shared schemas hidden', ['npm', 'node', 'tar', 'unshare', 'mount'], () => {
  const dir = tmpdir('tw-testing-pkg-');
  const unpacked = path.join(dir, 'unpacked');
  const project = path.join(dir, 'project');
  let tarball = '';
  let listing: string[] = [];
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  beforeAll(() => {
    const packed = must(run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT, timeout: 300_000 }), 'npm pack');
    tarball = path.join(dir, packed.stdout.trim().split('\n').pop()!);
    listing = must(run('tar', ['-tzf', tarball]), 'tar -t').stdout.trim().split('\n').map((f) => f.replace(/^package\//, '')).sort();
    fs.mkdirSync(unpacked);
    must(run('tar', ['-xzf', tarball, '-C', unpacked]), 'tar -x');
  }, 300_000);

  it('ships the schemas tunnelwright/testing loads, byte for byte, with SOURCES.md, manifest.json and their licences; the checkout keeps none', () => {
    const expected = [...MANIFEST.files.map((f) => `schemas/${f.file}`), 'schemas/SOURCES.md', 'schemas/manifest.json', ...new Set(MANIFEST.files.flatMap((f) => f.licenseFiles.map((l) => `schemas/LICENSES/${l}`)))].sort();
    expect(listing.filter((f) => f.startsWith('schemas/'))).toEqual(expected);
    for (const f of MANIFEST.files) expect(fs.readFileSync(path.join(unpacked, 'package/schemas', f.file))).toEqual(fs.readFileSync(path.join(SCHEMA_DIR, f.file)));
    const sources = fs.readFileSync(path.join(unpacked, 'package/schemas/SOURCES.md'), 'utf8');
    for (const f of MANIFEST.files) expect(sources).toContain(`| ${f.file} |`);
    // postpack removed the bundle again: nothing of it is left to commit.
    expect(fs.existsSync(path.join(ROOT, 'schemas'))).toBe(false);
  });

  it('every lib/*.js has a source map whose sources are the shipped src/*.ts, and every .d.ts a declaration map', () => {
    const pkg = path.join(unpacked, 'package');
    expect(listing.filter((f) => /^lib\/.*\.js$/.test(f)).length).toBeGreaterThan(20);
    expect(sourceMapProblems(pkg, listing)).toEqual([]);
    // Control: the same check over the package without one source map and one declaration map, and with a source
    // edited after packing.
    const dts = listing.find((f) => f === 'lib/testing/schemas.d.ts')!;
    fs.renameSync(path.join(pkg, `${dts}.map`), path.join(dir, 'aside.map'));
    fs.appendFileSync(path.join(pkg, 'src/testing/schemas.ts'), '// edited\n');
    try {
      expect(sourceMapProblems(pkg, listing.filter((f) => f !== `${dts}.map` && f !== 'lib/index.js.map'))).toEqual([
        'lib/index.js: no source map shipped',
        'lib/testing/schemas.d.ts: no declaration map shipped',
        'lib/testing/schemas.js: its map\'s inline source differs from the shipped src/testing/schemas.ts',
      ]);
    } finally {
      fs.renameSync(path.join(dir, 'aside.map'), path.join(pkg, `${dts}.map`));
    }
  });

  describe('a user\'s unit test (node --test) with tunnelwright/testing', () => {
    const hidden = [SCHEMA_DIR, path.resolve(ROOT, '../shared')].filter((d, i, all) => fs.existsSync(d) && all.indexOf(d) === i);
    /** Runs the user's test in a mount namespace where the shared schemas are an empty folder, TUNNELWRIGHT_SCHEMAS unset. */
    const userTest = () => {
      const mounts = hidden.map((d) => `mount -t tmpfs none '${d}' && test -z "$(ls -A '${d}')"`).join(' && ');
      return run('unshare', ['-m', '/bin/sh', '-c', `unset TUNNELWRIGHT_SCHEMAS; ${mounts} && cd '${project}' && exec node --test user-unit-test.js`], { timeout: 120_000 });
    };

    beforeAll(() => {
      fs.mkdirSync(project);
      // tunnelwright's own dependencies (exact versions), as tarballs packed from node_modules: `npm ci` caches the
      // tarballs it fetches but not the registry documents an install reads to resolve a version, so on a machine
      // that never ran `npm install` an offline install of `ipaddr.js@2.5.0` finds nothing (ENOTCACHED). Given as
      // tarballs, the same versions satisfy the package's pins without the registry.
      const pins = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
      const deps = Object.fromEntries(Object.entries(pins).map(([name, version]) => {
        const installed = path.join(ROOT, 'node_modules', name);
        const found = (JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as { version: string }).version;
        if (found !== version) throw new Error(`node_modules/${name} is ${found}, and package.json pins ${version}: run npm ci`);
        const packed = must(run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir, installed], { cwd: dir, timeout: 120_000 }), `npm pack ${name}`);
        return [name, `file:${path.join(dir, packed.stdout.trim().split('\n').pop()!)}`];
      }));
      fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user-project', version: '1.0.0', private: true, dependencies: { tunnelwright: `file:${tarball}`, ...deps } }, undefined, 2));
      fs.copyFileSync(path.join(ROOT, 'test/consumer/user-unit-test.js'), path.join(project, 'user-unit-test.js'));
    });

    it('installs from the tarball offline, the peers beside it', () => {
      const r = run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project, timeout: 300_000, env: { npm_config_update_notifier: 'false' } });
      expect({ status: r.status, output: r.status === 0 ? '' : r.output }).toEqual({ status: 0, output: '' });
      for (const p of PEERS) {
        fs.mkdirSync(path.dirname(path.join(project, 'node_modules', p)), { recursive: true });
        fs.symlinkSync(path.join(ROOT, 'node_modules', p), path.join(project, 'node_modules', p));
      }
      expect(fs.existsSync(path.join(project, 'node_modules/tunnelwright/schemas/SOURCES.md'))).toBe(true);
    }, 300_000);

    it('passes with the shipped schemas, the shared ones hidden', () => {
      expect(hidden.length).toBeGreaterThan(0);
      const r = userTest();
      expect({ status: r.status, summary: r.stdout.match(/^# (pass|fail) \d+$/gm) }).toEqual({ status: 0, summary: ['# pass 3', '# fail 0'] });
    });

    it('control: without the package\'s schemas/ the same test fails, saying where schemas come from', () => {
      const shipped = path.join(project, 'node_modules/tunnelwright/schemas');
      fs.renameSync(shipped, `${shipped}.aside`);
      try {
        const r = userTest();
        expect(r.status).not.toBe(0);
        expect(r.stdout.match(/^# (pass|fail) \d+$/gm)).toEqual(['# pass 0', '# fail 3']);
        expect(r.stdout).toContain('tunnelwright/testing: no schema directory: this copy of tunnelwright was not packed with its schemas');
      } finally {
        fs.renameSync(`${shipped}.aside`, shipped);
      }
    });
  });
}, true);
