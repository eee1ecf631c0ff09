import { Problem } from '../errors';
import { HostPlan } from '../types';
import { renderCloudConfig, USER_DATA_WARN_BYTES } from './cloud-init';
import { contentLength, hostPlanHasSecret, mergedFrom } from './host-plan';
import { DEFAULT_IGNITION_VERSION, IgnitionConfig, IgnitionVersion, renderIgnition } from './ignition';

/** A host plan rendered for the machine: cloud-config text and Ignition config. */
export interface HostArtefacts {
  readonly node: string;
  /** `#cloud-config` user-data. */
  readonly cloudConfig: string;
  /** The Ignition config object. */
  readonly ignition: IgnitionConfig;
  /** The Ignition config as JSON text. */
  readonly ignitionJson: string;
  /** True when either embeds a secret value (write it 0600; mark it secret in Pulumi). */
  readonly secret: boolean;
}

const cloudConfigs = new WeakMap<HostPlan, string>();
const ignitions = new WeakMap<HostPlan, Map<IgnitionVersion, { config: IgnitionConfig; json?: string }>>();

/**
 * The cloud-configs the user-data size warning rendered (plans under 16 KiB only), each with the plan it was rendered
 * from as JSON: everything the rendering reads, a mesh interface's config computed on read included (issue 30).
 */
const measured = new WeakMap<HostPlan, { readonly json: string; readonly text: string }>();

/**
 * The cloud-config the user-data size warning rendered for `plan`, or for the plan a merge copied it from, when the
 * plan still holds what it was rendered from (the same JSON): the App writes that text rather than a second rendering.
 * A plan changed since (a command added, a peer added to a mesh node's interface) is rendered again. `copy` is the
 * plan as the caller materialized it (its lazy contents computed), compared in its place so they are not computed
 * twice; it is serialized only when a rendering was kept, never for a plan over the limit (a large mesh's nodes).
 */
export function renderedCloudConfig(plan: HostPlan, copy: HostPlan = plan): string | undefined {
  const from = mergedFrom(plan);
  const m = measured.get(plan) ?? (from && measured.get(from));
  return m !== undefined && JSON.stringify(copy) === m.json ? m.text : undefined;
}

function cloudConfigOf(plan: HostPlan): string {
  let text = cloudConfigs.get(plan);
  if (text === undefined) {
    text = renderedCloudConfig(plan) ?? renderCloudConfig(plan);
    cloudConfigs.set(plan, text);
  }
  return text;
}

function ignitionOf(plan: HostPlan, version: IgnitionVersion): { config: IgnitionConfig; json?: string } {
  let byVersion = ignitions.get(plan);
  if (!byVersion) {
    byVersion = new Map();
    ignitions.set(plan, byVersion);
  }
  let entry = byVersion.get(version);
  if (!entry) {
    entry = { config: renderIgnition(plan, version) };
    byVersion.set(version, entry);
  }
  return entry;
}

/**
 * Both host formats of a plan, each rendered on first use and once per plan (and Ignition version): a caller that
 * reads only the cloud-config never pays for Ignition, and the reverse.
 */
export function renderHostArtefacts(plan: HostPlan, ignitionVersion: IgnitionVersion = DEFAULT_IGNITION_VERSION): HostArtefacts {
  return {
    node: plan.node,
    get cloudConfig() {
      return cloudConfigOf(plan);
    },
    get ignition() {
      return ignitionOf(plan, ignitionVersion).config;
    },
    get ignitionJson() {
      const entry = ignitionOf(plan, ignitionVersion);
      return (entry.json ??= JSON.stringify(entry.config));
    },
    secret: hostPlanHasSecret(plan),
  };
}

/** One WireGuard interface's config, as the operator copies it onto a running host (see `wireguardConfigs`). */
export interface WireguardConfigFile {
  /** File name: `<interface>.conf`. */
  readonly name: string;
  readonly content: string;
  /** True when it embeds an inline key. */
  readonly secret: boolean;
}

/**
 * The wg-quick configs of a host plan, by interface: the day-2 path. cloud-init and Ignition run once; after a change
 * (a node added to a mesh, a peer edited) copy each node's `<interface>.conf` to `/etc/wireguard/` and run
 * `systemctl reload wg-quick@<interface>`, which the reload drop-in makes keep the key.
 */
export function wireguardConfigs(plan: HostPlan): WireguardConfigFile[] {
  return plan.files.flatMap((f) => {
    const m = /^\/etc\/wireguard\/([^/]+\.conf)$/.exec(f.path);
    return m ? [{ name: m[1], content: f.content, secret: f.secret === true }] : [];
  });
}

/**
 * The `user-data-size` warning when the cloud-config is over 16 KiB. The files' contents alone over it decide without
 * rendering anything (a large mesh's configs are computed only when written); a smaller plan is rendered to measure,
 * and that rendering is the one `renderHostArtefacts` and the App's synth give while the plan is unchanged.
 */
export function userDataSizeWarnings(plan: HostPlan, path: string): Problem[] {
  let size = 0;
  for (const f of plan.files) size += contentLength(f);
  for (const u of plan.units) size += u.content?.length ?? 0;
  for (const d of plan.dropins) size += d.content.length;
  // Characters are a lower bound of UTF-8 bytes: over the limit by the files alone, the figure is "or more".
  if (size <= USER_DATA_WARN_BYTES) {
    // Kept with what it was rendered from: the App writes this text while the plan is unchanged (issue 30).
    const text = renderCloudConfig(plan);
    measured.set(plan, { json: JSON.stringify(plan), text });
    size = Buffer.byteLength(text, 'utf8');
  }
  if (size <= USER_DATA_WARN_BYTES) return [];
  return [{ path, code: 'user-data-size', message: `the cloud-config of node "${plan.node}" is over 16 KiB (${size} bytes or more): many clouds cap user-data at 16 KiB (use Ignition, or fewer peers per node with topology { hub })` }];
}
