#!/bin/sh
# port-sync, written by tunnelwright: keeps the app's listen port equal to the port the VPN forwards.
# It writes nothing while gluetun forwards no port (0 or no answer), and re-checks every PERIOD seconds. With
# qbittorrent, transmission and deluge it reads the app's port from the app's API each time, so a reconnect that
# changes the port, a gluetun restart and an app restart that forgets the port are all repaired.
# With APP=command it cannot read the app's port: it runs COMMAND (PORT=the port) once for each new forwarded port,
# again next period while it fails, and again when this container restarts; an app restart that forgets the port is
# NOT repaired, and the app_listen_port metric is the port COMMAND last succeeded with, not the app's. COMMAND runs
# in a process group of its own, stopped as a whole after COMMAND_TIMEOUT seconds (TERM, then KILL 5 s later), and
# then counts as failed: a hung command would stop the loop and freeze the metrics (every curl here has --max-time
# for the same reason).
# Environment: APP (qbittorrent | transmission | deluge | command), APP_URL, GLUETUN_URL, GLUETUN_API_KEY_FILE,
# APP_USERNAME_FILE / APP_PASSWORD_FILE (optional), APP_API_KEY_FILE (qBittorrent >= 5.2, optional), COMMAND,
# SERVED_PORTS (the ports this pod serves itself, comma-separated: a forwarded port among them is never given to the app),
# COMMAND_TIMEOUT (seconds), PERIOD (seconds), BAN_BACKOFF (seconds), METRICS_FILE, METRICS_PORT (0: no metrics server),
# VXLAN_ADDRESS (this pod's fixed address on vxlan0, where forwarded connections arrive).
# Credentials the app refuses are not sent again until they change (see refuse_creds); an address the app banned is
# tried again after BAN_BACKOFF.
set -u

PERIOD=${PERIOD:-15}
COMMAND_TIMEOUT=${COMMAND_TIMEOUT:-60}
BAN_BACKOFF=${BAN_BACKOFF:-3600}
METRICS_FILE=${METRICS_FILE:-/tmp/port-sync/metrics}
METRICS_PORT=${METRICS_PORT:-0}
WORK=${WORK:-/tmp/port-sync}
SERVED_PORTS=${SERVED_PORTS:-}

# Served by "busybox nc -ll -e" (stdin and stdout are the connection): one HTTP answer with the metrics file. The
# request is read to its blank line first: a socket closed with received bytes unread sends a reset, not a FIN
# (Linux tcp_close, RFC 9293 3.6.1), and the client loses the answer ("connection reset by peer": Prometheus 2.42
# scraped 0 of 12 when this answered unread). sh reads a pipe or socket a byte at a time, so nothing past the
# headers is taken. At most 64 lines, and a guard ends this process after 10 s: a client that sends nothing holds
# no process for long (read -t is not POSIX; dash has none).
if [ "${1:-}" = "serve-metrics" ]; then
  # The guard stops its sleep when it is stopped itself, and holds none of the connection's descriptors: a process
  # left holding them would keep the connection open, and this answer ends only when it closes.
  (
    sleep 10 &
    s=$!
    trap 'kill "$s"; exit 0' TERM
    wait "$s" && kill -s TERM $$
  ) </dev/null >/dev/null 2>&1 &
  guard=$!
  cr=$(printf '\r')
  n=0
  while [ "$n" -lt 64 ] && IFS= read -r line; do
    n=$((n + 1))
    case "$line" in '' | "$cr") break ;; esac
  done
  printf 'HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nConnection: close\r\n\r\n'
  cat "$METRICS_FILE" 2>/dev/null
  kill "$guard" 2>/dev/null
  exit 0
fi

mkdir -p "$WORK" "$(dirname "$METRICS_FILE")"
chmod 700 "$WORK"
JAR="$WORK/cookies"
: >"$WORK/app.curlrc"
# To stderr: a message logged inside $(...) must not become part of the value read.
log() { echo "port-sync: $*" >&2; }
HAVE_SETSID=0
if [ "$APP" = command ]; then
  case "$COMMAND_TIMEOUT" in
    '' | *[!0-9]* | 0) log "COMMAND_TIMEOUT=$COMMAND_TIMEOUT is not a whole number of seconds over 0: using 60"; COMMAND_TIMEOUT=60 ;;
  esac
  if command -v setsid >/dev/null 2>&1; then
    HAVE_SETSID=1
  else
    log "no setsid in this image: an overrunning COMMAND is stopped, but what it started may go on running"
  fi
fi

forwarded=0
app_port=0
errors=0
bans=0
last_success=0
last_command_port=0
echo 0 >"$WORK/bound-elsewhere"

if [ "$APP" = command ]; then
  LISTEN_HELP='With APP=command, the port the command last succeeded with (the app itself is not asked; 0: none yet).'
  SUCCESS_HELP='With APP=command, the last check at which the command had succeeded with the forwarded port.'
else
  LISTEN_HELP='The port the app listens on, as its API reports it (0: unknown).'
  SUCCESS_HELP='When the app last reported the forwarded port.'
fi

write_metrics() {
  tmp="$METRICS_FILE.tmp"
  {
    echo '# HELP tunnelwright_port_forward_forwarded_port The port the VPN provider forwards (0: none).'
    echo '# TYPE tunnelwright_port_forward_forwarded_port gauge'
    echo "tunnelwright_port_forward_forwarded_port{app=\"$APP\"} $forwarded"
    echo "# HELP tunnelwright_port_forward_app_listen_port $LISTEN_HELP"
    echo '# TYPE tunnelwright_port_forward_app_listen_port gauge'
    echo "tunnelwright_port_forward_app_listen_port{app=\"$APP\"} $app_port"
    echo '# HELP tunnelwright_port_forward_errors_total Failed reconcile steps.'
    echo '# TYPE tunnelwright_port_forward_errors_total counter'
    echo "tunnelwright_port_forward_errors_total{app=\"$APP\"} $errors"
    echo '# HELP tunnelwright_port_forward_bans_total Times the app refused this address (a login ban).'
    echo '# TYPE tunnelwright_port_forward_bans_total counter'
    echo "tunnelwright_port_forward_bans_total{app=\"$APP\"} $bans"
    echo '# HELP tunnelwright_port_forward_login_refused 1 while the app refuses the credentials mounted (they are not sent again until they change).'
    echo '# TYPE tunnelwright_port_forward_login_refused gauge'
    echo "tunnelwright_port_forward_login_refused{app=\"$APP\"} $(if creds_refused; then echo 1; else echo 0; fi)"
    echo '# HELP tunnelwright_port_forward_app_bound_elsewhere 1 while the app listens only on an interface or address forwarded connections do not arrive at (qBittorrent; other apps are not read).'
    echo '# TYPE tunnelwright_port_forward_app_bound_elsewhere gauge'
    echo "tunnelwright_port_forward_app_bound_elsewhere{app=\"$APP\"} $(cat "$WORK/bound-elsewhere")"
    echo "# HELP tunnelwright_port_forward_last_success_timestamp_seconds $SUCCESS_HELP"
    echo '# TYPE tunnelwright_port_forward_last_success_timestamp_seconds gauge'
    echo "tunnelwright_port_forward_last_success_timestamp_seconds{app=\"$APP\"} $last_success"
  } >"$tmp" && mv "$tmp" "$METRICS_FILE"
}

# The first number after "key": in a JSON text (no jq in the image).
json_number() {
  sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\[\{0,1\}[[:space:]]*\([0-9][0-9]*\).*/\1/p" | head -n 1
}

# The first string value of "key": in a JSON text (no escapes in it: an interface name or an address).
json_string() {
  sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"\\]*\)\".*/\1/p" | head -n 1
}

# A secret file's content without a trailing newline, into a file of its own (never on a command line).
secret_to() {
  printf '%s' "$(cat "$1")" >"$2"
}

# A secret file's content escaped for a double-quoted value in a curl config file (backslash and quote).
curlrc_quote() {
  printf '%s' "$(sed 's/\\/\\\\/g; s/"/\\"/g' "$1")"
}

# --- credentials the app refused -----------------------------------------------------------------------------
# A login the app refused is not sent again with the same credentials. qBittorrent bans the address after 5 refused
# logins (WebUI/MaxAuthenticationFailCount, BanDuration 3600 s) and forgets a count only at a good login or at the
# end of a ban (webapplication.cpp increaseFailedAttempts, isBanned at release-5.2.3), so even one try an hour bans it
# within a day; Transmission 3.00 shuts its RPC after 100 until it is restarted. The address is the pod's 127.0.0.1,
# the one a user's `kubectl port-forward` arrives from too: a ban locks the user out of the Web UI. The refused
# credentials' sha256 is kept in WORK (the pod's emptyDir): they are tried again when the mounted Secret's value
# changes (the kubelet updates it in place) or when the pod restarts, not when only this container restarts.
creds_sum() {
  cat "${APP_USERNAME_FILE:-/dev/null}" "${APP_PASSWORD_FILE:-/dev/null}" "${APP_API_KEY_FILE:-/dev/null}" 2>/dev/null | sha256sum
}

# True while the credentials mounted are the ones the app refused.
creds_refused() {
  [ -s "$WORK/refused" ] && [ "$(creds_sum)" = "$(cat "$WORK/refused")" ]
}

refuse_creds() { # refuse_creds <what the app answered>
  creds_sum >"$WORK/refused"
  log "$1: these credentials are not sent again (repeated refused logins make the app ban this pod's address, your own kubectl port-forward included); fix the Secret's value, or the app's password and then restart the pod"
}

accept_creds() {
  rm -f "$WORK/refused"
}

gluetun_port() {
  secret_to "$GLUETUN_API_KEY_FILE" "$WORK/gluetun-key"
  printf 'header = "X-API-Key: %s"\n' "$(curlrc_quote "$WORK/gluetun-key")" >"$WORK/gluetun.curlrc"
  # Not -f: a 401 is told apart from no answer. gluetun reads its auth file only at start (v3.41.1
  # internal/server/server.go:22, :51) and answers a key it does not hold 401 (middlewares/auth/middleware.go:89).
  code=$(curl -sS --max-time 5 -K "$WORK/gluetun.curlrc" -o "$WORK/gluetun.body" -w '%{http_code}' "$GLUETUN_URL/v1/portforward") || return 1
  [ "$code" = 401 ] && return 2
  [ "$code" = 200 ] || return 1
  body=$(cat "$WORK/gluetun.body")
  p=$(printf '%s' "$body" | json_number port)
  [ -n "$p" ] || p=$(printf '%s' "$body" | json_number ports)
  echo "${p:-0}"
}

# --- qBittorrent ---------------------------------------------------------------------------------------------
# qBittorrent's login answers, read from src/webui/api/authcontroller.cpp and webapplication.cpp:
#   4.6.x, 5.0.x, 5.1.x: a good login 200 "Ok.", a wrong one 200 "Fails." (loginAction, authcontroller.cpp:56-97 at
#     release-4.6.7, release-5.0.5 and release-5.1.4);
#   5.2.x: a good login 204 No Content (setStatus with no result, authcontroller.cpp:43-60; webapplication.cpp:370-372
#     answers a null result 204), a wrong one 401 (APIErrorType::Unauthorized, webapplication.cpp:424-425);
#   every version: a banned address 403 before the password is checked (authcontroller.cpp:68-75 up to 5.1,
#     webapplication.cpp:1016-1021 in 5.2), and any private API call without a session 403 (webapplication.cpp:327).
#   A 5.2 API key (Authorization: Bearer) it does not hold opens no session: the call answers 403 (webapplication.cpp
#     apiKeySessionInitialize, :758-783).
qbt_auth() {
  if [ -n "${APP_API_KEY_FILE:-}" ] && [ -r "$APP_API_KEY_FILE" ]; then
    creds_refused && return 3
    printf 'header = "Authorization: Bearer %s"\n' "$(curlrc_quote "$APP_API_KEY_FILE")" >"$WORK/app.curlrc"
    return 0
  fi
  : >"$WORK/app.curlrc"
  [ -r "${APP_USERNAME_FILE:-}" ] || return 0
  creds_refused && return 3
  secret_to "$APP_USERNAME_FILE" "$WORK/user"
  secret_to "$APP_PASSWORD_FILE" "$WORK/password"
  code=$(curl -sS --max-time 5 -c "$JAR" -o "$WORK/login" -w '%{http_code}' \
    --data-urlencode "username@$WORK/user" --data-urlencode "password@$WORK/password" "$APP_URL/api/v2/auth/login") || return 1
  case "$code" in
    200) if grep -q '^Ok' "$WORK/login"; then accept_creds; return 0; fi
      refuse_creds "qBittorrent refused the username or password (200 Fails., 4.6 to 5.1)"
      return 3 ;;
    204) accept_creds; return 0 ;;
    401) refuse_creds "qBittorrent refused the username or password (401, 5.2)"
      return 3 ;;
    403) return 2 ;;
    *) log "qBittorrent's login answered HTTP $code"; return 1 ;;
  esac
}

qbt_get() {
  curl -sS --max-time 5 -b "$JAR" -K "$WORK/app.curlrc" -o "$WORK/prefs" -w '%{http_code}' "$APP_URL/api/v2/app/preferences"
}

qbt_port() {
  code=$(qbt_get) || return 1
  if [ "$code" = 403 ]; then
    qbt_auth || return $?
    code=$(qbt_get) || return 1
    if [ "$code" = 403 ] && [ -s "$WORK/app.curlrc" ]; then
      refuse_creds "qBittorrent refused the API key (403 with it)"
      return 3
    fi
  fi
  case "$code" in
    200) ;;
    401) log "qBittorrent answered 401 without asking for a login: its Host header validation or CSRF protection refuses port-sync's request (allow 127.0.0.1 as a Web UI domain)"
      return 1 ;;
    *) log "qBittorrent answered HTTP $code for its preferences"; return 1 ;;
  esac
  qbt_binding
  json_number listen_port <"$WORK/prefs"
}

# qBittorrent bound to one interface or address never sees a forwarded connection: those arrive on pod-gateway's
# vxlan0 (client_init.sh:71 names it) at VXLAN_ADDRESS. Its preferences hold the binding as current_network_interface
# (Session\Interface) and current_interface_address (Session\InterfaceAddress) (appcontroller.cpp:391-395 at
# release-5.2.3); with an interface set, libtorrent listens on that interface only, and on an interface that does not
# exist on nothing (sessionimpl.cpp getListeningIPs, :3431-3445); an address other than 0.0.0.0 is listened on alone
# ("::" is IPv6 only, :3377-3400). "Any interface" (empty) and vxlan0 are where the port arrives. Logged when it
# changes (an error once, not every period), and kept for the metric app_bound_elsewhere in a file (this runs in the
# $(...) subshell that reads the app's port).
qbt_binding() {
  iface=$(json_string current_network_interface <"$WORK/prefs")
  addr=$(json_string current_interface_address <"$WORK/prefs")
  was=$(cat "$WORK/bound-elsewhere")
  bound_elsewhere=0
  case "$iface" in '' | vxlan0) ;; *) bound_elsewhere=1 ;; esac
  case "$addr" in '' | 0.0.0.0 | "${VXLAN_ADDRESS:-0.0.0.0}") ;; *) bound_elsewhere=1 ;; esac
  if [ "$bound_elsewhere" = 1 ] && [ "$was" = 0 ]; then
    log "error: qBittorrent listens only on interface \"${iface:-any}\", address \"${addr:-any}\" (Session\\Interface, Session\\InterfaceAddress): forwarded connections arrive on vxlan0 at ${VXLAN_ADDRESS:-its VXLAN address} and never reach it; set Options > Advanced > Network interface to \"Any interface\" (or vxlan0) and the IP address to bind to \"All addresses\""
  elif [ "$bound_elsewhere" = 0 ] && [ "$was" = 1 ]; then
    log "qBittorrent's interface binding now lets forwarded connections reach it"
  fi
  echo "$bound_elsewhere" >"$WORK/bound-elsewhere"
}

qbt_set() {
  code=$(curl -sS --max-time 5 -b "$JAR" -K "$WORK/app.curlrc" -o /dev/null -w '%{http_code}' \
    --data-urlencode "json={\"listen_port\":$1,\"random_port\":false}" "$APP_URL/api/v2/app/setPreferences") || return 1
  [ "$code" = 200 ]
}

# --- Transmission --------------------------------------------------------------------------------------------
trm_rpc() {
  : >"$WORK/app.curlrc"
  if [ -r "${APP_USERNAME_FILE:-}" ]; then
    creds_refused && return 3
    printf 'user = "%s:%s"\n' "$(curlrc_quote "$APP_USERNAME_FILE")" "$(curlrc_quote "$APP_PASSWORD_FILE")" >"$WORK/app.curlrc"
  fi
  for _ in 1 2; do
    sid=$(cat "$WORK/session-id" 2>/dev/null || true)
    code=$(curl -sS --max-time 5 -K "$WORK/app.curlrc" -H "X-Transmission-Session-Id: $sid" -D "$WORK/headers" -o "$WORK/rpc" -w '%{http_code}' \
      --data "$1" "$APP_URL/transmission/rpc") || return 1
    [ "$code" = 409 ] || break
    # A new session id (first call, or the daemon restarted): remember it and send the request once more.
    tr -d '\r' <"$WORK/headers" | sed -n 's/^[Xx]-[Tt]ransmission-[Ss]ession-[Ii]d:[[:space:]]*\([^[:space:]]*\).*/\1/p' >"$WORK/session-id"
  done
  case "$code" in
    200) [ -r "${APP_USERNAME_FILE:-}" ] && accept_creds ;;
    401) refuse_creds "Transmission refused the RPC username or password (401; 3.00 turns its RPC off after 100 refusals until it is restarted, 4.x with anti-brute-force-enabled)"
      return 3 ;;
    403) if grep -q 'unsuccessful login attempts' "$WORK/rpc"; then return 2; fi
      log "Transmission answered 403: its rpc-whitelist refuses this address (allow 127.0.0.1), or 4.x's anti-brute-force lock is on (restart Transmission)"
      return 1 ;;
    *) log "Transmission's RPC answered HTTP $code"; return 1 ;;
  esac
  grep -q '"result"[[:space:]]*:[[:space:]]*"success"' "$WORK/rpc"
}

trm_port() {
  trm_rpc '{"method":"session-get","arguments":{"fields":["peer-port"]}}' || return $?
  json_number peer-port <"$WORK/rpc"
}

trm_set() {
  trm_rpc "{\"method\":\"session-set\",\"arguments\":{\"peer-port\":$1}}"
}

# --- Deluge (Web UI JSON-RPC) -------------------------------------------------------------------------------
dlg_post() {
  code=$(curl -sS --max-time 5 -b "$JAR" -c "$JAR" -H 'Content-Type: application/json' -o "$WORK/rpc" -w '%{http_code}' \
    --data "@$1" "$APP_URL/json") || return 1
  [ "$code" = 200 ]
}

dlg_login() {
  [ -r "${APP_PASSWORD_FILE:-}" ] || return 1
  creds_refused && return 3
  # The password, JSON-escaped, goes into a request file (never on a command line).
  printf '{"method":"auth.login","params":["%s"],"id":1}' "$(sed 's/\\/\\\\/g; s/"/\\"/g' "$APP_PASSWORD_FILE")" >"$WORK/login.json"
  dlg_post "$WORK/login.json" || return 1
  rm -f "$WORK/login.json"
  if grep -q '"result"[[:space:]]*:[[:space:]]*true' "$WORK/rpc"; then accept_creds; return 0; fi
  refuse_creds "Deluge refused the Web UI password (auth.login answered false)"
  return 3
}

# One call; logs in when Deluge answers "not authenticated" (error code 1), then once more.
dlg_call() {
  printf '{"method":"%s","params":%s,"id":2}' "$1" "$2" >"$WORK/call.json"
  dlg_post "$WORK/call.json" || return 1
  if grep -q '"code"[[:space:]]*:[[:space:]]*1[^0-9]' "$WORK/rpc"; then
    dlg_login || return $?
    dlg_post "$WORK/call.json" || return 1
  fi
  grep -q '"error"[[:space:]]*:[[:space:]]*null' "$WORK/rpc"
}

# The Web UI must be attached to a daemon before core.* calls: the first host it knows.
dlg_daemon() {
  dlg_call web.connected '[]' || return $?
  grep -q '"result"[[:space:]]*:[[:space:]]*true' "$WORK/rpc" && return 0
  dlg_call web.get_hosts '[]' || return 1
  host=$(sed -n 's/.*"result"[[:space:]]*:[[:space:]]*\[[[:space:]]*\[[[:space:]]*"\([0-9a-fA-F]*\)".*/\1/p' "$WORK/rpc")
  [ -n "$host" ] || { log "Deluge's Web UI knows no daemon"; return 1; }
  dlg_call web.connect "[\"$host\"]"
}

dlg_port() {
  dlg_daemon || return $?
  dlg_call core.get_config_value '["listen_ports"]' || return $?
  json_number result <"$WORK/rpc"
}

dlg_set() {
  dlg_call core.set_config "[{\"listen_ports\":[$1,$1],\"random_port\":false}]"
}

# --- one reconcile step --------------------------------------------------------------------------------------
app_port_now() {
  case "$APP" in
    qbittorrent) qbt_port ;;
    transmission) trm_port ;;
    deluge) dlg_port ;;
    command) echo "$last_command_port" ;;
  esac
}

app_set() {
  case "$APP" in
    qbittorrent) qbt_set "$1" ;;
    transmission) trm_set "$1" ;;
    deluge) dlg_set "$1" ;;
    command) command_set "$1" ;;
  esac
}

command_set() {
  crc=0
  timed_out=0
  if [ "$HAVE_SETSID" = 1 ]; then
    # COMMAND leads a process group of its own, and a watchdog stops that whole group when it overruns. Stopping only
    # the sh -c would leave the rest of a compound command (`a; b`, a pipe, `$(...)`) running, to apply a stale
    # port when it ends. The watchdog marks the overrun (a file of this run's own), so a command that itself exits
    # 124 or 143 is a failure, not a timeout. Something COMMAND puts in the background and leaves running after it
    # exits is not stopped.
    PORT=$1 setsid sh -c "$COMMAND" &
    cpid=$!
    overran="$WORK/command-overran.$cpid"
    # shellcheck disable=SC2016 # the watchdog's own sh expands $1..$3
    setsid sh -c 'sleep "$1"; : >"$2"; kill -s TERM -"$3" 2>/dev/null || exit 0
      for _ in 1 2 3 4 5; do sleep 1; kill -0 -"$3" 2>/dev/null || exit 0; done; kill -s KILL -"$3" 2>/dev/null' \
      command-watchdog "$COMMAND_TIMEOUT" "$overran" "$cpid" &
    wpid=$!
    wait "$cpid" 2>/dev/null || crc=$?
    # In time: the watchdog goes, by its pid too (it may not have called setsid yet). Overrun: it goes on until the
    # group is gone, and KILLs what ignored the TERM after 5 s. Either way it is waited for, so ash frees both jobs.
    [ -e "$overran" ] || kill -s TERM "$wpid" -"$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    if [ -e "$overran" ]; then timed_out=1; rm -f "$overran"; fi
  else
    PORT=$1 timeout "$COMMAND_TIMEOUT" sh -c "$COMMAND" || crc=$?
    # busybox timeout stops it with SIGTERM (exit 143); coreutils' exits 124.
    if [ "$crc" -eq 143 ] || [ "$crc" -eq 124 ]; then timed_out=1; fi
  fi
  if [ "$crc" -eq 0 ]; then
    last_command_port=$1; return 0
  fi
  if [ "$timed_out" = 1 ]; then
    log "COMMAND did not finish within $COMMAND_TIMEOUT s with PORT=$1: stopped, retried next period"
  else
    log "COMMAND failed (exit $crc) with PORT=$1: retried next period"
  fi
  return 1
}

reconcile() {
  grc=0
  p=$(gluetun_port) || grc=$?
  if [ "$grc" -eq 2 ]; then
    log "gluetun refused the API key (401): after changing controlApiKeySecret's value, restart the gateway, then this pod"
    forwarded=0; return 1
  elif [ "$grc" -ne 0 ]; then
    log "gluetun's control server did not answer"; forwarded=0; return 1
  fi
  forwarded=$p
  if [ "$forwarded" -eq 0 ]; then
    return 0 # no port yet (start-up, reconnect): write nothing
  fi
  case ",$SERVED_PORTS," in
    *",$forwarded,"*)
      log "the VPN forwards port $forwarded, which this pod serves itself ($SERVED_PORTS): the app keeps its port and the gateway does not forward it (its up command refuses too); reconnect the VPN for another port"
      return 1 ;;
  esac
  a=$(app_port_now)
  rc=$?
  [ $rc -eq 0 ] || return $rc
  app_port=${a:-0}
  if [ "$app_port" -ne "$forwarded" ]; then
    if [ "$APP" = command ]; then
      log "COMMAND last succeeded with $app_port (the app is not asked), the VPN forwards $forwarded: running COMMAND"
    else
      log "app listens on $app_port, the VPN forwards $forwarded: setting it"
    fi
    app_set "$forwarded" || return 1
    a=$(app_port_now) || return 1
    app_port=${a:-0}
  fi
  if [ "$app_port" -eq "$forwarded" ]; then
    last_success=$(date +%s)
  fi
  return 0
}

if [ "$METRICS_PORT" != 0 ]; then
  write_metrics
  busybox nc -ll -p "$METRICS_PORT" -e "$0" serve-metrics &
fi

# gluetun's port alone, while the app's ban lasts: the metrics (and so the alerts) follow a port change meanwhile.
forwarded_only() {
  grc=0
  p=$(gluetun_port) || grc=$?
  if [ "$grc" -ne 0 ]; then forwarded=0; return 1; fi
  forwarded=$p
}

# The container stops on SIGTERM (the shell that runs as its first process ignores it otherwise).
trap 'exit 0' TERM INT
banned_until=0
while :; do
  now=$(date +%s)
  if [ "$now" -lt "$banned_until" ]; then
    # The app is not asked before the ban ends (a login would only lengthen it); gluetun still is, every period.
    forwarded_only
    rc=0
  else
    reconcile
    rc=$?
  fi
  case $rc in
    0) ;;
    2) bans=$((bans + 1)); errors=$((errors + 1)); banned_until=$((now + BAN_BACKOFF))
      log "the app banned this address: next try in $BAN_BACKOFF s (gluetun's port is still read every $PERIOD s)" ;;
    3) errors=$((errors + 1)) ;; # refused credentials: checked again next period, sent again only once changed
    *) errors=$((errors + 1)) ;;
  esac
  write_metrics
  sleep "$PERIOD" &
  wait $!
done
