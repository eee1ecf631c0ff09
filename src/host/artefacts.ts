import { Problem } from '../errors';
import { HostPlan } from '../types';
import { renderCloudConfig, USER_DATA_WARN_BYTES } from './cloud-init';
import { hostPlanHasSecret } from './host-plan';
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

const cache = new WeakMap<HostPlan, Map<IgnitionVersion, HostArtefacts>>();

/** Renders (once per plan and version) both host formats. */
export function renderHostArtefacts(plan: HostPlan, ignitionVersion: IgnitionVersion = DEFAULT_IGNITION_VERSION): HostArtefacts {
  let byVersion = cache.get(plan);
  if (!byVersion) {
    byVersion = new Map();
    cache.set(plan, byVersion);
  }
  const hit = byVersion.get(ignitionVersion);
  if (hit) return hit;
  const ignition = renderIgnition(plan, ignitionVersion);
  const first = byVersion.values().next().value as HostArtefacts | undefined;
  const artefacts: HostArtefacts = {
    node: plan.node,
    cloudConfig: first?.cloudConfig ?? renderCloudConfig(plan),
    ignition,
    ignitionJson: JSON.stringify(ignition),
    secret: hostPlanHasSecret(plan),
  };
  byVersion.set(ignitionVersion, artefacts);
  return artefacts;
}

/** The `user-data-size` warning when the cloud-config is over 16 KiB. */
export function userDataSizeWarnings(artefacts: HostArtefacts, path: string): Problem[] {
  const text = artefacts.cloudConfig;
  // UTF-8 never takes fewer bytes than UTF-16 code units: a long text is over without scanning it.
  const over = text.length > USER_DATA_WARN_BYTES || Buffer.byteLength(text, 'utf8') > USER_DATA_WARN_BYTES;
  if (!over) return [];
  return [{ path, code: 'user-data-size', message: `the cloud-config of node "${artefacts.node}" is over 16 KiB (${text.length} characters): many clouds cap user-data at 16 KiB (use Ignition, or fewer peers per node with topology { hub })` }];
}
