/**
 * Loading on first use (issue 30): requiring an entry point (`tunnelwright`, `tunnelwright/cdk8s`,
 * `tunnelwright/pulumi`) loads neither zod nor the schema modules nor our YAML serializer. They load, once, when the
 * first construct is validated or the first host file is rendered; every check still runs, in the same order, with the
 * same messages. `test/lazy-load.test.ts` holds the entry points to this.
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
export const commonModel = once(() => require('./model/common') as typeof import('./model/common'));
export const cniModel = once(() => require('./model/cni') as typeof import('./model/cni'));
export const killSwitchModel = once(() => require('./model/kill-switch') as typeof import('./model/kill-switch'));
export const vpnGatewayModel = once(() => require('./model/vpn-gateway') as typeof import('./model/vpn-gateway'));
export const overlayNodeModel = once(() => require('./model/wireguard-overlay-node') as typeof import('./model/wireguard-overlay-node'));
export const meshModel = once(() => require('./model/wireguard-mesh') as typeof import('./model/wireguard-mesh'));
export const egressSteeringModel = once(() => require('./model/egress-steering') as typeof import('./model/egress-steering'));
export const egressProbeModel = once(() => require('./model/egress-probe') as typeof import('./model/egress-probe'));
export const conformanceModel = once(() => require('./model/egress-conformance') as typeof import('./model/egress-conformance'));

// The renderers, loaded when a construct of theirs is first planned: an app loads the renderers of the constructs it
// makes, not the others' (the adapters in src/cdk8s and src/pulumi reach them only through these).
export const overlayNodeRender = once(() => require('./render/wireguard-overlay-node') as typeof import('./render/wireguard-overlay-node'));
export const meshRender = once(() => require('./render/wireguard-mesh') as typeof import('./render/wireguard-mesh'));
export const killSwitchRender = once(() => require('./render/kill-switch') as typeof import('./render/kill-switch'));
export const vpnGatewayRender = once(() => require('./render/vpn-gateway') as typeof import('./render/vpn-gateway'));
export const egressSteeringRender = once(() => require('./render/egress-steering') as typeof import('./render/egress-steering'));
export const egressProbeRender = once(() => require('./render/egress-probe') as typeof import('./render/egress-probe'));
export const conformanceRender = once(() => require('./render/egress-conformance') as typeof import('./render/egress-conformance'));
export const configHashRender = once(() => require('./render/config-hash') as typeof import('./render/config-hash'));

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
