/**
 * What still loads on first use: the `yaml` package (below), and `once`, a memoizer. Issue 30 loaded every model and
 * renderer here too, which made every one of them import this module and be imported by it: an import circle through
 * 19 files. Issue 42 removed that: the user's own `cdk8s synth` of each example takes the same time either way (within
 * 1.10x of the same app without tunnelwright: bench/results/user.jsonl), so the entry points import what they export.
 * This module imports none of tunnelwright's own, and `npm run lint` refuses any import circle (dpdm).
 */
import * as path from 'node:path';
import type * as Yaml from 'yaml';

/** A memoized loader: `load` runs on the first call only. */
export function once<T>(load: () => T): () => T {
  let loaded = false;
  let value: T | undefined;
  return () => {
    if (!loaded) {
      value = load();
      loaded = true;
    }
    return value as T;
  };
}

/* eslint-disable @typescript-eslint/no-require-imports */
/** The major version of the `yaml` package tunnelwright depends on. */
export const YAML_MAJOR = 2;

/**
 * The `yaml` package, loaded on first use. cdk8s bundles its own copy of yaml (`cdk8s/node_modules/yaml`, 2.9.1 in
 * cdk8s 2.70) and loads it with `require('cdk8s')`: when that copy is of our major version it is reused, so a cdk8s
 * app loads yaml once, not twice. Otherwise (no cdk8s installed, as in a Pulumi program, or another major) our own
 * dependency is loaded.
 */
export const yaml = once((): typeof Yaml => {
  const bundled = cdk8sYaml();
  return bundled ?? (require('yaml') as typeof Yaml);
});

function cdk8sYaml(): typeof Yaml | undefined {
  let main: string;
  try {
    main = require.resolve('yaml', { paths: [path.dirname(require.resolve('cdk8s/package.json'))] });
  } catch {
    return undefined;
  }
  const cached = require.cache[main];
  if (!cached) return undefined; // cdk8s installed but not loaded: load ours, not a second package
  // yaml's package.json sits two levels above its main (dist/index.js); its exports map does not expose it.
  const version = (require(path.join(path.dirname(main), '..', 'package.json')) as { version?: string }).version ?? '';
  return Number(version.split('.')[0]) === YAML_MAJOR ? (cached.exports as typeof Yaml) : undefined;
}
/* eslint-enable @typescript-eslint/no-require-imports */
