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
export const RESOLVE_SECRET_SCRIPT = `#!/bin/sh
# tunnelwright: resolve a secret source into a root-only file. Never prints the value.
# usage: resolve-secret file|url SOURCE DEST WAIT_SECONDS
#   file: SOURCE is the file to copy; url: SOURCE is a root-only curl config holding the URL (it may carry a token,
#   so it is never an argument: process lists are world-readable)
set -eu
kind=$1 source=$2 dest=$3 wait=$4
umask 077
mkdir -p "$(dirname "$dest")"
tmp="$dest.partial"
deadline=$(( $(date +%s) + wait ))
while :; do
  case "$kind" in
    file) if [ -s "$source" ] && cp "$source" "$tmp"; then break; fi ;;
    # An empty body is not a secret (a proxy's 200, a store not filled yet): the file already there is kept.
    url) if curl --fail --silent --location --proto =https --max-time 30 --output "$tmp" --config "$source" 2>/dev/null && [ -s "$tmp" ]; then break; fi ;;
    *) echo "resolve-secret: unknown source kind: $kind" >&2; exit 2 ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    rm -f "$tmp"
    echo "resolve-secret: $dest: source not available after \${wait}s" >&2
    exit 1
  fi
  sleep 2
done
chmod 0600 "$tmp"
mv -f "$tmp" "$dest"
`;

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
