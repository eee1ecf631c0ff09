#!/bin/bash
# tunnelwright: keep working the endpoints of peers dialled by name ("$deferred host:port" in CONFIG).
# usage: wg-endpoints [--once] INTERFACE [CONFIG]
set -uo pipefail
once=0
if [ "${1:-}" = --once ]; then once=1; shift; fi
iface=$1
conf=${2:-/etc/wireguard/$iface.conf}
interval=${WG_ENDPOINTS_INTERVAL:-10}
max=${WG_ENDPOINTS_MAX_INTERVAL:-300}
stale=${WG_ENDPOINTS_STALE:-180}
quiet=${WG_ENDPOINTS_QUIET:-30}
lookup_timeout=${WG_ENDPOINTS_LOOKUP_TIMEOUT:-5}
lock=${WG_LOCK:-/run/tunnelwright/wg-$iface.lock}
deferred='# tunnelwright: Endpoint = '
if [ ! -r "$conf" ]; then echo "wg-endpoints: $iface: cannot read $conf" >&2; exit 1; fi
names=$(sed -n -e 's/^PublicKey = \([^ ]*\)$/\1/p' -e "s/^$deferred\\([^ ]*\\)\$/endpoint \\1/p" "$conf" | awk '$1 == "endpoint" { print key, $2; next } { key = $1 }')
[ -n "$names" ] || exit 0
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
# whether the host routes an endpoint's address, as the interface's own packets (its fwmark), other than through itself
routable() {
  local address=${1%:*} mark route
  address=${address#[}
  address=${address%]}
  mark=$(wg show "$iface" fwmark 2>/dev/null)
  if [ -n "$mark" ] && [ "$mark" != off ]; then set -- mark "$mark"; else set --; fi
  route=$(ip route get "${address%%%*}" "$@" 2>/dev/null) || return 1
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
    [ -n "${handshake[$key]:-}" ] || continue
    was=${at[$key]:-(none)}
    if [ "$was" != "(none)" ]; then
      r=${rx[$key]:-0} t=${tx[$key]:-0}
      # Unanswered: more sent since anything was received than the one keepalive (32 bytes) WireGuard sends, with
      # no answer due, 10 s after it receives data.
      if [ "$r" != "${rx_last[$key]:-}" ]; then
        tx_base[$key]=$t
        unset "unanswered[$key]"
      elif [ $((t - ${tx_base[$key]})) -gt 32 ] && [ -z "${unanswered[$key]:-}" ]; then
        unanswered[$key]=$now
      fi
      rx_last[$key]=$r
      # failing: no session, and sent to for $quiet s unanswered, or no route (then nothing is counted sent)
      failing=0
      if [ $((now - ${handshake[$key]})) -gt "$stale" ]; then
        if [ -n "${unanswered[$key]:-}" ] && [ $((now - ${unanswered[$key]})) -ge "$quiet" ]; then
          failing=1
        else
          if [ "${checked[$key]:-}" != "$was" ] || [ $((now - ${checked_at[$key]})) -ge "$quiet" ]; then
            checked[$key]=$was checked_at[$key]=$now noroute[$key]=0
            routable "$was" || noroute[$key]=1
          fi
          failing=${noroute[$key]}
        fi
      fi
      if [ "$failing" = 0 ]; then unset "next[$key]" "backoff[$key]" "said[$key]"; continue; fi
      if [ -z "${said[$key]:-}" ]; then
        why="is not answering"
        [ "${noroute[$key]:-0}" = 0 ] || why="has no route"
        echo "wg-endpoints: $iface: peer $key at $was $why: resolving $endpoint again" >&2
        said[$key]=1
      fi
    fi
    [ "${next[$key]:-0}" -le "$now" ] || continue
    w=${backoff[$key]:-$interval}
    next[$key]=$((now + w)) backoff[$key]=$((w * 2 < max ? w * 2 : max))
    host=${endpoint%:*} port=${endpoint##*:}
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
