#!/bin/sh
# shellcheck disable=SC2154 # RESTEER, HOLD_PRIORITY: the settings block
# shellcheck disable=SC2154 # ifconfig_local: OpenVPN's environment for --down
# tunnelwright: OpenVPN --down. The rule from the tunnel address stays, and with the tunnel's route gone the table's
# blackhole takes its traffic: it never falls through to the main table (and eth0) while the label still points here.
# The address is also held (a blackhole rule from it, above the table's): a reconnect that is given another address
# routes the table to the new tun0, and this address's traffic (Cilium's cached egress IP until the label names the
# new one) is dropped rather than sent from a wrong address. Only this address's rules are touched. The kill switch
# keeps the address too. The hook removes the label: the interface is going.
# @settings
if [ -n "${ifconfig_local:-}" ]; then
  while ip -4 rule del from "$ifconfig_local" priority "$HOLD_PRIORITY" 2>/dev/null; do :; done
  ip -4 rule add from "$ifconfig_local" blackhole priority "$HOLD_PRIORITY" || true
fi
TUNNELWRIGHT_TUNNEL_DOWN=1 "$RESTEER" || true
