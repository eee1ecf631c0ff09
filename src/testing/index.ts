/**
 * Output checks for unit tests of what tunnelwright synthesizes: the same checks the project's own tests use.
 * Every function takes the schema directory as its last argument, defaulting to `$TUNNELWRIGHT_SCHEMAS`.
 *
 * @module tunnelwright/testing
 */
export { checkCloudConfig, checkIgnition } from './host';
export { checkKubeObjects, CUSTOM_RESOURCE_SCHEMAS } from './kube';
export { closeSchema, resolveSchemaDir, schemaValidator, type Validate } from './schemas';
