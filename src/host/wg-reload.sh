#!/bin/bash
# tunnelwright: reload a wg-quick interface from its config without losing the keys its PostUp lines set from
# root-only files. usage: wg-reload INTERFACE [CONFIG]
set -euo pipefail
iface=$1
conf=${2:-/etc/wireguard/$iface.conf}
# The lock wg-endpoints takes to set an endpoint: a peer this reload removes is never added back by it.
lock=${WG_LOCK:-/run/tunnelwright/wg-$iface.lock}
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
flock 9
stripped=$(wg-quick strip "$conf")
key_file=$(sed -n 's/^PostUp = wg set %i private-key \([^ ]*\)$/\1/p' "$conf" | head -n 1)
merged() {
  local line
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [ "$line" = "[Interface]" ] && [ -n "$key_file" ]; then printf 'PrivateKey = %s\n' "$(<"$key_file")"; fi
  done <<<"$stripped"
}
wg syncconf "$iface" <(merged)
sed -n 's/^PostUp = wg set %i peer \([^ ]*\) preshared-key \([^ ]*\)$/\1 \2/p' "$conf" | while read -r peer file; do
  wg set "$iface" peer "$peer" preshared-key "$file"
done
