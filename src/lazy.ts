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
/**
 * zod's locales, loaded when first read (issue 30). zod 4's entry (`v4/core/index.cjs`, and `v4/classic/external.cjs`)
 * requires `v4/locales/index.cjs`, which loads every one of its ~50 locale files: about 30 ms of a synth's 200, for
 * messages in languages tunnelwright never uses (zod's English is `locales/en.cjs`, which `classic/schemas.cjs` loads
 * itself). Before zod is first loaded, that module's cache entry is filled with an object that stands for it: its
 * `__esModule` mark is true (so zod's `__importStar` keeps the object as it is), and the first read of anything else
 * loads the real module and answers from it. `z.locales.fr()` therefore works as before, for the user's code too.
 * When zod is already loaded, or laid out otherwise, nothing is done.
 */
const zodLocalesOnRead = once((): void => {
  try {
    const file = path.join(path.dirname(require.resolve('zod')), 'v4', 'locales', 'index.cjs');
    const cache = require.cache;
    if (cache[file] || cache[require.resolve('zod')] || !require('node:fs').existsSync(file)) return;
    const target: Record<PropertyKey, unknown> = {};
    let loaded = false;
    const load = (): Record<PropertyKey, unknown> => {
      if (!loaded) {
        loaded = true;
        delete cache[file];
        const real = require(file) as object;
        // The real exports' descriptors onto the stand-in's target, so a Proxy's invariants hold for every trap.
        Object.defineProperties(target, Object.getOwnPropertyDescriptors(real));
      }
      return target;
    };
    const standIn = new Proxy(target, {
      get: (_t, key) => (key === '__esModule' && !loaded ? true : Reflect.get(load(), key)),
      has: (_t, key) => Reflect.has(load(), key),
      ownKeys: () => Reflect.ownKeys(load()),
      getOwnPropertyDescriptor: (_t, key) => Reflect.getOwnPropertyDescriptor(load(), key),
      set: (_t, key, value) => Reflect.set(load(), key, value),
      defineProperty: (_t, key, d) => Reflect.defineProperty(load(), key, d),
      deleteProperty: (_t, key) => Reflect.deleteProperty(load(), key),
    });
    const NodeModule = require('node:module') as { new (id: string): NodeJS.Module };
    const entry = new NodeModule(file);
    Object.assign(entry, { filename: file, loaded: true, exports: standIn });
    cache[file] = entry;
  } catch {
    // Anything unexpected: zod loads its locales itself, as it always did.
  }
});

/** A schema module, with zod's locales left for their first read. */
function model<T>(load: () => T): () => T {
  return once(() => {
    zodLocalesOnRead();
    return load();
  });
}

export const commonModel = model(() => require('./model/common') as typeof import('./model/common'));
export const cniModel = model(() => require('./model/cni') as typeof import('./model/cni'));
export const killSwitchModel = model(() => require('./model/kill-switch') as typeof import('./model/kill-switch'));
export const vpnGatewayModel = model(() => require('./model/vpn-gateway') as typeof import('./model/vpn-gateway'));
export const overlayNodeModel = model(() => require('./model/wireguard-overlay-node') as typeof import('./model/wireguard-overlay-node'));
export const meshModel = model(() => require('./model/wireguard-mesh') as typeof import('./model/wireguard-mesh'));
export const egressSteeringModel = model(() => require('./model/egress-steering') as typeof import('./model/egress-steering'));
export const egressProbeModel = model(() => require('./model/egress-probe') as typeof import('./model/egress-probe'));
export const conformanceModel = model(() => require('./model/egress-conformance') as typeof import('./model/egress-conformance'));

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
