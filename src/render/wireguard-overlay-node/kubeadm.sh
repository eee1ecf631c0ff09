#!/bin/sh
# tunnelwright-kubeadm: kubeadm init --upload-certs, or join, with the node's config, its secret placeholders
# filled from files under $SECRETS (certificate-key, bootstrap-token, ca-cert-hash) into a 0600 file under /run,
# removed after: no secret in user-data. Arguments go to kubeadm. See docs/wireguard-mesh.md.
set -eu

CONFIG=${TUNNELWRIGHT_KUBEADM_CONFIG:-/etc/kubernetes/tunnelwright-kubeadm.yaml}
SECRETS=${TUNNELWRIGHT_KUBEADM_SECRETS:-/etc/kubernetes/tunnelwright}
RUNDIR=${TUNNELWRIGHT_KUBEADM_RUNDIR:-/run/tunnelwright}

fail() {
  echo "tunnelwright-kubeadm: $*" >&2
  exit 2
}

# secret NAME PATTERN WHAT: the file's content, when it is WHAT (never printed).
secret() {
  f="$SECRETS/$1"
  [ -r "$f" ] || fail "$f is missing: put $3 there first"
  v=$(tr -d ' \t\r\n' < "$f")
  printf '%s' "$v" | grep -Eqx "$2" || fail "$f does not hold $3 (its content is not shown)"
  printf '%s' "$v"
}

[ -r "$CONFIG" ] || fail "$CONFIG is missing"
if grep -q '^kind: JoinConfiguration$' "$CONFIG"; then action='join'; else action='init'; fi

script=''
if grep -q '@certificate-key@' "$CONFIG"; then
  key=$(secret certificate-key '[0-9a-f]{64}' 'the certificate key, 64 hex digits (kubeadm certs certificate-key)')
  script="${script}s/@certificate-key@/$key/;"
fi
if grep -q '@bootstrap-token@' "$CONFIG"; then
  token=$(secret bootstrap-token '[a-z0-9]{6}\.[a-z0-9]{16}' 'a bootstrap token, [a-z0-9]{6}.[a-z0-9]{16} (kubeadm token create)')
  script="${script}s/@bootstrap-token@/$token/;"
fi
if grep -q '@ca-cert-hash@' "$CONFIG"; then
  hash=$(secret ca-cert-hash 'sha256:[0-9a-f]{64}' 'the CA public key hash, sha256:<64 hex digits>')
  script="${script}s/@ca-cert-hash@/$hash/;"
fi

umask 077
mkdir -p "$RUNDIR"
filled="$RUNDIR/kubeadm.yaml"
trap 'rm -f "$filled"' EXIT
trap 'exit 130' INT TERM
sed -e "$script" "$CONFIG" > "$filled"

if [ "$action" = init ]; then
  kubeadm init --config "$filled" --upload-certs "$@"
else
  kubeadm join --config "$filled" "$@"
fi
