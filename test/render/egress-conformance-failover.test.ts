import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Chart } from 'cdk8s';
import { EgressConformanceProps, planEgressConformance, validateEgressConformance } from '../../src';
import { checkEgressConformance } from '../../src/model/egress-conformance';
import { EgressConformance, EgressSteering } from '../../src/cdk8s';
import type { VpnGatewayProps } from '../../src/model/vpn-gateway';
import { checkKubeObjects } from '../../src/testing';
import { failoverSteering, homelabConformance, nordvpnGateway, wireguardSteering } from '../helpers/fixtures';
import { itWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { expectWarnings } from '../helpers/stderr-guard';

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'what the failover step emits the cdk8s construct takes the failover EgressSteering construct and the step\'s props: the same plan as the core': ['c/st: clusterCidrs', 'c/st: vpnClass', 'c/st: ciliumValues', 'c/st: kubeconfigFrom', 'c/st: tunnel'],
});

/** The NordVPN gateway with a warm standby on a key of its own (StatefulSets vpn-gateway-a, -b). */
const standbyGateway = (): VpnGatewayProps => ({ ...nordvpnGateway(), standby: { wireguardPrivateKeySecret: { name: 'nordvpn-wireguard-standby' } } });
/** The check of the failover steering alone (gw-1 with standby gw-2, the Lease kube-system/vpn-egress-gateway). */
const steeringCheck = (extra: Partial<EgressConformanceProps['egressSteerings'] & object>[number] | object = {}): EgressConformanceProps => ({
  ...homelabConformance(), vpnGateways: [], requestTimeoutSeconds: 1, recoverySeconds: 5,
  egressSteerings: [{ steering: { ...failoverSteering(), namespaces: ['media'] }, probeNamespace: 'media', ...extra }],
});
const gatewayCheck = (extra: object = {}): EgressConformanceProps => ({
  ...homelabConformance(), egressSteerings: [], requestTimeoutSeconds: 1, recoverySeconds: 5,
  vpnGateways: [{ gateway: standbyGateway(), probeNamespace: 'media', ...extra }],
});
const scriptOf = (p: EgressConformanceProps) => (planEgressConformance(p).values.egressConformance as { script: string }).script;

describe('the failover step\'s props (R5)', () => {
  it.each<[string, EgressConformanceProps, string, string]>([
    ['a failover step asked for a gateway without standby', { ...gatewayCheck(), vpnGateways: [{ gateway: nordvpnGateway(), probeNamespace: 'media', failover: true }] }, 'vpnGateways[0].failover', 'no-standby'],
    ['a failover step asked for a steering without failover', { ...steeringCheck(), egressSteerings: [{ steering: { ...wireguardSteering(), namespaces: ['media'] }, probeNamespace: 'media', failover: true }] }, 'egressSteerings[0].failover', 'no-standby'],
    ['failoverSeconds on a steering without failover', { ...steeringCheck(), egressSteerings: [{ steering: { ...wireguardSteering(), namespaces: ['media'] }, probeNamespace: 'media', failoverSeconds: 60 }] }, 'egressSteerings[0].failoverSeconds', 'no-standby'],
    ['a steering\'s bound below 3 failed checks × 2 s', steeringCheck({ failoverSeconds: 5 }), 'egressSteerings[0].failoverSeconds', 'failover-seconds'],
    ['a steering\'s bound at the holder\'s own 3 failed checks × 2 s (6 s), with no time for a standby\'s check ((3 + 1) × 2 s)', steeringCheck({ failoverSeconds: 7 }), 'egressSteerings[0].failoverSeconds', 'failover-seconds'],
    ['a gateway\'s bound below releaseAfter 3 × 2 s', gatewayCheck({ failoverSeconds: 5 }), 'vpnGateways[0].failoverSeconds', 'failover-seconds'],
    ['a gateway\'s bound at releaseAfter 3 × 2 s (6 s), with no time for the standby\'s check ((3 + 1) × 2 s)', gatewayCheck({ failoverSeconds: 7 }), 'vpnGateways[0].failoverSeconds', 'failover-seconds'],
    ['the global bound below a steering\'s agents', { ...steeringCheck(), failoverSeconds: 5 }, 'failoverSeconds', 'failover-seconds'],
    ['a bound below the steering\'s own agents\' longer window (10 failed checks × 2 s)', { ...steeringCheck({ failoverSeconds: 19 }), egressSteerings: [{ steering: { ...failoverSteering(), namespaces: ['media'], failover: { ...failoverSteering().failover!, unhealthyChecks: 10 } }, probeNamespace: 'media', failoverSeconds: 19 }] }, 'egressSteerings[0].failoverSeconds', 'failover-seconds'],
  ])('refuses %s, at its path, with a remedy', (_what, props, at, code) => {
    const problems = validateEgressConformance(props);
    expect(problems.map((p) => [p.path, p.code])).toEqual([[at, code]]);
    expect(problems[0].message).toMatch(/give|leave/);
  });

  it.each<[string, EgressConformanceProps]>([
    ['the steering\'s floor itself ((3 + 1) × 2 s = 8 s)', steeringCheck({ failoverSeconds: 8 })],
    ['the gateway\'s floor itself ((3 + 1) × 2 s = 8 s)', gatewayCheck({ failoverSeconds: 8 })],
    ['a bound below the lease: the stopped holder\'s agent gives the role up itself (the failover lab: 5.4-5.7 s with a 14 s lease)', { ...steeringCheck({ failoverSeconds: 10 }), egressSteerings: [{ steering: { ...failoverSteering(), namespaces: ['media'], failover: { ...failoverSteering().failover!, leaseDurationSeconds: 40 } }, probeNamespace: 'media', failoverSeconds: 10 }] }],
    ['a low global bound where the only standby source opts out', { ...steeringCheck({ failover: false }), failoverSeconds: 10 }],
    ['no bound: the default', steeringCheck()],
  ])('control: accepts %s', (_what, props) => {
    expect(validateEgressConformance(props)).toEqual([]);
  });

  it.each<[string, EgressConformanceProps, string, number | undefined]>([
    ['a steering at its floor (8 s): below 8 + 1 s (Cilium) + 1 s × 2 targets + 1 s', steeringCheck({ failoverSeconds: 8 }), 'egressSteerings[0].failoverSeconds', 12],
    ['a steering 1 s below the realistic switch', steeringCheck({ failoverSeconds: 11 }), 'egressSteerings[0].failoverSeconds', 12],
    ['control: a steering at the realistic switch', steeringCheck({ failoverSeconds: 12 }), '', undefined],
    ['the global bound, with 5 s requests: 8 + 1 + 5 × 2 + 1', { ...steeringCheck(), requestTimeoutSeconds: 5, failoverSeconds: 19 }, 'failoverSeconds', 20],
    ['control: the global bound at that', { ...steeringCheck(), requestTimeoutSeconds: 5, failoverSeconds: 20 }, '', undefined],
    ['a gateway at its floor (8 s): below 8 + 30 s (pod-gateway\'s clients) + 1 s × 2 targets + 1 s', gatewayCheck({ failoverSeconds: 8 }), 'vpnGateways[0].failoverSeconds', 41],
    ['control: a gateway at the realistic switch', gatewayCheck({ failoverSeconds: 41 }), '', undefined],
    ['control: no bound (the default, 57 s)', steeringCheck(), '', undefined],
  ])('warns of a bound the agents may meet but a switch seldom does: %s', (_what, props, at, realistic) => {
    const { problems, warnings } = checkEgressConformance(props);
    expect(problems).toEqual([]);
    expect(warnings.map((w) => [w.path, w.code, Number(/realistic switch of (\d+) s/.exec(w.message)?.[1])])).toEqual(realistic === undefined ? [] : [[at, 'failover-seconds-tight', realistic]]);
    // The core plan carries them (the adapters print a plan's warnings).
    expect(planEgressConformance(props).warnings.map((w) => w.code)).toEqual(realistic === undefined ? [] : ['failover-seconds-tight']);
  });

  it('runs the step by default where there is a standby, with the default bound and the settle seconds (failed checks × interval + a 3 s probe: 3 × 2 + 3) in SOURCES; none without one, and none when failover is false', () => {
    expect(scriptOf(steeringCheck())).toContain('|kube-system/vpn-egress-gateway|gw-1=egress-conformance-s0-agent gw-2=egress-conformance-s0-agent1|57|9|egress-active.tunnelwright.dev/vpn-egress\'');
    expect(scriptOf(gatewayCheck())).toContain('|vpn-gateway/vpn-gateway|vpn-gateway-a-0=pod/vpn-gateway-a-0 vpn-gateway-b-0=pod/vpn-gateway-b-0|231|9|\'');
    expect(scriptOf({ ...steeringCheck(), failoverSeconds: 90 })).toMatch(/\|90\|9\|egress-active\.tunnelwright\.dev\/vpn-egress'\n/);
    expect(scriptOf(steeringCheck({ failover: false }))).not.toContain('vpn-egress-gateway');
    expect(scriptOf(homelabConformance())).not.toMatch(/=pod\/|=egress-conformance-s\d-agent/);
  });

  it.each([
    ['healthyChecks 5 above unhealthyChecks 3: the restarted candidate takes the role only after 5 good checks (5 × 2 + 3)', { healthyChecks: 5 }, 13],
    ['unhealthyChecks 4 above healthyChecks 3: the failed checks R3 left must be reset first (4 × 2 + 3)', { unhealthyChecks: 4 }, 11],
  ])('the settle seconds count the longer of the agents\' windows: %s', (_what, failover, settle) => {
    const props = { ...steeringCheck(), egressSteerings: [{ steering: { ...failoverSteering(), namespaces: ['media'], failover: { ...failoverSteering().failover!, ...failover } }, probeNamespace: 'media', failoverSeconds: 60 }] };
    expect(scriptOf(props)).toMatch(new RegExp(`\\|60\\|${settle}\\|egress-active`));
  });
});

describe('what the failover step emits', () => {
  const plan = planEgressConformance(steeringCheck());
  type Dep = { metadata: { name: string }; spec: { replicas: number; template: { spec: { nodeSelector: Record<string, string>; hostPID: boolean } } } };

  it('a node agent on every candidate node (at 0 replicas: the script scales them for its run), so each one\'s WAN can be counted', () => {
    const agents = plan.objects.filter((o) => o.kind === 'Deployment' && o.metadata.name!.includes('-agent')) as unknown as Dep[];
    expect(agents.map((a) => [a.metadata.name, a.spec.template.spec.nodeSelector['kubernetes.io/hostname'], a.spec.replicas])).toEqual([
      ['egress-conformance-s0-agent', 'gw-1', 0],
      ['egress-conformance-s0-agent1', 'gw-2', 0],
    ]);
  });

  it('the probes are kept off every candidate gateway node (required node affinity: kubernetes.io/hostname NotIn the candidates), where the pod fence would drop the steered probe', () => {
    type Pod = { metadata: { name: string }; spec: { template: { spec: { affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: { matchExpressions: { key: string; operator: string; values: string[] }[] }[] } } } } } } };
    const probes = plan.objects.filter((o) => o.kind === 'Deployment' && /-(vpn|direct)$/.test(o.metadata.name!)) as unknown as Pod[];
    expect(probes.map((d) => [d.metadata.name, d.spec.template.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms])).toEqual(
      ['egress-conformance-s0-vpn', 'egress-conformance-s0-direct'].map((n) => [n, [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: ['gw-1', 'gw-2'] }] }]]),
    );
    // Without failover: off the gateway node alone.
    const single = planEgressConformance({ ...steeringCheck(), egressSteerings: [{ steering: { ...wireguardSteering(), namespaces: ['media'] }, probeNamespace: 'media' }] });
    const vpn = single.objects.find((o) => o.metadata.name === 'egress-conformance-s0-vpn') as unknown as Pod;
    expect(vpn.spec.template.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0].matchExpressions[0].values).toEqual([wireguardSteering().gatewayNode]);
  });

  it('RBAC: a ClusterRole with get on the Leases it reads the holder from, by name, list on CiliumNodes (a steering\'s active label), and nothing else; none without a failover step', () => {
    const both = planEgressConformance({ ...steeringCheck(), vpnGateways: gatewayCheck().vpnGateways });
    const roles = both.objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role' || o.kind.endsWith('Binding'));
    expect(roles).toEqual([expect.objectContaining({
      kind: 'ClusterRole',
      metadata: expect.objectContaining({ name: 'egress-conformance-failover' }),
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['vpn-egress-gateway', 'vpn-gateway'], verbs: ['get'] },
        { apiGroups: ['cilium.io'], resources: ['ciliumnodes'], verbs: ['list'] },
      ],
    })]);
    const gatewayOnly = planEgressConformance(gatewayCheck()).objects.find((o) => o.kind === 'ClusterRole') as unknown as { rules: unknown[] };
    expect(gatewayOnly.rules).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['vpn-gateway'], verbs: ['get'] }]);
    expect(planEgressConformance(homelabConformance()).objects.filter((o) => o.kind === 'ClusterRole')).toEqual([]);
  });

  it('the cdk8s construct takes the failover EgressSteering construct and the step\'s props: the same plan as the core', () => {
    const chart = new Chart(new App(), 'c');
    const st = new EgressSteering(chart, 'st', { ...failoverSteering(), namespaces: ['media'] });
    const c = new EgressConformance(chart, 'check', { ...steeringCheck({ failoverSeconds: 40 }), egressSteerings: [{ steering: st, probeNamespace: 'media', failoverSeconds: 40 }] });
    expect(c.plan).toEqual(planEgressConformance(steeringCheck({ failoverSeconds: 40 })));
    expect(c.plan.objects.filter((o) => o.kind === 'ClusterRole')).toHaveLength(1);
  });

  itWithSchemas('validates every object with kubernetes-models', () => {
    expect(checkKubeObjects(planEgressConformance({ ...steeringCheck(), vpnGateways: gatewayCheck().vpnGateways }).objects, SCHEMA_DIR)).toEqual([]);
  });
});

/**
 * The script over a kubectl stand-in for the failover steering: two candidate nodes gw-1 and gw-2, each with its
 * tunnel unit (a state file), ifindex, uplink label and tunnel address (10.2.0.2, 10.2.0.3); the Lease's holder in a
 * file. The agents as the stand-in plays them: SWITCH_AFTER seconds after the holder's unit stopped, the other
 * candidate (its tunnel running) becomes the holder (never without SWITCH_AFTER; only after the check's second stop,
 * R5's, unless SWITCH_FROM_STOP=1 lets it move during R3 too). The vpn-class probe is answered
 * from the VPN range while the holder's tunnel runs, else curl's timeout (28); the WAN counter on node LEAK_NODE
 * counts LEAK_PACKETS; R5's stop returns STOP_SECONDS after the tunnel went down; from the OTHER_ROUTE_FROM_STOP-th stop on, the stopped holder's vpn-class probe is answered from
 * the VPN range all the same (a route other than the standby, the Lease unchanged). systemctl is-active answers as the real one (exit 3 when inactive).
 */
function runSteering(env: Record<string, string>, script = scriptOf(steeringCheck())) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ecf-'));
  fs.writeFileSync(path.join(dir, 'check.sh'), script);
  fs.writeFileSync(path.join(dir, 'stops'), '0\n');
  fs.writeFileSync(path.join(dir, 'times'), '');
  fs.writeFileSync(path.join(dir, 'holder'), `${env.HOLDER ?? 'gw-1'}\n`);
  for (const [n, i] of [['gw-1', 7], ['gw-2', 9]] as const) {
    fs.writeFileSync(path.join(dir, `state-${n}`), 'running\n');
    fs.writeFileSync(path.join(dir, `ifindex-${n}`), `${i}\n`);
    fs.writeFileSync(path.join(dir, `label-${n}`), `10.2.0.x-${i}`);
  }
  fs.writeFileSync(path.join(dir, 'kubectl'), `#!/bin/sh
d=${dir}
echo "$*" >> $d/log
[ "$1" = -n ] && shift 2
# healthy <node>: its unit running and, with HEALTHY_DELAY, started at least that long ago (systemctl is-active says
# "activating", exit 3, before; the agent counts healthyChecks good checks before it may take the role).
healthy() { [ "$(cat $d/state-$1)" = running ] && { [ -z "\${HEALTHY_DELAY:-}" ] || [ ! -e $d/started-$1 ] || [ $(( $(date +%s) - $(cat $d/started-$1) )) -ge "$HEALTHY_DELAY" ]; }; }
switch() {
  h=$(cat $d/holder)
  if [ -n "\${SWITCH_AFTER:-}" ] && [ "$(cat $d/state-$h)" = stopped ] && [ "$(cat $d/stops)" -ge "\${SWITCH_FROM_STOP:-2}" ] && [ $(( $(date +%s) - $(cat $d/stopped-at) )) -ge "$SWITCH_AFTER" ]; then
    for n in gw-1 gw-2; do [ $n != "$h" ] && healthy $n && { echo $n > $d/holder; echo "switched $h $n" >> $d/log; break; }; done
  fi
}
switch
case $1 in
  scale|rollout|wait) exit 0 ;;
  get) case $2 in pods) echo 10.42.1.5 ;; lease) cat $d/holder | tr -d '\\n' ;; node) cat $d/label-$3 ;;
      ciliumnodes) h=$(cat $d/holder); for n in gw-1 gw-2; do l=''; { [ "$n" = "$h" ] || [ "$n" = "\${ALSO_LABELLED:-}" ]; } && l=',"egress-active.tunnelwright.dev/vpn-egress":"true"'; echo "$n {\"kubernetes.io/hostname\":\"$n\"$l}"; done ;; esac; exit 0 ;;
  exec) dep=\${2#deploy/}; shift 2; [ "$1" = -c ] && shift 2; [ "$1" = -- ] && shift
    case $dep in *-agent) n=gw-1 a=10.2.0.2 ;; *-agent1) n=gw-2 a=10.2.0.3 ;; esac
    case "$1 $*" in
      curl*) case $dep in *-direct) echo 203.0.113.7 ;; *) [ -n "\${ECHO_SLOW:-}" ] && [ "$(cat $d/stops)" -ge 2 ] && { sleep "$ECHO_SLOW"; switch; }; h=$(cat $d/holder); [ "$(cat $d/state-$h)" = running ] && { echo 185.236.200.9; exit 0; }
          [ "$(cat $d/stops)" -ge "\${OTHER_ROUTE_FROM_STOP:-99}" ] && { echo 185.236.201.1; exit 0; }; exit 28 ;; esac ;;
      cat*) [ "$(cat $d/state-$n)" = running ] && cat $d/ifindex-$n ;;
      *"ip -4 -o addr show dev tun0"*) [ "$(cat $d/state-$n)" = running ] && echo "5: tun0    inet $a/32 scope global tun0" ;;
      *"ip -4 route get "*) echo "\${*##* } via 192.168.20.1 dev eth0 src 192.168.20.10 uid 0" ;;
      *"nft add table netdev"*) printf '%s' "\${*##*-- nft }" > $d/nft-$n ;;
      *"nft list table netdev"*) [ -e $d/nft-$n ] || { echo "Error: No such file or directory" >&2; exit 1; }
        p=0; [ "$n" = "\${LEAK_NODE:-}" ] && p=$LEAK_PACKETS
        echo "table netdev tunnelwright_conformance { chain wan0 { ip saddr { 10.42.1.5, $a } counter packets $p bytes 0 } }" ;;
      *"nft delete table netdev"*) [ -e $d/nft-$n ] || { echo "Error: No such file or directory" >&2; exit 1; }; rm -f $d/nft-$n ;;
      *systemd-run*) ;;
      *"systemctl stop tunnelwright-conformance-restore-"*) ;;
      *"systemctl is-active"*) healthy $n || exit 3 ;;
      *"systemctl stop"*) echo "stop $(date +%s.%N)" >> $d/times; echo stopped > $d/state-$n; date +%s > $d/stopped-at; echo $(( $(cat $d/stops) + 1 )) > $d/stops
        if [ "$(cat $d/stops)" -ge 2 ]; then sleep "\${STOP_SECONDS:-0}"; fi ;;
      *"systemctl start"*) echo "start $(date +%s.%N)" >> $d/times; [ -n "\${NEVER_HEALTHY:-}" ] && [ "$(cat $d/stops)" -ge 2 ] && exit 0
        echo running > $d/state-$n; date +%s > $d/started-$n; [ -n "\${FAILBACK:-}" ] && [ "$(cat $d/stops)" -ge 2 ] && echo $n > $d/holder; i=$(( $(cat $d/ifindex-$n) + 1 )); echo $i > $d/ifindex-$n; printf '10.2.0.x-%s' $i > $d/label-$n ;;
    esac ;;
esac
`, { mode: 0o755 });
  const r = spawnSync('sh', [path.join(dir, 'check.sh'), '--destructive'], { encoding: 'utf8', env: { ...process.env, FAILOVER_SETTLE_SECONDS: '0', ...env, KUBECTL: path.join(dir, 'kubectl'), TMPDIR: dir } });
  const times = fs.readFileSync(path.join(dir, 'times'), 'utf8').trim().split('\n').map((l) => l.split(' ')).map(([what, t]) => ({ what, t: Number(t) }));
  const log = fs.readFileSync(path.join(dir, 'log'), 'utf8').trim().split('\n');
  const leftover = fs.readdirSync(dir).filter((f) => f.startsWith('nft-'));
  const states = ['gw-1', 'gw-2'].map((n) => fs.readFileSync(path.join(dir, `state-${n}`), 'utf8').trim());
  return { status: r.status, stderr: r.stderr, lines: r.stdout.trim().split('\n'), log, leftover, states, times };
}
const R5 = (lines: string[]) => lines.filter((l) => /^(PASS|FAIL) R5 /.test(l));
const LABEL = 'egress-steering vpn-egress';

describe('the failover step over a kubectl stand-in (a steering, gw-1 and its standby gw-2)', () => {
  it('passes when the standby takes over within the bound: the measured switch time in the line, 0 packets on each candidate\'s WAN, the stopped tunnel healthy again, no failback', () => {
    const r = runSteering({ SWITCH_AFTER: '2', FAILOVER_SECONDS: '20' });
    expect(r.stderr).toBe('');
    expect(R5(r.lines)).toEqual([expect.stringMatching(new RegExp(`^PASS R5 \\[${LABEL}\\]: failover: vpn-class egress back through the standby gw-2 after (\\d+)s \\(the holder gw-1 stopped; bound 20s; the echo saw 185\\.236\\.200\\.9\\); 0 vpn-class packets left by the WAN on any candidate \\(gw-1 by eth0, gw-2 by eth0\\)$`))]);
    const took = Number(/after (\d+)s/.exec(R5(r.lines)[0])![1]);
    expect(took).toBeGreaterThanOrEqual(2);
    expect(r.lines).toContainEqual(expect.stringMatching(new RegExp(`^RESTORED \\[${LABEL}\\]: the tunnel on gw-1 is healthy again after \\d+s$`)));
    expect(r.lines).toContain('   R5: the role stays with gw-2 after the restart (no failback)');
    expect(r.lines.at(-1)).toBe('conformance: PASS (every requirement holds)');
    expect(r.status).toBe(0);
    // The counter on both candidates before the stop, and removed from both; both tunnels running at the end.
    const on = (agent: string, addr: string) => r.log.map((c, i) => ((c.startsWith(`-n media exec deploy/${agent} -c agent -- nsenter -t 1 -m -u -i -n -p -- nft add table`) && c.includes(' counter') && c.includes(addr) && c.includes('10.42.1.5')) ? i : -1)).reduce((m, i) => Math.max(m, i), -1);
    const stops = r.log.map((c, i) => (c.endsWith('systemctl stop wg-quick@tun0.service') ? i : -1)).filter((i) => i >= 0);
    expect(stops).toHaveLength(2); // R3's, then R5's
    expect([on('egress-conformance-s0-agent', '10.2.0.2'), on('egress-conformance-s0-agent1', '10.2.0.3')].every((i) => i > stops[0] && i < stops[1])).toBe(true);
    expect(r.leftover).toEqual([]);
    expect(r.states).toEqual(['running', 'running']);
    // Both agents scaled up for the run and back to 0 after it.
    for (const a of ['egress-conformance-s0-agent', 'egress-conformance-s0-agent1']) {
      expect(r.log).toContain(`-n media scale deploy/${a} --replicas=1`);
      expect(r.log).toContain(`-n media scale deploy/${a} --replicas=0`);
    }
  });

  it('lets the agents settle after R4 before it stops the holder (their failed checks from R3 would shorten the switch): R5\'s stop comes the settle seconds after R4\'s start, and says why', () => {
    const r = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '20', FAILOVER_SETTLE_SECONDS: '2' });
    expect(r.times.map((x) => x.what)).toEqual(['stop', 'start', 'stop', 'start']);
    expect(r.times[2].t - r.times[1].t).toBeGreaterThanOrEqual(2);
    expect(r.lines).toContain('   R5: every candidate\'s tunnel healthy; waiting 2s for the agents to count it healthy (their window of checks and a probe)');
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 /)]);
    expect(r.status).toBe(0);
  });

  it('times the switch from before the stop: a stop that returns 3 s after the tunnel went down, the standby carrying the traffic 1 s after it, is a switch of at least 3 s (the project\'s lab: wg-quick down\'s re-steer hook outlasts the switch)', () => {
    const r = runSteering({ SWITCH_AFTER: '1', STOP_SECONDS: '3', FAILOVER_SECONDS: '20' });
    const line = R5(r.lines)[0] ?? '';
    expect(line).toMatch(/^PASS R5 .*back through the standby gw-2 after \d+s /);
    expect(Number(/after (\d+)s/.exec(line)![1])).toBeGreaterThanOrEqual(3);
    expect(r.lines).toContainEqual(expect.stringMatching(/^ {3}R5: the holder's tunnel stopped \(gw-1, the stop took [34]s\); waiting up to 20s from the stop for a standby$/));
    expect(r.status).toBe(0);
  });

  it('control: fails when no standby takes over within the bound, and still starts the stopped tunnel again', () => {
    const r = runSteering({ FAILOVER_SECONDS: '3' });
    expect(R5(r.lines)).toEqual([`FAIL R5 [${LABEL}]: vpn-class egress not back inside 185.236.200.0/22 within 3s of stopping the holder's tunnel (gw-1); the Lease names gw-1`]);
    expect(r.status).toBe(1);
    expect(r.states).toEqual(['running', 'running']);
    expect(r.leftover).toEqual([]);
  });

  it('fails when a vpn-class packet is counted on a standby\'s WAN; control: with the counter on the old holder only, the same packets pass', () => {
    const r = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '20', LEAK_NODE: 'gw-2', LEAK_PACKETS: '3' });
    expect(R5(r.lines)[0]).toBe(`FAIL R5 [${LABEL}]: while the role moved, vpn-class packets left by the WAN: 3 on gw-2`);
    expect(r.status).toBe(1);
    expect(r.leftover).toEqual([]);
    const script = scriptOf(steeringCheck());
    const holderOnly = script.replace('    for c in $cands; do\n      cn=${c%%=*} cd=${c#*=}', '    for c in "$old=$oc"; do\n      cn=${c%%=*} cd=${c#*=}');
    expect(holderOnly).not.toBe(script);
    const control = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '20', LEAK_NODE: 'gw-2', LEAK_PACKETS: '3' }, holderOnly);
    expect(R5(control.lines)).toEqual([expect.stringMatching(/^PASS R5 /)]);
  });

  it('reads the holder from the Lease: with gw-2 holding the role, R1 to R5 act on gw-2\'s tunnel and the role moves to gw-1', () => {
    const r = runSteering({ HOLDER: 'gw-2', SWITCH_AFTER: '2', FAILOVER_SECONDS: '20' });
    expect(r.lines).toContain('   the role\'s holder (Lease kube-system/vpn-egress-gateway): gw-2');
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 .*back through the standby gw-1 after \d+s \(the holder gw-2 stopped/)]);
    const stops = r.log.filter((c) => c.endsWith('systemctl stop wg-quick@tun0.service'));
    expect(stops.length).toBe(2);
    expect(stops.every((c) => c.startsWith('-n media exec deploy/egress-conformance-s0-agent1 '))).toBe(true);
    expect(r.status).toBe(0);
  });

  it('the role moves during R3 already: R3 takes the standby\'s answer from the VPN ranges (0 packets on the holder\'s WAN), and R5 still proves the switch', () => {
    const r = runSteering({ SWITCH_AFTER: '0', SWITCH_FROM_STOP: '1', FAILOVER_SECONDS: '20' });
    expect(r.lines.filter((l) => / R3 /.test(l))).toEqual([`PASS R3 [${LABEL}]: tunnel stopped: the standby gw-2 answered already (the echo saw 185.236.200.9, inside 185.236.200.0/22); 0 vpn-class packets left by eth0 (source 10.2.0.2 10.42.1.5); R5 proves the switch`]);
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 .*back through the standby gw-1 after \d+s \(the holder gw-2 stopped/)]);
    expect(r.status).toBe(0);
    // Control: the same answer on the holder's WAN counted (a leak, not the standby) fails R3.
    const leak = runSteering({ SWITCH_AFTER: '0', SWITCH_FROM_STOP: '1', FAILOVER_SECONDS: '20', LEAK_NODE: 'gw-1', LEAK_PACKETS: '2' });
    expect(leak.lines.filter((l) => / R3 /.test(l))).toEqual([expect.stringMatching(/^FAIL R3 .*2 vpn-class packet\(s\) counted leaving by eth0/)]);
  });

  it.each([
    ['R3', '1', /^FAIL R3 \[egress-steering vpn-egress\]: tunnel stopped: a vpn-class request was answered, the echo saw 185\.236\.201\.1$/],
    ['R5', '2', /^FAIL R5 \[egress-steering vpn-egress\]: vpn-class egress back after \d+s \(the echo saw 185\.236\.201\.1\), but the Lease still names gw-1, not a standby: not a failover$/],
  ] as const)('an answer from the VPN ranges while the Lease still names the stopped holder is no failover (%s)', (step, from, line) => {
    const r = runSteering({ OTHER_ROUTE_FROM_STOP: from, FAILOVER_SECONDS: '4' });
    expect(r.lines.filter((l) => new RegExp(`^(PASS|FAIL) ${step} `).test(l))).toEqual([expect.stringMatching(line)]);
    expect(r.status).toBe(1);
  });

  it('waits, before it stops anything, until every candidate\'s tunnel is healthy again: the role moved during R3, R4 passed on the standby\'s answer while the restarted gw-1 was still coming up (3 s), and R5 stops the holder gw-2 only after gw-1 is healthy', () => {
    const r = runSteering({ SWITCH_AFTER: '0', SWITCH_FROM_STOP: '1', HEALTHY_DELAY: '3', FAILOVER_SECONDS: '20' });
    expect(r.times.map((x) => x.what)).toEqual(['stop', 'start', 'stop', 'start']);
    expect(r.times[2].t - r.times[1].t).toBeGreaterThanOrEqual(3);
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 .*back through the standby gw-1 after \d+s \(the holder gw-2 stopped/)]);
    expect(r.status).toBe(0);
  });

  it('a candidate that does not become healthy after R4 fails R5 saying which, and nothing more is stopped', () => {
    const r = runSteering({ SWITCH_AFTER: '0', SWITCH_FROM_STOP: '1', HEALTHY_DELAY: '100', FAILOVER_SECONDS: '20', RECOVERY_SECONDS: '2' });
    expect(R5(r.lines)).toEqual([`FAIL R5 [${LABEL}]: the tunnel on gw-1 is not healthy within 2s after R4, so no tunnel was stopped (with no candidate able to take the role the step would prove nothing)`]);
    expect(r.times.map((x) => x.what)).toEqual(['stop', 'start']);
    expect(r.status).toBe(1);
  });

  it('fails when the answer comes after the bound, though its request was sent before it (a 4 s request, the bound 3 s); control: the same answer within a 10 s bound passes', () => {
    const r = runSteering({ SWITCH_AFTER: '1', ECHO_SLOW: '4', FAILOVER_SECONDS: '3' });
    expect(R5(r.lines)).toEqual([expect.stringMatching(new RegExp(`^FAIL R5 \\[${LABEL}\\]: vpn-class egress back through the standby gw-2 after \\d+s, beyond the bound 3s`))]);
    expect(r.status).toBe(1);
    const control = runSteering({ SWITCH_AFTER: '1', ECHO_SLOW: '4', FAILOVER_SECONDS: '10' });
    expect(R5(control.lines)).toEqual([expect.stringMatching(/^PASS R5 /)]);
  });

  it('arms R5\'s dead-man restore past its bound (bound + DEADMAN_SECONDS), R3\'s at DEADMAN_SECONDS', () => {
    const r = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '100' });
    const armed = r.log.filter((c) => c.includes('systemd-run')).map((c) => [c.includes('-failover-') ? 'R5' : 'R3', Number(/--on-active=(\d+)/.exec(c)![1])]);
    expect(armed).toEqual([['R3', 62], ['R5', 162]]);
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 /)]);
  });

  it('fails when the old holder\'s CiliumNode still carries the active label beside the new holder\'s (Cilium takes the first by name); control: the first test, only gw-2 labelled, passes', () => {
    const r = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '20', ALSO_LABELLED: 'gw-1' });
    expect(R5(r.lines)[0]).toMatch(new RegExp(`^FAIL R5 \\[${LABEL}\\]: vpn-class egress back after \\d+s \\(the echo saw 185\\.236\\.200\\.9\\) and the Lease names gw-2, but the CiliumNodes carrying egress-active\\.tunnelwright\\.dev/vpn-egress are: gw-1 gw-2 `));
    expect(r.log.filter((c) => c.startsWith('get ciliumnodes -o jsonpath='))).toHaveLength(1);
    expect(r.status).toBe(1);
  });

  it('fails when the role goes back to the restarted holder (failback); the control is the first test: the role stays with gw-2', () => {
    const r = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '20', FAILBACK: '1' });
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 /), `FAIL R5 [${LABEL}]: after gw-1's tunnel was healthy again the Lease names gw-1, not the new holder gw-2: the role failed back or was dropped (the agents never take it from a healthy holder)`]);
    expect(r.status).toBe(1);
  });

  it('no one holds the Lease: R0 says so and nothing is stopped', () => {
    const r = runSteering({ HOLDER: '' });
    expect(r.lines.filter((l) => / R0 /.test(l))).toEqual([`FAIL R0 [${LABEL}]: the Lease kube-system/vpn-egress-gateway names no holder, not one of the candidates (gw-1 gw-2): no healthy tunnel holds the role, or the agents are not running`]);
    expect(r.log.filter((c) => c.includes('systemctl stop wg'))).toEqual([]);
    expect(r.status).toBe(1);
  });

  it('the stopped tunnel does not become healthy again: R5 fails saying so, and the exit trap starts it once more', () => {
    const r = runSteering({ SWITCH_AFTER: '1', FAILOVER_SECONDS: '20', NEVER_HEALTHY: '1', RECOVERY_SECONDS: '2' });
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 /), `FAIL R5 [${LABEL}]: the stopped tunnel (gw-1) was started again but is not healthy within 2s`]);
    expect(r.lines).toContainEqual(expect.stringMatching(new RegExp(`^RESTORED \\[${LABEL}\\]: the tunnel was started again after a failed or interrupted step`)));
    expect(r.status).toBe(1);
  });
});

/**
 * The gateway with standby over a kubectl stand-in: pods vpn-gateway-a-0 and -b-0 (gluetun's control server answers
 * the stop and start as gluetun does), the Lease vpn-gateway/vpn-gateway naming a pod, SWITCH_AFTER as above, and
 * gluetun's health server (:9999) answering while the pod's VPN runs.
 */
function runGateway(env: Record<string, string>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ecf-gw-'));
  fs.writeFileSync(path.join(dir, 'check.sh'), scriptOf(gatewayCheck()));
  fs.writeFileSync(path.join(dir, 'stops'), '0\n');
  fs.writeFileSync(path.join(dir, 'holder'), 'vpn-gateway-a-0\n');
  for (const n of ['vpn-gateway-a-0', 'vpn-gateway-b-0']) {
    fs.writeFileSync(path.join(dir, `state-${n}`), 'running\n');
    fs.writeFileSync(path.join(dir, `ifindex-${n}`), '7\n');
  }
  fs.writeFileSync(path.join(dir, 'kubectl'), `#!/bin/sh
d=${dir}
echo "$*" >> $d/log
[ "$1" = -n ] && shift 2
h=$(cat $d/holder)
if [ -n "\${SWITCH_AFTER:-}" ] && [ "$(cat $d/state-$h)" = stopped ] && [ "$(cat $d/stops)" -ge "\${SWITCH_FROM_STOP:-2}" ] && [ $(( $(date +%s) - $(cat $d/stopped-at) )) -ge "$SWITCH_AFTER" ]; then
  for n in vpn-gateway-a-0 vpn-gateway-b-0; do [ $n != "$h" ] && [ "$(cat $d/state-$n)" = running ] && { echo $n > $d/holder; break; }; done
fi
case $1 in
  rollout|wait) exit 0 ;;
  get) cat $d/holder | tr -d '\\n'; exit 0 ;;
  exec) t=$2; shift 2; [ "$1" = -c ] && shift 2; [ "$1" = -- ] && shift
    n=\${t#pod/}
    case "$1 $*" in
      curl*) case $t in *-direct) echo 203.0.113.7 ;; *) h=$(cat $d/holder); [ "$(cat $d/state-$h)" = running ] && { echo 185.236.200.9; exit 0; }; exit 28 ;; esac ;;
      cat*) cat $d/ifindex-$n ;;
      sh*) ;;
      *127.0.0.1:9999*) [ "$(cat $d/state-$n)" = running ] || exit 8 ;;
      *'"status":"stopped"'*) echo stopped > $d/state-$n; date +%s > $d/stopped-at; echo $(( $(cat $d/stops) + 1 )) > $d/stops; echo '{"outcome":"stopped"}' ;;
      *'"status":"running"'*) echo running > $d/state-$n; echo $(( $(cat $d/ifindex-$n) + 1 )) > $d/ifindex-$n; echo '{"outcome":"running"}' ;;
    esac ;;
esac
`, { mode: 0o755 });
  const r = spawnSync('sh', [path.join(dir, 'check.sh'), '--destructive'], { encoding: 'utf8', env: { ...process.env, FAILOVER_SETTLE_SECONDS: '0', ...env, KUBECTL: path.join(dir, 'kubectl'), TMPDIR: dir } });
  return { status: r.status, lines: r.stdout.trim().split('\n'), log: fs.readFileSync(path.join(dir, 'log'), 'utf8').trim().split('\n') };
}

describe('the failover step over a kubectl stand-in (a VpnGateway with standby)', () => {
  it('stops the Lease holder\'s gluetun (its pod by name), passes when the other pod takes over, and waits for gluetun\'s health server on the stopped one', () => {
    const r = runGateway({ SWITCH_AFTER: '2', FAILOVER_SECONDS: '20' });
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^PASS R5 \[vpn-gateway vpn-gateway\/vpn-gateway\]: failover: vpn-class egress back through the standby vpn-gateway-b-0 after \d+s \(the holder vpn-gateway-a-0 stopped; bound 20s/)]);
    expect(r.log.filter((c) => c.includes('"status":"stopped"')).every((c) => c.startsWith('-n vpn-gateway exec pod/vpn-gateway-a-0 -c gluetun -- wget'))).toBe(true);
    expect(r.log).toContain('-n vpn-gateway exec pod/vpn-gateway-a-0 -c gluetun -- wget -q -t 1 -T 5 -O /dev/null http://127.0.0.1:9999/');
    expect(r.status).toBe(0);
  });

  it('control: no takeover within the bound fails R5', () => {
    const r = runGateway({ FAILOVER_SECONDS: '3' });
    expect(R5(r.lines)).toEqual([expect.stringMatching(/^FAIL R5 .*not back inside 185\.236\.200\.0\/22 within 3s/)]);
    expect(r.status).toBe(1);
  });
});
