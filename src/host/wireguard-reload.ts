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

/** The script that sets the endpoints of peers dialled by hostname once the interface is up. */
export const WG_ENDPOINTS_PATH = '/opt/tunnelwright/bin/wg-endpoints';
/** How a peer's hostname endpoint is written in the config: a comment, which wg-quick and wg skip. */
export const DEFERRED_ENDPOINT_PREFIX = '# tunnelwright: Endpoint = ';

/** The unit that runs the endpoints script for an interface. */
export function wireguardEndpointsUnit(iface: string): string {
  return `tunnelwright-${iface}-endpoints.service`;
}

/**
 * `wg-quick up` resolves every `Endpoint` before the interface is up (`set_config` runs `wg addconf`,
 * wireguard-tools src/wg-quick/linux.bash:251-253, 333) and fails or waits for each: a name that does not exist
 * (EAI_NONAME) fails the whole `up`, which deletes the interface (the `del_if` trap, linux.bash:330), and a name whose
 * DNS is unreachable is retried for ever under upstream's unit (`WG_ENDPOINT_RESOLUTION_RETRIES=infinity`, src/config.c:
 * 177-192, 241-266; the unit is a oneshot without a start timeout). So a hostname endpoint is written as a comment,
 * and this script sets it once the interface is up, each peer alone with one resolution attempt
 * (`WG_ENDPOINT_RESOLUTION_RETRIES=0`), retrying the names still unresolved every WG_ENDPOINTS_INTERVAL seconds until
 * all are set; `--once` tries each once (for a manual check). A peer the config lists but the interface does not have
 * is skipped (`wg set … endpoint` would add it without allowed IPs).
 */
export const WG_ENDPOINTS_SCRIPT = `#!/bin/bash
# tunnelwright: set the endpoints of peers dialled by hostname once the interface is up, each peer alone, so a name
# that does not resolve delays only its own peer. usage: wg-endpoints [--once] INTERFACE [CONFIG]
#   the endpoints are the "${DEFERRED_ENDPOINT_PREFIX}host:port" comments of CONFIG (default /etc/wireguard/INTERFACE.conf);
#   without --once, names still unresolved are retried every WG_ENDPOINTS_INTERVAL seconds (default 10) until all are set
set -uo pipefail
once=0
if [ "\${1:-}" = --once ]; then once=1; shift; fi
iface=$1
conf=\${2:-/etc/wireguard/$iface.conf}
interval=\${WG_ENDPOINTS_INTERVAL:-10}
pending=$(sed -n -e 's/^PublicKey = \\([^ ]*\\)$/\\1/p' -e 's/^${DEFERRED_ENDPOINT_PREFIX}\\([^ ]*\\)$/endpoint \\1/p' "$conf" | awk '$1 == "endpoint" { print key, $2; next } { key = $1 }')
while [ -n "$pending" ]; do
  left=""
  # The interface's peers, read once a round: not piped into grep -q, whose early exit can kill wg with SIGPIPE and,
  # under pipefail, drop a peer that is there (a few KiB of peers).
  peers=$(wg show "$iface" peers)
  while read -r key endpoint; do
    if ! grep -qxF -- "$key" <<<"$peers"; then continue; fi
    if WG_ENDPOINT_RESOLUTION_RETRIES=0 wg set "$iface" peer "$key" endpoint "$endpoint"; then
      echo "wg-endpoints: $iface: peer $key at $endpoint"
    else
      echo "wg-endpoints: $iface: $endpoint does not resolve yet: peer $key has no endpoint" >&2
      left+="$key $endpoint"$'\\n'
    fi
  done <<<"$pending"
  pending=\${left%$'\\n'}
  if [ -z "$pending" ] || [ "$once" = 1 ]; then break; fi
  sleep "$interval"
done
[ -z "$pending" ]
`;

export const WG_ENDPOINTS_FILE: HostFile = { path: WG_ENDPOINTS_PATH, mode: 0o755, owner: 'root:root', content: WG_ENDPOINTS_SCRIPT };

/**
 * The unit that sets an interface's hostname endpoints after it is up. Bound to the interface (stopped and restarted
 * with it: `BindsTo=`), pulled in by it (`Wants=` in the interface's drop-in), and nothing waits for it: the
 * distribution's unit is ordered after the interface only, so it starts while a name is still unresolved.
 */
export function wireguardEndpointsUnitContent(iface: string): string {
  const wgUnit = `wg-quick@${iface}.service`;
  return [
    '[Unit]',
    `Description=tunnelwright: set the hostname endpoints of ${iface}'s peers once it is up`,
    `After=${wgUnit} network-online.target nss-lookup.target`,
    `BindsTo=${wgUnit}`,
    '',
    '[Service]',
    'Type=simple',
    'RemainAfterExit=yes',
    `ExecStart=${WG_ENDPOINTS_PATH} ${iface}`,
    '',
  ].join('\n');
}

/**
 * The drop-in that makes `systemctl reload <wg-quick unit>` apply the config and keep the keys: each secret is first
 * resolved again from its source (`refresh`: a key rotated at its source is applied by the reload), then the reload
 * script syncs the config with it; with hostname endpoints, the endpoints unit (`endpointsUnit`) is then started again, so it re-reads
 * the config and retries every name until it resolves. `wg syncconf` re-creates a peer whose key changed (or adds a
 * new one) without an endpoint, since the name is only a comment; one attempt at reload time would leave that peer
 * without one for good when the name does not resolve just then (the unit had exited, `RemainAfterExit=yes`).
 * `--no-block`: the unit is ordered `After=` the interface, so its start job waits for this reload job to finish;
 * a blocking `systemctl` here would wait on itself (systemctl(1), `--no-block`). `-`: never fails the reload.
 */
export function wireguardReloadDropin(unit: string, refresh: readonly string[] = [], endpointsUnit?: string): HostDropin {
  const lines = ['[Service]', 'ExecReload=', ...refresh.map((c) => `ExecReload=${c}`), `ExecReload=${WG_RELOAD_PATH} %i`];
  if (endpointsUnit) lines.push(`ExecReload=-/usr/bin/systemctl restart --no-block ${endpointsUnit}`);
  return { unit, name: '20-tunnelwright-reload.conf', content: `${lines.join('\n')}\n` };
}
