#!/bin/sh
# The failover-agent container's readinessProbe (exec, busybox sh in curlimages/curl): ready while the agent's verdict
# (failover-agent.sh writes "healthy|unhealthy EXPIRES" at every check, EXPIRES in seconds since boot) says healthy and
# has not expired: an agent whose loop hangs stops refreshing it, and the pod leaves the Ready pods within VERDICT_TTL.
# Both read /proc/uptime: one kernel, one clock, which no one can set.
verdict_file=${VERDICT:-/run/failover/verdict}
[ -r "$verdict_file" ] || exit 1
read -r state expires <"$verdict_file" || exit 1
case $expires in '' | *[!0-9]*) exit 1 ;; esac
[ "$state" = healthy ] && [ "$(cut -d. -f1 /proc/uptime)" -lt "$expires" ]
