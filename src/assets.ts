import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A script or template the library writes (a `.sh`, `.awk` or nft template), kept as a file of its own beside the
 * module that writes it: `src/<dir>/<file>` in the source tree, `lib/<dir>/<file>` in the package (compile copies
 * every asset: scripts/copy-assets.mjs). Read once, when that module loads, so every `plan*` function stays pure.
 * Values reach a script through its environment or a settings file it sources, never by editing its text.
 *
 *   const PORT_SYNC = asset(__dirname, 'port-sync.sh');
 */
export function asset(dir: string, file: string): string {
  return readFileSync(join(dir, file), 'utf8');
}

/**
 * A script's text as a container runs it inline (`sh -c <text>`): without its shebang and its leading comment block
 * (the file keeps them for the reader and for shellcheck) and without the final newline.
 */
export function inlineScript(text: string): string {
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length && (lines[i].startsWith('#') || lines[i].trim() === '')) i += 1;
  return lines.slice(i).join('\n').replace(/\n+$/, '');
}

/** The line a script marks for its settings: replaced by `withSettings`, once. */
export const SETTINGS_MARK = '# @settings';

/**
 * A script with its settings: the one line `# @settings` replaced by `NAME='value'` lines (each value single-quoted
 * for sh, so no value is ever read as code). The named substitution for a script that must carry its values inside
 * it (a ConfigMap's script, a hook OpenVPN runs without an environment of ours). Throws when the mark is not there
 * exactly once, or a name is not a shell variable name.
 */
export function withSettings(text: string, settings: Readonly<Record<string, string>>): string {
  const lines = text.split('\n');
  const at = lines.map((l, i) => (l === SETTINGS_MARK ? i : -1)).filter((i) => i >= 0);
  if (at.length !== 1) throw new Error(`a script with settings has the line "${SETTINGS_MARK}" exactly once (found ${at.length})`);
  const block = Object.entries(settings).map(([k, v]) => {
    if (!/^[A-Z_][A-Z0-9_]*$/.test(k)) throw new Error(`settings: "${k}" is not a shell variable name`);
    return `${k}=${shq(v)}`;
  });
  return [...lines.slice(0, at[0]), ...block, ...lines.slice(at[0] + 1)].join('\n');
}

/** Single-quotes a value for sh. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}
