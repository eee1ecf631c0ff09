#!/bin/sh
# shellcheck disable=SC2154 # IFACE, DIR, METRIC: the settings block
# tunnelwright: the tunnel's latest WireGuard handshake, for node-exporter's textfile collector (VPNTunnelHandshakeStale).
set -eu
# @settings
OUT="$DIR/tunnelwright_wireguard_$IFACE.prom"
mkdir -p "$DIR"
# Not *.prom: the collector never reads a half-written file; removed when anything fails (the last good file stays,
# its handshake ageing until VPNTunnelHandshakeStale fires).
tmp="$OUT.$$"
trap 'rm -f "$tmp"' EXIT
{
  echo "# HELP $METRIC Unix time of the latest handshake with the peer (0: never)."
  echo "# TYPE $METRIC gauge"
  # wg fails when the interface is gone (no sample: VPNTunnelDown); awk's own failure fails the script.
  { wg show "$IFACE" latest-handshakes 2>/dev/null || true; } | awk -v m="$METRIC" -v i="$IFACE" 'NF == 2 { printf "%s{interface=\"%s\",public_key=\"%s\"} %s\n", m, i, $1, $2 }'
} > "$tmp"
mv -f "$tmp" "$OUT"
