#!/bin/sh
# shellcheck disable=SC2154 # NODE, IFACE, LABEL (and KUBECONFIG_FILE): the settings block
# tunnelwright egress re-steer: Cilium caches the egress interface; a new <address>-<ifindex> label on the Node and
# the CiliumNode makes it re-select the tunnel after every reconnect. Run by the tunnel on connect and by a timer.
set -eu
# @settings
if [ -z "${KUBECTL:-}" ]; then
  # kubectl, or the distribution's own (k3s and k0s ship one).
  if command -v kubectl >/dev/null 2>&1; then KUBECTL=kubectl
  elif command -v k3s >/dev/null 2>&1; then KUBECTL="k3s kubectl"
  elif command -v k0s >/dev/null 2>&1; then KUBECTL="k0s kubectl"
  else echo "egress-resteer: no kubectl, k3s or k0s on this node (set KUBECTL)" >&2; exit 1
  fi
fi
# The kubeconfig is read again on each run: a rotated token is used from the next run on, without a reboot.
if [ -n "${KUBECONFIG_FILE:-}" ]; then export KUBECONFIG="$KUBECONFIG_FILE"; fi
value=""
# TUNNELWRIGHT_TUNNEL_DOWN: called from a down hook that runs while the interface still exists (OpenVPN --down-pre).
if [ -z "${TUNNELWRIGHT_TUNNEL_DOWN:-}" ] && [ -r "/sys/class/net/$IFACE/ifindex" ]; then
  ifindex=$(cat "/sys/class/net/$IFACE/ifindex")
  addr=$(ip -o -4 addr show dev "$IFACE" | awk '{ split($4, a, "/"); print a[1]; exit }')
  if [ -z "$addr" ]; then
    # An IPv6 address is written with "." for ":" (a label value has no ":"), and never starts with ".".
    addr=$(ip -o -6 addr show dev "$IFACE" scope global | awk '{ split($4, a, "/"); print a[1]; exit }' | tr ':' '.' | sed 's/^\./0./')
  fi
  [ -z "$addr" ] || value="$addr-$ifindex"
fi
for kind in node ciliumnode; do
  if [ -n "$value" ]; then
    # shellcheck disable=SC2086 # KUBECTL may be two words (k3s kubectl)
    $KUBECTL label "$kind" "$NODE" --overwrite --request-timeout=10s "$LABEL=$value"
  else
    # shellcheck disable=SC2086
    $KUBECTL label "$kind" "$NODE" --request-timeout=10s "$LABEL-" || true
  fi
done
