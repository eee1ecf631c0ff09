#!/bin/sh
# The port-forwarding workload's vpn-route-init command, written by tunnelwright: pod-gateway's client_init.sh, run
# only in the StatefulSet's pod <name>-<ordinals.start>. client_init.sh looks its nat.conf entry up by
# `hostname | cut -d'-' -f1` (pod-gateway v1.13.0 bin/client_init.sh:42-44, :54) and takes its fixed address, so any
# other ordinal (from kubectl scale, an autoscaler or a replicas patch) would take the same one: it exits 1 here and
# never starts. Only the first label of the hostname is compared: with setHostnameAsFQDN the kernel hostname is the
# pod's FQDN (kubernetes v1.28.0 pkg/kubelet/util/util.go:33-45).
#   FORWARDED_POD       the one pod that may start (<name>-<ordinals.start>)
#   FORWARDED_WORKLOAD  the StatefulSet's name
set -u
h=$(hostname)
if [ "${h%%.*}" != "$FORWARDED_POD" ]; then
  echo "vpn-route-init: this pod is $h, not $FORWARDED_POD: only $FORWARDED_POD may take the forwarded workload's fixed VXLAN address (a second replica of the StatefulSet $FORWARDED_WORKLOAD, from kubectl scale, an autoscaler or a replicas patch, would take it too); scale $FORWARDED_WORKLOAD to 1" >&2
  exit 1
fi
exec /bin/client_init.sh
