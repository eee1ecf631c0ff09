#!/bin/sh
# shellcheck disable=SC2154,SC2153 # TIMEOUT, TARGETS, VPN_CIDRS, WAN_IPS, SOURCES …: the settings block
# tunnelwright egress conformance (its ConfigMap names the check), written by tunnelwright.
# DESTRUCTIVE: it stops each tunnel in turn; vpn-class egress pauses until the tunnel is back (at most
# RECOVERY_SECONDS per tunnel). It always starts every tunnel it stopped again, also when a step fails.
#   sh egress-conformance.sh --destructive        (needs kubectl and the probe Deployments applied)
# Exit status: 0 every requirement holds, 1 one failed, 2 refused (see the message).
# Requirements, for each tunnel:
#   R1 vpn-class egress leaves from an address inside the VPN ranges
#   R2 direct-class egress leaves from a WAN address
#   R3 tunnel stopped: a vpn-class request gets no answer while a direct-class request at the same moment does
#      (an echo outage cannot pass as a kill switch; an answer naming any address is a leak)
#   R4 tunnel started again: vpn-class egress back inside the VPN ranges within RECOVERY_SECONDS, from a new
#      tunnel interface (EgressSteering: the node's uplink label names it)
#   R5 failover (a gateway with standby, a steering with failover): once every candidate's tunnel is healthy again
#      (within RECOVERY_SECONDS of R4) and FAILOVER_SETTLE_SECONDS later (the agents count it healthy), the tunnel of
#      the role's holder (the Lease's holderIdentity) stopped, vpn-class egress back inside the VPN ranges through a
#      standby within FAILOVER_SECONDS of the stop's start (an answer after the bound fails; the line gives the
#      measured switch time), no vpn-class packet counted on any candidate's WAN (EgressSteering: a counter on every
#      candidate node); then the stopped tunnel is started again and must be healthy within RECOVERY_SECONDS, and
#      FAILOVER_SETTLE_SECONDS later the Lease must still name the new holder (the agents never fail back)
#   R6 every tunnel stopped is started again (an EXIT trap), and the output says so; a dead-man restore armed on the
#      target before each stop starts it DEADMAN_SECONDS later when this shell is killed outright
set -u
# @settings
KUBECTL=${KUBECTL:-kubectl}
RECOVERY_SECONDS=${RECOVERY_SECONDS:-$DEFAULT_RECOVERY_SECONDS}
# The dead-man restore: armed on the target before each stop, it starts the tunnel this many seconds later unless the
# run disarms it first (a run killed outright, or a kubectl that lost the API, cannot restore from here). Past R3's
# requests (one timeout per target) with a margin for the kubectl calls around them; firing later is a no-op start.
DEADMAN_SECONDS=${DEADMAN_SECONDS:-$DEFAULT_DEADMAN_SECONDS}
RUN_ID=$(date +%s)-$$
# The failover step's bound for every tunnel that has one (else each its own, from SOURCES).
FAILOVER_SECONDS=${FAILOVER_SECONDS:-}
# How long R5 lets the agents settle after R4, for every tunnel (else each its own, from SOURCES).
FAILOVER_SETTLE_SECONDS=${FAILOVER_SETTLE_SECONDS:-}
# From the settings: TARGETS, each echo target as "<host:port to pin, or -> <url>"; VPN_CIDRS and WAN_IPS; SOURCES,
# one tunnel a line (check_source's arguments joined by "|").
failures=0
sources=0
# The tunnel stopped and not yet back: "<kind>|<label>|<namespace>|<deployment>|<container>|<unit>|<dead-man name>[|<its seconds>]".
stopped=''

if [ "${1:-}" != --destructive ]; then
  echo "refused: this check stops each tunnel (vpn-class egress pauses); run it as: sh egress-conformance.sh --destructive" >&2
  exit 2
fi

say() { printf '%s\n' "$*"; }
oneline() { printf '%s' "$1" | tr '\n' ' ' | sed 's/ *$//'; }
result() { # result <PASS|FAIL> <requirement> <tunnel> <evidence>
  [ "$1" = PASS ] || failures=$((failures + 1))
  say "$1 $2 [$3]: $4"
}

ip2int() {
  # shellcheck disable=SC2046
  set -- $(printf '%s' "$1" | tr . ' ')
  echo $(( ($1 << 24) + ($2 << 16) + ($3 << 8) + $4 ))
}
in_cidr() { # in_cidr <ip> <cidr>
  bits=${2#*/}
  [ "$bits" -eq 0 ] && return 0
  mask=$(( (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF ))
  [ $(( $(ip2int "$1") & mask )) -eq $(( $(ip2int "${2%/*}") & mask )) ]
}
in_list() { # in_list <ip> <cidrs or addresses>
  for c in $2; do
    case $c in */*) in_cidr "$1" "$c" && return 0 ;; *) [ "$1" = "$c" ] && return 0 ;; esac
  done
  return 1
}

# echo_from <namespace> <deployment> [<file> [<pins>]]: the first address an echo target answers with, or nothing;
# when none answers, the exit status of each request goes to <file>: kubectl exec exits with the remote command's
# status (curl's), and with 1 when it cannot run it at all (k8s.io/kubectl/pkg/cmd/util/helpers.go, checkErr).
# With <pins> ("<host:port>:<address> …", from pins_from), each named target is asked at its pinned address
# (curl --resolve): no name lookup, so a lookup that hangs cannot pass for a blocked request; a named target without
# a pin is then not asked.
echo_from() {
  codes=''
  # shellcheck disable=SC2086
  set -- "$1" "$2" "${3:-}" "${4:-}" $TARGETS
  ns=$1 dep=$2 why=$3 pins=$4
  shift 4
  while [ $# -ge 2 ]; do
    key=$1 t=$2
    shift 2
    if [ -n "$pins" ] && [ "$key" != - ]; then
      pin=''
      for p in $pins; do case $p in "$key":*) pin=$p ;; esac; done
      [ -n "$pin" ] || continue
      body=$("$KUBECTL" -n "$ns" exec "deploy/$dep" -c "$PROBE" -- curl -s -4 --max-time "$TIMEOUT" --resolve "$pin" "$t" 2>/dev/null)
    else
      body=$("$KUBECTL" -n "$ns" exec "deploy/$dep" -c "$PROBE" -- curl -s -4 --max-time "$TIMEOUT" "$t" 2>/dev/null)
    fi
    rc=$?
    a=$(printf '%s' "$body" | grep -Eo '([0-9]{1,3}[.]){3}[0-9]{1,3}' | head -n 1)
    [ -n "$a" ] && { say "$a"; return 0; }
    codes="$codes $rc"
  done
  [ -z "$why" ] || printf '%s
' "$codes" >"$why"
  return 1
}

# pins_from <namespace> <direct probe>: "<host:port>:<address>" for each named target, the address the direct-class
# probe connected to (curl -w '%{remote_ip}'), or "-" when every target is an address already; nothing when no named
# target resolved.
pins_from() {
  out='' named='' ns=$1 dep=$2
  # shellcheck disable=SC2086
  set -- $TARGETS
  while [ $# -ge 2 ]; do
    key=$1 t=$2
    shift 2
    [ "$key" = - ] && continue
    named=1
    ip=$("$KUBECTL" -n "$ns" exec "deploy/$dep" -c "$PROBE" -- curl -s -4 -o /dev/null -w '%{remote_ip}' --max-time "$TIMEOUT" "$t" 2>/dev/null | grep -Eo '^([0-9]{1,3}[.]){3}[0-9]{1,3}$')
    [ -z "$ip" ] || out="$out $key:$ip"
  done
  if [ -z "$named" ]; then say -; else say "$out"; fi
}

# unanswered <exit statuses>: why they are not a blocked request (nothing when each is curl's timeout, 28, or
# refused connection, 7: what a kill switch that drops or rejects gives).
unanswered() {
  for c in $1; do
    case $c in
      7|28) ;;
      0) say "a vpn-class request was answered (without an address in the reply)"; return ;;
      1) say "the vpn-class request failed before it was sent (exit 1: kubectl could not run it in the probe): that proves nothing about the kill switch"; return ;;
      6) say "the vpn-class request failed before it was sent (curl exit 6: the name did not resolve): that proves nothing about the kill switch"; return ;;
      *) say "the vpn-class request ended with curl exit $c (neither a timeout, 28, nor a refused connection, 7): that proves nothing about the kill switch"; return ;;
    esac
  done
}

# ref_of <control>: what kubectl exec names: a Deployment by its name, or "pod/<name>" as given (the gateway pod that
# holds a standby gateway's role: its StatefulSets' pods have fixed names).
ref_of() { case $1 in */*) printf '%s' "$1" ;; *) printf 'deploy/%s' "$1" ;; esac; }
# ready <namespace> <control>: the Deployment rolled out, or the pod Ready.
ready() {
  case $2 in
    */*) "$KUBECTL" -n "$1" wait --for=condition=Ready "$2" --timeout=120s ;;
    *) "$KUBECTL" -n "$1" rollout status "deploy/$2" --timeout=120s ;;
  esac >/dev/null 2>&1
}

# ifindex_of <namespace> <control> <container> <interface>
ifindex_of() {
  "$KUBECTL" -n "$1" exec "$(ref_of "$2")" -c "$3" -- cat "/sys/class/net/$4/ifindex" 2>/dev/null | tr -d '[:space:]'
}

# The WAN packet counter (EgressSteering): an nft table of the check's own on the gateway node, a netdev egress chain
# on each interface the node's main table reaches an echo target by, counting the packets whose source is the vpn-class
# probe's pod address or the tunnel's address. A leak is counted where it leaves, whatever the router beyond does with
# it (one that masquerades only its LAN and routes nothing back answers nothing). The netdev egress hook runs in
# __dev_queue_xmit before the tc egress hook (Linux net/core/dev.c, nf_hook_egress then sch_handle_egress, since
# 5.16): it sees what the kernel forwards or sends out of the device, before Cilium's SNAT at that device's tc egress
# (to-netdev), so a packet still has the pod's address or, once SNATed by netfilter, the tunnel's. Both are counted.
# It does NOT see a packet a tc ingress program redirects to the device (the kernel sets nf_skip_egress around
# sch_handle_ingress in __netif_receive_skb_core): Cilium's from-overlay egress_gw_fib_lookup_and_redirect, and
# from-container's fib_redirect under eBPF host routing. A leak on that path is seen only by the echo (R3's answer from
# a WAN address), not by this counter (the outsider's read, stop 51; docs/egress-conformance.md).
WAN_TABLE=tunnelwright_conformance
wan_on=''
# echo_addresses <pins>: the echo targets' addresses (pinned names, and the targets that are addresses already).
echo_addresses() {
  ea_pins=$1
  # shellcheck disable=SC2086
  set -- $TARGETS
  while [ $# -ge 2 ]; do
    if [ "$1" = - ]; then h=${2#*://}; h=${h%%/*}; printf '%s\n' "${h%%:*}"; fi
    shift 2
  done
  for p in $ea_pins; do [ "$p" = - ] || printf '%s\n' "${p##*:}"; done
}
# wan_counter_install <kind> <cns> <cdep> <cctr> <pns> <vpn probe> <iface> <pins>: prints "<devices>|<sources>", or why not.
wan_counter_install() {
  ip=$("$KUBECTL" -n "$5" get pods -l "app.kubernetes.io/name=$6" -o 'jsonpath={.items[*].status.podIP}' 2>&1) || { say "the vpn-class probe's pod address could not be read: $(oneline "$ip")"; return 1; }
  addr=$(on_target "$1" "$2" "$3" "$4" ip -4 -o addr show dev "$7" 2>/dev/null | sed -n 's/.* inet \([0-9.]*\)\/.*/\1/p' | head -n 1)
  srcs=$(printf '%s %s' "$ip" "$addr" | tr ' ' '\n' | grep -E '^([0-9]{1,3}[.]){3}[0-9]{1,3}$' | sort -u | tr '\n' ' ' | sed 's/ *$//')
  [ -n "$ip" ] || { say "the vpn-class probe has no pod address"; return 1; }
  devs=''
  for a in $(echo_addresses "$8" | sort -u); do
    d=$(on_target "$1" "$2" "$3" "$4" ip -4 route get "$a" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
    [ -z "$d" ] || [ "$d" = "$7" ] || case " $devs " in *" $d "*) ;; *) devs="${devs:+$devs }$d" ;; esac
  done
  [ -n "$devs" ] || { say "no interface of the node's main table reaches an echo target (ip route get)"; return 1; }
  set_elems=$(printf '%s' "$srcs" | sed 's/ /, /g')
  rules="add table netdev $WAN_TABLE"
  n=0
  for d in $devs; do
    rules="$rules; add chain netdev $WAN_TABLE wan$n { type filter hook egress device \"$d\" priority 0 ; }; add rule netdev $WAN_TABLE wan$n ip saddr { $set_elems } counter"
    n=$((n + 1))
  done
  on_target "$1" "$2" "$3" "$4" nft delete table netdev "$WAN_TABLE" >/dev/null 2>&1
  out=$(on_target "$1" "$2" "$3" "$4" nft "$rules" 2>&1) || { say "nft refused the counter: $(oneline "$out")"; return 1; }
  say "$devs|$srcs"
}
# wan_counted <kind> <cns> <cdep> <cctr>: the packets counted, or nothing when the table cannot be read.
wan_counted() {
  on_target "$1" "$2" "$3" "$4" nft list table netdev "$WAN_TABLE" 2>/dev/null | grep -o 'packets [0-9]*' | awk '{ n += $2; seen = 1 } END { if (seen) print n }'
}
# wan_counter_remove: removes the counter from every node it was installed on (also from the EXIT trap); wan_on is
# "<kind>|<cns>|<cdep>|<cctr>[|<node>]", one a word.
wan_counter_remove() {
  [ -n "$wan_on" ] || return 0
  wan_list=$wan_on
  wan_on=''
  for w in $wan_list; do
    old_ifs=$IFS
    IFS='|'
    # shellcheck disable=SC2086
    set -- $w
    IFS=$old_ifs
    on_target "$1" "$2" "$3" "$4" nft delete table netdev "$WAN_TABLE" >/dev/null 2>&1 || say "the WAN counter (nft table netdev $WAN_TABLE) could not be removed from the node${5:+ $5}: run nft delete table netdev $WAN_TABLE there"
  done
}

# tunnel <stop|start> <kind> <namespace> <deployment> <container> <unit>
tunnel() {
  if [ "$2" = gateway ]; then
    # gluetun's control server: PUT /v1/vpn/status {"status":"stopped"|"running"} (internal/server/vpn.go:39-40, 69-92);
    # the image's GNU wget (Dockerfile: apk add wget) can send a PUT.
    case $1 in stop) body='{"status":"stopped"}' ;; *) body='{"status":"running"}' ;; esac
    reply=$("$KUBECTL" -n "$3" exec "$(ref_of "$4")" -c "$5" -- wget -q -t 1 -T 30 -O - --method=PUT --header='Content-Type: application/json' --body-data="$body" "$CONTROL_URL/v1/vpn/status") || { rc=$?; printf '%s' "$reply"; return "$rc"; }
    printf '%s
' "$reply"
    # gluetun answers {"outcome":…} with the status it reached, or "already <status>" when its loop was not in the one a
    # change starts from (internal/loopstate/apply.go:31-38, 54-57 at v3.41.1): a stop counts only as "stopped"; a start
    # as "running", or "already running"/"already starting" (its own restart is bringing it up). Else exit 90.
    case $1:$reply in
      stop:*'"outcome":"stopped"'*|start:*'"outcome":"running"'*|start:*'"outcome":"already running"'*|start:*'"outcome":"already starting"'*) ;;
      *) return 90 ;;
    esac
  else
    # The unit on the gateway node.
    on_target "$2" "$3" "$4" "$5" systemctl "$1" "$6"
  fi
}

# on_target <kind> <namespace> <deployment> <container> <command>…: runs the command where the tunnel is: in the
# gluetun container (gateway), or on the gateway node from the node agent (steering; hostPID: nsenter into PID 1's
# namespaces).
on_target() {
  on_kind=$1 on_ns=$2 on_dep=$3 on_ctr=$4
  shift 4
  [ "$on_kind" = steering ] && set -- nsenter -t 1 -m -u -i -n -p -- "$@"
  "$KUBECTL" -n "$on_ns" exec "$(ref_of "$on_dep")" -c "$on_ctr" -- "$@"
}

# deadman <arm|disarm> <kind> <namespace> <deployment> <container> <unit> <name> [<seconds>]: on the target itself, a
# start of the tunnel <seconds> (DEADMAN_SECONDS) from now, which survives this shell (SIGKILL, a lost API connection, a laptop put to sleep).
# On the gateway node, a transient systemd timer (systemd-run --on-active), gone once elapsed or stopped; in the gluetun
# container, a detached sleeper (its PID in /tmp/<name>.pid) that sends PUT running, as the stop did.
deadman() {
  dm_secs=${8:-$DEADMAN_SECONDS}
  case $2:$1 in
    steering:arm) on_target "$2" "$3" "$4" "$5" systemd-run --quiet --collect --unit="$7" --on-active="$dm_secs" --timer-property=RemainAfterElapsed=no systemctl start "$6" ;;
    steering:disarm) on_target "$2" "$3" "$4" "$5" systemctl stop "$7.timer" ;;
    *:arm)
      # shellcheck disable=SC2016 # expanded by the shells in the container
      on_target "$2" "$3" "$4" "$5" sh -c 'nohup sh -c "$1" sh "$2" "$3" "$4" "$5" </dev/null >/dev/null 2>&1 & echo $! > "/tmp/$2.pid"' sh \
        'sleep "$2" && rm -f "/tmp/$1.pid" && exec wget -q -t 3 -T 30 -O - --method=PUT --header=Content-Type:application/json --body-data="$4" "$3"' \
        "$7" "$dm_secs" "$CONTROL_URL/v1/vpn/status" '{"status":"running"}' ;;
    *)
      # shellcheck disable=SC2016
      on_target "$2" "$3" "$4" "$5" sh -c 'kill "$(cat "/tmp/$1.pid")" && rm -f "/tmp/$1.pid"' sh "$7" ;;
  esac
}

# disarmed <kind> <namespace> <deployment> <container> <unit> <name>: disarms the dead-man restore; prints why not.
disarmed() {
  d=$(deadman disarm "$1" "$2" "$3" "$4" "$5" "$6" 2>&1) || say " (its dead-man restore $6 could not be disarmed: $(oneline "$d"); when it fires it starts the running tunnel once more, which changes nothing)"
}

restore_all() {
  [ -n "$stopped" ] || return 0
  old_ifs=$IFS
  IFS='|'
  # shellcheck disable=SC2086
  set -- $stopped
  IFS=$old_ifs
  stopped=''
  if out=$(tunnel start "$1" "$3" "$4" "$5" "${6:-}" 2>&1); then
    say "RESTORED [$2]: the tunnel was started again after a failed or interrupted step${out:+ ($(oneline "$out"))}$(disarmed "$1" "$3" "$4" "$5" "${6:-}" "$7")"
  else
    failures=$((failures + 1))
    say "NOT RESTORED [$2]: starting the tunnel failed: $(oneline "$out"); its dead-man restore $7 starts it ${8:-$DEADMAN_SECONDS}s after the stop, if the target is reachable: check that it did, or start it yourself now"
  fi
}
# The node agents this run scaled up: "<namespace>/<deployment> …", scaled back to 0 once every tunnel is restored.
agents=''
agents_down() {
  for a in $agents; do
    if "$KUBECTL" -n "${a%%/*}" scale "deploy/${a#*/}" --replicas=0 >/dev/null 2>&1; then say "node agent $a scaled back to 0 replicas"
    else say "node agent $a NOT scaled back to 0: run kubectl -n ${a%%/*} scale deploy/${a#*/} --replicas=0"; fi
  done
  agents=''
}
tmp=''
finish() {
  [ -z "$tmp" ] || rm -rf "$tmp"
  wan_counter_remove
  restore_all
  agents_down
  if [ "$failures" -eq 0 ]; then say "conformance: PASS (every requirement holds)"; exit 0; fi
  say "conformance: FAIL ($failures requirement(s) failed)"
  exit 1
}
trap finish EXIT
trap 'say "interrupted"; failures=$((failures + 1)); exit 1' INT TERM HUP

# lease_holder <namespace/name>: the Lease's holderIdentity, as the agents read it (the node, or the gateway pod).
lease_holder() {
  "$KUBECTL" -n "${1%%/*}" get lease "${1#*/}" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null
}
# control_of <identity> <candidates>: the control of the candidate the identity names ("<identity>=<control>" each).
control_of() {
  for c in $2; do case $c in "$1="*) printf '%s' "${c#*=}"; return 0 ;; esac; done
  return 1
}

# check_source <kind> <label> <probe ns> <vpn probe> <direct probe> <control ns> <control deploy> <container> <iface> <node> <unit> <uplink label> [<lease ns/name> <candidates> <failover seconds> <settle seconds> <active label>]
check_source() {
  kind=$1 label=$2 pns=$3 vpnp=$4 dirp=$5 cns=$6 cdep=$7 cctr=$8 iface=$9
  shift 9
  node=${1:-} unit=${2:-} uplink=${3:-} lease=${4:-} cands=${5:-} fsecs=${6:-} settle=${FAILOVER_SETTLE_SECONDS:-${7:-0}} alabel=${8:-}
  [ -z "$fsecs" ] || fsecs=${FAILOVER_SECONDS:-$fsecs}
  say "== $label"
  for d in "$vpnp" "$dirp"; do
    "$KUBECTL" -n "$pns" rollout status "deploy/$d" --timeout=120s >/dev/null 2>&1 || { result FAIL R0 "$label" "probe $pns/$d is not ready (apply the check's objects first)"; return 0; }
  done
  # With a standby, R1 to R4 act on the role's holder: the Lease names it as the agents read it.
  if [ -n "$lease" ]; then
    holder=$(lease_holder "$lease")
    if ! hc=$(control_of "$holder" "$cands"); then
      result FAIL R0 "$label" "the Lease $lease names ${holder:-no holder}, not one of the candidates ($(printf '%s' "$cands" | sed 's/=[^ ]*//g')): no healthy tunnel holds the role, or the agents are not running"
      return 0
    fi
    cdep=$hc
    [ "$kind" = steering ] && node=$holder
    say "   the role's holder (Lease $lease): $holder"
  fi
  # The privileged node agents exist only while a run needs them (emitted at 0 replicas): the holder's, and with
  # failover every candidate's (R5 counts on each).
  if [ "$kind" = steering ]; then
    for a in "$cdep" $(printf '%s' "$cands" | tr ' ' '\n' | sed -n 's/^[^=]*=//p'); do
      case " $agents " in *" $cns/$a "*) continue ;; *) agents="$agents $cns/$a" ;; esac
      "$KUBECTL" -n "$cns" scale "deploy/$a" --replicas=1 >/dev/null 2>&1
    done
  fi
  # What stops the tunnel must be ready too: else nothing was stopped, and nothing is to restore.
  if ! ready "$cns" "$cdep"; then
    if [ "$kind" = steering ]; then result FAIL R0 "$label" "the node agent $cns/$cdep is not ready (apply the check's objects first; it is privileged: its namespace's Pod Security level must be privileged)"
    else result FAIL R0 "$label" "the gateway $cns/$cdep is not ready"; fi
    return 0
  fi

  failed_before=$failures
  a=$(echo_from "$pns" "$vpnp")
  if [ -z "$a" ]; then result FAIL R1 "$label" "vpn-class egress: no echo target answered $pns/$vpnp (tunnel down, or every echo target down)"
  elif in_list "$a" "$VPN_CIDRS"; then result PASS R1 "$label" "vpn-class egress: the echo saw $a, inside $VPN_CIDRS"
  else result FAIL R1 "$label" "vpn-class egress: the echo saw $a, outside $VPN_CIDRS$(in_list "$a" "$WAN_IPS" && printf ' (a WAN address: a leak)')"; fi

  a=$(echo_from "$pns" "$dirp")
  if [ -z "$a" ]; then result FAIL R2 "$label" "direct-class egress: no echo target answered $pns/$dirp"
  elif in_list "$a" "$WAN_IPS"; then result PASS R2 "$label" "direct-class egress: the echo saw $a, one of $WAN_IPS"
  else result FAIL R2 "$label" "direct-class egress: the echo saw $a, not one of $WAN_IPS"; fi

  # Never a stop after a failed step: what R3 and R4 would prove rests on R1 and R2, and the pause would be for nothing.
  if [ "$failures" -gt "$failed_before" ]; then
    result FAIL R3 "$label" "not run: a step before failed (R1 or R2), so the tunnel was not stopped (R4 not run)"
    return 0
  fi
  # Every named target pinned to the address the direct class resolves it to (curl --resolve): while stopped, a
  # vpn-class request is then judged by its connection, never by a name lookup that hangs (curl exit 28 as well).
  pins=$(pins_from "$pns" "$dirp")
  if [ -z "$pins" ]; then
    result FAIL R3 "$label" "no named echo target resolved from the direct-class probe $pns/$dirp: a vpn-class request could not be pinned to an address (curl --resolve), and a name lookup that hangs could not be told from a blocked request; the tunnel was not stopped (R4 not run)"
    return 0
  fi
  pinned=''
  [ "$pins" = - ] || pinned=" (each name pinned to the address the direct class resolved:$pins)"

  counted_on=''
  if [ "$kind" = steering ]; then
    if ! got=$(wan_counter_install "$kind" "$cns" "$cdep" "$cctr" "$pns" "$vpnp" "$iface" "$pins"); then
      result FAIL R3 "$label" "the WAN packet counter could not be installed on the gateway node, so the tunnel was not stopped (R4 not run): $got"
      return 0
    fi
    wan_on="$kind|$cns|$cdep|$cctr"
    counted_on=" by ${got%%|*} (source ${got#*|})"
  fi
  before=$(ifindex_of "$cns" "$cdep" "$cctr" "$iface")
  sources=$((sources + 1))
  dm="tunnelwright-conformance-restore-$RUN_ID-$sources"
  if ! out=$(deadman arm "$kind" "$cns" "$cdep" "$cctr" "$unit" "$dm" 2>&1); then
    result FAIL R3 "$label" "the dead-man restore could not be armed on the target, so the tunnel was not stopped (R4 not run): $(oneline "$out")"
    return 0
  fi
  say "   dead-man restore $dm armed: it starts the tunnel ${DEADMAN_SECONDS}s from now unless this run does first"
  stopped="$kind|$label|$cns|$cdep|$cctr|$unit|$dm"
  out=$(tunnel stop "$kind" "$cns" "$cdep" "$cctr" "$unit" 2>&1)
  rc=$?
  if [ "$rc" -eq 90 ]; then
    result FAIL R3 "$label" "gluetun answered the stop with $(oneline "$out"), not stopped: it was restarting the VPN itself (its health check, HEALTH_RESTART_VPN), so the tunnel could come back during R3; retry once the gateway is steady (R4 not run)"
    return 0
  elif [ "$rc" -ne 0 ]; then
    result FAIL R3 "$label" "the tunnel could not be stopped: $out"
    return 0
  fi
  say "   tunnel stopped ($iface ifindex was ${before:-none})${out:+: $(oneline "$out")}"
  # A private directory (mktemp -d: mode 0700, a name nobody can plant a symlink at), removed also when interrupted.
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/tw-conformance.XXXXXX") || { result FAIL R3 "$label" "no temporary directory (mktemp -d) for the simultaneous requests"; return 0; }
  echo_from "$pns" "$vpnp" "$tmp/why" "$pins" >"$tmp/vpn" &
  vpid=$!
  echo_from "$pns" "$dirp" '' "$pins" >"$tmp/direct" &
  dpid=$!
  wait "$vpid" "$dpid"
  va=$(cat "$tmp/vpn"); da=$(cat "$tmp/direct"); why=$(unanswered "$(cat "$tmp/why" 2>/dev/null)"); rm -rf "$tmp"; tmp=''
  leaked=''
  if [ -n "$wan_on" ]; then
    leaked=$(wan_counted "$kind" "$cns" "$cdep" "$cctr")
    wan_counter_remove
  fi
  if [ -n "$va" ] && [ -n "$lease" ] && in_list "$va" "$VPN_CIDRS" && [ -z "$why" ] && { [ -z "$counted_on" ] || [ "${leaked:-x}" = 0 ]; } \
    && now_holder=$(lease_holder "$lease") && [ -n "$now_holder" ] && [ "$now_holder" != "$holder" ]; then
    # With a standby, the role may move within R3's requests: an answer from the VPN ranges, with the Lease naming
    # another candidate, is then the standby's.
    result PASS R3 "$label" "tunnel stopped: the standby $now_holder answered already (the echo saw $va, inside $VPN_CIDRS)${counted_on:+; 0 vpn-class packets left$counted_on}; R5 proves the switch"
  elif [ -n "$va" ]; then result FAIL R3 "$label" "tunnel stopped: a vpn-class request was answered, the echo saw $va$(in_list "$va" "$WAN_IPS" && printf ' (a WAN address: vpn-class traffic left by the WAN)')$([ "${leaked:-0}" -gt 0 ] && printf '; %s vpn-class packet(s) counted leaving%s' "$leaked" "$counted_on")"
  elif [ -n "$counted_on" ] && [ -z "$leaked" ]; then result FAIL R3 "$label" "tunnel stopped: the WAN packet counter could not be read, so no leak can be ruled out"
  elif [ -n "$counted_on" ] && [ "$leaked" -gt 0 ]; then result FAIL R3 "$label" "tunnel stopped: $leaked vpn-class packet(s) left$counted_on while the tunnel was stopped (unanswered: the network beyond routes nothing back to them)"
  elif [ -n "$why" ]; then result FAIL R3 "$label" "tunnel stopped: $why"
  elif [ -z "$da" ]; then result FAIL R3 "$label" "tunnel stopped: the direct-class control got no answer either: an echo outage, not a proven kill switch"
  elif ! in_list "$da" "$WAN_IPS"; then result FAIL R3 "$label" "tunnel stopped: the direct-class control was answered from $da, not a WAN address"
  else result PASS R3 "$label" "tunnel stopped: the vpn-class request got no answer within ${TIMEOUT}s while the direct-class control at the same moment was answered from $da (no vpn-class request reached the echo by the WAN)${counted_on:+; 0 vpn-class packets left$counted_on}$pinned"; fi

  out=$(tunnel start "$kind" "$cns" "$cdep" "$cctr" "$unit" 2>&1)
  rc=$?
  if [ "$rc" -eq 90 ]; then
    result FAIL R4 "$label" "gluetun answered the start with $(oneline "$out"), not running"
    return 0
  elif [ "$rc" -ne 0 ]; then
    result FAIL R4 "$label" "the tunnel could not be started: $out"
    return 0
  fi
  t0=$(date +%s)
  back=''
  while :; do
    a=$(echo_from "$pns" "$vpnp") && in_list "$a" "$VPN_CIDRS" && { back=$a; break; }
    [ $(( $(date +%s) - t0 )) -ge "$RECOVERY_SECONDS" ] && break
    sleep 1
  done
  secs=$(( $(date +%s) - t0 ))
  after=$(ifindex_of "$cns" "$cdep" "$cctr" "$iface")
  evidence="$iface ifindex ${before:-none} -> ${after:-none}"
  if [ "$kind" = steering ]; then
    value=$("$KUBECTL" get node "$node" -o "jsonpath={.metadata.labels.$(printf '%s' "$uplink" | sed 's/[.]/\\./g')}" 2>/dev/null)
    evidence="$evidence, node $node $uplink=${value:-none}"
  fi
  if [ -z "$back" ]; then result FAIL R4 "$label" "tunnel started: vpn-class egress not back inside $VPN_CIDRS within ${RECOVERY_SECONDS}s ($evidence)"
  elif [ -z "$after" ] || [ "$after" = "$before" ]; then result FAIL R4 "$label" "tunnel started: egress back after ${secs}s, but not from a new tunnel interface ($evidence)"
  elif [ "$kind" = steering ] && [ "${value##*-}" != "$after" ]; then result FAIL R4 "$label" "tunnel started: the steering names a stale interface ($evidence)"
  else result PASS R4 "$label" "tunnel started: vpn-class egress back through the tunnel after ${secs}s (the echo saw $back; bound ${RECOVERY_SECONDS}s) from a new interface ($evidence)"; fi
  # Back: no longer the trap's to restore (a tunnel that did not come back is started once more by restore_all).
  if [ -n "$back" ]; then stopped=''; say "RESTORED [$label]: the tunnel is running again$(disarmed "$kind" "$cns" "$cdep" "$cctr" "$unit" "$dm")"; fi
  [ -n "$fsecs" ] || return 0
  if [ "$failures" -gt "$failed_before" ]; then
    result FAIL R5 "$label" "not run: a step before failed, so the holder's tunnel was not stopped"
    return 0
  fi
  failover_step
}

# tunnel_healthy <kind> <namespace> <control> <container> <unit> <iface>: the unit active with its interface
# (steering), or gluetun's health server answering 200 (gateway: HEALTH_URL of the failover agent, its own check).
tunnel_healthy() {
  if [ "$1" = steering ]; then
    on_target "$1" "$2" "$3" "$4" systemctl is-active --quiet "$5" >/dev/null 2>&1 && [ -n "$(ifindex_of "$2" "$3" "$4" "$6")" ]
  else
    "$KUBECTL" -n "$2" exec "$(ref_of "$3")" -c "$4" -- wget -q -t 1 -T 5 -O /dev/null http://127.0.0.1:9999/ >/dev/null 2>&1
  fi
}

# carriers <label>: the CiliumNodes whose <label> is "true", by name, one line (every CiliumNode listed, the labels read
# here: a selector the server ignored would name them all).
carriers() {
  "$KUBECTL" get ciliumnodes -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.labels}{"\n"}{end}' 2>/dev/null \
    | grep -F "\"$1\":\"true\"" | sed 's/ .*//' | sort | tr '\n' ' ' | sed 's/ *$//'
}

# R5 (check_source's variables): stop the holder's tunnel, wait for vpn-class egress from the VPN ranges through a
# standby within fsecs, with a WAN counter on every candidate node (EgressSteering), then start the stopped tunnel
# again and wait until it is healthy. The counter sees the probe's pod address and each candidate's own tunnel address.
failover_step() {
  # Every candidate's tunnel healthy again before anything is stopped: R4 passes on the first answer from VPN_CIDRS,
  # which may be a standby's (the role moved during R3) while the tunnel R4 restarted is still coming up; stopping the
  # holder then leaves no candidate that may take the role. Bounded by RECOVERY_SECONDS from here.
  t1=$(date +%s)
  for c in $cands; do
    ready "$cns" "${c#*=}" || { result FAIL R5 "$label" "the candidate ${c%%=*} ($cns/${c#*=}) is not ready, so no tunnel was stopped"; return 0; }
    until tunnel_healthy "$kind" "$cns" "${c#*=}" "$cctr" "$unit" "$iface"; do
      if [ $(( $(date +%s) - t1 )) -ge "$RECOVERY_SECONDS" ]; then
        result FAIL R5 "$label" "the tunnel on ${c%%=*} is not healthy within ${RECOVERY_SECONDS}s after R4, so no tunnel was stopped (with no candidate able to take the role the step would prove nothing)"
        return 0
      fi
      sleep 1
    done
  done
  # Then the agents' own count: a restarted candidate takes the role only after its healthy checks in a row, and the
  # holder's agent counted failed checks while R3 stopped its tunnel (only a good check resets them; stopped again
  # before that, it gives the role up after fewer checks than a fresh failure needs, and the switch is measured short).
  if [ "$settle" -gt 0 ]; then
    say "   R5: every candidate's tunnel healthy; waiting ${settle}s for the agents to count it healthy (their window of checks and a probe)"
    sleep "$settle"
  fi
  old=$(lease_holder "$lease")
  if ! oc=$(control_of "$old" "$cands"); then
    result FAIL R5 "$label" "the Lease $lease names ${old:-no holder}, not one of the candidates, so no tunnel was stopped"
    return 0
  fi
  counted_on=''
  if [ "$kind" = steering ]; then
    for c in $cands; do
      cn=${c%%=*} cd=${c#*=}
      if ! ready "$cns" "$cd"; then
        wan_counter_remove
        result FAIL R5 "$label" "the node agent $cns/$cd on $cn is not ready: its WAN could not be counted, so no tunnel was stopped"
        return 0
      fi
      if ! got=$(wan_counter_install "$kind" "$cns" "$cd" "$cctr" "$pns" "$vpnp" "$iface" "$pins"); then
        wan_counter_remove
        result FAIL R5 "$label" "the WAN packet counter could not be installed on $cn, so no tunnel was stopped: $got"
        return 0
      fi
      wan_on="$wan_on $kind|$cns|$cd|$cctr|$cn"
      counted_on="$counted_on, $cn by ${got%%|*}"
    done
  fi
  dm="tunnelwright-conformance-restore-$RUN_ID-failover-$sources"
  # Armed past R5's own wait (fsecs), with DEADMAN_SECONDS on top for the requests and kubectl calls around it: a
  # restore firing inside the wait would start the stopped holder while the switch is being measured.
  dm_after=$((fsecs + DEADMAN_SECONDS))
  if ! out=$(deadman arm "$kind" "$cns" "$oc" "$cctr" "$unit" "$dm" "$dm_after" 2>&1); then
    wan_counter_remove
    result FAIL R5 "$label" "the dead-man restore could not be armed on $old, so its tunnel was not stopped: $(oneline "$out")"
    return 0
  fi
  stopped="$kind|$label|$cns|$oc|$cctr|$unit|$dm|$dm_after"
  # The switch is timed from before the stop: the tunnel goes down early in it, and the stop returns only after its
  # hooks (wg-quick down's PostDown re-steer writes two labels) and kubectl exec's round trip; in the project's lab the
  # standby carried the traffic before the stop returned.
  t0=$(date +%s)
  out=$(tunnel stop "$kind" "$cns" "$oc" "$cctr" "$unit" 2>&1) || {
    wan_counter_remove
    result FAIL R5 "$label" "the holder's tunnel ($old) could not be stopped: $(oneline "$out")"
    return 0
  }
  say "   R5: the holder's tunnel stopped ($old, the stop took $(( $(date +%s) - t0 ))s); waiting up to ${fsecs}s from the stop for a standby"
  back='' wan_seen=''
  while :; do
    if a=$(echo_from "$pns" "$vpnp"); then
      in_list "$a" "$VPN_CIDRS" && { back=$a; break; }
      in_list "$a" "$WAN_IPS" && wan_seen=$a
    fi
    [ $(( $(date +%s) - t0 )) -ge "$fsecs" ] && break
    sleep 1
  done
  took=$(( $(date +%s) - t0 ))
  new=$(lease_holder "$lease")
  # EgressSteering: the path is the label Cilium selects the gateway by; exactly the new holder's CiliumNode carries it.
  on=''
  [ -z "$alabel" ] || on=$(carriers "$alabel")
  leaks='' unread=''
  for w in $wan_on; do
    old_ifs=$IFS
    IFS='|'
    # shellcheck disable=SC2086
    set -- $w
    IFS=$old_ifs
    n=$(wan_counted "$1" "$2" "$3" "$4")
    if [ -z "$n" ]; then unread="$unread $5"; elif [ "$n" -gt 0 ]; then leaks="${leaks:+$leaks, }$n on $5"; fi
  done
  wan_counter_remove
  if [ -n "$leaks" ]; then result FAIL R5 "$label" "while the role moved, vpn-class packets left by the WAN: $leaks${wan_seen:+ (the echo saw the WAN address $wan_seen)}"
  elif [ -n "$wan_seen" ]; then result FAIL R5 "$label" "while the role moved, a vpn-class request was answered from the WAN address $wan_seen"
  elif [ -n "$unread" ]; then result FAIL R5 "$label" "the WAN packet counter could not be read on$unread, so no leak can be ruled out"
  elif [ -z "$back" ]; then result FAIL R5 "$label" "vpn-class egress not back inside $VPN_CIDRS within ${fsecs}s of stopping the holder's tunnel ($old); the Lease names ${new:-no holder}"
  elif [ -z "$new" ] || [ "$new" = "$old" ]; then result FAIL R5 "$label" "vpn-class egress back after ${took}s (the echo saw $back), but the Lease still names ${new:-no holder}, not a standby: not a failover"
  elif [ -n "$alabel" ] && [ "$on" != "$new" ]; then result FAIL R5 "$label" "vpn-class egress back after ${took}s (the echo saw $back) and the Lease names $new, but the CiliumNodes carrying $alabel are: ${on:-none} (exactly $new's must: Cilium takes the first labelled node by name)"
  elif [ "$took" -gt "$fsecs" ]; then result FAIL R5 "$label" "vpn-class egress back through the standby $new after ${took}s, beyond the bound ${fsecs}s (a request sent before the bound was answered after it)"
  else result PASS R5 "$label" "failover: vpn-class egress back through the standby $new after ${took}s (the holder $old stopped; bound ${fsecs}s; the echo saw $back)${counted_on:+; 0 vpn-class packets left by the WAN on any candidate (${counted_on#, })}"; fi

  out=$(tunnel start "$kind" "$cns" "$oc" "$cctr" "$unit" 2>&1) || {
    result FAIL R5 "$label" "the stopped tunnel ($old) could not be started again: $(oneline "$out")"
    return 0
  }
  t1=$(date +%s)
  healthy=''
  while :; do
    tunnel_healthy "$kind" "$cns" "$oc" "$cctr" "$unit" "$iface" && { healthy=1; break; }
    [ $(( $(date +%s) - t1 )) -ge "$RECOVERY_SECONDS" ] && break
    sleep 1
  done
  if [ -z "$healthy" ]; then
    result FAIL R5 "$label" "the stopped tunnel ($old) was started again but is not healthy within ${RECOVERY_SECONDS}s"
    return 0
  fi
  stopped=''
  say "RESTORED [$label]: the tunnel on $old is healthy again after $(( $(date +%s) - t1 ))s$(disarmed "$kind" "$cns" "$oc" "$cctr" "$unit" "$dm")"
  # No failback: the agents never take the role from a healthy holder, so the Lease still names the new holder.
  # Read once the agents had their settle seconds to count the restarted tunnel healthy (a failback would come then).
  [ -n "$back" ] && [ -n "$new" ] && [ "$new" != "$old" ] || return 0
  [ "$settle" -gt 0 ] && sleep "$settle"
  after=$(lease_holder "$lease")
  if [ "$after" = "$new" ]; then say "   R5: the role stays with $new after the restart (no failback)"
  else result FAIL R5 "$label" "after $old's tunnel was healthy again the Lease names ${after:-no holder}, not the new holder $new: the role failed back or was dropped (the agents never take it from a healthy holder)"; fi
}

# Each tunnel in turn, one line of SOURCES each (its fields joined by "|"); the fields split without globbing, and
# the shell's own IFS back before the check runs.
nl='
'
old_ifs=$IFS
rest=$SOURCES
while [ -n "$rest" ]; do
  src=${rest%%"$nl"*}
  case $rest in *"$nl"*) rest=${rest#*"$nl"} ;; *) rest='' ;; esac
  set -f
  IFS='|'
  # shellcheck disable=SC2086 # split on "|" into check_source's arguments
  set -- $src
  IFS=$old_ifs
  set +f
  check_source "$@"
  restore_all
done
