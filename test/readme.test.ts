import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';
import { recordResources, settle } from './helpers/pulumi';
import { describeWithSchemas, SCHEMA_DIR } from './helpers/schemas';

/**
 * Every TypeScript snippet of the README, as a user copies it: each must type-check as a module of its own against
 * the package's entry points, and run (cdk8s snippets synth into a temporary folder; Pulumi ones run under mocks).
 * The docs cannot drift from the code.
 */
const ROOT = path.resolve(__dirname, '..');
const DIR = path.join(__dirname, '.readme-snippets');
const snippets = [...fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m, i) => ({ name: `snippet-${i + 1}`, code: m[1] }));

recordResources();
const tw = require('../src/pulumi') as typeof import('../src/pulumi');

describeWithSchemas('the README\'s snippets', () => {
  beforeAll(() => {
    fs.rmSync(DIR, { recursive: true, force: true });
    fs.mkdirSync(DIR, { recursive: true });
    for (const s of snippets) fs.writeFileSync(path.join(DIR, `${s.name}.ts`), s.code);
  });

  it('has snippets to check', () => expect(snippets.length).toBeGreaterThanOrEqual(9));

  it('each type-checks as written (tsconfig.dev.json: the package\'s entry points, strict)', () => {
    const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.dev.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
    const program = ts.createProgram(snippets.map((s) => path.join(DIR, `${s.name}.ts`)), { ...config.options, noEmit: true });
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName.startsWith(DIR));
    expect(diagnostics.map((d) => `${path.basename(d.file!.fileName)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)).toEqual([]);
  });

  it.each(snippets.map((s) => [s.name, s] as const))('%s runs', async (_name, s) => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-readme-'));
    const saved = { outdir: process.env.CDK8S_OUTDIR, schemas: process.env.TUNNELWRIGHT_SCHEMAS };
    process.env.CDK8S_OUTDIR = outdir;
    process.env.TUNNELWRIGHT_SCHEMAS = SCHEMA_DIR;
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      tw.resetRegistry();
      const mod = require(path.join(DIR, `${s.name}.ts`)) as { checked?: Promise<unknown> };
      await mod.checked;
      await settle();
    } finally {
      write.mockRestore();
      process.env.CDK8S_OUTDIR = saved.outdir;
      process.env.TUNNELWRIGHT_SCHEMAS = saved.schemas;
    }
    // A cdk8s snippet that synthesizes writes its manifests, or (a chart of host artefacts only) its host files.
    expect(!/app\.synth\(\)/.test(s.code) || fs.readdirSync(outdir).some((f) => f.endsWith('.k8s.yaml') || f === 'hosts')).toBe(true);
  });
});
