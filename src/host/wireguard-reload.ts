import { HostDropin, HostFile } from '../types';

/** The reload script of every wg-quick interface tunnelwright writes. */
export const WG_RELOAD_PATH = '/opt/tunnelwright/bin/wg-reload';

/**
 * `systemctl reload wg-quick@<i>` runs `wg syncconf %i <(wg-quick strip %i)` upstream. Our configs hold no
 * `PrivateKey` when it comes from a file (`PostUp = wg set %i private-key <file>` applies it), and `wg syncconf` of a
 * config without one clears the interface's key: the tunnel dies. This script syncs the config with the key read
 * back from its file into the config it feeds `wg syncconf` (never into an argument: process lists are world-readable),
 * then re-applies every preshared key from its file (a peer added since boot gets its key too).
 * Routes are not changed by a reload (as upstream): allowed IPs outside the interface's addresses need a restart.
 */
export const WG_RELOAD_SCRIPT = `#!/bin/bash
# tunnelwright: reload a wg-quick interface from its config without losing the keys its PostUp lines set from
# root-only files. usage: wg-reload INTERFACE [CONFIG]   (CONFIG defaults to /etc/wireguard/INTERFACE.conf)
set -euo pipefail
iface=$1
conf=\${2:-/etc/wireguard/$iface.conf}
stripped=$(wg-quick strip "$conf")
key_file=$(sed -n 's/^PostUp = wg set %i private-key \\([^ ]*\\)$/\\1/p' "$conf" | head -n 1)
merged() {
  local line
  while IFS= read -r line; do
    printf '%s\\n' "$line"
    if [ "$line" = "[Interface]" ] && [ -n "$key_file" ]; then printf 'PrivateKey = %s\\n' "$(<"$key_file")"; fi
  done <<<"$stripped"
}
wg syncconf "$iface" <(merged)
sed -n 's/^PostUp = wg set %i peer \\([^ ]*\\) preshared-key \\([^ ]*\\)$/\\1 \\2/p' "$conf" | while read -r peer file; do
  wg set "$iface" peer "$peer" preshared-key "$file"
done
`;

export const WG_RELOAD_FILE: HostFile = { path: WG_RELOAD_PATH, mode: 0o755, owner: 'root:root', content: WG_RELOAD_SCRIPT };

/** The drop-in that makes `systemctl reload <wg-quick unit>` keep the interface's keys. */
export function wireguardReloadDropin(unit: string): HostDropin {
  return { unit, name: '20-tunnelwright-reload.conf', content: `[Service]\nExecReload=\nExecReload=${WG_RELOAD_PATH} %i\n` };
}
