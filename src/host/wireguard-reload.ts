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
# The lock wg-endpoints takes to set an endpoint: a peer this reload removes is never added back by it.
lock=\${WG_LOCK:-/run/tunnelwright/wg-$iface.lock}
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
flock 9
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
 * and this script sets it once the interface is up, each peer alone. `--once` tries once for each peer without an
 * endpoint (for a manual check). Otherwise it runs until stopped:
 * - a peer without an endpoint gets one once its name resolves, tried again after WG_ENDPOINTS_INTERVAL seconds (10),
 *   the wait doubling up to WG_ENDPOINTS_MAX_INTERVAL (300): 16 tries and log lines in the first hour for a name that
 *   never resolves, then 12 an hour, not 360;
 * - a peer with an endpoint keeps it, learnt by roaming or not, while it works: its name is resolved again only while
 *   the peer is failing, that is its latest handshake is older than WG_ENDPOINTS_STALE seconds (180, WireGuard's
 *   REJECT_AFTER_TIME: no session is left) and either this node has sent it more than the one keepalive WireGuard
 *   sends after receiving data (32 bytes, no answer due) for WG_ENDPOINTS_QUIET seconds (30) without receiving
 *   anything, or the host has no route to its address (`ip route get` with the interface's fwmark fails, or goes
 *   through the interface itself; the kernel and wireguard-go count bytes sent only when the send succeeds). An idle
 *   link is not failing (the handshake of a link without keepalive ages without limit), so an endpoint learnt by
 *   roaming is not overwritten with a stale DNS answer. This is what wireguard-tools' contrib/reresolve-dns does (for
 *   `Endpoint =` lines only, with the handshake's age alone): a peer whose name moved (dynamic DNS) and that cannot
 *   reach this node first (behind NAT or a stateful firewall) is dialled at its new address; one that can is found
 *   sooner by roaming. While it keeps failing, the name is resolved again after the same doubling waits, each time
 *   dialling the address after the failing one.
 * A name is resolved by `getent ahosts` (getaddrinfo's order; `wg` takes the first, config.c), at most
 * WG_ENDPOINTS_LOOKUP_TIMEOUT seconds (5), outside any lock; then, holding the interface's lock (WG_LOCK), which
 * wg-reload holds around `wg syncconf`, the endpoint is set only if the peer still has the one it had: `wg set …
 * endpoint` creates a peer that is not there, without allowed IPs, so a peer removed or re-keyed by a reload is never
 * brought back, and an endpoint a reload set is not overwritten. The interface's lists are read once a round into
 * arrays. When the interface is gone (`wg-quick down` leaves its unit active), the script says so once and waits for
 * it; `--once` then exits 2. A config it cannot read fails it (exit 1).
 */
export const WG_ENDPOINTS_SCRIPT = `#!/bin/bash
# tunnelwright: set, and keep working, the endpoints of peers dialled by hostname ("${DEFERRED_ENDPOINT_PREFIX}host:port"
# in CONFIG). usage: wg-endpoints [--once] INTERFACE [CONFIG]. See tunnelwright's README, "An endpoint by hostname".
set -uo pipefail
once=0
if [ "\${1:-}" = --once ]; then once=1; shift; fi
iface=$1
conf=\${2:-/etc/wireguard/$iface.conf}
interval=\${WG_ENDPOINTS_INTERVAL:-10}
max=\${WG_ENDPOINTS_MAX_INTERVAL:-300}
stale=\${WG_ENDPOINTS_STALE:-180}
quiet=\${WG_ENDPOINTS_QUIET:-30}
lookup_timeout=\${WG_ENDPOINTS_LOOKUP_TIMEOUT:-5}
lock=\${WG_LOCK:-/run/tunnelwright/wg-$iface.lock}
if [ ! -r "$conf" ]; then echo "wg-endpoints: $iface: cannot read $conf" >&2; exit 1; fi
names=$(sed -n -e 's/^PublicKey = \\([^ ]*\\)$/\\1/p' -e 's/^${DEFERRED_ENDPOINT_PREFIX}\\([^ ]*\\)$/endpoint \\1/p' "$conf" | awk '$1 == "endpoint" { print key, $2; next } { key = $1 }')
[ -n "$names" ] || exit 0
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
# whether the host routes an endpoint's address, as the interface's own packets (its fwmark), other than through itself
routable() {
  local address=\${1%:*} mark route
  address=\${address#[}
  address=\${address%]}
  mark=$(wg show "$iface" fwmark 2>/dev/null)
  if [ -n "$mark" ] && [ "$mark" != off ]; then set -- mark "$mark"; else set --; fi
  route=$(ip route get "\${address%%%*}" "$@" 2>/dev/null) || return 1
  case $route in unreachable* | blackhole* | prohibit* | *" dev $iface "*) return 1 ;; esac
}
# per peer: next lookup, wait, bytes received last round, bytes sent when they last changed, unanswered since, route
# check (endpoint, time, verdict), failing said
declare -A next=() backoff=() rx_last=() tx_base=() unanswered=() checked=() checked_at=() noroute=() said=()
gone=0
while :; do
  now=$(date +%s)
  declare -A handshake=() at=() tx=() rx=()
  if ! handshakes=$(wg show "$iface" latest-handshakes 2>&1); then
    if [ "$once" = 1 ]; then echo "wg-endpoints: $iface: $handshakes" >&2; exit 2; fi
    if [ "$gone" = 0 ]; then echo "wg-endpoints: $iface: $handshakes; waiting for the interface" >&2; gone=1; fi
    sleep "$interval"
    continue
  fi
  gone=0
  while read -r key ts; do [ -z "$key" ] || handshake[$key]=$ts; done <<<"$handshakes"
  while read -r key endpoint; do [ -z "$key" ] || at[$key]=$endpoint; done < <(wg show "$iface" endpoints)
  while read -r key r t; do [ -z "$key" ] || { rx[$key]=$r tx[$key]=$t; }; done < <(wg show "$iface" transfer)
  left=0
  while read -r key endpoint; do
    [ -n "\${handshake[$key]:-}" ] || continue
    was=\${at[$key]:-(none)}
    if [ "$was" != "(none)" ]; then
      r=\${rx[$key]:-0} t=\${tx[$key]:-0}
      # Unanswered: more sent since anything was received than the one keepalive (32 bytes) WireGuard sends, with
      # no answer due, 10 s after it receives data.
      if [ "$r" != "\${rx_last[$key]:-}" ]; then
        tx_base[$key]=$t
        unset "unanswered[$key]"
      elif [ $((t - \${tx_base[$key]})) -gt 32 ] && [ -z "\${unanswered[$key]:-}" ]; then
        unanswered[$key]=$now
      fi
      rx_last[$key]=$r
      # failing: no session, and sent to for $quiet s unanswered, or no route (then nothing is counted sent)
      failing=0
      if [ $((now - \${handshake[$key]})) -gt "$stale" ]; then
        if [ -n "\${unanswered[$key]:-}" ] && [ $((now - \${unanswered[$key]})) -ge "$quiet" ]; then
          failing=1
        else
          if [ "\${checked[$key]:-}" != "$was" ] || [ $((now - \${checked_at[$key]})) -ge "$quiet" ]; then
            checked[$key]=$was checked_at[$key]=$now noroute[$key]=0
            routable "$was" || noroute[$key]=1
          fi
          failing=\${noroute[$key]}
        fi
      fi
      if [ "$failing" = 0 ]; then unset "next[$key]" "backoff[$key]" "said[$key]"; continue; fi
      if [ -z "\${said[$key]:-}" ]; then
        why="is not answering"
        [ "\${noroute[$key]:-0}" = 0 ] || why="has no route"
        echo "wg-endpoints: $iface: peer $key at $was $why: resolving $endpoint again" >&2
        said[$key]=1
      fi
    fi
    [ "\${next[$key]:-0}" -le "$now" ] || continue
    w=\${backoff[$key]:-$interval}
    next[$key]=$((now + w)) backoff[$key]=$((w * 2 < max ? w * 2 : max))
    host=\${endpoint%:*} port=\${endpoint##*:}
    # its addresses in getaddrinfo's order (wg takes the first); while the peer fails, the one after the failing one
    address=$(timeout "$lookup_timeout" getent ahosts "$host" | awk -v was="$was" -v port="$port" '
      { a = $1; if (a ~ /:/) a = "[" a "]"; a = a ":" port } !seen[a]++ { list[n++] = a }
      END { for (i = 0; i < n; i++) if (list[i] == was) { print list[(i + 1) % n]; exit } if (n) print list[0] }')
    if [ -z "$address" ]; then
      if [ "$was" = "(none)" ]; then
        echo "wg-endpoints: $iface: $endpoint does not resolve yet: peer $key has no endpoint; next try in $w s" >&2
        left=1
      else
        echo "wg-endpoints: $iface: $endpoint does not resolve: peer $key keeps $was; next try in $w s" >&2
      fi
      continue
    fi
    [ "$address" != "$was" ] || continue
    flock 9 || continue
    # under wg-reload's lock, only if a reload has not removed the peer or set its endpoint meanwhile
    current=$(wg show "$iface" endpoints | awk -v k="$key" '$1 == k { print $2 }')
    if [ "$current" = "$was" ] && wg set "$iface" peer "$key" endpoint "$address"; then
      if [ "$was" = "(none)" ]; then
        echo "wg-endpoints: $iface: peer $key at $endpoint ($address)"
      else
        echo "wg-endpoints: $iface: peer $key at $endpoint ($address): $was was not answering"
      fi
    fi
    flock -u 9
  done <<<"$names"
  if [ "$once" = 1 ]; then exit "$left"; fi
  sleep "$interval"
done
`;

export const WG_ENDPOINTS_FILE: HostFile = { path: WG_ENDPOINTS_PATH, mode: 0o755, owner: 'root:root', content: WG_ENDPOINTS_SCRIPT };

/**
 * The unit that sets an interface's hostname endpoints after it is up and keeps them working: the script runs until
 * stopped while the config has a name (with none it exits 0 at once, and the unit is inactive). Bound to the interface
 * (stopped and restarted with it: `BindsTo=`), pulled in by it (`Wants=` in the interface's drop-in), and nothing
 * waits for it: the distribution's unit is ordered after the interface only, so it starts while a name is still
 * unresolved. Restarted 10 s after it ends any way but exit 0, the end of a config without names (`Restart=always`:
 * `on-failure` counts a stray SIGTERM, SIGHUP or SIGPIPE as clean, systemd.service(5) `SuccessExitStatus=`), and
 * never refused a start: each reload restarts it, and five reloads within 10 s would otherwise hit systemd's default
 * start limit (`StartLimitBurst=5` per `StartLimitIntervalSec=10s`, systemd.unit(5)), which the reload's `-` would hide.
 */
export function wireguardEndpointsUnitContent(iface: string): string {
  const wgUnit = `wg-quick@${iface}.service`;
  return [
    '[Unit]',
    `Description=tunnelwright: set the hostname endpoints of ${iface}'s peers once it is up`,
    `After=${wgUnit} network-online.target nss-lookup.target`,
    `BindsTo=${wgUnit}`,
    'StartLimitIntervalSec=0',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${WG_ENDPOINTS_PATH} ${iface}`,
    'Restart=always',
    'RestartPreventExitStatus=0',
    'RestartSec=10',
    '',
  ].join('\n');
}

/**
 * The drop-in that makes `systemctl reload <wg-quick unit>` apply the config and keep the keys: each secret is first
 * resolved again from its source (`refresh`: a key rotated at its source is applied by the reload), then the reload
 * script syncs the config with it; then the endpoints unit (`endpointsUnit`) is restarted, so it reads the new config:
 * `wg syncconf` re-creates a peer whose key changed (or adds a new one) without an endpoint, since the name is only a
 * comment, and the unit sets it, retrying until the name resolves.
 * `--no-block`: the unit is ordered `After=` the interface, so its start job waits for this reload job to finish;
 * a blocking `systemctl` here would wait on itself (systemctl(1), `--no-block`). `-`: never fails the reload.
 */
export function wireguardReloadDropin(unit: string, refresh: readonly string[] = [], endpointsUnit?: string): HostDropin {
  const lines = ['[Service]', 'ExecReload=', ...refresh.map((c) => `ExecReload=${c}`), `ExecReload=${WG_RELOAD_PATH} %i`];
  if (endpointsUnit) lines.push(`ExecReload=-/usr/bin/systemctl restart --no-block ${endpointsUnit}`);
  return { unit, name: '20-tunnelwright-reload.conf', content: `${lines.join('\n')}\n` };
}
