import * as fs from 'node:fs';
import * as path from 'node:path';

/** The upstream schemas: `$TUNNELWRIGHT_SCHEMAS`, else `../shared/schemas` beside the repository. */
export const SCHEMA_DIR = process.env.TUNNELWRIGHT_SCHEMAS ?? path.resolve(__dirname, '../../../shared/schemas');
export const HAVE_SCHEMAS = fs.existsSync(path.join(SCHEMA_DIR, 'schema-cloud-config-v1.json'));

/**
 * `describe` for tests that need the upstream schemas: skipped with a notice when they are absent (a fresh clone with
 * nothing beside it: no npm package ships them, `scripts/schemas/manifest.json` names where each comes from), except
 * under CI=true, where their absence fails.
 */
export function describeWithSchemas(name: string, fn: () => void): void {
  if (HAVE_SCHEMAS) {
    describe(name, fn);
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      it('has the upstream schema directory', () => {
        throw new Error(`schemas missing: ${SCHEMA_DIR} (set TUNNELWRIGHT_SCHEMAS); CI=true makes this a failure`);
      });
    });
  } else {
    process.stderr.write(`notice: skipping "${name}": no schemas at ${SCHEMA_DIR} (set TUNNELWRIGHT_SCHEMAS)\n`);
    describe.skip(name, fn);
  }
}

/** `it` for one test that needs the upstream schemas, in a describe that does not: as describeWithSchemas. */
export function itWithSchemas(name: string, fn: () => void): void {
  if (HAVE_SCHEMAS) {
    it(name, fn);
  } else if (process.env.CI === 'true') {
    it(name, () => {
      throw new Error(`schemas missing: ${SCHEMA_DIR} (set TUNNELWRIGHT_SCHEMAS); CI=true makes this a failure`);
    });
  } else {
    process.stderr.write(`notice: skipping "${name}": no schemas at ${SCHEMA_DIR} (set TUNNELWRIGHT_SCHEMAS)\n`);
    it.skip(name, fn);
  }
}
