import { HostPlan } from '../types';
import { dropinPath, unitPath } from './host-plan';
import { yaml } from '../lazy';

/** Cloud-config text over 16 KiB is a warning: many clouds cap user-data there. */
export const USER_DATA_WARN_BYTES = 16 * 1024;

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/**
 * Renders a host plan as `#cloud-config` user-data: files (units and drop-ins as files under /etc/systemd/system),
 * then at first boot `systemctl daemon-reload`, the enabled units enabled and started, then the plan's commands.
 * Deterministic: same plan, same bytes.
 */
export function renderCloudConfig(plan: HostPlan): string {
  return `#cloud-config\n${yaml().stringify(cloudConfigDocument(plan), CLOUD_CONFIG_YAML)}`;
}

/** YAML options of the cloud-config text: no folding, literal block scalars. */
export const CLOUD_CONFIG_YAML = { lineWidth: 0, blockQuote: 'literal' } as const;

/** The cloud-config document (before YAML serialization) of a host plan. */
export function cloudConfigDocument(plan: HostPlan): Record<string, unknown> {
  const writeFiles: Record<string, unknown>[] = [];
  for (const f of plan.files) writeFiles.push({ path: f.path, owner: f.owner, permissions: octal(f.mode), content: f.content });
  for (const u of plan.units) if (u.content !== undefined) writeFiles.push({ path: unitPath(u.name), owner: 'root:root', permissions: '0644', content: u.content });
  for (const d of plan.dropins) writeFiles.push({ path: dropinPath(d.unit, d.name), owner: 'root:root', permissions: '0644', content: d.content });
  const enabled = plan.units.filter((u) => u.enabled).map((u) => u.name);
  const runcmd: (string | string[])[] = [];
  if (plan.units.length > 0 || plan.dropins.length > 0) runcmd.push(['systemctl', 'daemon-reload']);
  if (enabled.length > 0) runcmd.push(['systemctl', 'enable', '--now', ...enabled]);
  runcmd.push(...plan.commands);
  const doc: Record<string, unknown> = {};
  if (plan.packages.length > 0) doc.packages = [...plan.packages];
  if (writeFiles.length > 0) doc.write_files = writeFiles;
  if (runcmd.length > 0) doc.runcmd = runcmd;
  return doc;
}
