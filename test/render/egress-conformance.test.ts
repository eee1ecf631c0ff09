import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Chart } from 'cdk8s';
import { EgressConformanceProps, planEgressConformance, planEgressSteering, validateEgressConformance } from '../../src';
import type { VpnGatewayProps } from '../../src/model/vpn-gateway';
import { EgressConformance, EgressSteering, VpnGateway } from '../../src/cdk8s';
import { checkKubeObjects } from '../../src/testing';
import { gatewayFor, homelabConformance, nordvpnGateway, prodSteering, wireguardSteering } from '../helpers/fixtures';
import { itWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { expectWarnings } from '../helpers/stderr-guard';

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'planEgressConformance the cdk8s construct takes the VpnGateway and EgressSteering constructs for their props: the same plan': ['c/st: clusterCidrs', 'c/st: vpnClass', 'c/st: tunnel'],
});

describe('planEgressConformance', () => {
  const plan = planEgressConformance(homelabConformance());
  const values = plan.values.egressConformance as { script: string; command: string };

  it('emits probes per tunnel in the named namespaces only, the node agent on the gateway node, the script in a ConfigMap', () => {
    expect(plan.objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'Deployment media/egress-conformance-g0-vpn',
      'ConfigMap media/egress-conformance-g0-vpn-vpn-route',
      'NetworkPolicy media/egress-conformance-g0-vpn-vpn-kill-switch',
      'Deployment media/egress-conformance-g0-direct',
      'Deployment media/egress-conformance-s0-vpn',
      'Deployment media/egress-conformance-s0-direct',
      'Deployment media/egress-conformance-s0-agent',
      'ConfigMap media/egress-conformance',
    ]);
    const named = new Set(homelabConformance().namespaces);
    expect(plan.objects.every((o) => named.has(o.metadata.namespace!))).toBe(true);
    type Dep = { spec: { template: { metadata: { labels: Record<string, string> }; spec: { nodeSelector?: Record<string, string>; hostPID?: boolean; containers: { name: string }[]; initContainers?: { name: string }[] } } } };
    const dep = (n: string) => plan.objects.find((o) => o.kind === 'Deployment' && o.metadata.name === n) as unknown as Dep;
    // The routed probe carries pod-gateway's init container and sidecar; the steering probes their class label.
    expect(dep('egress-conformance-g0-vpn').spec.template.spec.containers.map((c) => c.name)).toEqual(['probe', 'vpn-route-sidecar']);
    expect(dep('egress-conformance-s0-vpn').spec.template.metadata.labels['tunnelwright.dev/egress-class']).toBe('vpn');
    expect(dep('egress-conformance-s0-direct').spec.template.metadata.labels['tunnelwright.dev/egress-class']).toBe('direct');
    expect(dep('egress-conformance-s0-agent').spec.template.spec).toMatchObject({ nodeSelector: { 'kubernetes.io/hostname': 'prod-gw' }, hostPID: true });
    expect((plan.objects.at(-1) as unknown as { data: Record<string, string> }).data['egress-conformance.sh']).toBe(values.script);
  });

  itWithSchemas('validates every object with kubernetes-models', () => {
    expect(checkKubeObjects(plan.objects, SCHEMA_DIR)).toEqual([]);
    // The WireGuard steering the EgressSteering netns lab proves (test/system/egress-conformance-steering.test.ts).
    const lab = planEgressConformance({ ...homelabConformance(), vpnGateways: [], egressSteerings: [{ steering: { ...wireguardSteering(), namespaces: ['media'] }, probeNamespace: 'media' }] });
    expect(checkKubeObjects(lab.objects, SCHEMA_DIR)).toEqual([]);
  });

  it('documents one command, and the script names each tunnel with its stop and start', () => {
    expect(values.command).toBe("kubectl -n media get configmap egress-conformance -o jsonpath='{.data.egress-conformance\\.sh}' > egress-conformance.sh && sh egress-conformance.sh --destructive");
    expect(values.script).toContain("SOURCES='gateway|vpn-gateway vpn-gateway/vpn-gateway|media|egress-conformance-g0-vpn|egress-conformance-g0-direct|vpn-gateway|vpn-gateway|gluetun|tun0|||\nsteering|egress-steering vpn-egress|media|egress-conformance-s0-vpn|egress-conformance-s0-direct|media|egress-conformance-s0-agent|agent|tun0|prod-gw|tunnelwright-openvpn.service|tunnelwright.dev/egress-uplink'\n");
  });

  it('is shellcheck-clean, and refuses to run without --destructive before calling kubectl', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-conformance-'));
    const file = path.join(dir, 'egress-conformance.sh');
    fs.writeFileSync(file, values.script);
    const lint = spawnSync('shellcheck', ['-s', 'sh', file], { encoding: 'utf8' });
    if (lint.error && process.env.CI !== 'true') return; // the system test runs shellcheck too (a failure under CI)
    expect(lint.stdout).toBe('');
    expect(lint.status).toBe(0);
    const log = path.join(dir, 'kubectl.log');
    fs.writeFileSync(path.join(dir, 'kubectl'), `#!/bin/sh\necho "$*" >> ${log}\n`, { mode: 0o755 });
    const r = spawnSync('sh', [file], { encoding: 'utf8', env: { ...process.env, KUBECTL: path.join(dir, 'kubectl') } });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('refused: this check stops each tunnel (vpn-class egress pauses); run it as: sh egress-conformance.sh --destructive\n');
    expect(fs.existsSync(log)).toBe(false);
  });

  it('the cdk8s construct takes the VpnGateway and EgressSteering constructs for their props: the same plan', () => {
    const chart = new Chart(new App(), 'c');
    const gw = new VpnGateway(chart, 'gw', nordvpnGateway());
    const st = new EgressSteering(chart, 'st', prodSteering());
    const warn = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const c = new EgressConformance(chart, 'check', { ...homelabConformance(), vpnGateways: [{ gateway: gw, probeNamespace: 'media' }], egressSteerings: [{ steering: st, probeNamespace: 'media' }] });
      expect(c.plan).toEqual(plan);
      expect(c.command).toBe(values.command);
      expect(c.egressConformanceScript).toBe(values.script);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('EgressConformance beside the steering\'s own label enforcement (Kyverno ClusterPolicy, Enforce)', () => {
  type Pattern = { metadata: { labels: Record<string, string> } };
  type Tpl = { metadata: { namespace: string }; spec: { template: { metadata: { labels: Record<string, string> } } } };
  /** Kyverno's pattern as the steering emits it: `a | b` is "one of" (the only form it uses). */
  const admitted = (pattern: Pattern, labels: Record<string, string>) =>
    Object.entries(pattern.metadata.labels).every(([k, v]) => v.split(' | ').includes(labels[k]));
  const refusedPods = (steeringProps: ReturnType<typeof prodSteering>) => {
    const policy = planEgressSteering(steeringProps).objects.find((o) => o.kind === 'ClusterPolicy') as unknown as { spec: { rules: { match: { any: { resources: { namespaces: string[] } }[] }; validate: { pattern: Pattern } }[] } };
    const rule = policy.spec.rules[0];
    const plan = planEgressConformance({ ...homelabConformance(), vpnGateways: [], egressSteerings: [{ steering: steeringProps, probeNamespace: 'media' }] });
    return plan.objects.filter((o) => o.kind === 'Deployment').map((o) => o as unknown as Tpl)
      .filter((d) => rule.match.any[0].resources.namespaces.includes(d.metadata.namespace) && !admitted(rule.validate.pattern, d.spec.template.metadata.labels))
      .map((d) => (d as unknown as { metadata: { name: string } }).metadata.name);
  };

  it('every probe and the node agent carry a class the policy admits (default classes)', () => {
    expect(refusedPods(prodSteering())).toEqual([]);
  });

  it('the direct-class probe and the agent take the steering\'s own non-vpn class when it names its classes', () => {
    expect(refusedPods({ ...prodSteering(), enforceLabels: { namespaces: ['media'], classes: ['vpn', 'lan'] } })).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['the default vpn class', {}, 'vpn'],
    ['its own vpnClass', { vpnClass: 'tunnel' }, 'tunnel'],
  ])('refuses a steering whose enforced classes leave no direct class for the control probe (%s)', (_name, own, vpnClass) => {
    expect(validateEgressConformance({ ...homelabConformance(), vpnGateways: [], egressSteerings: [{ steering: { ...prodSteering(), ...own, enforceLabels: { namespaces: ['media'], classes: [vpnClass] } }, probeNamespace: 'media' }] })).toEqual([{
      path: 'egressSteerings[0].steering.enforceLabels.classes',
      code: 'no-direct-class',
      message: `the steering admits only the vpn class "${vpnClass}" in media: the direct-class control probe (and the node agent) could not be admitted there; add a direct class to enforceLabels.classes, or choose a probeNamespace the steering does not enforce`,
    }]);
  });

  // The refusal names each enforced namespace the check would run a pod in (the probes', the node agent's), once, in
  // that order; when the steering enforces neither (the advice the refusal gives), the check is accepted and none of
  // its Deployments lands in an enforced namespace.
  const steered = ['media', 'egress-agents', 'downloads'];
  const withAgent = (enforced: string[], agentNamespace: string): EgressConformanceProps => ({
    ...homelabConformance(), namespaces: [...steered, 'vpn-gateway'], vpnGateways: [],
    egressSteerings: [{ steering: { ...prodSteering(), namespaces: steered, enforceLabels: { namespaces: enforced, classes: ['vpn'] } }, probeNamespace: 'media', agentNamespace }],
  });
  it.each<[string, string[], string, string]>([
    ['the probes and the node agent in two enforced namespaces: both', ['media', 'egress-agents'], 'egress-agents', 'media, egress-agents'],
    ['the node agent in an enforced namespace, the probes not: the agent\'s', ['egress-agents'], 'egress-agents', 'egress-agents'],
    ['the probes and the node agent in one enforced namespace: it once', ['downloads', 'media'], 'media', 'media'],
  ])('the refusal names the enforced namespaces the check runs pods in (%s)', (_name, enforced, agentNamespace, named) => {
    expect(validateEgressConformance(withAgent(enforced, agentNamespace))).toEqual([{
      path: 'egressSteerings[0].steering.enforceLabels.classes',
      code: 'no-direct-class',
      message: `the steering admits only the vpn class "vpn" in ${named}: the direct-class control probe (and the node agent) could not be admitted there; add a direct class to enforceLabels.classes, or choose a probeNamespace the steering does not enforce`,
    }]);
  });

  it('accepts a steering that admits only the vpn class where the check runs no pod, and places none of its pods there', () => {
    const props = withAgent(['downloads'], 'egress-agents');
    expect(validateEgressConformance(props)).toEqual([]);
    const placed = planEgressConformance(props).objects.filter((o) => o.kind === 'Deployment').map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();
    expect(placed).toEqual(['egress-agents/egress-conformance-s0-agent', 'media/egress-conformance-s0-direct', 'media/egress-conformance-s0-vpn']);
  });
});


describe('a VpnGateway whose port goes to an app (its control server on the VXLAN address, a port-sync-only role)', () => {
  const withApp = (app: 'qbittorrent' | 'slskd') => ({ ...gatewayFor('protonvpn'), portForwarding: { app, workload: app, workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } });
  const conformance = (gateway: VpnGatewayProps) => ({ ...homelabConformance(), vpnGateways: [{ gateway, probeNamespace: 'media' }] });
  it.each(['qbittorrent', 'slskd'] as const)('is refused with %s, naming the gateway\'s portForwarding.app', (app) => {
    expect(validateEgressConformance(conformance(withApp(app)))).toEqual([{
      path: 'vpnGateways[0].gateway.portForwarding.app',
      code: 'control-server-not-loopback',
      message: `the gateway forwards its port to an app ("${app}"): its gluetun control server is bound to the VXLAN address with a role granting only the port sync's routes, so the check could not stop or start its VPN (PUT /v1/vpn/status on 127.0.0.1:8000); prove a gateway without portForwarding.app, or leave this one out of vpnGateways`,
    }]);
    expect(() => planEgressConformance(conformance(withApp(app)))).toThrow('vpnGateways[0].gateway.portForwarding.app');
  });

  it('control: port forwarding without an app (the control server stays on loopback) is accepted', () => {
    expect(validateEgressConformance(conformance(gatewayFor('protonvpn')))).toEqual([]);
  });
});


/**
 * The script itself over a kubectl stand-in for one steering (no root, no cluster): the node agent's systemctl flips
 * a state file and bumps the tunnel's ifindex (and the node's uplink label, as the re-steer hook does); the probes'
 * curl answers from the VPN range while running, the WAN address for the direct class, and, for the vpn class while
 * stopped, whatever `stopped` says: a timeout (curl exit 28, what a kill switch that drops gives), a refused
 * connection (7), a name that does not resolve (6), or kubectl failing to exec at all (1).
 */
describe('the script over a kubectl stand-in (one steering)', () => {
  const props = { ...homelabConformance(), vpnGateways: [], requestTimeoutSeconds: 1 };
  const script = (planEgressConformance(props).values.egressConformance as { script: string }).script;
  const LABEL = 'egress-steering vpn-egress';
  const run = (stopped: 'timeout' | 'refused' | 'dns' | 'exec-fails' | 'lookup-hangs-leaks', missing: string[] = [], env: Record<string, string> = {}, check = script) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-conformance-run-'));
    fs.writeFileSync(path.join(dir, 'check.sh'), check);
    fs.writeFileSync(path.join(dir, 'state'), 'running\n');
    fs.writeFileSync(path.join(dir, 'ifindex'), '7\n');
    fs.writeFileSync(path.join(dir, 'label'), '10.8.0.2-7');
    const code = { 'timeout': 28, 'refused': 7, 'dns': 6, 'exec-fails': 1, 'lookup-hangs-leaks': 28 }[stopped];
    // lookup-hangs-leaks: the kill switch gone and the vpn class's resolver hung: a request at a pinned address is
    // answered from the WAN address, one that looks the name up ends with curl's timeout (28) all the same.
    const leak = stopped === 'lookup-hangs-leaks' ? 'case "$*" in *--resolve*) echo 203.0.113.7; exit 0 ;; esac; ' : '';
    fs.writeFileSync(path.join(dir, 'kubectl'), `#!/bin/sh
d=${dir}
echo "$*" >> $d/log
[ "$1" = -n ] && shift 2
case $1 in
  scale) [ "$3" = --replicas=1 ] && for m in ${missing.join(' ')}; do [ "$2" = "deploy/$m" ] && { echo "error: deployments.apps \"$m\" not found" >&2; exit 1; }; done; echo "deployment.apps/\${2#deploy/} scaled"; exit 0 ;;
  rollout) [ -n "\${PLANT:-}" ] && [ ! -e $d/planted ] && { : > $d/planted; ln -s $d/victim "$TMPDIR/tw-conformance.$PPID.vpn"; }
    for m in ${missing.join(' ')}; do [ "$3" = "deploy/$m" ] && { echo "error: deployments.apps \\"$m\\" not found" >&2; exit 1; }; done; exit 0 ;;
  get) [ "$2" = pods ] && { echo 10.42.1.5; exit 0; }; cat $d/label; exit 0 ;;
  exec) dep=\${2#deploy/}; shift 2; [ "$1" = -c ] && shift 2; [ "$1" = -- ] && shift
    for m in ${missing.join(' ')}; do [ "$dep" = "$m" ] && { echo "error: no pods for deployment $m" >&2; exit 1; }; done
    case "$1 $*" in
      curl*) [ -n "\${NO_NAME:-}" ] && case "$*" in *remote_ip*) exit 6 ;; esac
        case $dep in
          *-direct) echo 203.0.113.7 ;;
          *) [ -n "\${R1_FAILS:-}" ] && exit 28; [ "$(cat $d/state)" = running ] && { echo \${VPN_ANSWER:-185.236.200.9}; exit 0; }; ${leak}exit ${code} ;;
        esac ;;
      cat*) cat $d/ifindex ;;
      *"ip -4 -o addr show dev tun0"*) [ "$(cat $d/state)" = running ] && echo '5: tun0    inet 10.8.0.2/32 scope global tun0\       valid_lft forever preferred_lft forever' ;;
      *"ip -4 route get "*) echo "\${*##* } via 192.168.20.1 dev eth0 src 192.168.20.10 uid 0" ;;
      # The WAN counter: installed, read (WAN_PACKETS counted, 0 unless given) and deleted as nft does.
      *"nft add table netdev"*) [ -z "\${NO_EGRESS_HOOK:-}" ] || { echo 'Error: Could not process rule: Operation not supported' >&2; exit 1; }; printf '%s' "\${*##*-- nft }" > $d/nft ;;
      *"nft list table netdev"*) [ -e $d/nft ] || { echo "Error: No such file or directory" >&2; exit 1; }
        echo "table netdev tunnelwright_conformance { chain wan0 { ip saddr { 10.42.1.5, 10.8.0.2 } counter packets \${WAN_PACKETS:-0} bytes 0 } }" ;;
      *"nft delete table netdev"*) [ -e $d/nft ] || { echo "Error: No such file or directory" >&2; exit 1; }; rm -f $d/nft ;;
      *systemd-run*) [ -z "\${NO_DEADMAN:-}" ] || { echo "Failed to start transient timer unit: Access denied" >&2; exit 1; } ;;
      *"systemctl stop tunnelwright-conformance-restore-"*) ;;
      *"systemctl stop"*) echo stopped > $d/state ;;
      *"systemctl start"*) echo running > $d/state; i=$(( $(cat $d/ifindex) + 1 )); echo $i > $d/ifindex; printf '10.8.0.2-%s' $i > $d/label ;;
    esac ;;
esac
`, { mode: 0o755 });
    const r = spawnSync('sh', [path.join(dir, 'check.sh'), '--destructive'], { encoding: 'utf8', env: { ...process.env, ...env, KUBECTL: path.join(dir, 'kubectl'), TMPDIR: dir } });
    const leftover = fs.readdirSync(dir).filter((f) => f.startsWith('tw-conformance') && !fs.lstatSync(path.join(dir, f)).isSymbolicLink());
    const victim = fs.existsSync(path.join(dir, 'victim'));
    const log = fs.readFileSync(path.join(dir, 'log'), 'utf8');
    const nft = fs.existsSync(path.join(dir, 'nft')) ? fs.readFileSync(path.join(dir, 'nft'), 'utf8') : undefined;
    return { status: r.status, lines: r.stdout.trim().split('\n'), stderr: r.stderr, leftover, victim, state: fs.readFileSync(path.join(dir, 'state'), 'utf8').trim(), log, nft };
  };

  it.each([
    ['timeout', 'PASS R3 [egress-steering vpn-egress]: tunnel stopped: the vpn-class request got no answer within 1s while the direct-class control at the same moment was answered from 203.0.113.7 (no vpn-class request reached the echo by the WAN); 0 vpn-class packets left by eth0 (source 10.42.1.5 10.8.0.2) (each name pinned to the address the direct class resolved: ifconfig.example.test:443:203.0.113.7 echo.example.test:80:203.0.113.7)'],
    ['refused', 'PASS R3 [egress-steering vpn-egress]: tunnel stopped: the vpn-class request got no answer within 1s while the direct-class control at the same moment was answered from 203.0.113.7 (no vpn-class request reached the echo by the WAN); 0 vpn-class packets left by eth0 (source 10.42.1.5 10.8.0.2) (each name pinned to the address the direct class resolved: ifconfig.example.test:443:203.0.113.7 echo.example.test:80:203.0.113.7)'],
    ['dns', 'FAIL R3 [egress-steering vpn-egress]: tunnel stopped: the vpn-class request failed before it was sent (curl exit 6: the name did not resolve): that proves nothing about the kill switch'],
    ['exec-fails', 'FAIL R3 [egress-steering vpn-egress]: tunnel stopped: the vpn-class request failed before it was sent (exit 1: kubectl could not run it in the probe): that proves nothing about the kill switch'],
  ] as const)('while stopped, a vpn-class request that ends with %s: %s', (stopped, r3) => {
    const r = run(stopped);
    expect(r.stderr).toBe('');
    expect(r.lines.filter((l) => l.includes(' R3 '))).toEqual([r3]);
    expect(r.status).toBe(r3.startsWith('PASS') ? 0 : 1);
    expect(r.state).toBe('running');
  });

  // The address match as the script does it (in_cidr in sh arithmetic), at both edges of the VPN range 185.236.200.0/22
  // and one address beyond each: a mask one bit short (/21: to .207.255) or one bit long (/23: to .201.255) fails here.
  it.each([
    ['the first address of the range', '185.236.200.0', 'PASS'],
    ['the last address of the range', '185.236.203.255', 'PASS'],
    ['the address after the range (inside its /21)', '185.236.204.0', 'FAIL'],
    ['the address before the range', '185.236.199.255', 'FAIL'],
    ['an address sharing only the first 21 bits', '185.236.207.1', 'FAIL'],
  ])('R1 with the vpn class answered from %s (%s): %s', (_what, address, verdict) => {
    const r = run('timeout', [], { VPN_ANSWER: address });
    expect(r.lines.filter((l) => l.startsWith(`${verdict} R1 `))).toHaveLength(1);
    expect(r.lines.filter((l) => / R1 /.test(l))).toHaveLength(1);
    expect(r.status).toBe(verdict === 'PASS' ? 0 : 1);
    expect(r.state).toBe('running');
  });

  it('the node agent not ready: R0 names it, nothing is stopped, nothing claimed not restored', () => {
    const r = run('timeout', ['egress-conformance-s0-agent']);
    expect(r.lines).toEqual([
      `== ${LABEL}`,
      `FAIL R0 [${LABEL}]: the node agent media/egress-conformance-s0-agent is not ready (apply the check's objects first; it is privileged: its namespace's Pod Security level must be privileged)`,
      'node agent media/egress-conformance-s0-agent scaled back to 0 replicas',
      'conformance: FAIL (1 requirement(s) failed)',
    ]);
    expect(r.log).not.toContain('systemctl');
    expect(r.status).toBe(1);
  });

  it('the privileged node agent runs only during a run: emitted at 0 replicas, scaled to 1 before the first stop, back to 0 after the last start, also after a failure', () => {
    const agent = planEgressConformance(props).objects.find((o) => o.metadata.name === 'egress-conformance-s0-agent') as unknown as { spec: { replicas: number } };
    expect(agent.spec.replicas).toBe(0);
    for (const [stopped, status] of [['timeout', 0], ['dns', 1]] as const) {
      const r = run(stopped);
      expect(r.status).toBe(status);
      const calls = r.log.trim().split('\n');
      const up = calls.indexOf('-n media scale deploy/egress-conformance-s0-agent --replicas=1');
      const down = calls.indexOf('-n media scale deploy/egress-conformance-s0-agent --replicas=0');
      const systemctl = calls.map((c, i) => (c.includes('systemctl') ? i : -1)).filter((i) => i >= 0);
      expect(up).toBeGreaterThanOrEqual(0);
      expect(up).toBeLessThan(systemctl[0]);
      expect(down).toBeGreaterThan(systemctl.at(-1)!);
      expect(r.lines.at(-2)).toBe('node agent media/egress-conformance-s0-agent scaled back to 0 replicas');
    }
  });

  it('while stopped, a vpn-class request is sent to the address the direct class resolved (curl --resolve), so a hung lookup cannot pass for a kill switch; control: without the pin it passes R3 on a leak', () => {
    const r = run('lookup-hangs-leaks');
    expect(r.lines.filter((l) => l.includes(' R3 '))).toEqual(['FAIL R3 [egress-steering vpn-egress]: tunnel stopped: a vpn-class request was answered, the echo saw 203.0.113.7 (a WAN address: vpn-class traffic left by the WAN)']);
    expect(r.status).toBe(1);
    expect(r.log).toContain("-n media exec deploy/egress-conformance-s0-direct -c probe -- curl -s -4 -o /dev/null -w %{remote_ip} --max-time 1 https://ifconfig.example.test/ip");
    expect(r.log).toContain('-n media exec deploy/egress-conformance-s0-vpn -c probe -- curl -s -4 --max-time 1 --resolve ifconfig.example.test:443:203.0.113.7 https://ifconfig.example.test/ip');
    const unpinned = script.replace(/ --resolve "\$pin"/g, '');
    expect(unpinned).not.toBe(script);
    const control = run('lookup-hangs-leaks', [], {}, unpinned);
    expect(control.lines.filter((l) => l.includes(' R3 '))).toEqual([expect.stringMatching(/^PASS R3 /)]);
  });

  it('no named target resolves from the direct class: R3 fails saying why, and the tunnel is never stopped', () => {
    const r = run('timeout', [], { NO_NAME: '1' });
    expect(r.lines.filter((l) => / R[34] /.test(l))).toEqual(['FAIL R3 [egress-steering vpn-egress]: no named echo target resolved from the direct-class probe media/egress-conformance-s0-direct: a vpn-class request could not be pinned to an address (curl --resolve), and a name lookup that hangs could not be told from a blocked request; the tunnel was not stopped (R4 not run)']);
    expect(r.log).not.toMatch(/-- systemctl (stop|start) tunnelwright-openvpn/);
    expect(r.status).toBe(1);
  });

  it('arms a dead-man restore on the gateway node before the stop (a transient systemd timer that starts the unit) and disarms it after the start', () => {
    const r = run('timeout');
    expect(r.status).toBe(0);
    const calls = r.log.trim().split('\n');
    const arm = calls.findIndex((c) => c.includes('systemd-run'));
    const stop = calls.findIndex((c) => c.endsWith('systemctl stop tunnelwright-openvpn.service'));
    const start = calls.findIndex((c) => c.endsWith('systemctl start tunnelwright-openvpn.service') && !c.includes('systemd-run'));
    const disarm = calls.findIndex((c) => /systemctl stop tunnelwright-conformance-restore-.*\.timer$/.test(c));
    expect(calls[arm]).toMatch(/^-n media exec deploy\/egress-conformance-s0-agent -c agent -- nsenter -t 1 -m -u -i -n -p -- systemd-run --quiet --collect --unit=(tunnelwright-conformance-restore-\d+-\d+-1) --on-active=62 --timer-property=RemainAfterElapsed=no systemctl start tunnelwright-openvpn.service$/);
    const unit = /--unit=(\S+)/.exec(calls[arm])![1];
    expect(calls[disarm]).toBe(`-n media exec deploy/egress-conformance-s0-agent -c agent -- nsenter -t 1 -m -u -i -n -p -- systemctl stop ${unit}.timer`);
    expect([arm < stop, stop < start, start < disarm]).toEqual([true, true, true]);
    expect(r.lines).toContain(`   dead-man restore ${unit} armed: it starts the tunnel 62s from now unless this run does first`);
  });

  it('a step before failed (R1: no vpn-class answer): the tunnel is never stopped, R3 says why; control: the same run with R1 passing stops it', () => {
    const r = run('timeout', [], { R1_FAILS: '1' });
    expect(r.lines.filter((l) => / R[134] /.test(l))).toEqual([
      'FAIL R1 [egress-steering vpn-egress]: vpn-class egress: no echo target answered media/egress-conformance-s0-vpn (tunnel down, or every echo target down)',
      'FAIL R3 [egress-steering vpn-egress]: not run: a step before failed (R1 or R2), so the tunnel was not stopped (R4 not run)',
    ]);
    expect(r.log).not.toMatch(/-- systemctl (stop|start) tunnelwright-openvpn/);
    expect(r.log).not.toContain('systemd-run');
    expect(r.status).toBe(1);
    expect(run('timeout').log).toMatch(/-- systemctl stop tunnelwright-openvpn/);
  });

  it.each([
    ['no packet counted', '0', 0, /^PASS R3 \[egress-steering vpn-egress\]: .*; 0 vpn-class packets left by eth0 \(source 10\.42\.1\.5 10\.8\.0\.2\)/],
    ['4 packets counted, none answered (a router that routes nothing back)', '4', 1, /^FAIL R3 \[egress-steering vpn-egress\]: tunnel stopped: 4 vpn-class packet\(s\) left by eth0 \(source 10\.42\.1\.5 10\.8\.0\.2\) while the tunnel was stopped/],
  ] as const)('counts the vpn-class packets leaving by the WAN while stopped (%s): the counter installed on the interface that reaches the echo, read, and removed', (_what, packets, status, r3) => {
    const r = run('timeout', [], { WAN_PACKETS: packets });
    expect(r.lines.filter((l) => l.includes(' R3 '))).toEqual([expect.stringMatching(r3)]);
    expect(r.status).toBe(status);
    expect(r.nft).toBeUndefined();
    const calls = r.log.trim().split('\n');
    const installed = calls.findIndex((c) => c.includes('nft add table netdev tunnelwright_conformance'));
    const stop = calls.findIndex((c) => c.includes('systemctl stop wg-quick') || c.includes('systemctl stop tunnelwright-openvpn'));
    expect(installed).toBeGreaterThanOrEqual(0);
    expect(installed).toBeLessThan(stop);
    expect(calls[installed]).toContain('hook egress device "eth0"');
    expect(calls[installed]).toContain('ip saddr { 10.42.1.5, 10.8.0.2 } counter');
    expect(r.state).toBe('running');
  });

  it('control: the same 4 packets with the check\'s counter taken out: R3 passes on them', () => {
    const uncounted = script.replace('if [ "$kind" = steering ]; then\n    if ! got=$(wan_counter_install', 'if [ "$kind" = no-counter ]; then\n    if ! got=$(wan_counter_install');
    expect(uncounted).not.toBe(script);
    const r = run('timeout', [], { WAN_PACKETS: '4' }, uncounted);
    expect(r.lines.filter((l) => l.includes(' R3 '))).toEqual([expect.stringMatching(/^PASS R3 /)]);
    expect(r.status).toBe(0);
  });

  it('a counter the node refuses (no netdev egress hook before Linux 5.16): R3 fails saying so, and the tunnel is never stopped', () => {
    const r = run('timeout', [], { NO_EGRESS_HOOK: '1' });
    expect(r.lines.filter((l) => l.includes(' R3 '))).toEqual([expect.stringMatching(/^FAIL R3 \[egress-steering vpn-egress\]: the WAN packet counter could not be installed on the gateway node, so the tunnel was not stopped \(R4 not run\): nft refused the counter: /)]);
    expect(r.log).not.toContain('systemctl stop wg-quick');
    expect(r.log).not.toContain('systemctl stop tunnelwright-openvpn');
    expect(r.status).toBe(1);
  });

  it('a dead-man restore that cannot be armed: R3 fails saying so, and the tunnel is never stopped', () => {
    const r = run('timeout', [], { NO_DEADMAN: '1' });
    expect(r.lines.filter((l) => / R[34] /.test(l))).toEqual(['FAIL R3 [egress-steering vpn-egress]: the dead-man restore could not be armed on the target, so the tunnel was not stopped (R4 not run): Failed to start transient timer unit: Access denied']);
    expect(r.log).not.toMatch(/-- systemctl (stop|start) tunnelwright-openvpn/);
    expect(r.state).toBe('running');
  });

  it('R3\'s answers go to a private temporary directory: a symlink planted at the script\'s old predictable name is not written through, nothing is left behind', () => {
    const r = run('timeout', [], { PLANT: '1' });
    expect(r.status).toBe(0);
    expect(r.victim).toBe(false);
    expect(r.leftover).toEqual([]);
  });
});

/**
 * The script over a kubectl stand-in for one VpnGateway: gluetun's wget answers the stop with `STOP_REPLY` (what
 * gluetun says while its own HEALTH_RESTART_VPN restart holds the loop, internal/loopstate/apply.go:54-57) and the
 * start with `{"outcome":"running"}`; the vpn-class curl times out unless the tunnel is running.
 */
describe('the script over a kubectl stand-in (one gateway)', () => {
  const props = { ...homelabConformance(), egressSteerings: [], requestTimeoutSeconds: 1, recoverySeconds: 5 };
  const script = (planEgressConformance(props).values.egressConformance as { script: string }).script;
  const run = (stopReply: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-conformance-gw-'));
    fs.writeFileSync(path.join(dir, 'check.sh'), script);
    fs.writeFileSync(path.join(dir, 'state'), 'running\n');
    fs.writeFileSync(path.join(dir, 'ifindex'), '7\n');
    fs.writeFileSync(path.join(dir, 'kubectl'), `#!/bin/sh
d=${dir}
echo "$*" >> $d/log
[ "$1" = -n ] && shift 2
case $1 in
  rollout) exit 0 ;;
  exec) dep=\${2#deploy/}; shift 2; [ "$1" = -c ] && shift 2; [ "$1" = -- ] && shift
    case "$1 $*" in
      curl*) case $dep in *-direct) echo 203.0.113.7 ;; *) [ "$(cat $d/state)" = running ] && { echo 185.236.200.9; exit 0; }; exit 28 ;; esac ;;
      cat*) cat $d/ifindex ;;
      *"ip -4 -o addr show dev tun0"*) [ "$(cat $d/state)" = running ] && echo '5: tun0    inet 10.8.0.2/32 scope global tun0\       valid_lft forever preferred_lft forever' ;;
      *"ip -4 route get "*) echo "\${*##* } via 192.168.20.1 dev eth0 src 192.168.20.10 uid 0" ;;
      # The WAN counter: installed, read (WAN_PACKETS counted, 0 unless given) and deleted as nft does.
      *"nft add table netdev"*) [ -z "\${NO_EGRESS_HOOK:-}" ] || { echo 'Error: Could not process rule: Operation not supported' >&2; exit 1; }; printf '%s' "\${*##*-- nft }" > $d/nft ;;
      *"nft list table netdev"*) [ -e $d/nft ] || { echo "Error: No such file or directory" >&2; exit 1; }
        echo "table netdev tunnelwright_conformance { chain wan0 { ip saddr { 10.42.1.5, 10.8.0.2 } counter packets \${WAN_PACKETS:-0} bytes 0 } }" ;;
      *"nft delete table netdev"*) [ -e $d/nft ] || { echo "Error: No such file or directory" >&2; exit 1; }; rm -f $d/nft ;;
      sh*) ;;
      *'"status":"stopped"'*) case '${stopReply}' in *'"stopped"'*) echo stopped > $d/state ;; esac; echo '${stopReply}' ;;
      *'"status":"running"'*) echo running > $d/state; echo $(( $(cat $d/ifindex) + 1 )) > $d/ifindex; echo '{"outcome":"running"}' ;;
    esac ;;
esac
`, { mode: 0o755 });
    const r = spawnSync('sh', [path.join(dir, 'check.sh'), '--destructive'], { encoding: 'utf8', env: { ...process.env, KUBECTL: path.join(dir, 'kubectl'), TMPDIR: dir } });
    return { status: r.status, lines: r.stdout.trim().split('\n') };
  };

  it.each(['{"outcome":"already starting"}', '{"outcome":"already stopped"}', '{"outcome":"already crashed"}'])('a stop answered %s fails R3 saying gluetun was restarting the VPN itself, not as a leak', (reply) => {
    const r = run(reply);
    expect(r.status).toBe(1);
    expect(r.lines).toContain(`FAIL R3 [vpn-gateway vpn-gateway/vpn-gateway]: gluetun answered the stop with ${reply}, not stopped: it was restarting the VPN itself (its health check, HEALTH_RESTART_VPN), so the tunnel could come back during R3; retry once the gateway is steady (R4 not run)`);
    expect(r.lines.filter((l) => /^(FAIL|PASS) R[34]/.test(l))).toHaveLength(1);
  });

  it('control: a stop answered {"outcome":"stopped"} passes R3 and R4', () => {
    const r = run('{"outcome":"stopped"}');
    expect(r.lines.filter((l) => /^(FAIL|PASS) R[34]/.test(l)).map((l) => l.slice(0, 7))).toEqual(['PASS R3', 'PASS R4']);
    expect(r.status).toBe(0);
  });
});
