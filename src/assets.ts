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
