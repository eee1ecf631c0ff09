import { DependencyType, javascript, typescript, JsonFile, TextFile } from 'projen';
import { OLDEST_PEERS, PEERS, peerRange, TESTING_PEERS } from './projenrc/peers';

/**
 * The single source of the project configuration. Run `npx projen` after editing.
 * projen's own defaults (caret ranges, typescript ^6, jest ^30, eslint ^9, GitHub workflows, release, mergify)
 * are switched off or pinned here: every tool is an exact version that installs with `npm ci` on Node 20.
 */
const project = new typescript.TypeScriptProject({
  name: 'tunnelwright',
  description: 'Typed constructs for VPN egress gateways, egress steering, kill switches and host WireGuard overlays on self-hosted Kubernetes (cdk8s and Pulumi).',
  defaultReleaseBranch: 'main',
  packageManager: javascript.NodePackageManager.NPM,
  license: 'Apache-2.0',
  authorName: 'tunnelwright developers',
  projenrcTs: true,
  projenVersion: '0.103.25',
  typescriptVersion: '5.9.3',
  minNodeVersion: '20.0.0',
  sampleCode: false,
  github: false,
  release: false,
  buildWorkflow: false,
  depsUpgrade: false,
  pullRequestTemplate: false,
  autoApproveUpgrades: false,
  eslint: false, // our own flat config below (eslint 9 + typescript-eslint + eslint-plugin-jest), pinned
  prettier: false,
  docgen: false,
  jest: true,
  jestOptions: {
    jestVersion: '29.7.0',
    updateSnapshot: javascript.UpdateSnapshot.NEVER,
    jestConfig: {
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/system/'],
      modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
      moduleNameMapper: { '^tunnelwright$': '<rootDir>/src', '^tunnelwright/(.*)$': '<rootDir>/src/$1' },
      testEnvironment: 'node',
      collectCoverage: false,
      // Each test file writes its temporary files (cdk8s synth output) under a directory of its own, removed after it;
      // quiet.ts fails a test that lets text reach stderr uncaptured (issue 31: tests capture the warnings they expect);
      // seed.ts gives every fast-check property one fixed seed (issue 30: the same inputs each run).
      setupFilesAfterEnv: ['<rootDir>/test/helpers/private-tmpdir.ts', '<rootDir>/test/helpers/quiet.ts', '<rootDir>/test/helpers/seed.ts'],
      // No timed test (issue 30): jest's default of 5 s per test is a time bound that a loaded machine can break (the
      // property tests and the tests that run scripts or synthesize examples take seconds). A test that hangs still
      // fails, after 10 minutes; how long things take is the bench's to measure.
      testTimeout: 600_000,
    },
    junitReporting: false,
    passWithNoTests: false,
  },
  tsconfig: {
    compilerOptions: {
      lib: ['es2022'],
      target: 'ES2022',
      module: 'commonjs',
      moduleResolution: javascript.TypeScriptModuleResolution.NODE,
      skipLibCheck: true,
      isolatedModules: true,
      esModuleInterop: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
      noImplicitReturns: true,
      strict: true,
      // The zod schemas are internal: the published types stay plain TypeScript (no zod types under a user's tsc).
      stripInternal: true,
      // "Go to definition" opens the shipped src/*.ts, not the .d.ts.
      declarationMap: true,
      // Each lib/**/*.js names its own .js.map, which holds the source text (inlineSources): a stack trace under
      // --enable-source-maps or a debugger shows src/*.ts. Not inline in the .js: node reads and scans every byte of
      // a module it loads, and inline maps were 57 % of lib/'s bytes, about 12 ms of each synth (issue 30).
      inlineSourceMap: false,
      sourceMap: true,
      inlineSources: true,
    },
  },
  // zod is bundled into lib/zod.js at compile time (scripts/bundle-zod.mjs, issue 30): a build dependency only.
  deps: ['yaml@2.9.1', 'ipaddr.js@2.5.0', 'kubernetes-types@1.30.0'],
  peerDeps: [
    ...Object.entries(OLDEST_PEERS).map(([n, v]) => `${n}@${peerRange(v)}`),
    ...Object.entries(TESTING_PEERS).map(([n, v]) => `${n}@${peerRange(v)}`),
  ],
  devDeps: [
    '@types/jest@29.5.14',
    'zod@4.6.7',
    'esbuild@0.28.2',
    '@types/node@20.19.43',
    'ts-jest@29.4.15',
    'ts-node@10.9.2',
    'fast-check@4.11.0',
    'typedoc@0.28.20',
    'typedoc-plugin-markdown@4.14.1',
    'cdk8s-cli@2.207.60',
    'eslint@9.39.5',
    // Import cycles (issue 42): `npm run lint` fails on any circle among the modules the entry points load.
    'dpdm@4.3.0',
    'typescript-eslint@8.74.0',
    'eslint-plugin-jest@28.14.0',
    '@stryker-mutator/core@9.6.1',
    '@stryker-mutator/jest-runner@9.6.1',
    '@stryker-mutator/typescript-checker@9.6.1',
    // docs: test/readme.test.ts parses every ```mermaid block of the docs with mermaid's own parser (linkedom gives its
    // DOMPurify the DOM it needs under Node).
    'mermaid@12.3.0',
    'linkedom@0.18.15',
    // The re-steer admission policy's CEL evaluated against its cases (test/render/resteer-admission.test.ts).
    '@bufbuild/cel@0.6.1',
    ...Object.entries(PEERS).map(([n, v]) => `${n}@${v}`),
    ...Object.entries(TESTING_PEERS).map(([n, v]) => `${n}@${v}`),
  ],
  peerDependencyOptions: { pinnedDevDependency: false },
  gitignore: ['/.ci-out/', '/.typedoc-out/', '/dist/', '/.tools', '/examples/*/dist/', '/examples/*/node_modules/', '/.bench/', '/.stryker-tmp/', '/reports/'],

});

// projen derives @types/jest and ts-jest from jestVersion; pin the versions measured to work.
project.deps.addDependency('@types/jest@29.5.14', DependencyType.BUILD);
project.deps.addDependency('ts-jest@29.4.15', DependencyType.BUILD);

// Exact pins everywhere: no caret ranges.
for (const dep of project.deps.all) {
  if (dep.version && dep.version.startsWith('^')) {
    project.deps.addDependency(`${dep.name}@${dep.version.slice(1)}`, dep.type);
  }
}

// The README snippets the docs test writes out (after projen's own `!/test/`, so that it wins).
project.gitignore.addPatterns('/test/.readme-snippets/');
// Packed with its sources: the source maps name src/ files, which a stack trace or "go to definition" opens.
project.npmignore?.addPatterns('!/src/', '!/src/**/*.ts', '!/lib/**/*.d.ts.map', '!/lib/**/*.js.map');
// tsc's outputs for src/zod.ts beside the bundle (kept for `tsc --build`'s incremental check): not packed.
project.npmignore?.addPatterns('/lib/zod.d.ts', '/lib/zod.d.ts.map', '/lib/zod.js.map');
// `npm pack` (and publish) builds first: a tarball without lib/ is no package. It also bundles the upstream schemas
// that tunnelwright/testing loads into schemas/ (copied and sha256-checked from $TUNNELWRIGHT_SCHEMAS or
// ../shared/schemas, with SOURCES.md and licences: scripts/schemas/; where they are absent, as in a fresh clone with
// nothing beside it, the pack goes on without them and SOURCES.md lists them); postpack removes them, they are never
// committed.
project.package.setScript('prepack', 'npx projen compile && node scripts/schemas/bundle.mjs');
project.package.setScript('postpack', 'node scripts/schemas/bundle.mjs --clean');
project.gitignore.addPatterns('/schemas/');
for (const p of ['/examples/', '/scripts/', '/.ci/', '/.tools/', '/bench/', '/test/', '/.typedoc-out/', '/.ci-out/', '/dist/', '/eslint.config.mjs', '/jest.system.config.json', '/tsconfig.dev.json', '/typedoc.json', '/stryker.config.json']) project.npmignore?.exclude(p);
project.package.addField('main', 'lib/index.js');
project.package.addField('types', 'lib/index.d.ts');
project.package.addField('exports', {
  '.': { types: './lib/index.d.ts', default: './lib/index.js' },
  './cdk8s': { types: './lib/cdk8s/index.d.ts', default: './lib/cdk8s/index.js' },
  './pulumi': { types: './lib/pulumi/index.d.ts', default: './lib/pulumi/index.js' },
  './testing': { types: './lib/testing/index.d.ts', default: './lib/testing/index.js' },
  './package.json': './package.json',
});
project.package.addField('typesVersions', {
  '*': {
    'cdk8s': ['lib/cdk8s/index.d.ts'],
    'pulumi': ['lib/pulumi/index.d.ts'],
    'testing': ['lib/testing/index.d.ts'],
  },
});
project.package.addField('peerDependenciesMeta', Object.fromEntries([...Object.keys(PEERS), ...Object.keys(TESTING_PEERS)].map((n) => [n, { optional: true }])));

// Tasks. `npm test` needs nothing but npm; system tests need the Debian tools (scripts/install-system-tools.sh).
project.testTask.reset('jest --passWithNoTests=false', { receiveArgs: true });
project.addTask('test:system', {
  description: 'Real-tool checks and network-namespace tests (root; run scripts/install-system-tools.sh first)',
  steps: [{ exec: 'jest -c jest.system.config.json --runInBand', receiveArgs: true }],
});
project.addTask('lint', {
  description: 'eslint, a type check of sources, tests and examples, and no import cycle among the modules',
  steps: [
    { exec: 'eslint --max-warnings 0 .' },
    { exec: 'tsc -p tsconfig.dev.json' },
    // -T: type-only imports are erased by tsc and load nothing, so they cannot make a load-time circle.
    { exec: 'dpdm --no-warning --no-tree --no-progress -T --exit-code circular:1 src/index.ts src/cdk8s/index.ts src/pulumi/index.ts src/testing/index.ts' },
  ],
});
project.addTask('synth', {
  description: 'Build every example into dist/<example>/',
  steps: [{ spawn: 'compile' }, { exec: 'ts-node --transpile-only scripts/synth-examples.ts' }],
});
project.addTask('docs', {
  description: 'Generate API.md (typedoc + typedoc-plugin-markdown) for all entry points',
  steps: [{ exec: 'typedoc --logLevel Warn --treatWarningsAsErrors' }, { exec: 'ts-node --transpile-only scripts/api-md.ts' }],
});
project.addTask('bench', {
  description: 'SPEC §7 benchmarks: one JSON line per case',
  exec: 'node --expose-gc -r ts-node/register/transpile-only bench/run.ts',
});
project.postCompileTask.reset();
// lib/zod.js: the zod/mini functions src/zod.ts names, bundled in one file with English messages only (issue 30;
// scripts/bundle-zod.mjs). Part of
// `compile` itself, which prepack, synth and the bench run: no lib/ without it.
project.compileTask.exec('node scripts/bundle-zod.mjs');
// The published declarations must not name zod (a build dependency only): scripts/check-dts.mjs.
project.compileTask.exec('node scripts/check-dts.mjs');
// The scripts and templates the library writes, read beside their modules (src/assets.ts): copied into lib/.
project.compileTask.exec('node scripts/copy-assets.mjs');

// Mutation testing (not in CI: it is long). Incremental: a rerun tests only mutants whose code or covering tests
// changed. The incremental file is a local cache under reports/ (not committed: a full run takes hours here, so a
// committed one goes stale); the score is measured by `npm run mutation:sample`. `npm run mutation -- --mutate
// src/model/net.ts` narrows a run.
project.addTask('mutation', {
  description: 'StrykerJS over src/model, src/render and src/host (incremental; report in reports/mutation/)',
  exec: 'bash scripts/mutation.sh',
  receiveArgs: true,
});
// The score over the three folders, estimated from a seeded uniform sample of their mutants (a full run takes hours
// here): `npm run mutation:sample -- 400 20261130`.
project.addTask('mutation:sample', {
  description: 'StrykerJS on a seeded random sample of the mutants of src/model, src/render and src/host: score with a 95 % interval',
  exec: 'node scripts/mutation-sample.mjs',
  receiveArgs: true,
});
new JsonFile(project, 'stryker.config.json', {
  marker: false,
  obj: {
    $schema: './node_modules/@stryker-mutator/core/schema/stryker-schema.json',
    packageManager: 'npm',
    testRunner: 'jest',
    // The run uses the suites that can tell a core bug from a correct core. Left out: the Pulumi parity and
    // component suites (they compare an adapter's output with the core's rendering of the same props, so a core
    // mutant changes both sides alike), the README and examples runs (whole programs; their failures are the unit
    // suites' failures, at ten times the cost per mutant). Leaving them out can only lower the score.
    jest: {
      projectType: 'custom',
      enableFindRelatedTests: false,
      config: {
        testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/system/', '<rootDir>/test/pulumi/', '<rootDir>/test/readme.test.ts', '<rootDir>/test/examples.test.ts'],
        // A mutant's run loads only the test files that cover it (recorded in the dry run): see test/mutation/.
        setupFilesAfterEnv: ['<rootDir>/test/mutation/record-covering-files.js', '<rootDir>/test/helpers/seed.ts'],
        filter: '<rootDir>/test/mutation/covering-files.js',
      },
    },
    checkers: ['typescript'],
    tsconfigFile: 'tsconfig.json',
    typescriptChecker: { prioritizePerformanceOverAccuracy: true },
    mutate: ['src/model/**/*.ts', 'src/render/**/*.ts', 'src/host/**/*.ts', '!src/**/index.ts'],
    coverageAnalysis: 'perTest',
    ignoreStatic: true,
    incremental: true,
    incrementalFile: 'reports/stryker-incremental.json',
    reporters: ['clear-text', 'progress', 'json', 'html'],
    jsonReporter: { fileName: 'reports/mutation/mutation.json' },
    htmlReporter: { fileName: 'reports/mutation/mutation.html' },
    concurrency: 2,
    timeoutMS: 20000,
    // The dry run is the whole unit suite with per-test coverage: ~5 min on an idle 2-core machine, more when shared.
    dryRunTimeoutMinutes: 40,
    thresholds: { high: 90, low: 80, break: null },
    // The system tests stay out of the sandbox, but not their tool finder: a unit test (test/render/port-forwarding)
    // runs shellcheck and bash through it.
    ignorePatterns: ['/.tools', '/.ci-out', '/.bench', '/dist', '/lib', '/reports', '/.typedoc-out', '/examples/*/node_modules', '/examples/*/dist', '/test/.readme-snippets', '/test/system/*', '!/test/system/tools.ts'],
    tempDirName: '.stryker-tmp',
    cleanTempDir: 'always',
  },
});

// Type-checks everything TypeScript in the repository (sources, tests, examples, bench, scripts).
new JsonFile(project, 'tsconfig.dev.json', {
  obj: {
    extends: './tsconfig.json',
    compilerOptions: { noEmit: true, rootDir: '.', baseUrl: '.', paths: { 'tunnelwright': ['src/index.ts'], 'tunnelwright/*': ['src/*/index.ts'] } },
    include: ['src/**/*.ts', 'test/**/*.ts', 'examples/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', '.projenrc.ts'],
    exclude: ['node_modules', 'examples/*/node_modules', 'test/.readme-snippets'],
  },
});

new JsonFile(project, 'jest.system.config.json', {
  obj: {
    preset: 'ts-jest',
    testEnvironment: 'node',
    testMatch: ['<rootDir>/test/system/**/*.test.ts'],
    testTimeout: 120000,
    setupFilesAfterEnv: ['<rootDir>/test/helpers/private-tmpdir.ts'],
    transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
  },
});

new JsonFile(project, 'typedoc.json', {
  marker: false,
  obj: {
    entryPoints: ['src/index.ts', 'src/cdk8s/index.ts', 'src/pulumi/index.ts', 'src/testing/index.ts'],
    plugin: ['typedoc-plugin-markdown'],
    out: '.typedoc-out',
    outputFileStrategy: 'modules',
    mergeReadme: false,
    readme: 'none',
    router: 'module',
    hidePageHeader: true,
    hideBreadcrumbs: true,
    disableSources: true,
    excludePrivate: true,
    excludeInternal: true,
    excludeExternals: true,
    externalSymbolLinkMappings: { '@pulumi/pulumi': { '*': 'https://www.pulumi.com/docs/reference/pkg/nodejs/pulumi/pulumi/' }, 'cdk8s': { '*': 'https://cdk8s.io/docs/latest/reference/cdk8s/typescript/' }, 'constructs': { '*': 'https://github.com/aws/constructs' } },
    tsconfig: 'tsconfig.json',
  },
});


new TextFile(project, 'eslint.config.mjs', {
  lines: [
    '// ~~ Generated by projen. To modify, edit .projenrc.ts and run "npx projen".',
    "import tseslint from 'typescript-eslint';",
    "import jest from 'eslint-plugin-jest';",
    '',
    'export default tseslint.config(',
    "  { ignores: ['lib/**', 'dist/**', 'node_modules/**', '.tools/**', '.typedoc-out/**', 'coverage/**', 'examples/*/dist/**', 'test/.readme-snippets/**', '**/*.js', '**/*.mjs'] },",
    '  ...tseslint.configs.recommended,',
    '  {',
    "    rules: {",
    "      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],",
    '    },',
    '  },',
    '  {',
    "    files: ['src/model/**/*.ts', 'src/render/**/*.ts', 'src/host/**/*.ts', 'src/*.ts'],",
    "    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['cdk8s', 'cdk8s-plus-*', 'constructs', '@pulumi/*'], message: 'the core imports no framework' }] }] },",
    '  },',
    '  {',
    "    files: ['test/**/*.test.ts'],",
    "    ...jest.configs['flat/recommended'],",
    "    rules: { ...jest.configs['flat/recommended'].rules, 'jest/valid-expect': 'error', 'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*'] }], 'jest/no-standalone-expect': ['error', { additionalTestBlockFunctions: ['itWithSchemas'] }], '@typescript-eslint/no-require-imports': 'off' },",
    '  },',
    ');',
  ],
});

// projen appends its default patterns to testMatch, among them `<rootDir>/@(src|test)/**/*(*.)@(spec|test).ts?(x)`, which
// takes a source file named spec.ts (src/model/vpn-gateway/spec.ts) for a test file with no test: the suite then fails,
// and so does Stryker's dry run. Only test/**/*.test.ts are test files.
project.package.file.addOverride('jest.testMatch', ['<rootDir>/test/**/*.test.ts']);
project.synth();
