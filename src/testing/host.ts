import { parse, parseDocument } from 'yaml';
import { resolveSchemaDir, schemaValidator } from './schemas';

/** Problems of a `#cloud-config` text: the cloud-config schema (unknown fields fail) and octal permissions. */
export function checkCloudConfig(text: string, schemaDir?: string): string[] {
  const dir = resolveSchemaDir(schemaDir);
  if (!text.startsWith('#cloud-config\n')) return ['/: a cloud-config must start with "#cloud-config"'];
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return doc.errors.map((e) => `/: ${e.message}`);
  if (doc.warnings.length > 0) return doc.warnings.map((e) => `/: ${e.message}`);
  const value = parse(text) as Record<string, unknown>;
  const out = schemaValidator(dir, 'schema-cloud-config-v1.json')(value);
  const files = Array.isArray(value?.write_files) ? (value.write_files as Record<string, unknown>[]) : [];
  files.forEach((f, i) => {
    if (typeof f.permissions === 'string' && !/^0?[0-7]{3,4}$/.test(f.permissions)) out.push(`/write_files/${i}/permissions: expected an octal mode such as '0600', received ${JSON.stringify(f.permissions)}`);
  });
  return out;
}

/** Problems of an Ignition config against its spec's JSON schema (3.4.0, 3.5.0; 3.3.0 against 3.4.0's, a superset: `ignition-validate` is the real check). */
export function checkIgnition(config: unknown, schemaDir?: string): string[] {
  const dir = resolveSchemaDir(schemaDir);
  if (typeof config === 'string') {
    // The JSON text a file or a Pulumi output holds.
    try {
      config = JSON.parse(config) as unknown;
    } catch (e) {
      return [`(root): expected an Ignition config (an object, or its JSON text), received text that is not JSON: ${(e as Error).message}`];
    }
  }
  const version = (config as { ignition?: { version?: string } })?.ignition?.version;
  const file = version === '3.5.0' ? 'ignition-v3_5-schema.json' : 'ignition-v3_4-schema.json';
  if (version !== '3.3.0' && version !== '3.4.0' && version !== '3.5.0') return [`/ignition/version: expected 3.3.0, 3.4.0 or 3.5.0, received ${JSON.stringify(version)}`];
  return schemaValidator(dir, file)(config);
}
