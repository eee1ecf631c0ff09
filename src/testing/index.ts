/**
 * Output checks for unit tests of what tunnelwright synthesizes: the same checks the project's own tests use.
 * Every function takes the schema directory as its last argument, defaulting to `$TUNNELWRIGHT_SCHEMAS`, else to the
 * upstream schemas the package ships in `schemas/` (see its SOURCES.md).
 *
 * @module tunnelwright/testing
 */
export { checkCloudConfig, checkIgnition } from './host';
export { checkKubeObjects, CUSTOM_RESOURCE_SCHEMAS } from './kube';
export { closeSchema, packagedSchemaDir, resolveSchemaDir, schemaValidator, type Validate } from './schemas';
