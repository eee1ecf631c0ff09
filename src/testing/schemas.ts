import * as fs from 'node:fs';
import * as path from 'node:path';
import type Ajv from 'ajv';
import type AjvDraft04 from 'ajv-draft-04';
import type addFormats from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { requirePeer } from './peers';

/** A CommonJS module's default export (ajv and friends set `exports.default` beside `module.exports`). */
function defaultOf<T>(mod: T | { default: T }): T {
  return (mod as { default?: T }).default ?? (mod as T);
}

type Json = Record<string, unknown>;

/**
 * The schemas bundled into the package when it was packed (`schemas/` beside `lib/`, with their SOURCES.md and
 * licences), or undefined in a checkout that was not packed.
 */
export function packagedSchemaDir(): string | undefined {
  const dir = path.resolve(__dirname, '..', '..', 'schemas');
  return fs.existsSync(path.join(dir, 'SOURCES.md')) ? dir : undefined;
}

/**
 * The schema directory: the argument, else `$TUNNELWRIGHT_SCHEMAS`, else the schemas the package ships; a clear
 * error when none exists.
 */
export function resolveSchemaDir(dir?: string): string {
  const chosen = dir ?? (process.env.TUNNELWRIGHT_SCHEMAS || undefined) ?? packagedSchemaDir();
  if (!chosen) throw new Error('tunnelwright/testing: no schema directory: this copy of tunnelwright was not packed with its schemas (a checkout: run `node scripts/schemas/bundle.mjs`), so pass one or set TUNNELWRIGHT_SCHEMAS to a folder with the upstream schemas (cloud-config, Ignition, Cilium, Kyverno, PrometheusRule)');
  if (!fs.existsSync(chosen) || !fs.statSync(chosen).isDirectory()) throw new Error(`tunnelwright/testing: schema directory ${chosen} does not exist`);
  return chosen;
}

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Imposes `additionalProperties: false` on every object schema that lists properties and says nothing about extra
 * ones, so an unknown (misspelt) field fails. Schemas that are one part of an `allOf` (directly or through `$ref`)
 * describe part of an object and are left open, as are `anyOf`/`oneOf` branches without a type of their own
 * (constraints on the parent's properties); the object an `allOf` composes is closed over the union of its parts'
 * properties instead.
 */
export function closeSchema<T>(schema: T): T {
  const root = JSON.parse(JSON.stringify(schema)) as Json;
  const resolve = (ref: string): Json | undefined => {
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = root;
    for (const part of ref.slice(2).split('/')) node = isObj(node) ? node[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    return isObj(node) ? node : undefined;
  };
  const partialRefs = new Set<string>();
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(collect);
    if (!isObj(node)) return;
    if (Array.isArray(node.allOf)) for (const b of node.allOf) if (isObj(b) && typeof b.$ref === 'string') partialRefs.add(b.$ref);
    Object.values(node).forEach(collect);
  };
  collect(root);
  const namesOf = (node: unknown, seen: Set<unknown> = new Set()): string[] => {
    if (!isObj(node) || seen.has(node)) return [];
    seen.add(node);
    const target = typeof node.$ref === 'string' ? resolve(node.$ref) : undefined;
    return [
      ...(isObj(node.properties) ? Object.keys(node.properties) : []),
      ...(Array.isArray(node.allOf) ? node.allOf.flatMap((b) => namesOf(b, seen)) : []),
      ...(target ? namesOf(target, seen) : []),
    ];
  };
  const close = (node: unknown, partial: boolean, pointer: string): void => {
    if (Array.isArray(node)) return node.forEach((n, i) => close(n, false, `${pointer}/${i}`));
    if (!isObj(node)) return;
    const isPartial = partial || partialRefs.has(`#${pointer}`);
    const open = node.additionalProperties !== undefined || node.patternProperties !== undefined || node['x-kubernetes-preserve-unknown-fields'];
    if (!isPartial && !open && Array.isArray(node.allOf)) {
      const own = isObj(node.properties) ? node.properties : {};
      const names = node.allOf.flatMap((b) => namesOf(b));
      if (names.length > 0) {
        node.properties = { ...Object.fromEntries(names.map((n) => [n, {}])), ...own };
        node.additionalProperties = false;
      }
    } else if (!isPartial && !open && isObj(node.properties)) {
      node.additionalProperties = false;
    }
    for (const [k, v] of Object.entries(node)) {
      // Branches of allOf describe part of the object; branches of anyOf/oneOf that declare no type of their own
      // only constrain the parent's properties (Kubernetes structural schemas): both stay open.
      if (k === 'allOf' && Array.isArray(v)) v.forEach((b, i) => close(b, true, `${pointer}/allOf/${i}`));
      else if ((k === 'anyOf' || k === 'oneOf') && Array.isArray(v)) v.forEach((b, i) => close(b, !(isObj(b) && b.type !== undefined), `${pointer}/${k}/${i}`));
      else if (k === 'not' && isObj(v)) close(v, true, `${pointer}/not`);
      else if (k === 'properties' && isObj(v)) for (const [pk, pv] of Object.entries(v)) close(pv, false, `${pointer}/properties/${pk}`);
      else close(v, false, `${pointer}/${k}`);
    }
  };
  close(root, false, '');
  return root as T;
}

/** Reads a schema file (JSON, or a CRD in YAML whose first version's openAPIV3Schema is taken). */
export function readSchema(file: string): Json {
  const text = fs.readFileSync(file, 'utf8');
  if (file.endsWith('.json')) return JSON.parse(text) as Json;
  const crd = parseYaml(text) as Json;
  const versions = ((crd.spec as Json).versions as Json[]) ?? [];
  return ((versions[0].schema as Json).openAPIV3Schema as Json);
}

export type Validate = (value: unknown) => string[];

/** Kubernetes schemas carry Go (RE2) patterns: `\\PC` is `\\P{C}` in JavaScript, and `(?i)` a flag. */
function goRegExp(pattern: string, flags: string): RegExp {
  let js = pattern.replace(/\\([pP])([A-Za-z])(?![A-Za-z{])/g, '\\$1{$2}');
  if (/^\^?\(\?i\)/.test(js)) {
    js = js.replace('(?i)', '');
    flags += 'i';
  }
  return new RegExp(js, flags);
}
goRegExp.code = 'goRegExp';

const compiled = new Map<string, Validate>();

interface ManifestEntry { file: string; what: string; repo: string; path: string; commit: string; sha256: string }

/**
 * Why a schema file is not there, and where it comes from: the manifest beside the bundled schemas (a package packed
 * without it: scripts/schemas/bundle.mjs leaves out what it could not find) or the checkout's
 * scripts/schemas/manifest.json.
 */
function missingSchema(schemaDir: string, file: string): string {
  const manifests = [path.join(schemaDir, 'manifest.json'), path.resolve(__dirname, '..', '..', 'scripts', 'schemas', 'manifest.json')];
  let entry: ManifestEntry | undefined;
  for (const m of manifests) {
    try {
      entry = (JSON.parse(fs.readFileSync(m, 'utf8')) as { files: ManifestEntry[] }).files.find((f) => f.file === file);
    } catch {
      // no manifest there
    }
    if (entry) break;
  }
  const packed = fs.existsSync(path.join(schemaDir, 'SOURCES.md')) ? ' (this package was packed without it: see its SOURCES.md)' : '';
  const where = entry ? `: fetch ${entry.what} from ${entry.repo} ${entry.path} at ${entry.commit} (sha256 ${entry.sha256}) into a folder with the other schemas, and pass that folder or set TUNNELWRIGHT_SCHEMAS to it` : ': pass a folder that holds it or set TUNNELWRIGHT_SCHEMAS to one';
  return `tunnelwright/testing: schema ${file} is missing from ${schemaDir}${packed}${where}`;
}

/** A strict validator for one schema file in the directory (cached). Errors as `path: message` lines. */
export function schemaValidator(schemaDir: string, file: string): Validate {
  const full = path.resolve(schemaDir, file);
  const hit = compiled.get(full);
  if (hit) return hit;
  if (!fs.existsSync(full)) throw new Error(missingSchema(schemaDir, file));
  const schema = closeSchema(readSchema(full));
  const draft04 = String(schema.$schema ?? '').includes('draft-04');
  const options = { strict: false, allErrors: true, logger: false as const, validateFormats: true, code: { regExp: goRegExp } };
  const AjvClass = defaultOf(requirePeer<typeof Ajv | { default: typeof Ajv }>('ajv'));
  const AjvDraft04Class = defaultOf(requirePeer<typeof AjvDraft04 | { default: typeof AjvDraft04 }>('ajv-draft-04'));
  const formats = defaultOf(requirePeer<typeof addFormats | { default: typeof addFormats }>('ajv-formats'));
  const ajv = draft04 ? new AjvDraft04Class(options) : new AjvClass(options);
  formats(ajv as unknown as Ajv);
  for (const f of ['int32', 'int64', 'byte', 'int-or-string', 'quantity']) ajv.addFormat(f, true);
  const check = ajv.compile(schema);
  const validate: Validate = (value) => {
    if (check(value)) return [];
    return (check.errors ?? []).map((e) => {
      const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
      return `${e.instancePath || '/'}: ${e.message ?? e.keyword}${extra}`;
    });
  };
  compiled.set(full, validate);
  return validate;
}
