#!/usr/bin/env bash
# Installs the real validators the system tests use, from Debian packages. Idempotent; quiet on success.
# Packages that would start a daemon (prometheus, blackbox exporter) are unpacked, not installed, under
# .tools/ (git-ignored) so nothing is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { "$@" >>"$log" 2>&1 || { cat "$log" >&2; echo "install-system-tools: failed: $*" >&2; exit 1; }; }

apt_pkgs=(cloud-init wireguard-tools wireguard-go nftables iproute2 iputils-ping ignition systemd python3-jsonschema curl python3
  # pod-gateway's scripts, run by the VpnGateway data-path test (../shared/vendor/pod-gateway-*/README.md)
  iptables dnsmasq-base bind9-dnsutils udhcpc busybox net-tools psmisc inotify-tools
  # port forwarding: the apps port-sync drives (test/system/vpn-gateway-port-sync.test.ts) and shellcheck for its script
  qbittorrent-nox transmission-daemon deluged deluge-web shellcheck
  # the EgressSteering OpenVPN tunnel test
  openvpn
  # the EgressConformance script: linted, and gluetun's wget stand-in in its data-path test
  shellcheck wget)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  run apt-get update -qq
  run apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

unpack() { # unpack <package> <binary path inside the package>
  local pkg=$1 bin=$2
  [ -x "$TOOLS/root$bin" ] && return 0
  mkdir -p "$TOOLS/debs" "$TOOLS/root"
  if ! ls "$TOOLS/debs/${pkg}"_*.deb >/dev/null 2>&1; then
    (cd "$TOOLS/debs" && apt-get download -qq "$pkg" >>"$log" 2>&1) || {
      run apt-get update -qq
      (cd "$TOOLS/debs" && run apt-get download -qq "$pkg")
    }
  fi
  run dpkg -x "$(ls "$TOOLS/debs/${pkg}"_*.deb | head -n1)" "$TOOLS/root"
}
unpack prometheus /usr/bin/promtool
unpack prometheus-blackbox-exporter /usr/bin/prometheus-blackbox-exporter
mkdir -p "$TOOLS/bin"
ln -sf "$TOOLS/root/usr/bin/promtool" "$TOOLS/bin/promtool"
# the server itself, which scrapes port-sync's metrics endpoint in test/system/vpn-gateway-port-sync-metrics.test.ts
ln -sf "$TOOLS/root/usr/bin/prometheus" "$TOOLS/bin/prometheus"
ln -sf "$TOOLS/root/usr/bin/prometheus-blackbox-exporter" "$TOOLS/bin/blackbox_exporter"
