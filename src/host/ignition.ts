import { HostFile, HostPlan } from '../types';

/** Ignition spec versions rendered. */
export type IgnitionVersion = '3.3.0' | '3.4.0' | '3.5.0';
export const IGNITION_VERSIONS: readonly IgnitionVersion[] = ['3.3.0', '3.4.0', '3.5.0'];
export const DEFAULT_IGNITION_VERSION: IgnitionVersion = '3.4.0';

/** An Ignition config (the subset tunnelwright writes). */
export interface IgnitionConfig {
  ignition: { version: IgnitionVersion };
  storage?: { files: IgnitionFile[] };
  systemd?: { units: IgnitionUnit[] };
}

export interface IgnitionFile {
  path: string;
  overwrite: boolean;
  mode: number;
  user: { name: string };
  group: { name: string };
  contents: { source: string };
}

export interface IgnitionUnit {
  name: string;
  enabled?: boolean;
  contents?: string;
  dropins?: { name: string; contents: string }[];
}

/** A data URL carrying `text`, percent-encoded (RFC 2397, as Butane writes them): readable in a diff. */
export function dataUrl(text: string): string {
  return `data:,${encodeURIComponent(text)}`;
}

const encodings = new WeakMap<HostFile, () => string>();

/**
 * Records how to compute `encodeURIComponent(file.content)` more cheaply than encoding it (a mesh joins the
 * encodings of the peer sections its nodes share). Percent-encoding is per character, so the join is exact. A
 * function, so that the text exists only while a config is rendered.
 */
export function rememberEncoding(file: HostFile, encoded: () => string): void {
  encodings.set(file, encoded);
}

/** The data URL of a file: its remembered encoding, else `dataUrl(content)`. */
function encodedDataUrl(f: HostFile): string {
  const encoded = encodings.get(f);
  return encoded === undefined ? dataUrl(f.content) : `data:,${encoded()}`;
}

/**
 * Renders a host plan as an Ignition config: files with decimal modes and data-URL contents; units and their
 * drop-ins in `systemd.units`; first-boot commands as a oneshot unit. Deterministic: same plan, same bytes.
 */
export function renderIgnition(plan: HostPlan, version: IgnitionVersion = DEFAULT_IGNITION_VERSION): IgnitionConfig {
  const files: IgnitionFile[] = plan.files.map((f) => {
    const [user, group] = f.owner.split(':');
    return { path: f.path, overwrite: true, mode: f.mode, user: { name: user }, group: { name: group ?? user }, contents: { source: encodedDataUrl(f) } };
  });
  const units = new Map<string, IgnitionUnit>();
  for (const u of plan.units) {
    const unit: IgnitionUnit = { name: u.name };
    if (u.enabled) unit.enabled = true;
    if (u.content !== undefined) unit.contents = u.content;
    units.set(u.name, unit);
  }
  for (const d of plan.dropins) {
    const unit = units.get(d.unit) ?? { name: d.unit };
    unit.dropins = [...(unit.dropins ?? []), { name: d.name, contents: d.content }];
    units.set(d.unit, unit);
  }
  if (plan.commands.length > 0) {
    const firstboot = 'tunnelwright-firstboot.service';
    units.set(firstboot, {
      name: firstboot,
      enabled: true,
      contents: [
        '[Unit]',
        'Description=tunnelwright first-boot commands',
        'ConditionFirstBoot=yes',
        'After=network-online.target',
        'Wants=network-online.target',
        '',
        '[Service]',
        'Type=oneshot',
        ...plan.commands.map((c) => `ExecStart=/bin/sh -c ${JSON.stringify(c)}`),
        '',
        '[Install]',
        'WantedBy=multi-user.target',
        '',
      ].join('\n'),
    });
  }
  const config: IgnitionConfig = { ignition: { version } };
  if (files.length > 0) config.storage = { files };
  if (units.size > 0) config.systemd = { units: [...units.values()] };
  return config;
}

/** The Ignition config as JSON text (what a cloud's user-data field takes). */
export function renderIgnitionJson(plan: HostPlan, version: IgnitionVersion = DEFAULT_IGNITION_VERSION): string {
  return JSON.stringify(renderIgnition(plan, version));
}
