/**
 * What the two EgressConformance labs share (egress-conformance-gateway.test.ts, egress-conformance-steering.test.ts):
 * a stand-in for kubectl that maps `kubectl -n <ns> exec deploy/<name> -c <container> -- …` to the pod that plays that
 * Deployment, and the check's runs (to their end, or interrupted once the tunnel is stopped), each kept for the log.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PodFile, quote } from './pods';
import { Run, sh } from './tools';

/** The file the check is written to in the lab's directory (the name its refusal message quotes). */
export const CHECK = 'egress-conformance.sh';

export interface ConformanceRun extends Run {
  /** stdout, line by line. */
  lines: string[];
}

export interface KubectlStandIn {
  /** `<namespace>/<deployment>/<container>` → the command prefix that enters the pod playing it. */
  deployments: Record<string, string>;
  /**
   * The steering's node agent: `scale deploy/<d>` of a known Deployment, and `get node <node>` prints what `labels`
   * prints (the labels the node's re-steer hook wrote). @default none: both are unsupported
   */
  nodeAgent?: { node: string; labels: string };
  /**
   * `get pods -l app.kubernetes.io/name=<d> -o jsonpath={.items[*].status.podIP}`: `<namespace>/<deployment>` → the
   * address of the pod that plays it. @default none: unsupported
   */
  podIps?: Record<string, string>;
  /**
   * A command prefix that runs the real kubectl against the lab's API (its Lease, Nodes and labels): every `get` but
   * `get pods -l` goes there with its namespace, and `scale` of a known Deployment is answered. @default none
   */
  api?: string;
  /** After an `exec` whose command matches a pattern (a shell `case` pattern), that command on the lab's host. */
  afterExec?: Array<[pattern: string, command: string]>;
  /** Before an `exec` whose command matches a pattern, that command on the lab's host. */
  beforeExec?: Array<[pattern: string, command: string]>;
}

/**
 * systemctl on the node (the re-steer hook's KUBECTL `kubectl`): start/stop of a unit as systemd runs it: wireguard-tools' wg-quick@.service (Type=oneshot,
 * RemainAfterExit=yes: start when active and stop when inactive do nothing), its ExecStart/ExecStop with %i the
 * instance, its Environment=, plus the lab's userspace WireGuard. `stop <name>.timer` cancels a systemd-run timer.
 * /tmp/lab/start-noop makes start do nothing (the "never restarted" control).
 */
const systemctl = (kubectl: string) => `#!/bin/bash
echo "systemctl $*" >> /tmp/systemctl.log
# Options anywhere, as systemctl takes them: --quiet (-q) prints nothing.
quiet= args=()
for a in "$@"; do case $a in --quiet|-q) quiet=1 ;; -*) echo "systemctl stand-in: unsupported: $a" >&2; exit 1 ;; *) args+=("$a") ;; esac; done
set -- "\${args[@]}"
verb=$1 unit=$2
case $unit in
*.timer) [ "$verb" = stop ] || exit 1
    pid=$(cat "/run/tw-timers/\${unit%.timer}" 2>/dev/null) || { echo "Failed to stop $unit: Unit $unit not loaded." >&2; exit 5; }
    kill "$pid"; rm -f "/run/tw-timers/\${unit%.timer}"; exit 0 ;;
esac
inst=\${unit#*@}; inst=\${inst%.service}
file=/lib/systemd/system/\${unit%%@*}@.service
[ -r "$file" ] || { echo "Failed to $verb $unit: Unit $unit not found." >&2; exit 5; }
mkdir -p /run/tw-units
active=; [ -e "/run/tw-units/$unit" ] && active=1
line() { sed -n "s/^$1=//p" "$file" | head -n 1 | sed "s/%i/$inst/g"; }
export $(line Environment) WG_QUICK_USERSPACE_IMPLEMENTATION=wireguard-go WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 KUBECTL=${kubectl}
case $verb in
  start) [ -n "$active" ] && exit 0; [ -e /tmp/lab/start-noop ] && exit 0
    $(line ExecStart) >> /tmp/unit.log 2>&1 || { echo "Job for $unit failed." >&2; exit 1; }
    : > "/run/tw-units/$unit" ;;
  stop) [ -z "$active" ] && exit 0
    $(line ExecStop) >> /tmp/unit.log 2>&1; rm -f "/run/tw-units/$unit" ;;
  is-active) [ -n "$active" ] && { [ -n "$quiet" ] || echo active; exit 0; }; [ -n "$quiet" ] || echo inactive; exit 3 ;;
*) echo "systemctl stand-in: unsupported: $*" >&2; exit 1 ;;
esac
`;
/** systemd-run --unit=<name> --on-active=<seconds> [...] <command>: <command> run once, that many seconds later. */
const systemdRun = `#!/bin/bash
echo "systemd-run $*" >> /tmp/systemctl.log
name= secs=
while [ $# -gt 0 ]; do
  case $1 in
    --unit=*) name=\${1#--unit=} ;; --on-active=*) secs=\${1#--on-active=} ;;
    --quiet|--collect|--timer-property=*) ;;
    -*) echo "systemd-run stand-in: unsupported: $1" >&2; exit 1 ;;
    *) break ;;
  esac
  shift
done
[ -n "$name" ] && [ -n "$secs" ] || { echo "systemd-run stand-in: needs --unit and --on-active" >&2; exit 1; }
mkdir -p /run/tw-timers
[ -e "/run/tw-timers/$name" ] && { echo "Failed to start transient timer unit: Unit $name.timer was already loaded or has a fragment file." >&2; exit 1; }
setsid bash -c 'sleep "$1"; rm -f "/run/tw-timers/$2"; echo "timer $2 elapsed" >> /tmp/systemctl.log; shift 2; exec "$@"' sh "$secs" "$name" "$@" </dev/null >>/tmp/unit.log 2>&1 &
echo $! > "/run/tw-timers/$name"
`;
/** A node pod's systemctl and systemd-run stand-ins (pods.ts PodFile), the re-steer hook's kubectl `kubectl`. */
export function nodeUnitStandIns(kubectl: string): Record<string, PodFile> {
  return { '/usr/bin/systemctl': { content: systemctl(kubectl), mode: 0o755 }, '/usr/bin/systemd-run': { content: systemdRun, mode: 0o755 } };
}

export interface RunOptions {
  /** @default ['--destructive'] */
  args?: string[];
  /** The script run. @default the lab's script */
  check?: string;
  /** More environment for the check. */
  env?: Record<string, string>;
  /**
   * Once the output says "tunnel stopped": `TERM` signals the check alone (its trap runs); `KILL` kills its whole
   * process group (no trap runs; the check runs in a session of its own). The output then ends with `status <rc>`.
   */
  interrupt?: 'TERM' | 'KILL';
  /** Keep the run's status, WAN packets and output under this name for `printRuns`. */
  record?: string;
  /** How long a run to its end may take. @default 120 */
  timeoutSeconds?: number;
}

export class ConformanceLab {
  readonly kubectl: string;
  /** Every kubectl call, one line each. */
  readonly kubectlLog: string;
  /** The recorded runs. */
  readonly outputs: Record<string, { status: number | null; leakedAtWan: number; output: string[] }> = {};

  /** `leaked`: the vpn-class packets counted where a leak would leave (the WAN), read when a run is recorded. */
  constructor(readonly dir: string, readonly script: string, readonly leaked: () => number) {
    this.kubectl = path.join(dir, 'kubectl');
    this.kubectlLog = path.join(dir, 'kubectl.log');
  }

  /** Writes the kubectl stand-in (its Deployments' pods must have started: the prefixes name their PIDs). */
  writeKubectl(k: KubectlStandIn): void {
    const deployments = path.join(this.dir, 'deployments');
    fs.writeFileSync(deployments, Object.entries(k.deployments).map(([d, prefix]) => `${d} ${prefix}\n`).join(''));
    const pods = k.podIps === undefined ? '' : `
    if [ "$2 $3" = "pods -l" ]; then
      case "$ns/\${4#app.kubernetes.io/name=}" in
${Object.entries(k.podIps).map(([d, ip]) => `        ${quote(d)}) printf '%s' ${quote(ip)} ;;
`).join('')}      esac
      exit 0
    fi`;
    const agent = k.nodeAgent === undefined && k.podIps === undefined ? '' : `${k.nodeAgent || k.api ? `  scale) known "\${2#deploy/}"; echo "deployment.apps/\${2#deploy/} scaled" ;;
` : ''}  get)${pods}
    ${k.api ? `exec ${k.api} -n "$ns" "$@" ;;` : k.nodeAgent ? `[ "$2 $3" = ${quote(`node ${k.nodeAgent.node}`)} ] || { echo "Error from server (NotFound): nodes \\"$3\\" not found" >&2; exit 1; }
    ${k.nodeAgent.labels}; exit 0 ;;` : 'echo "kubectl stand-in: unsupported: $*" >&2; exit 1 ;;'}
`;
    const hooks = (list: Array<[string, string]> = []) => list.map(([pattern, command]) => `\n      ${pattern}) ${command} ;;`).join('');
    const after = hooks(k.afterExec);
    const before = k.beforeExec === undefined ? '' : `
    case "$*" in${hooks(k.beforeExec)}
    esac`;
    fs.writeFileSync(this.kubectl, `#!/bin/bash
# A stand-in for kubectl: exec into the pod that plays a Deployment; rollout status of a known one${k.nodeAgent ? '; its scale; the node\'s labels as its re-steer hook wrote them' : ''}.
echo "$*" >> ${this.kubectlLog}
ns=default
[ "$1" = -n ] && { ns=$2; shift 2; }
known() { grep -q "^$ns/$1/" ${deployments} || { echo "Error from server (NotFound): deployments.apps \\"$1\\" not found" >&2; exit 1; }; }
case $1 in
  rollout) known "\${3#deploy/}" ;;
${agent}  exec)
    dep=\${2#deploy/}; shift 2
    c=; [ "$1" = -c ] && { c=$2; shift 2; }
    [ "$1" = -- ] && shift
    # The node agent's way into the node (hostPID: PID 1 is the node's init; nsenter into its mount namespace takes its
    # root): here the node pod's namespaces and root, which the agent's prefix enters already.
    if [ "$1 $2 $3" = "nsenter -t 1" ]; then while [ "$1" != -- ]; do shift; done; shift; fi
    prefix=$(grep "^$ns/$dep/$c " ${deployments} | cut -d' ' -f2-)
    [ -n "$prefix" ] || { echo "Error from server (NotFound): deployments.apps \\"$dep\\" not found" >&2; exit 1; }
    # shellcheck disable=SC2086
${before}
    # In a session of its own, as a process in the pod is: killing the check's process group does not reach it.
    setsid -w $prefix "$@"
    rc=$?
    case "$*" in${after}
    esac
    exit $rc ;;
  *) echo "kubectl stand-in: unsupported: $*" >&2; exit 1 ;;
esac
`, { mode: 0o755 });
  }

  /** Prints every recorded run (the evidence a reader of the log looks for). */
  printRuns(title: string): void {
    process.stdout.write(`${title}: ${JSON.stringify(this.outputs, undefined, 1)}\n`);
  }
}

/** Writes the check into the lab's directory and runs it with the kubectl stand-in, in the lab's directory. */
export function runConformance(lab: ConformanceLab, opts: RunOptions = {}): ConformanceRun {
  fs.writeFileSync(path.join(lab.dir, CHECK), opts.check ?? lab.script, { mode: 0o755 });
  const env = Object.entries({ ...opts.env, KUBECTL: lab.kubectl }).map(([k, v]) => `${k}=${quote(v)}`).join(' ');
  const command = `${env} ${opts.interrupt === 'KILL' ? 'setsid ' : ''}sh ${CHECK} ${(opts.args ?? ['--destructive']).join(' ')}`;
  let r: ConformanceRun;
  if (opts.interrupt === undefined) {
    const done = sh(`cd ${lab.dir} && ${command}`, { timeout: (opts.timeoutSeconds ?? 120) * 1000 });
    r = { ...done, lines: done.stdout.trim().split('\n') };
  } else {
    const kill = opts.interrupt === 'KILL' ? 'kill -KILL -- -$pid' : 'kill -TERM $pid';
    const done = sh(`cd ${lab.dir} && (${command} > run.out 2>&1 & pid=$!; ` +
      `for i in $(seq 100); do grep -q "tunnel stopped" run.out && break; sleep 0.1; done; ${kill}; wait $pid; echo "status $?" >> run.out); cat run.out`, { timeout: 60_000 });
    const lines = done.stdout.trim().split('\n');
    r = { ...done, status: Number(/^status (\d+)$/.exec(lines[lines.length - 1])?.[1] ?? NaN), lines };
  }
  if (opts.record !== undefined) lab.outputs[opts.record] = { status: r.status, leakedAtWan: lab.leaked(), output: r.lines };
  return r;
}
