import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { kubeletRefusals, podTemplates } from './helpers/kubelet-start';
import { type Registered, recordResources, settle } from './helpers/pulumi';
import { checkKubeObjects } from '../src/testing';
import { describeWithSchemas, SCHEMA_DIR } from './helpers/schemas';

/**
 * Every TypeScript snippet of the README and of the guides under docs/, as a user copies it: each must type-check as a
 * module of its own against the package's entry points, and run (cdk8s snippets synth into a temporary folder; Pulumi
 * ones run under mocks). The docs cannot drift from the code. A snippet is named by its file and its index in that file
 * (`docs/vpn-gateway.md#3`), so an edit to one guide never renumbers another's.
 */
const ROOT = path.resolve(__dirname, '..');
const DIR = path.join(__dirname, '.readme-snippets');
/** README.md and every docs/*.md, the files whose snippets and links are checked. */
const DOCS = ['README.md', 'CONTRIBUTING.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** The construct classes, whose TSDoc `@example` API.md carries: one example per class, checked like a snippet. */
const CONSTRUCTS = ['cdk8s', 'pulumi'].flatMap((fw) => fs.readdirSync(path.join(ROOT, 'src', fw)).filter((f) => /^(vpn-gateway|kill-switch|egress-steering|egress-probe|egress-conformance|wireguard-mesh|wireguard-overlay-node)\.ts$/.test(f)).sort().map((f) => `src/${fw}/${f}`));
const snippets = [
  ...DOCS.flatMap((doc) => [...fs.readFileSync(path.join(ROOT, doc), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)]
    .map((m, i) => ({ name: `${doc}#${i + 1}`, file: `${doc.replace(/\.md$/, '').replace(/\//g, '--')}--${i + 1}`, code: m[1] }))),
  ...CONSTRUCTS.flatMap((src) => [...fs.readFileSync(path.join(ROOT, src), 'utf8').matchAll(/^ \* @example\n \* ```ts\n([\s\S]*?)^ \* ```$/gm)]
    .map((m, i) => ({ name: `${src}#example-${i + 1}`, file: `${src.replace(/\.ts$/, '').replace(/\//g, '--')}--example-${i + 1}`, code: m[1].replace(/^ \*( |$)/gm, '') }))),
];

/**
 * Every diagnostic tsc reports for `rootNames` under `options` (as getPreEmitDiagnostics: options, global, syntactic
 * and semantic), checked incrementally: tsc's own build info, kept under node_modules/.cache, holds each file's
 * diagnostics by the hash of its text and its dependencies', so a second run re-checks only what changed (the
 * library .d.ts files, 46 s of the nodenext check without skipLibCheck, are read from the cache). A fresh clone
 * checks everything.
 */
function diagnose(rootNames: string[], options: ts.CompilerOptions, cache: string): readonly ts.Diagnostic[] {
  const dir = path.join(ROOT, 'node_modules', '.cache', 'tunnelwright-readme');
  fs.mkdirSync(dir, { recursive: true });
  const builder = ts.createIncrementalProgram({ rootNames, options: { ...options, incremental: true, tsBuildInfoFile: path.join(dir, `${cache}.tsbuildinfo`) } });
  const diagnostics = [...builder.getOptionsDiagnostics(), ...builder.getGlobalDiagnostics(), ...builder.getSyntacticDiagnostics(), ...builder.getSemanticDiagnostics()];
  builder.emit();
  return diagnostics;
}

recordResources();
const tw = require('../src/pulumi') as typeof import('../src/pulumi');

describeWithSchemas('the docs\' snippets', () => {
  beforeAll(() => {
    fs.rmSync(DIR, { recursive: true, force: true });
    fs.mkdirSync(DIR, { recursive: true });
    for (const s of snippets) fs.writeFileSync(path.join(DIR, `${s.file}.ts`), s.code);
  });

  it('has snippets to check', () => expect(snippets.length).toBeGreaterThanOrEqual(9));

  it('every construct class, cdk8s and Pulumi, carries one @example', () => {
    expect(CONSTRUCTS.length).toBe(14);
    expect(CONSTRUCTS.filter((src) => !snippets.some((s) => s.name === `${src}#example-1`))).toEqual([]);
  });

  it('each type-checks as written (tsconfig.dev.json: the package\'s entry points, strict)', () => {
    const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.dev.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
    const diagnostics = diagnose(snippets.map((s) => path.join(DIR, `${s.file}.ts`)), { ...config.options, noEmit: true }, 'dev').filter((d) => d.file?.fileName.startsWith(DIR));
    expect(diagnostics.map((d) => `${path.basename(d.file!.fileName)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)).toEqual([]);
  });

  /**
   * Pulumi's own TypeScript template (pulumi/templates typescript/tsconfig.json) compiles with `module` and
   * `moduleResolution` `nodenext`, no skipLibCheck, in a package without `"type": "module"`: a dynamic `import()` of a
   * relative path then needs its `.js`. The Pulumi snippets type-check under those options as written, with the
   * package's entry points mapped to src/ as above.
   */
  it('each Pulumi snippet type-checks under Pulumi\'s nodenext template tsconfig', () => {
    const pulumiSnippets = snippets.filter((s) => /from '(tunnelwright\/pulumi|@pulumi\/[a-z]+)'|import\('tunnelwright\/pulumi'\)/.test(s.code));
    expect(pulumiSnippets.length).toBeGreaterThanOrEqual(3);
    // Control: the same options refuse a relative dynamic import without its extension (TS2835).
    fs.writeFileSync(path.join(DIR, 'nodenext-target.ts'), 'export const target = 1;\n');
    fs.writeFileSync(path.join(DIR, 'nodenext-control.ts'), "export const loaded = import('./nodenext-target');\n");
    const template: ts.CompilerOptions = {
      strict: true, outDir: path.join(DIR, 'bin'), target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      sourceMap: true, experimentalDecorators: true, noFallthroughCasesInSwitch: true, noImplicitReturns: true, forceConsistentCasingInFileNames: true,
      noEmit: true, baseUrl: ROOT, paths: { 'tunnelwright': ['src/index.ts'], 'tunnelwright/*': ['src/*/index.ts'] },
    };
    const files = [...pulumiSnippets.map((s) => path.join(DIR, `${s.file}.ts`)), path.join(DIR, 'nodenext-control.ts')];
    const diagnostics = diagnose(files, template, 'nodenext').filter((d) => d.file?.fileName.startsWith(DIR));
    const shown = diagnostics.map((d) => `${path.basename(d.file!.fileName)}: TS${d.code}`);
    expect(shown).toEqual(['nodenext-control.ts: TS2835']);
    // Relative specifiers in a snippet, in code or in a comment that says what to write, carry their extension.
    const relative = pulumiSnippets.flatMap((s) => [...s.code.matchAll(/import\(\s*'(\.\.?\/[^']*)'\s*\)|from '(\.\.?\/[^']*)'/g)].map((m) => `${s.name}: ${m[1] ?? m[2]}`));
    expect(relative.filter((r) => !/\.js$/.test(r))).toEqual([]);
  });

  /** What a snippet deploys: the objects of its manifests (cdk8s) or the Kubernetes resources it registered (Pulumi). */
  const deployed = (outdir: string, registered: Registered[]) => [
    ...fs.readdirSync(outdir).filter((f) => f.endsWith('.k8s.yaml')).flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(outdir, f), 'utf8')).map((d) => d.toJS())),
    ...registered.filter((r) => r.type.startsWith('kubernetes:')).map((r) => ({ kind: r.type.split(':').pop(), ...r.inputs })),
  ];

  it.each(snippets.map((s) => [s.name, s] as const))('%s runs, warning-free, into pods the kubelet starts', async (_name, s) => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-readme-'));
    const saved = { outdir: process.env.CDK8S_OUTDIR, schemas: process.env.TUNNELWRIGHT_SCHEMAS };
    process.env.CDK8S_OUTDIR = outdir;
    process.env.TUNNELWRIGHT_SCHEMAS = SCHEMA_DIR;
    // What the snippet prints to stderr (cdk8s's `warning: <construct>:` blocks) or with console.warn (Pulumi's
    // warnings without an engine): a snippet as a user copies it prints none.
    const printed: string[] = [];
    const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => (printed.push(String(chunk)), true));
    const warn = jest.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => void printed.push(args.map(String).join(' ')));
    // Mocks of our own for each snippet: a snippet that installs its own (docs/pulumi.md#2) replaces them for the next.
    const registered = recordResources();
    try {
      tw.resetRegistry();
      const mod = require(path.join(DIR, `${s.file}.ts`)) as { checked?: Promise<unknown> };
      await mod.checked;
      await settle();
    } finally {
      write.mockRestore();
      warn.mockRestore();
      process.env.CDK8S_OUTDIR = saved.outdir;
      process.env.TUNNELWRIGHT_SCHEMAS = saved.schemas;
    }
    // Notices (`notice: …`) and where the host files went are not warnings.
    expect(printed.join('').split('\n').filter((l) => l.trim() !== '' && !/^(notice: |host files: )/.test(l))).toEqual([]);
    // A cdk8s snippet that synthesizes writes its manifests, or (a chart of host artefacts only) its host files.
    expect(!/app\.synth\(\)/.test(s.code) || fs.readdirSync(outdir).some((f) => f.endsWith('.k8s.yaml') || f === 'hosts')).toBe(true);
    expect(kubeletRefusals(deployed(outdir, registered))).toEqual([]);
    // What cdk8s wrote passes the Kubernetes (and CRD) schemas, as the examples' manifests do.
    const manifests = fs.readdirSync(outdir).filter((f) => f.endsWith('.k8s.yaml'));
    expect(checkKubeObjects(manifests.flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(outdir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean)), SCHEMA_DIR)).toEqual([]);
  });

  it('the kubelet check sees the snippets\' workloads (a qBittorrent among them)', () => {
    const all = snippets.flatMap((s) => s.code.match(/linuxserver\/qbittorrent/g) ?? []);
    expect(all.length).toBeGreaterThanOrEqual(2);
    expect(podTemplates([{ kind: 'StatefulSet', metadata: { name: 'qbittorrent', namespace: 'media' }, spec: { template: { spec: { containers: [] } } } }])).toEqual(['StatefulSet/media/qbittorrent']);
  });
});

describe('the kubelet check (its controls)', () => {
  const workload = (pod: Record<string, unknown>, container: Record<string, unknown>, image = 'lscr.io/linuxserver/qbittorrent:5.0.3') => [
    { kind: 'Deployment', metadata: { name: 'qbittorrent', namespace: 'media' }, spec: { template: { spec: { securityContext: pod, containers: [{ name: 'main', image, securityContext: container }] } } } },
  ];
  it.each([
    ['runAsNonRoot, a root image (cdk8s-plus\'s default)', workload({ runAsNonRoot: true }, { runAsNonRoot: true }), ['Deployment/media/qbittorrent main: runAsNonRoot, and lscr.io/linuxserver/qbittorrent:5.0.3 runs as root']],
    ['runAsNonRoot on the pod only', workload({ runAsNonRoot: true }, {}), ['Deployment/media/qbittorrent main: runAsNonRoot, and lscr.io/linuxserver/qbittorrent:5.0.3 runs as root']],
    ['runAsNonRoot with runAsUser 0', workload({}, { runAsNonRoot: true, runAsUser: 0 }), ['Deployment/media/qbittorrent main: runAsUser 0 breaks runAsNonRoot']],
    ['runAsNonRoot, an image not in the table', workload({}, { runAsNonRoot: true }, 'example.org/app:1'), ['Deployment/media/qbittorrent main: runAsNonRoot, no runAsUser, and example.org/app:1\'s user is not known here (add it to IMAGE_USERS)']],
    ['runAsNonRoot with a non-root runAsUser', workload({ runAsNonRoot: true }, { runAsUser: 1000 }), []],
    ['the container allows root, over the pod\'s runAsNonRoot', workload({ runAsNonRoot: true }, { runAsNonRoot: false }), []],
    ['no runAsNonRoot', workload({}, {}), []],
  ])('%s', (_what, objects, refusals) => expect(kubeletRefusals(objects)).toEqual(refusals));

  it.each([
    ['a numeric non-root user', [[/^example\.org\//, '65534']] as const, []],
    ['a user name', [[/^example\.org\//, 'nobody']] as const, ['Deployment/media/qbittorrent main: runAsNonRoot, and example.org/app:1 has the non-numeric user nobody']],
  ])('an image that declares %s', (_what, table, refusals) => {
    expect(kubeletRefusals(workload({ runAsNonRoot: true }, {}, 'example.org/app:1'), table)).toEqual(refusals);
  });
});

describe('the VpnGateway guide\'s port-forwarding caveats (audit3-25 findings 3, 6, 7)', () => {
  // Lines are wrapped: compare with whitespace collapsed.
  const guide = fs.readFileSync(path.join(ROOT, 'docs', 'vpn-gateway.md'), 'utf8').replace(/\s+/g, ' ');
  it.each([
    ['the upgrade from a forwarded Deployment', 'Scale the Deployment to 0 and wait until its pods are gone'],
    ['Parallel, and why', 'Set `podManagementPolicy: Parallel` (as above): with the default `OrderedReady` the controller waits'],
    ['that the policy is immutable', 'The field is immutable: on an existing StatefulSet, delete it with `--cascade=orphan` and apply it again'],
    ['PodGC\'s force deletes', 'PodGC force-deletes by itself too: the pods of a Node object that is deleted'],
    ['the out-of-service taint', 'tainted `node.kubernetes.io/out-of-service`'],
  ])('says %s', (_what, text) => {
    expect(guide).toContain(text);
  });
});

/** GitHub's heading anchors (github-slugger): lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1].trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('the docs\' links', () => {
  /** Every relative link of README.md, CONTRIBUTING.md and docs/*.md, with the file that holds it. */
  const links = DOCS.flatMap((doc) => {
    let fenced = false;
    return fs.readFileSync(path.join(ROOT, doc), 'utf8').split('\n').flatMap((line) => {
      if (/^```/.test(line)) fenced = !fenced;
      return fenced ? [] : [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l)).map((l) => [doc, l] as const);
    });
  });
  const broken = (doc: string, link: string): string | undefined => {
    const [file, anchor] = link.split('#');
    const target = file === '' ? path.join(ROOT, doc) : path.resolve(path.dirname(path.join(ROOT, doc)), file);
    if (!fs.existsSync(target)) return `${doc}: ${link}: no such file`;
    if (anchor !== undefined && !anchors(fs.readFileSync(target, 'utf8')).has(anchor)) return `${doc}: ${link}: no such heading`;
    return undefined;
  };

  it('has links to check, across files', () => expect(links.filter(([, l]) => /^(\.\.\/)?(docs\/)?[\w-]+\.md#/.test(l)).length).toBeGreaterThanOrEqual(2));

  it('each reaches a file, and a heading in it', () => {
    expect(links.map(([doc, link]) => broken(doc, link)).filter((b) => b !== undefined)).toEqual([]);
  });

  // Control: the same check refuses a heading that is not there, a file that is not there, and a link into the
  // README to a section that moved out.
  it.each([
    ['README.md', 'docs/vpn-gateway.md#no-such-heading'],
    ['README.md', 'docs/no-such-guide.md'],
    ['docs/testing.md', '../README.md#testing-what-you-synthesize'],
  ])('refuses %s → %s', (doc, link) => expect(broken(doc, link)).toBeDefined());
});

/**
 * Every ```mermaid block of the docs, parsed by mermaid's own parser (the one GitHub's renderer runs) in a node
 * process of its own: mermaid is an ES module, and its DOMPurify needs a DOM, which linkedom gives it. Returns, per
 * diagram, its type or the parser's first error line.
 */
function parseMermaid(diagrams: readonly string[]): string[] {
  const script = `
    import { parseHTML } from 'linkedom';
    const { window } = parseHTML('<!doctype html><html><body></body></html>');
    globalThis.window = window;
    globalThis.document = window.document;
    const { default: mermaid } = await import('mermaid');
    const out = [];
    for (const text of JSON.parse(process.argv[1])) {
      try { out.push((await mermaid.parse(text)).diagramType); } catch (e) { out.push('error: ' + String(e.message).split('\\n')[0]); }
    }
    process.stdout.write(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(diagrams)], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mermaid's parser did not run: ${r.stderr}`);
  return JSON.parse(r.stdout) as string[];
}

describe('the docs\' diagrams', () => {
  const diagrams = DOCS.flatMap((doc) => [...fs.readFileSync(path.join(ROOT, doc), 'utf8').matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((m, i) => ({ name: `${doc}#mermaid-${i + 1}`, text: m[1] })));

  it('the concepts page draws the data paths (VpnGateway, EgressSteering, KillSwitch, WireguardMesh)', () => {
    expect(diagrams.filter((d) => d.name.startsWith('docs/concepts.md')).length).toBeGreaterThanOrEqual(4);
  });

  it('each parses as a flowchart, and a broken one does not (control)', () => {
    const broken = ['flowchart LR\n  a["pod --> b\n', 'flowchart LR\n  subgraph x\n  a --> b\n'];
    const parsed = parseMermaid([...diagrams.map((d) => d.text), ...broken]);
    expect(Object.fromEntries(diagrams.map((d, i) => [d.name, parsed[i]]))).toEqual(Object.fromEntries(diagrams.map((d) => [d.name, 'flowchart-v2'])));
    expect(parsed.slice(diagrams.length).map((p) => p.startsWith('error: '))).toEqual([true, true]);
  });
});
