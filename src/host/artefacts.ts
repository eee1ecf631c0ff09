import { Problem } from '../errors';
import { HostPlan } from '../types';
import { renderCloudConfig, USER_DATA_WARN_BYTES } from './cloud-init';
import { contentLength, hostPlanHasSecret, mergedFrom, samePlan } from './host-plan';
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

/** What a rendering was made from: the plan's lists as they were then (their entries, not copies of them). */
interface Rendered<T> {
  readonly from: HostPlan;
  readonly value: T;
}

const cloudConfigs = new WeakMap<HostPlan, Rendered<string>>();
const ignitions = new WeakMap<HostPlan, Rendered<Map<IgnitionVersion, { config: IgnitionConfig; json?: string }>>>();

/**
 * A rendering kept for `plan`, or for the plan a merge copied it from unchanged, while the plan's lists still hold
 * what it was rendered from: a file, unit, drop-in, command or package added or removed since renders it again.
 */
function kept<T>(cache: WeakMap<HostPlan, Rendered<T>>, plan: HostPlan): T | undefined {
  for (const key of [plan, mergedFrom(plan)]) {
    const r = key && cache.get(key);
    if (r && samePlan(r.from, plan)) return r.value;
  }
  return undefined;
}

function keep<T>(cache: WeakMap<HostPlan, Rendered<T>>, plan: HostPlan, value: T): T {
  cache.set(plan, { from: { ...plan, files: [...plan.files], units: [...plan.units], dropins: [...plan.dropins], commands: [...plan.commands], packages: [...plan.packages] }, value });
  return value;
}

/**
 * The cloud-config of a plan when it was rendered already and the plan has not changed since: the App writes that
 * text rather than a second rendering (issue 30). The user-data size warning renders only a plan whose files are
 * under 16 KiB; a construct's `cloudConfig`, read by the user, keeps its text at any size.
 */
export function renderedCloudConfig(plan: HostPlan): string | undefined {
  return kept(cloudConfigs, plan);
}

function cloudConfigOf(plan: HostPlan): string {
  return kept(cloudConfigs, plan) ?? keep(cloudConfigs, plan, renderCloudConfig(plan));
}

function ignitionOf(plan: HostPlan, version: IgnitionVersion): { config: IgnitionConfig; json?: string } {
  const byVersion = kept(ignitions, plan) ?? keep(ignitions, plan, new Map());
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
 * once: `renderHostArtefacts` of the same plan object reads that rendering.
 */
export function userDataSizeWarnings(plan: HostPlan, path: string): Problem[] {
  let size = 0;
  for (const f of plan.files) size += contentLength(f);
  for (const u of plan.units) size += u.content?.length ?? 0;
  for (const d of plan.dropins) size += d.content.length;
  // Characters are a lower bound of UTF-8 bytes: over the limit by the files alone, the figure is "or more".
  // Rendered through the per-plan cache: the App writes this same text, not a second rendering (issue 30).
  if (size <= USER_DATA_WARN_BYTES) size = Buffer.byteLength(cloudConfigOf(plan), 'utf8');
  if (size <= USER_DATA_WARN_BYTES) return [];
  return [{ path, code: 'user-data-size', message: `the cloud-config of node "${plan.node}" is over 16 KiB (${size} bytes or more): many clouds cap user-data at 16 KiB (use Ignition, or fewer peers per node with topology { hub })` }];
}
