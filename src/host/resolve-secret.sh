#!/bin/sh
# tunnelwright: resolve a secret source into a root-only file. Never prints the value.
# usage: resolve-secret file|url SOURCE DEST WAIT_SECONDS
#   file: SOURCE is the file to copy; url: SOURCE is a root-only curl config holding the URL (it may carry a token,
#   so it is never an argument: process lists are world-readable)
set -eu
kind=$1 source=$2 dest=$3 wait=$4
umask 077
mkdir -p "$(dirname "$dest")"
tmp="$dest.partial"
deadline=$(( $(date +%s) + wait ))
while :; do
  case "$kind" in
    file) if [ -s "$source" ] && cp "$source" "$tmp"; then break; fi ;;
    # An empty body is not a secret (a proxy's 200, a store not filled yet): the file already there is kept.
    url) if curl --fail --silent --location --proto =https --max-time 30 --output "$tmp" --config "$source" 2>/dev/null && [ -s "$tmp" ]; then break; fi ;;
    *) echo "resolve-secret: unknown source kind: $kind" >&2; exit 2 ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    rm -f "$tmp"
    echo "resolve-secret: $dest: source not available after ${wait}s" >&2
    exit 1
  fi
  sleep 2
done
chmod 0600 "$tmp"
mv -f "$tmp" "$dest"
