#!/bin/sh
# shellcheck disable=SC2154 # the settings block: NODE, OTHERS, IFACE, TUNNEL, LEASE, LEASE_NAMESPACE, LEASE_DURATION, INTERVAL, HEALTHY_CHECKS, UNHEALTHY_CHECKS, HANDSHAKE_MAX_AGE, PROBE_URL, LABEL, TEXTFILE, POLICY, REQUEST_TIMEOUT (and KUBECONFIG_FILE)
# tunnelwright egress failover agent, one per candidate gateway node (a systemd service). It holds the policy's
# coordination.k8s.io/v1 Lease only while this node's tunnel is healthy, and labels this node's Node and CiliumNode
# <LABEL>=true while it holds it; the CiliumEgressGatewayPolicy selects that label. Rules:
# - health: the interface is up, its WireGuard peer's latest handshake younger than HANDSHAKE_MAX_AGE, and PROBE_URL
#   (when set) answers through the interface; HEALTHY_CHECKS good checks in a row before it takes the role,
#   UNHEALTHY_CHECKS bad ones before the holder gives it up (hysteresis). A healthy holder keeps it: no failback.
# - the Lease is taken only when it has no holder or its resourceVersion has not changed for LEASE_DURATION seconds
#   (client-go's leader election measures expiry the same way: by its own clock, never by the holder's renewTime);
#   every write carries the resourceVersion read, so of two agents racing only one succeeds (409 Conflict).
# - a new holder removes the label from every other candidate before it labels itself: the label moves even when the
#   old holder is frozen or cut off from the API, and two labelled nodes never coexist by its doing (Cilium would take
#   the first by name). The gap between is Cilium's drop when no node matches: closed.
# - a node that does not hold the Lease, or gives it up, removes its own label first.
# - label writes only while the Lease was renewed less than LEASE_DURATION/2 ago (checked before each write): a late
#   write never lands after a standby may have taken the Lease. The holder relabels every loop and renews only when
#   labelling itself succeeded; when it cannot (a candidate removed from RBAC), it fences and releases the Lease.
set -u
# @settings
if [ -z "${KUBECTL:-}" ]; then
  if command -v kubectl >/dev/null 2>&1; then KUBECTL=kubectl
  elif command -v k3s >/dev/null 2>&1; then KUBECTL="k3s kubectl"
  elif command -v k0s >/dev/null 2>&1; then KUBECTL="k0s kubectl"
  else echo "egress-failover: no kubectl, k3s or k0s on this node (set KUBECTL)" >&2; exit 1
  fi
fi
if [ -n "${KUBECONFIG_FILE:-}" ]; then export KUBECONFIG="$KUBECONFIG_FILE"; fi

k() {
  # shellcheck disable=SC2086 # KUBECTL may be two words (k3s kubectl)
  $KUBECTL --request-timeout="${REQUEST_TIMEOUT}s" "$@"
}

# Centiseconds since boot: every time delta is measured on this clock, which an NTP step does not move.
up() { read -r u _ < /proc/uptime; echo $((${u%.*} * 100 + 1${u#*.} - 100)); }

# The Lease was renewed (or taken) less than LEASE_DURATION/2 ago: a label write is allowed.
fresh() { [ $(($(up) - renewed_at)) -lt $((LEASE_DURATION * 50)) ]; }

healthy() {
  ip -o link show dev "$IFACE" 2>/dev/null | grep -q 'state \(UP\|UNKNOWN\)' || return 1
  if [ "$TUNNEL" = wireguard ]; then
    latest=$(wg show "$IFACE" latest-handshakes 2>/dev/null | awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }')
    [ -n "$latest" ] && [ "$latest" -gt 0 ] || return 1
    # wg reports wall-clock seconds, which an NTP step moves: the handshake's age is counted on the boot clock from
    # the check that first saw its value (only the first value seen after start is aged by the wall clock once).
    if [ "$latest" != "$hs_seen" ]; then
      if [ -z "$hs_seen" ]; then age=$(($(date +%s) - latest)); [ "$age" -ge 0 ] || age=0; hs_at=$((now - age * 100)); else hs_at=$now; fi
      hs_seen=$latest
    fi
    [ $((now - hs_at)) -le $((HANDSHAKE_MAX_AGE * 100)) ] || return 1
  fi
  if [ -n "$PROBE_URL" ]; then
    curl -fsS --interface "$IFACE" --max-time 3 -o /dev/null "$PROBE_URL" 2>/dev/null || return 1
  fi
  return 0
}

label_self() {
  fresh && k label node "$NODE" --overwrite "$LABEL=true" >/dev/null && fresh && k label ciliumnode "$NODE" --overwrite "$LABEL=true" >/dev/null
}

unlabel_others() {
  [ -n "$OTHERS" ] || return 0
  # shellcheck disable=SC2086 # OTHERS is a list of node names; one call per kind whatever their number
  fresh && k label node $OTHERS "$LABEL-" >/dev/null 2>&1
  # shellcheck disable=SC2086
  fresh && k label ciliumnode $OTHERS "$LABEL-" >/dev/null 2>&1
  return 0
}

unlabel() {
  # kubectl exits 0 when the label is not there ("not labeled").
  k label node "$1" "$LABEL-" >/dev/null 2>&1
  k label ciliumnode "$1" "$LABEL-" >/dev/null 2>&1
}

# Prints the Lease's new resourceVersion.
patch_lease() {
  k patch lease "$LEASE" -n "$LEASE_NAMESPACE" --type=merge -p "{\"metadata\":{\"resourceVersion\":\"$1\"},\"spec\":$2}" -o jsonpath='{.metadata.resourceVersion}'
}

# Labelling itself failed while holding the Lease at resourceVersion $1: fence, give the Lease up, and count healthy
# checks again before taking it (a healthy standby goes first).
release() {
  unlabel "$NODE"; holding=0; good=0
  patch_lease "$1" '{"holderIdentity":null}' >/dev/null || true
  echo "egress-failover: could not label $NODE: released the role" >&2
}

micro_now() { date -u +%Y-%m-%dT%H:%M:%S.000000Z; }

metrics() {
  [ -n "$TEXTFILE" ] || return 0
  {
    echo "# HELP tunnelwright_egress_failover_healthy Whether this candidate's tunnel passes the failover agent's health check (1) or not (0)."
    echo "# TYPE tunnelwright_egress_failover_healthy gauge"
    echo "tunnelwright_egress_failover_healthy{policy=\"$POLICY\"} $1"
    echo "# HELP tunnelwright_egress_failover_holder Whether this node holds the egress gateway role (1) or not (0)."
    echo "# TYPE tunnelwright_egress_failover_holder gauge"
    echo "tunnelwright_egress_failover_holder{policy=\"$POLICY\"} $2"
  } > "$TEXTFILE.$$" && mv "$TEXTFILE.$$" "$TEXTFILE"
}

# Stopped while the system shuts down (systemd sends TERM; systemctl is-system-running says "stopping"), or where the
# system's state cannot be read: when this node holds the Lease, fence and release it so a healthy standby takes the
# role at its next check instead of after LEASE_DURATION. The unit is ordered after the tunnel's, so at shutdown this
# runs while the tunnel is still up.
# Stopped while the system runs (systemctl restart of this unit, host files re-delivered, an operator's stop): the role
# stays (the Lease and the label as they are; the tunnel still carries the traffic). A restarted agent renews a Lease
# that names it at its first check (holding=1 below); one that does not come back loses the role when the Lease is
# LEASE_DURATION old, to a healthy standby, which removes this node's label.
on_stop() {
  case $(systemctl is-system-running 2>/dev/null) in
    running|degraded|starting|initializing|maintenance)
      echo "egress-failover: stopped while the system runs: the role stays as it is (a restarted agent renews it)" >&2
      exit 0 ;;
  esac
  if read=$(k get lease "$LEASE" -n "$LEASE_NAMESPACE" -o jsonpath='{.metadata.resourceVersion}{" "}{.spec.holderIdentity}') && [ "${read#* }" = "$NODE" ]; then
    unlabel "$NODE"
    patch_lease "${read%% *}" '{"holderIdentity":null}' >/dev/null && echo "egress-failover: stopping: released the role" >&2
  elif [ "$holding" = 1 ]; then
    unlabel "$NODE"
  fi
  exit 0
}
trap on_stop TERM INT

# holding=1 at start: the first read settles it, and a label left from before a reboot goes unless the Lease is ours.
good=0 bad=0 holding=1 hs_seen="" hs_at=0 seen_rv="" seen_at=0 renewed_at=-100000 transitions=0
while :; do
  now=$(up)
  if healthy; then good=$((good + 1)); bad=0; else bad=$((bad + 1)); good=0; fi
  keep=0; [ "$bad" -lt "$UNHEALTHY_CHECKS" ] && keep=1
  if read=$(k get lease "$LEASE" -n "$LEASE_NAMESPACE" -o jsonpath='{.metadata.resourceVersion}{" "}{.spec.holderIdentity}{" "}{.spec.leaseTransitions}'); then
    rv=${read%% *}; rest=${read#* }; holder=${rest%% *}; transitions=${rest#* }
    [ -n "$transitions" ] || transitions=0
    if [ "$rv" != "$seen_rv" ]; then seen_rv=$rv; seen_at=$now; fi
    if [ "$holder" = "$NODE" ] && [ "$keep" = 1 ]; then
      if fresh; then
        # Relabel every loop (the others' labels off first), and renew only when this node carries the label.
        unlabel_others
        if label_self; then
          t=$(up)
          if patch_lease "$rv" "{\"renewTime\":\"$(micro_now)\"}" >/dev/null; then renewed_at=$t; seen_rv=""; holding=1; fi
        elif fresh; then
          release "$rv"
        fi
      else
        # The last renewal is too old to write labels under: renew first (a 409 is settled at the next read).
        t=$(up)
        if patch_lease "$rv" "{\"renewTime\":\"$(micro_now)\"}" >/dev/null; then renewed_at=$t; seen_rv=""; fi
      fi
    elif [ "$holder" = "$NODE" ]; then
      # Unhealthy for UNHEALTHY_CHECKS checks: fence (own label off) first, then give the Lease up so a healthy
      # standby takes it at once instead of after LEASE_DURATION.
      unlabel "$NODE"; holding=0
      patch_lease "$rv" '{"holderIdentity":null}' >/dev/null || true
      echo "egress-failover: $IFACE unhealthy for $bad checks: gave up the role" >&2
    elif [ "$good" -ge "$HEALTHY_CHECKS" ] && { [ -z "$holder" ] || [ $((now - seen_at)) -ge $((LEASE_DURATION * 100)) ]; }; then
      [ "$holding" = 0 ] || unlabel "$NODE"
      holding=0
      t=$(up); m=$(micro_now)
      if nrv=$(patch_lease "$rv" "{\"holderIdentity\":\"$NODE\",\"leaseDurationSeconds\":$LEASE_DURATION,\"acquireTime\":\"$m\",\"renewTime\":\"$m\",\"leaseTransitions\":$((transitions + 1))}"); then
        renewed_at=$t; seen_rv=""
        unlabel_others
        if label_self; then holding=1; echo "egress-failover: took the role from ${holder:-nobody}" >&2
        elif fresh; then release "$nrv"
        fi
      fi
    elif [ "$holding" = 1 ]; then
      unlabel "$NODE"; holding=0
      echo "egress-failover: ${holder:-nobody} holds the role now" >&2
    fi
  elif [ "$holding" = 1 ] && [ $((now - renewed_at)) -ge $((LEASE_DURATION * 100)) ]; then
    # Cut off from the API for a whole lease: another candidate may hold it now. The label cannot be removed from
    # here; the new holder removes it.
    holding=0
    unlabel "$NODE" || true
    echo "egress-failover: no renewal for ${LEASE_DURATION}s: no longer the holder" >&2
  fi
  [ "$good" -gt 0 ] && h=1 || h=0
  metrics "$h" "$holding"
  # In the background: a TERM runs on_stop at once, not after the sleep.
  sleep "$INTERVAL" & wait $!
done
