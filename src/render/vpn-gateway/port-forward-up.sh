#!/bin/sh
# The VPN_PORT_FORWARDING_UP_COMMAND of gluetun, written by tunnelwright: DNATs the port the VPN provider forwards to the
# routed workload over the VXLAN. gluetun replaces {{PORT}} in the command and runs it without a shell
# (internal/portforward/service/command.go:20-28 at v3.41.1): the values arrive as arguments, never in this text.
#   $1 the forwarded port; $2 the VXLAN address of the workload; $3 the port of the workload (a fixed toPort, or "same": the
#   forwarded port itself); $4 the ports the pod of the workload serves itself, comma-separated (its Web UI or RPC port,
#   the port of a daemon, the metrics port of port-sync): a forwarded port equal to one of them is never DNATed, so a provider
#   that happens to forward 8080 does not put the Web UI of the app on the internet.
# The rules live in chains of their own that this empties before it adds the rules of the port, and that the down command
# empties: what an earlier gluetun left behind cannot stay or stack. gluetun runs the down command only from a clean
# stop (internal/portforward/service/stop.go:28-41); an OOM kill or a crash skips it, and the restarted gluetun runs
# this again in the same pod network namespace, whose nat table gluetun never flushes (firewall/iptables.go:88-93
# flushes the filter table only when the firewall is disabled; firewall/enable.go:74-76 sets policies only).
# No single quote may appear in this file: the command of gluetun holds it in one.
set -u
port=$1
to=$2
to_port=$3
[ "$to_port" = same ] && to_port=$port
iptables -t nat -N TW-PF-DNAT 2>/dev/null || true
iptables -t nat -F TW-PF-DNAT
iptables -t nat -C PREROUTING -j TW-PF-DNAT 2>/dev/null || iptables -t nat -I PREROUTING 1 -j TW-PF-DNAT
iptables -N TW-PF-FORWARD 2>/dev/null || true
iptables -F TW-PF-FORWARD
# Before the `-A FORWARD -i tun0 -j REJECT` of pod-gateway (gateway_init.sh:102).
iptables -C FORWARD -j TW-PF-FORWARD 2>/dev/null || iptables -I FORWARD 1 -j TW-PF-FORWARD
for served in $(echo "$4" | tr , " "); do
  if [ "$port" = "$served" ] || [ "$to_port" = "$served" ]; then
    echo "tunnelwright: the VPN forwards port $port, and the routed pod serves port $served itself (its Web UI, RPC or metrics): not forwarded, so that port never faces the internet; reconnect the VPN for another port (restart gluetun)" >&2
    exit 1
  fi
done
for proto in tcp udp; do
  iptables -t nat -A TW-PF-DNAT -i tun0 -p "$proto" --dport "$port" -j DNAT --to-destination "$to:$to_port"
  iptables -A TW-PF-FORWARD -i tun0 -d "$to" -p "$proto" --dport "$to_port" -j ACCEPT
done
