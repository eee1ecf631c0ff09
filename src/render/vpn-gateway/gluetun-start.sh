#!/bin/sh
# tunnelwright: gluetun's WireGuard command. gluetun adds an `ip rule` for table 51820 and, after an unclean exit (an
# OOM kill), leaves it in the pod's network namespace: the restarted container then fails with "file exists"
# (internal/wireguard/rule.go). The stale rules go before the image's entrypoint starts, so none can race it.
while ip rule del table 51820 2>/dev/null; do :; done; while ip -6 rule del table 51820 2>/dev/null; do :; done; exec /gluetun-entrypoint
