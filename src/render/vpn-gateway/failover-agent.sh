#!/bin/sh
# shellcheck disable=SC2154 # POD_NAME, PEER_POD, NAMESPACE, LEASE: the container's environment
# tunnelwright failover agent: one in each of a VpnGateway's two pods. The pod holds the gateway role (the
# coordination.k8s.io/v1 Lease LEASE, and the ROLE_LABEL=active label the gateway's Service selects) only while its
# own tunnel is healthy: gluetun's health server (HEALTH_URL) answers 200, the tunnel interface PROBE_INTERFACE
# (gluetun's VPN_INTERFACE) exists and is up, and, with PROBE_URL, an HTTP request out of it gets an answer.
# gluetun's server alone flips only at its next check, once a minute, after retries of up to 120 s
# (internal/healthcheck/checker.go:89-175 at v3.41.1): a tunnel that died silently would hold the role for 60 to 180 s.
# Nor does it ever flip when the tunnel is stopped: the health errors' collector returns when the tunnel's context ends
# without resetting the server's last answer (internal/vpn/tunnelup.go:89-95 at v3.41.1), so it answers 200 after
# OpenVPN exited. The interface catches that: OpenVPN's tun0 is deleted when its process exits (gluetun adds
# persist-tun only for a non-root OPENVPN_PROCESS_USER, internal/provider/utils/openvpn.go:161-165; root is the
# default, internal/configuration/settings/openvpn.go:313), and gluetun deletes its WireGuard link (kernel) or closes
# its TUN (userspace) when the tunnel stops (internal/wireguard/run.go:96-98, :167-169, :190). Any HTTP status passes
# the probe (the round trip crossed the tunnel); no answer fails it.
#   - the verdict (healthy after ACQUIRE_AFTER good checks in a row, unhealthy after RELEASE_AFTER bad ones) is written
#     at every check to STATE_DIR/verdict ("healthy|unhealthy EXPIRES", EXPIRES in seconds since boot), which the
#     container's readinessProbe reads (failover-ready.sh): the pod is Ready while its tunnel is, holder or standby,
#     and it has read the Lease within LEASE_SECONDS (a pod cut off from the API could not take the role);
#     The role never outlives the verdict: the check that turns a holder's verdict unhealthy fences it and frees the Lease;
#   - a standby takes the role only after ACQUIRE_AFTER healthy checks in a row, and only when the Lease is free or
#     has not changed for LEASE_SECONDS by its own clock (client-go's leaderelection observedTime: no clock is shared);
#   - the holder renews while healthy (no failback: a recovered standby never takes the role from a healthy holder),
#     and gives the role up after RELEASE_AFTER failed checks in a row;
#   - every write carries the resourceVersion read (a 409 means someone else wrote first: read again next period);
#   - a pod without the role is fenced: FENCE_LINK (pod-gateway's vxlan0) is down, so its clients' heartbeat fails
#     and they re-resolve the gateway's name (client_sidecar.sh :20, client_init.sh :53); a holder that cannot renew
#     fences itself (a watchdog beside the loop, so a slow API call cannot delay it) RENEW_MARGIN seconds before the
#     Lease can expire for the standby.
set -u
# The API by the address the kubelet puts in every container's environment, as client-go's InClusterConfig does, never by
# name: gluetun (DNS_SERVER=off) rewrites the pod's shared /etc/resolv.conf to its own upstream (internal/dns/run.go,
# internal/dns/plaintext.go at v3.41.1), where kubernetes.default.svc does not resolve.
api_host=${KUBERNETES_SERVICE_HOST:-}
case $api_host in *:*) api_host="[$api_host]" ;; esac
API_URL=${API_URL:-https://$api_host:${KUBERNETES_SERVICE_PORT:-443}}
SA_DIR=${SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
HEALTH_URL=${HEALTH_URL:-http://127.0.0.1:9999/}
PROBE_URL=${PROBE_URL:-}
PROBE_INTERFACE=${PROBE_INTERFACE:-tun0}
PROBE_TIMEOUT=${PROBE_TIMEOUT:-3}
HEALTH_TIMEOUT=3
PERIOD=${PERIOD:-2}
ACQUIRE_AFTER=${ACQUIRE_AFTER:-3}
RELEASE_AFTER=${RELEASE_AFTER:-3}
LEASE_SECONDS=${LEASE_SECONDS:-15}
RENEW_MARGIN=${RENEW_MARGIN:-$((2 * PERIOD))}
API_TIMEOUT=${API_TIMEOUT:-2}
ROLE_LABEL=${ROLE_LABEL:-tunnelwright.io/role}
FENCE_LINK=${FENCE_LINK:-vxlan0}
STATE_DIR=${STATE_DIR:-/run/failover}
# How long a verdict stays good for the readinessProbe: twice a check's longest run (gluetun's server, each probe URL,
# four API calls, the pause), so a loop that hangs makes the pod not Ready, a slow one does not.
# shellcheck disable=SC2086 # split on spaces: the URLs' count
probe_count=$(set -f; set -- $PROBE_URL; echo $#)
VERDICT_TTL=${VERDICT_TTL:-$((2 * (HEALTH_TIMEOUT + probe_count * PROBE_TIMEOUT + 4 * API_TIMEOUT + PERIOD)))}
# Never curl's default: kube-apiserver pretty-prints JSON for a User-Agent that starts with "curl" (isPrettyPrint,
# staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation/negotiate.go).
USER_AGENT=tunnelwright-failover-agent
mkdir -p "$STATE_DIR"
lease_path="/apis/coordination.k8s.io/v1/namespaces/$NAMESPACE/leases/$LEASE"
body="$STATE_DIR/body.json"
headers="$STATE_DIR/headers"

log() { echo "failover-agent: $*"; }
# Seconds since boot: a clock no one can set.
now() { cut -d. -f1 /proc/uptime; }

# api METHOD PATH [CONTENT-TYPE DATA]: the HTTP status ("000" when the API cannot be reached); the answer in $body.
# The token is read on each call (kubelet rotates it) and passed in a file, never on a command line.
api() {
  {
    if [ -r "$SA_DIR/token" ]; then printf 'Authorization: Bearer %s\n' "$(cat "$SA_DIR/token")"; fi
    if [ $# -ge 4 ]; then printf 'Content-Type: %s\n' "$3"; fi
  } >"$headers"
  set -- "$1" "$2" "${3:-}" "${4:-}"
  cacert=""
  if [ -r "$SA_DIR/ca.crt" ]; then cacert="$SA_DIR/ca.crt"; fi
  if [ -n "$4" ]; then
    curl -sS -A "$USER_AGENT" -m "$API_TIMEOUT" ${cacert:+--cacert "$cacert"} -H "@$headers" -X "$1" -o "$body" -w '%{http_code}' --data-binary "$4" "$API_URL$2" 2>/dev/null
  else
    curl -sS -A "$USER_AGENT" -m "$API_TIMEOUT" ${cacert:+--cacert "$cacert"} -H "@$headers" -X "$1" -o "$body" -w '%{http_code}' "$API_URL$2" 2>/dev/null
  fi
}

# field NAME: a string or number field of the Lease read last; "" when absent or null. Whitespace after the colon is
# allowed: the API server pretty-prints for some clients (see USER_AGENT).
field() {
  sed -n "s/.*\"$1\":[[:space:]]*\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$body" | head -n 1 | sed 's/^null$//'
}

# probe_answers: one of PROBE_URL's URLs (separated by spaces) answers out of PROBE_INTERFACE; tried in turn. `if!`
# makes curl bind to the interface or fail at once (exit 45): without it curl resolves a missing interface's name as a
# host (lib/cf-socket.c bindlocal), and a resolver that gets no answer outlasts -m.
probe_answers() {
  for url in $PROBE_URL; do
    if curl -sS -I -A "$USER_AGENT" -m "$PROBE_TIMEOUT" --interface "if!$PROBE_INTERFACE" -o /dev/null "$url" 2>/dev/null; then return 0; fi
  done
  return 1
}

# interface_up: PROBE_INTERFACE exists, is up and has its carrier (busybox ip prints the link's flags as
# "<POINTOPOINT,NOARP,UP,LOWER_UP>"; a TUN whose process is gone, kept by persist-tun, has no LOWER_UP).
interface_up() {
  flags=$(ip link show dev "$PROBE_INTERFACE" 2>/dev/null | sed -n '1s/^[^<]*<\([^>]*\)>.*/,\1,/p')
  case $flags in *,UP,*) ;; *) return 1 ;; esac
  case $flags in *,LOWER_UP,*) return 0 ;; *) return 1 ;; esac
}

# tunnel_ok: gluetun's health server, the tunnel interface, then the probe through it; $why says which failed.
tunnel_ok() {
  if ! curl -fsS -A "$USER_AGENT" -m "$HEALTH_TIMEOUT" -o /dev/null "$HEALTH_URL" 2>/dev/null; then why="gluetun's health server"; return 1; fi
  if ! interface_up; then why="$PROBE_INTERFACE is gone or down"; return 1; fi
  if [ -n "$PROBE_URL" ] && ! probe_answers; then
    why="no answer through $PROBE_INTERFACE"
    return 1
  fi
  why=""
}

micro_time() { date -u +%Y-%m-%dT%H:%M:%S.000000Z; }

# put_lease HOLDER DURATION ACQUIRE_TIME TRANSITIONS: an update that fails with 409 if the Lease changed since read.
put_lease() {
  api PUT "$lease_path" application/json "$(printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"%s","namespace":"%s","resourceVersion":"%s"},"spec":{"holderIdentity":"%s","leaseDurationSeconds":%s,"acquireTime":"%s","renewTime":"%s","leaseTransitions":%s}}' \
    "$LEASE" "$NAMESPACE" "$rv" "$1" "$2" "$3" "$(micro_time)" "$4")"
}

label_pod() {
  if [ "$2" = active ]; then value='"active"'; else value=null; fi
  patched=$(api PATCH "/api/v1/namespaces/$NAMESPACE/pods/$1" application/merge-patch+json "{\"metadata\":{\"labels\":{\"$ROLE_LABEL\":$value}}}")
  # 404: the pod is gone (a peer being replaced), which is as good as unlabelled.
  [ "$patched" = 200 ] || { [ "$2" != active ] && [ "$patched" = 404 ]; }
}

set_role() { role=$1; echo "$1" >"$STATE_DIR/role"; }
# The verdict, written whole (a temporary file renamed over it): the readinessProbe never reads half a line. A
# restarted container (the emptyDir outlives it) goes on from the verdict its earlier run wrote.
# A pod that has not read the Lease for LEASE_SECONDS is not ready however healthy its tunnel: a standby cut off from
# the API could not take the role, and a Ready one would let a drain evict the holder (the PodDisruptionBudget).
write_verdict() {
  ready=$verdict
  if [ $(($(now) - api_ok_at)) -ge "$LEASE_SECONDS" ]; then
    ready=unhealthy
    if [ "$api_said" != cut ]; then api_said="cut"; log "not ready: no Lease read for $(($(now) - api_ok_at)) s (the API answered ${code:-nothing})"; fi
  elif [ "$api_said" = cut ]; then
    api_said=""; log "the API answers again"
  fi
  printf '%s %s\n' "$ready" $(($(now) + VERDICT_TTL)) >"$STATE_DIR/verdict.tmp" && mv "$STATE_DIR/verdict.tmp" "$STATE_DIR/verdict"
}
api_ok_at=$(now)
api_said=""
code=""
verdict=unhealthy
if [ -r "$STATE_DIR/verdict" ] && [ "$(cut -d' ' -f1 "$STATE_DIR/verdict")" = healthy ]; then verdict=healthy; fi
# The watchdog: the link goes down once the last renewal (written before the link ever goes up) is too old.
renewed_at() { echo "$1" >"$STATE_DIR/renewed.tmp" && mv "$STATE_DIR/renewed.tmp" "$STATE_DIR/renewed"; }
renewed_at 0
set_role standby
(
  while sleep 1; do
    if [ "$(cat "$STATE_DIR/role")" = active ] && [ $(($(now) - $(cat "$STATE_DIR/renewed"))) -ge $((LEASE_SECONDS - RENEW_MARGIN)) ]; then
      ip link set "$FENCE_LINK" down 2>/dev/null || true
      echo fenced >"$STATE_DIR/role"
    fi
  done
) &
watchdog=$!
fence() {
  ip link set "$FENCE_LINK" down 2>/dev/null || true
  if [ "$role" = active ]; then log "fenced: $1"; fi
  set_role standby
  label_pod "$POD_NAME" standby || true
}

# Stopped (a drain, a rollout): a holder fences and frees the Lease, so the standby takes over at its next check.
stop() {
  if [ "$role" = active ]; then
    fence "stopping"
    if [ "$(api GET "$lease_path")" = 200 ] && [ "$(field holderIdentity)" = "$POD_NAME" ]; then
      rv=$(field resourceVersion)
      log "released the lease ($(put_lease "" 1 "$(field acquireTime)" "$(field leaseTransitions)"))"
    fi
  fi
  kill "$watchdog" 2>/dev/null
  exit 0
}
trap stop TERM INT
healthy=0
failed=0
why=""
said=""
last_renew=0
seen_rv=""
seen_at=$(now)
fence "starting"
log "started as $POD_NAME (peer ${PEER_POD:-none}), lease $NAMESPACE/$LEASE"
while :; do
  if [ "$role" = active ] && [ "$(cat "$STATE_DIR/role")" != active ]; then fence "the watchdog fenced: no renewal for $((LEASE_SECONDS - RENEW_MARGIN)) s"; fi
  if tunnel_ok; then healthy=$((healthy + 1)); failed=0; else failed=$((failed + 1)); healthy=0; fi
  if [ "$verdict" != healthy ] && [ "$healthy" -ge "$ACQUIRE_AFTER" ]; then verdict=healthy; fi
  if [ "$verdict" != unhealthy ] && [ "$failed" -ge "$RELEASE_AFTER" ]; then verdict=unhealthy; fi
  # Logged at each change, and once for a pod whose tunnel never was healthy: the runbooks' first step reads it.
  if [ "$verdict" != "$said" ] && { [ "$verdict" = healthy ] || [ "$failed" -ge "$RELEASE_AFTER" ]; }; then
    said=$verdict
    if [ "$verdict" = healthy ]; then log "verdict: healthy ($healthy checks)"; else log "verdict: unhealthy ($failed checks: $why)"; fi
  fi
  write_verdict
  t=$(now)
  code=$(api GET "$lease_path")
  if [ "$code" = 200 ]; then
    api_ok_at=$t
    rv=$(field resourceVersion)
    holder=$(field holderIdentity)
    transitions=$(field leaseTransitions)
    acquired=$(field acquireTime)
    if [ -z "$acquired" ]; then acquired=$(micro_time); fi
    if [ "$rv" != "$seen_rv" ]; then seen_rv=$rv; seen_at=$t; fi
    if [ "$holder" = "$POD_NAME" ]; then
      if [ "$verdict" != healthy ]; then
        # Fenced before the Lease is free: the standby's clients never meet this gateway still answering. Also a new
        # pod of the same name (its StatefulSet's) that finds the Lease still its own: it has not proven its tunnel.
        fence "tunnel unhealthy (${why:+$failed checks: $why}${why:-not yet $ACQUIRE_AFTER healthy checks})"
        code=$(put_lease "" 1 "$acquired" "${transitions:-0}")
        log "released the lease ($code)"
      else
        code=$(put_lease "$POD_NAME" "$LEASE_SECONDS" "$acquired" "${transitions:-0}")
        if [ "$code" = 200 ]; then
          last_renew=$t
          renewed_at "$t"
          if [ "$role" != active ]; then
            # Taken over from an earlier run of this agent (a restarted container): the role is ours again.
            if [ -n "${PEER_POD:-}" ]; then label_pod "$PEER_POD" standby || true; fi
            label_pod "$POD_NAME" active && { set_role active; ip link set "$FENCE_LINK" up; log "holds the role (renewed)"; }
          else
            # Every renewal re-asserts both labels: a thawed peer that still thinks it holds, or a hand-run
            # `kubectl label`, never leaves the Service without endpoints (or with two) for longer than a period.
            if [ -n "${PEER_POD:-}" ]; then label_pod "$PEER_POD" standby || true; fi
            label_pod "$POD_NAME" active || true
          fi
        fi
      fi
    else
      if [ "$role" = active ]; then fence "the lease is held by ${holder:-nobody}"; fi
      free=no
      if [ -z "$holder" ] || [ $((t - seen_at)) -ge "$LEASE_SECONDS" ]; then free=yes; fi
      if [ "$free" = yes ] && [ "$healthy" -ge "$ACQUIRE_AFTER" ]; then
        code=$(put_lease "$POD_NAME" "$LEASE_SECONDS" "$(micro_time)" $((${transitions:-0} + 1)))
        if [ "$code" = 200 ]; then
          last_renew=$t
          renewed_at "$t"
          seen_rv=$(field resourceVersion); seen_at=$t
          log "acquired the lease from ${holder:-nobody}"
          # The old holder loses the Service's selector first: the name never resolves to two gateways for long
          # (client_init.sh :53 exits with two addresses). It is this pod that unlabels it: a frozen node cannot.
          if [ -n "${PEER_POD:-}" ]; then label_pod "$PEER_POD" standby || true; fi
          if label_pod "$POD_NAME" active; then
            set_role active
            ip link set "$FENCE_LINK" up
          fi
        else
          log "lost the race for the lease ($code)"
        fi
      fi
    fi
  fi
  # Cut off from the API (or refused): fenced before the standby may take the Lease by its own clock.
  if [ "$role" = active ] && [ $((t - last_renew)) -ge $((LEASE_SECONDS - RENEW_MARGIN)) ]; then
    fence "lease not renewed for $((t - last_renew)) s (API answered $code)"
  fi
  sleep "$PERIOD" &
  wait $!
done
