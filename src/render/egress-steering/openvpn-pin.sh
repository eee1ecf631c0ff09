#!/bin/sh
# tunnelwright: the provider's config as OpenVPN reads it here.
# - Never persist-tun: with it, a server that stops answering leaves tun0 up (a restart keeps it) and runs no down
#   hook, so nothing that keys on the tunnel sees it dead. Without it, ping-restart closes tun0.
# - Never keepalive: the unit gives --ping and --ping-restart, which OpenVPN refuses beside a keepalive.
# - With a third argument `pin`, none of its own remotes: the pinned --remote is then the only server OpenVPN tries (a --remote
#   given beside --config is appended to the config's list, and OpenVPN moves on to the next on failure).
# - Never a program of the provider's: route-up, route-pre-down and ipchange run beside the unit's hooks
#   (--route-noexec stops OpenVPN's own routes, not a route-up script that adds a default route); they are dropped.
#   tls-verify and plugin are refused: they may check the server, and dropping that check would fail open.
# - Never a management interface (management*): a control port on the node.
# - Never daemon (the unit runs OpenVPN in the foreground), user, group, chroot or setcon (without persist-tun a
#   reconnect reopens tun0, and the down hook labels the node: both need root), log or log-append (the journal has it).
# A dropped line is said on stderr, in the unit's journal.
# Each line's first token is read as OpenVPN reads it (options.c: parse_line() unquotes it, then
# bypass_doubledash() drops a leading "--"), so "--persist-tun" or "\"remote\"" is recognised too, and so is an option
# given as "setenv opt OPTION" (OpenVPN applies it). A line's
# trailing carriage return goes (a config saved with Windows line ends: OpenVPN reads "\r" as a space, so
# "persist-tun\r" is persist-tun to it).
# Refused: config (another file, which this cannot rewrite), tls-verify and plugin, and <connection> blocks when pinning.
# usage: egress-openvpn-pin CONFIG OUT [pin]
set -eu
umask 077
awk -v pin="${3:-}" '
function bare(t) { gsub(/["\047\\]/, "", t); sub(/^--/, "", t); return t }
{
  sub(/\r$/, "")
  # A UTF-8 byte-order mark: OpenVPN skips it (options.c, read_config_file), so line 1 is read without it here too.
  if (NR == 1) sub(/^\357\273\277/, "")
  line = $0
  sub(/^[ \t]+/, "", line)
  split(line, w, /[ \t]+/)
  tok = bare(w[1])
  # "setenv opt X ...": OpenVPN reads X as an option of the config (options.c, "setenv opt"), so X is what counts here.
  if (tok == "setenv" && bare(w[2]) == "opt") tok = bare(w[3])
  # An inline file (<ca>, <tls-auth>, …) is data, copied as it is: a line of it is never read as an option.
  if (block != "") { if (tok == "</" block ">") block = ""; print; next }
  if (tok ~ /^<[a-z0-9-]+>$/ && tok != "<connection>") { block = substr(tok, 2, length(tok) - 2); print; next }
  if (pin == "pin" && tok ~ /^<connection>/) { print "egress-openvpn-pin: " FILENAME " has <connection> blocks (each with its own remote): remove them to pin a remote" > "/dev/stderr"; exit 1 }
  if (tok == "config") { print "egress-openvpn-pin: " FILENAME " reads another config (line " NR "), unseen here: inline it" > "/dev/stderr"; exit 1 }
  if (tok == "persist-tun") next
  # The unit gives --ping and --ping-restart: beside them a keepalive is a usage error (helper.c,
  # helper_keepalive(): "--keepalive conflicts with --ping, --ping-exit, or --ping-restart") and OpenVPN never starts.
  if (tok == "keepalive") next
  # A check the provider runs on the server (tls-verify, or a plugin) is not dropped: without it the check fails open.
  if (tok == "tls-verify" || tok == "plugin") { print "egress-openvpn-pin: " FILENAME " line " NR ": " tok " runs a program of the provider beside the unit: remove it (verify-x509-name checks the server name without one)" > "/dev/stderr"; exit 1 }
  if (tok ~ /^(route-up|route-pre-down|ipchange|daemon|user|group|chroot|setcon|log|log-append)$/) {
    print "egress-openvpn-pin: " FILENAME " line " NR ": " tok " dropped (the unit runs OpenVPN in the foreground, as root, with its own hooks only)" > "/dev/stderr"
    next
  }
  # The management interface is a control port on the node (anyone who reaches it can stop or hold the tunnel).
  if (tok ~ /^management/) { print "egress-openvpn-pin: " FILENAME " line " NR ": " tok " dropped (no management port on the node)" > "/dev/stderr"; next }
  if (pin == "pin" && (tok == "remote" || tok == "remote-random" || tok == "remote-random-hostname")) next
  print
}' "$1" > "$2.partial"
mv -f "$2.partial" "$2"
