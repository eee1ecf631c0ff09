import { asset } from '../assets';
import type { SecretSource } from '../model/common';
import { HostFile, HostPlan, HostUnit } from '../types';
import { durationSeconds } from '../model/values';

/** Where the resolver script lives: writable on Flatcar and Fedora CoreOS too (their /usr is read-only). */
export const RESOLVE_SECRET_PATH = '/opt/tunnelwright/bin/resolve-secret';
/** The root-only directory that holds the curl configs naming secret URLs (a URL may carry a token). */
export const SECRET_URLS_DIR = '/etc/tunnelwright/secret-urls';
/** The root-only directory resolved secrets land in (tmpfs: never written to disk). */
export const SECRETS_DIR = '/run/tunnelwright/secrets';
/** How long a URL source is retried when `waitFor` is not given. */
export const DEFAULT_URL_WAIT_SECONDS = 300;

/** The script every secret unit runs: copies or fetches the source into a 0600 file; never prints the value. */
export const RESOLVE_SECRET_SCRIPT = asset(__dirname, 'resolve-secret.sh');

export const RESOLVE_SECRET_FILE: HostFile = { path: RESOLVE_SECRET_PATH, mode: 0o755, owner: 'root:root', content: RESOLVE_SECRET_SCRIPT };

/** Escapes a word for a systemd ExecStart line (`%` specifiers; the schema forbids quotes, `$` and spaces). */
function systemdWord(text: string): string {
  return text.replace(/%/g, '%%');
}

export interface ResolvedSecret {
  /** The root-only file the secret lands in. */
  readonly path: string;
  /** The unit that resolves it; consumers are ordered After= and Requires= it. */
  readonly unit: string;
  /**
   * The same resolution from the source again, in one attempt (no `waitFor`): what a reload runs before it reads the
   * file, so a secret rotated at its source reaches the consumer without a reboot. On failure the old file is kept
   * (the script writes a partial file and renames it).
   */
  readonly refresh: string;
  readonly files: HostFile[];
  readonly units: HostUnit[];
}

/**
 * Plans the boot unit that resolves `source` into `/run/tunnelwright/secrets/<id>` before `consumer` starts.
 * `id` is a unit-name-safe identifier such as `wg0-private-key`. `conditions` are `[Unit]` lines (`Condition…=`) under
 * which the secret is needed: a unit skipped by a condition does not fail the units that require it.
 */
export function planSecretSource(id: string, source: SecretSource, consumer: string, conditions: readonly string[] = []): ResolvedSecret {
  const path = `${SECRETS_DIR}/${id}`;
  const unit = `tunnelwright-secret-${id}.service`;
  const isUrl = 'url' in source;
  const wait = source.waitFor !== undefined ? durationSeconds(source.waitFor)! : isUrl ? DEFAULT_URL_WAIT_SECONDS : 0;
  const kindArg = isUrl ? 'url' : 'file';
  // A URL goes into a 0600 curl config, never into the 0644 unit or the command line.
  const urlFile: HostFile | undefined = isUrl ? { path: `${SECRET_URLS_DIR}/${id}.curl`, mode: 0o600, owner: 'root:root', content: `url = "${source.url}"\n`, secret: true } : undefined;
  const src = urlFile ? urlFile.path : (source as { file: string }).file;
  const command = (seconds: number) => `${RESOLVE_SECRET_PATH} ${kindArg} ${systemdWord(src)} ${path} ${seconds}`;
  const content = [
    '[Unit]',
    `Description=tunnelwright: resolve secret ${id} for ${consumer}`,
    `Before=${consumer}`,
    ...conditions,
    ...(isUrl ? ['Wants=network-online.target', 'After=network-online.target'] : []),
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    `TimeoutStartSec=${wait + 60}`,
    'StandardOutput=null',
    `ExecStart=${command(wait)}`,
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
  return { path, unit, refresh: command(0), files: urlFile ? [RESOLVE_SECRET_FILE, urlFile] : [RESOLVE_SECRET_FILE], units: [{ name: unit, content, enabled: true }] };
}

/** Adds resolved secrets' files and units to a plan being built. */
export function addResolvedSecret(plan: HostPlan, secret: ResolvedSecret): void {
  for (const f of secret.files) if (!plan.files.some((x) => x.path === f.path)) plan.files.push(f);
  plan.units.push(...secret.units);
}
