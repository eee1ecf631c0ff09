#!/bin/sh
# The VPN_PORT_FORWARDING_DOWN_COMMAND of gluetun, written by tunnelwright: empties the chains port-forward-up.sh fills
# (TW-PF-DNAT in the nat table, TW-PF-FORWARD in the filter table), so no DNAT of a port the VPN no longer forwards
# stays. gluetun runs it on a clean stop (internal/portforward/service/stop.go:28-41 at v3.41.1), without a shell: it
# is held in single quotes in the command gluetun splits (internal/command/split.go). Chains not there yet are no error.
# No single quote may appear in this file.
iptables -t nat -F TW-PF-DNAT 2>/dev/null || true; iptables -F TW-PF-FORWARD 2>/dev/null || true
