#!/bin/bash
# tunnelwright: wg syncconf with the keys PostUp sets from files. usage: wg-reload INTERFACE [CONFIG]
set -euo pipefail
iface=$1
conf=${2:-/etc/wireguard/$iface.conf}
lock=${WG_LOCK:-/run/tunnelwright/wg-$iface.lock}
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
flock 9
stripped=$(wg-quick strip "$conf")
key_file=$(sed -n 's/^PostUp = wg set %i private-key \([^ ]*\)$/\1/p' "$conf" | head -n 1)
key=
if [ -n "$key_file" ] && ! { [ -r "$key_file" ] && key=$(cat -- "$key_file") && [ -n "$key" ]; }; then
  echo "wg-reload: $iface: cannot read $key_file: left as it is" >&2; exit 1
fi
merged() {
  local line
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [ "$line" = "[Interface]" ] && [ -n "$key" ]; then printf 'PrivateKey = %s\n' "$key"; fi
  done <<<"$stripped"
}
wg syncconf "$iface" <(merged)
sed -n 's/^PostUp = wg set %i peer \([^ ]*\) preshared-key \([^ ]*\)$/\1 \2/p' "$conf" | while read -r peer file; do
  wg set "$iface" peer "$peer" preshared-key "$file"
done
