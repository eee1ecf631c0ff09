#!/bin/sh
# shellcheck disable=SC2154 # dev and ifconfig_local: OpenVPN's environment for --up; the rest: the settings block
# tunnelwright: OpenVPN --up (route-noexec: no routes of OpenVPN's). The address into the kill switch first (in a file
# the table includes, so a reload keeps it; the table itself loaded again when a flush removed it), then policy routing
# for tunnel-sourced traffic, then the re-steer hook. A failure exits non-zero: OpenVPN ends the connect, closed.
set -eu
# @settings
mkdir -p "$LEARNT_DIR"
echo "add element inet $TABLE $SET { $ifconfig_local }" > "$LEARNT_DIR/openvpn.nft.partial"
mv -f "$LEARNT_DIR/openvpn.nft.partial" "$LEARNT_DIR/openvpn.nft"
# After `nft flush ruleset` (nftables.service, or /etc/nftables.conf by hand) the table is gone: load it again, with
# the address just written.
nft list table inet "$TABLE" >/dev/null 2>&1 || nft -f "$NFT_PATH"
nft add element inet "$TABLE" "$SET" "{ $ifconfig_local }"
# shellcheck disable=SC2086 # BLACKHOLE is words for ip
ip -4 route replace $BLACKHOLE
# Only this address's rules: an earlier address's (a reconnect that was given a new one) stay, its hold included, so
# what Cilium still sends from it while the label names it (the re-steer failing, or not read yet) is dropped here,
# never routed by the main table to the WAN. This address's own hold (from an earlier down) goes.
while ip -4 rule del from "$ifconfig_local" priority "$HOLD_PRIORITY" 2>/dev/null; do :; done
while ip -4 rule del from "$ifconfig_local" priority "$PRIORITY" 2>/dev/null; do :; done
ip -4 rule add from "$ifconfig_local" lookup "$TABLE_ID" priority "$PRIORITY"
ip -4 route replace default dev "$dev" table "$TABLE_ID"
"$RESTEER" || true
