import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { egressAlertGroups, EgressSteeringProps } from '../../src';
import { prodSteering, wireguardSteering } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from './tools';

type Rule = { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> };
type Series = { series: string; values: string };

/**
 * One value per minute (undefined: not scraped) as promtool's series notation. A series that ends gets a staleness
 * marker, as Prometheus writes one when a target stops exposing it (a relabelled node, a restarted exporter).
 */
function perMinute(values: (number | undefined)[]): string {
  return values.map((v, i) => (v !== undefined ? String(v) : i > 0 && values[i - 1] !== undefined ? 'stale' : '_')).join(' ');
}
const MINUTES = 150;
const minutes = <T,>(f: (m: number) => T): T[] => Array.from({ length: MINUTES }, (_, m) => f(m));

/** The target labels kube-prometheus-stack's ServiceMonitors add, then the metric's own, as node-exporter 1.x and kube-state-metrics v2.x name them. */
const NODE_EXPORTER = 'container="node-exporter", endpoint="http-metrics", instance="192.168.20.5:9100", job="node-exporter", namespace="monitoring", pod="kube-prometheus-stack-prometheus-node-exporter-x7k2p", service="kube-prometheus-stack-prometheus-node-exporter"';
const ksmTarget = (pod: string) => `container="kube-state-metrics", endpoint="http", instance="10.42.1.17:8080", job="kube-state-metrics", namespace="monitoring", pod="${pod}", service="kube-prometheus-stack-kube-state-metrics"`;
const KSM_A = 'kube-prometheus-stack-kube-state-metrics-6d9f7b7c4-abcde';
const KSM_B = 'kube-prometheus-stack-kube-state-metrics-6d9f7b7c4-fghij';

/**
 * A gateway node over 150 minutes: `ifindex(m)` is tun0's ifindex at minute m (undefined: no tun0), `label(m)` the
 * ifindex the uplink label names (undefined: no label), `ksmPod(m)` which kube-state-metrics pod answers (undefined:
 * none, during a restart), and for WireGuard `handshake(m)` the latest handshake's Unix time.
 */
interface Scenario {
  ifindex: (m: number) => number | undefined;
  label: (m: number) => number | undefined;
  ksmPod?: (m: number) => string | undefined;
  handshake?: (m: number) => number | undefined;
  /** A second node (another node-exporter, another nodename) with a tun0 and fresh handshakes: a control that must change nothing. */
  otherNode?: boolean;
}

function seriesOf(s: Scenario, labelName: string): Series[] {
  const pod = s.ksmPod ?? (() => KSM_A);
  const out: Series[] = [
    { series: `node_uname_info{${NODE_EXPORTER}, domainname="(none)", machine="x86_64", nodename="prod-gw", release="6.1.0-28-amd64", sysname="Linux", version="#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)"}`, values: perMinute(minutes(() => 1)) },
    { series: `node_network_iface_id{${NODE_EXPORTER}, device="tun0"}`, values: perMinute(minutes(s.ifindex)) },
    { series: `node_network_info{${NODE_EXPORTER}, address="", adminstate="up", broadcast="", device="tun0", duplex="", ifalias="", operstate="unknown"}`, values: perMinute(minutes((m) => (s.ifindex(m) !== undefined ? 1 : undefined))) },
  ];
  if (s.handshake) out.push({ series: `tunnelwright_wireguard_latest_handshake_timestamp_seconds{${NODE_EXPORTER}, interface="tun0", public_key="xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="}`, values: perMinute(minutes(s.handshake)) });
  if (s.otherNode) {
    const other = NODE_EXPORTER.replace('192.168.20.5:9100', '192.168.20.6:9100').replace('x7k2p', 'q4m9z');
    out.push(
      { series: `node_uname_info{${other}, domainname="(none)", machine="x86_64", nodename="other-gw", release="6.1.0-28-amd64", sysname="Linux", version="#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)"}`, values: perMinute(minutes(() => 1)) },
      { series: `node_network_info{${other}, address="", adminstate="up", broadcast="", device="tun0", duplex="", ifalias="", operstate="unknown"}`, values: perMinute(minutes(() => 1)) },
      { series: `tunnelwright_wireguard_latest_handshake_timestamp_seconds{${other}, interface="tun0", public_key="bmV3LWtleS1ub3QtdXNlZC1hbnl3aGVyZS1lbHNlMDA="}`, values: perMinute(minutes(handshakeEvery2)) },
    );
  }
  const pods = [...new Set(minutes(pod).filter((p): p is string => p !== undefined))];
  for (const p of pods) {
    out.push({ series: `kube_node_info{${ksmTarget(p)}, node="prod-gw", container_runtime_version="containerd://1.7.22", internal_ip="192.168.20.5", kernel_version="6.1.0-28-amd64", kubelet_version="v1.31.4", kubeproxy_version="deprecated", os_image="Debian GNU/Linux 12 (bookworm)", pod_cidr="10.42.3.0/24", provider_id="", system_uuid="4c4c4544-0042-3510-8052-b4c04f4e4d32"}`, values: perMinute(minutes((m) => (pod(m) === p ? 1 : undefined))) });
    // One series per label value: the address the tunnel had and the ifindex the label names.
    const values = [...new Set(minutes(s.label).filter((v): v is number => v !== undefined))];
    for (const v of values) {
      out.push({ series: `kube_node_labels{${ksmTarget(p)}, node="prod-gw", ${labelName}="10.8.0.${v}-${v}"}`, values: perMinute(minutes((m) => (pod(m) === p && s.label(m) === v ? 1 : undefined))) });
    }
  }
  return out;
}

/** The seed's outage: tun0 re-created at 10 min, the label left naming the old one until 90 min (80 minutes), then followed. */
const outage: Scenario = { ifindex: (m) => (m < 10 ? 5 : 6), label: (m) => (m < 90 ? 5 : 6) };
/** The seed's session stealing: tun0 re-created every 2 minutes from 10 to 70 min, the label following a minute later each time. */
const loopIfindex = (m: number) => 7 + Math.max(0, Math.floor((Math.min(m, 70) - 10) / 2) + 1) * (m >= 10 ? 1 : 0);
const loop: Scenario = { ifindex: loopIfindex, label: (m) => loopIfindex(Math.max(0, m - 1)) };
/** kube-state-metrics restarted at 40 min: no pod answers for 2 minutes, then another pod, with new series. */
const ksmRestart: Scenario = { ifindex: () => 7, label: () => 7, ksmPod: (m) => (m < 40 ? KSM_A : m < 42 ? undefined : KSM_B) };
const stable: Scenario = { ifindex: () => 7, label: () => 7 };
/** One reconnect at 30 min, followed by the label a minute later. */
const onceFollowed: Scenario = { ifindex: (m) => (m < 30 ? 7 : 8), label: (m) => (m < 31 ? 7 : 8) };
/** Controls: the same, with the re-steer hook's part removed (the label never follows). */
const onceNotFollowed: Scenario = { ifindex: onceFollowed.ifindex, label: () => 7 };
const ksmRestartNotFollowed: Scenario = { ...ksmRestart, ifindex: (m) => (m < 20 ? 7 : 8) };
const loopNotFollowed: Scenario = { ifindex: loopIfindex, label: () => 7 };

/**
 * WireGuard: the peer answers, re-handshaking every 2 minutes (REKEY_AFTER_TIME) while the keepalive keeps traffic
 * flowing; or it goes silent at 40 min (the interface stays, and so does its last handshake time) and answers again
 * at 100 min. The clock starts at Unix time 0, as promtool's does.
 */
const handshakeEvery2 = (m: number) => Math.floor(m / 2) * 120;
const wgAlive: Scenario = { ...stable, handshake: handshakeEvery2 };
const wgSilent: Scenario = { ...stable, handshake: (m) => (m >= 40 && m < 100 ? handshakeEvery2(39) : handshakeEvery2(m)) };

describeWithTools('EgressSteering alerts under promtool: when each fires and resolves', ['promtool'], () => {
  const dir = tmpdir('tw-prom-');
  const openvpn = egressAlertGroups(prodSteering());
  const wireguard = egressAlertGroups({ ...wireguardSteering(), gatewayNode: 'prod-gw', monitoring: {} } as EgressSteeringProps);
  const label = 'label_tunnelwright_dev_egress_uplink';
  const write = (name: string, groups: unknown) => fs.writeFileSync(path.join(dir, name), stringify({ groups }));
  write('rules.yaml', openvpn);
  write('wg-rules.yaml', wireguard);
  const alertsOf = (groups: { rules: Record<string, unknown>[] }[]) => groups[0].rules.map((r) => r.alert as string);

  /**
   * The minutes (of 0..MINUTES-1) at which promtool sees `alert` firing: a test expecting silence at every minute,
   * whose failures name the minutes it fired. Returned as ranges `[from, to]`.
   */
  const firing = (rules: string, scenario: Scenario, alert: string): [number, number][] => {
    const file = `t-${alert}-${Math.random().toString(36).slice(2)}.yaml`;
    const test = { interval: '1m', input_series: seriesOf(scenario, label), alert_rule_test: minutes((m) => m).map((m) => ({ eval_time: `${m}m`, alertname: alert, exp_alerts: [] })) };
    fs.writeFileSync(path.join(dir, file), stringify({ rule_files: [rules], evaluation_interval: '1m', tests: [test] }));
    const r = run('promtool', ['test', 'rules', file], { cwd: dir, timeout: 120_000 });
    if (r.status !== 0 && !/FAILED/.test(r.output)) throw new Error(r.output);
    // promtool prints the time as Prometheus writes a duration: 59m, 1h, 1h1m, 2h29m.
    const at = [...r.output.matchAll(new RegExp(`alertname: ${alert}, time: (?:(\\d+)h)?(?:(\\d+)m)?,`, 'g'))].map((x) => Number(x[1] ?? 0) * 60 + Number(x[2] ?? 0)).sort((a, b) => a - b);
    const ranges: [number, number][] = [];
    for (const m of at) {
      const last = ranges[ranges.length - 1];
      if (last && last[1] === m - 1) last[1] = m;
      else ranges.push([m, m]);
    }
    return ranges;
  };
  const timelines: Record<string, Record<string, [number, number][]>> = {};
  const record = (scenario: string, rules: string, s: Scenario, alerts: string[]) => {
    timelines[scenario] = Object.fromEntries(alerts.map((a) => [a, firing(rules, s, a)]));
    return timelines[scenario];
  };
  afterAll(() => {
    process.stdout.write(`egress alert timelines (minutes firing, [from, to]): ${JSON.stringify(timelines)}\n`);
  });

  it('promtool check rules accepts both rule sets without a warning', () => {
    for (const f of ['rules.yaml', 'wg-rules.yaml']) {
      const r = run('promtool', ['check', 'rules', path.join(dir, f)]);
      expect(r.output).toBe(`Checking ${path.join(dir, f)}\n  SUCCESS: ${f === 'rules.yaml' ? 4 : 5} rules found\n\n`);
    }
  });

  it('the seed\'s 80-minute outage: VPNEgressSteeringStale fires 5 minutes in and keeps firing (75 and 85 min) until the label follows', () => {
    const t = record('80-minute outage', 'rules.yaml', outage, alertsOf(openvpn));
    expect(t).toEqual({ VPNTunnelDown: [], VPNEgressSteeringStale: [[15, 89]], VPNTunnelReconnectLoop: [], VPNEgressUplinkLabelMissing: [] });
  });

  it('control: the rule that counted changes over one hour reports the same outage resolved before 75 minutes', () => {
    const stale = openvpn[0].rules.find((r) => r.alert === 'VPNEgressSteeringStale') as Rule;
    const node = 'node_uname_info{nodename="prod-gw"}';
    const old = `(max(changes(node_network_iface_id{device="tun0"}[1h]) * on(instance) group_left(nodename) ${node}) > (count(count by (${label}) (count_over_time(kube_node_labels{node="prod-gw", ${label}!=""}[1h]))) - 1)) and on() (count(kube_node_info{node="prod-gw"}) > 0)`;
    write('old-rules.yaml', [{ name: 'old', rules: [{ ...stale, expr: old }] }]);
    const t = firing('old-rules.yaml', outage, 'VPNEgressSteeringStale');
    timelines['80-minute outage, the old 1h-changes rule (control)'] = { VPNEgressSteeringStale: t };
    expect(t.some(([from, to]) => from <= 75 && to >= 75)).toBe(false);
    expect(t.some(([from, to]) => from <= 85 && to >= 85)).toBe(false);
  });

  it('the two-minute loop for an hour: VPNTunnelReconnectLoop fires, VPNEgressSteeringStale stays silent (the label follows); control: not followed, Stale fires', () => {
    const t = record('2-minute loop for an hour, followed', 'rules.yaml', loop, alertsOf(openvpn));
    expect(t).toEqual({ VPNTunnelDown: [], VPNEgressSteeringStale: [], VPNTunnelReconnectLoop: [[21, 93]], VPNEgressUplinkLabelMissing: [] });
    const c = record('2-minute loop, not followed (control)', 'rules.yaml', loopNotFollowed, ['VPNEgressSteeringStale']);
    expect(c.VPNEgressSteeringStale).toEqual([[15, 149]]);
  });

  it('a kube-state-metrics restart is silent; control: the same restart with a reconnect the label did not follow fires Stale', () => {
    expect(record('kube-state-metrics restart', 'rules.yaml', ksmRestart, alertsOf(openvpn))).toEqual({ VPNTunnelDown: [], VPNEgressSteeringStale: [], VPNTunnelReconnectLoop: [], VPNEgressUplinkLabelMissing: [] });
    const c = record('kube-state-metrics restart, reconnect not followed (control)', 'rules.yaml', ksmRestartNotFollowed, ['VPNEgressSteeringStale']);
    expect(c.VPNEgressSteeringStale).toEqual([[25, 149]]);
  });

  it('a stable tunnel and one reconnect followed are silent; controls: the reconnect not followed fires Stale, the loop fires ReconnectLoop', () => {
    const none = { VPNTunnelDown: [], VPNEgressSteeringStale: [], VPNTunnelReconnectLoop: [], VPNEgressUplinkLabelMissing: [] };
    expect(record('stable tunnel', 'rules.yaml', stable, alertsOf(openvpn))).toEqual(none);
    expect(record('one reconnect, followed', 'rules.yaml', onceFollowed, alertsOf(openvpn))).toEqual(none);
    expect(record('one reconnect, not followed (control)', 'rules.yaml', onceNotFollowed, ['VPNEgressSteeringStale']).VPNEgressSteeringStale).toEqual([[35, 149]]);
  });

  it('WireGuard: VPNTunnelHandshakeStale is silent while handshakes come every 2 minutes, fires while the peer is silent, resolves when it answers', () => {
    const alerts = alertsOf(wireguard);
    expect(alerts).toContain('VPNTunnelHandshakeStale');
    expect(record('WireGuard, peer answering', 'wg-rules.yaml', wgAlive, alerts)).toEqual(Object.fromEntries(alerts.map((a) => [a, []])));
    const t = record('WireGuard, peer silent from 40 to 100 min (control)', 'wg-rules.yaml', wgSilent, ['VPNTunnelHandshakeStale', 'VPNTunnelDown']);
    expect(t).toEqual({ VPNTunnelHandshakeStale: [[46, 99]], VPNTunnelDown: [] });
  });

  it('WireGuard: VPNTunnelHandshakeStale fires when the handshake is never collected while the tunnel is up (no textfile directory), a second node\'s fresh handshakes masking nothing; silent when the tunnel is down too (VPNTunnelDown says it)', () => {
    const absent: Scenario = { ...stable, otherNode: true };
    const t = record('WireGuard, handshake never collected, a second node answering', 'wg-rules.yaml', absent, ['VPNTunnelHandshakeStale', 'VPNTunnelDown']);
    expect(t).toEqual({ VPNTunnelHandshakeStale: [[2, 149]], VPNTunnelDown: [] });
    // Collected for 60 minutes, then no longer (a node-exporter restarted without the directory): absent from 60 min, firing 2 minutes later.
    const lost: Scenario = { ...stable, otherNode: true, handshake: (m) => (m < 60 ? handshakeEvery2(m) : undefined) };
    expect(record('WireGuard, handshake collected until 60 min', 'wg-rules.yaml', lost, ['VPNTunnelHandshakeStale'])).toEqual({ VPNTunnelHandshakeStale: [[62, 149]] });
    // Live and stale beside the second node: the second node changes neither.
    expect(record('WireGuard, peer answering, a second node', 'wg-rules.yaml', { ...wgAlive, otherNode: true }, ['VPNTunnelHandshakeStale'])).toEqual({ VPNTunnelHandshakeStale: [] });
    expect(record('WireGuard, peer silent from 40 to 100 min, a second node answering', 'wg-rules.yaml', { ...wgSilent, otherNode: true }, ['VPNTunnelHandshakeStale'])).toEqual({ VPNTunnelHandshakeStale: [[46, 99]] });
    // The tunnel gone from 20 min, with its handshake file: VPNTunnelDown, not this alert.
    const down: Scenario = { ifindex: (m) => (m < 20 ? 7 : undefined), label: () => 7, handshake: (m) => (m < 20 ? handshakeEvery2(m) : undefined), otherNode: true };
    expect(record('WireGuard, tunnel gone at 20 min', 'wg-rules.yaml', down, ['VPNTunnelHandshakeStale', 'VPNTunnelDown'])).toEqual({ VPNTunnelHandshakeStale: [], VPNTunnelDown: [[22, 149]] });
  });

  it('fails when an alert that must fire does not (the harness can fail)', () => {
    const test = { interval: '1m', input_series: seriesOf(outage, label), alert_rule_test: [{ eval_time: '50m', alertname: 'VPNEgressSteeringStale', exp_alerts: [] }] };
    fs.writeFileSync(path.join(dir, 'broken.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: [test] }));
    expect(run('promtool', ['test', 'rules', 'broken.yaml'], { cwd: dir }).status).not.toBe(0);
  });
});

/** Each alert's labels and annotations as promtool sees them, and the cases beside the timelines. */
describeWithTools('EgressSteering alerts under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-prom-');
  const groups = egressAlertGroups(prodSteering());
  const rules = Object.fromEntries(groups[0].rules.map((r) => [r.alert as string, r as Rule]));
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const expect_ = (alert: string, extra: Record<string, string> = {}) => ({ exp_labels: { ...rules[alert].labels, ...extra }, exp_annotations: rules[alert].annotations });

  const node = 'node_uname_info{instance="gw:9100", nodename="prod-gw"}';
  const gateway = { series: 'kube_node_info{node="prod-gw"}', values: '1x70' };
  const uname = { series: node, values: '1x70' };
  const tunnel = { series: 'node_network_info{device="tun0", instance="gw:9100"}', values: '1x70' };
  const ifaceFlapped = { series: 'node_network_iface_id{device="tun0", instance="gw:9100"}', values: '5x20 6x20 7x30' };
  const alerts = Object.keys(rules);
  const none = (at: string) => alerts.map((a) => ({ eval_time: at, alertname: a, exp_alerts: [] }));
  const labelByPod = (v: string, pod: string, values: string) => ({ series: `kube_node_labels{node="prod-gw", pod="${pod}", label_tunnelwright_dev_egress_uplink="${v}"}`, values });
  // The control beside every case: another node of the cluster with a tun0 of its own, re-created every minute and
  // labelled with a stale index; promtool's exp_alerts is the whole set that fires, so its series neither fire an
  // alert of the gateway's nor silence one.
  const otherNode = [
    { series: 'kube_node_info{node="other-gw"}', values: '1x70' },
    { series: 'node_uname_info{instance="other:9100", nodename="other-gw"}', values: '1x70' },
    { series: 'node_network_info{device="tun0", instance="other:9100"}', values: '1x70' },
    { series: 'node_network_iface_id{device="tun0", instance="other:9100"}', values: '30+1x70' },
    { series: 'kube_node_labels{node="other-gw", pod="ksm-a", label_tunnelwright_dev_egress_uplink="10.2.0.9-29"}', values: '1x70' },
  ];
  const tests = [
    {
      name: 'a kube-state-metrics restart does not hide staleness: the tunnel flapped twice, the label followed once, KSM restarted',
      input_series: [gateway, uname, tunnel, ifaceFlapped, labelByPod('10.2.0.2-5', 'ksm-a', '1x20 _x50'), labelByPod('10.2.0.2-6', 'ksm-a', '_x21 1x9 _x40'), labelByPod('10.2.0.2-6', 'ksm-b', '_x31 1x39')],
      alert_rule_test: [{ eval_time: '65m', alertname: 'VPNEgressSteeringStale', exp_alerts: [expect_('VPNEgressSteeringStale')] }],
    },
    {
      name: 'a tunnel outage is reported once: VPNTunnelDown, not VPNEgressUplinkLabelMissing (the hook removed the label)',
      input_series: [gateway, uname],
      alert_rule_test: [{ eval_time: '30m', alertname: 'VPNTunnelDown', exp_alerts: [expect_('VPNTunnelDown')] }, { eval_time: '30m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [] }, { eval_time: '30m', alertname: 'VPNEgressSteeringStale', exp_alerts: [] }],
    },
    {
      name: 'the uplink label is missing: VPNEgressUplinkLabelMissing, not VPNEgressSteeringStale',
      input_series: [gateway, uname, tunnel, ifaceFlapped],
      alert_rule_test: [{ eval_time: '5m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [] }, { eval_time: '15m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [expect_('VPNEgressUplinkLabelMissing', { node: 'prod-gw' })] }, { eval_time: '15m', alertname: 'VPNEgressSteeringStale', exp_alerts: [] }],
    },
    {
      name: 'a loop fires with the rule\'s labels and annotations',
      input_series: [gateway, uname, tunnel, { series: 'node_network_iface_id{device="tun0", instance="gw:9100"}', values: '5+1x70' }, labelByPod('10.2.0.2-5', 'ksm-a', '1x70')],
      alert_rule_test: [{ eval_time: '15m', alertname: 'VPNTunnelReconnectLoop', exp_alerts: [expect_('VPNTunnelReconnectLoop')] }],
    },
    {
      name: 'a cluster without the gateway node fires nothing, whatever else is missing',
      input_series: [uname, ifaceFlapped],
      alert_rule_test: none('65m'),
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t, input_series: [...t.input_series, ...otherNode] })) }));

  it('promtool test rules: each alert fires on its series with its labels and annotations, and stays silent without a gateway node; another node\'s looping, stale tunnel changes nothing', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
    expect(r.status).toBe(0);
  });
});

/** A custom uplink label key, named in the rules as kube-state-metrics names it (`label_` + sanitized snake case). */
describeWithTools('EgressSteering alerts with a custom uplink label key, under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-prom-custom-');
  const groups = egressAlertGroups({ ...prodSteering(), uplinkLabel: 'example.com/egressUplink' });
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const base = [
    { series: 'kube_node_info{node="prod-gw"}', values: '1x30' },
    { series: 'node_uname_info{instance="gw:9100", nodename="prod-gw"}', values: '1x30' },
    { series: 'node_network_info{device="tun0", instance="gw:9100"}', values: '1x30' },
    { series: 'node_network_iface_id{device="tun0", instance="gw:9100"}', values: '5x30' },
  ];
  // The series as kube-state-metrics exports the label example.com/egressUplink.
  const ksm = (v: string) => ({ series: `kube_node_labels{node="prod-gw", label_example_com_egress_uplink="${v}"}`, values: '1x30' });

  it('VPNEgressUplinkLabelMissing and VPNEgressSteeringStale read the label under its kube-state-metrics name', () => {
    const rule = (a: string) => groups[0].rules.find((r) => r.alert === a)!;
    const exp = (a: string, extra: Record<string, string> = {}) => [{ exp_labels: { ...(rule(a).labels as Record<string, string>), ...extra }, exp_annotations: rule(a).annotations }];
    const tests = [
      { interval: '1m', input_series: [...base, ksm('10.2.0.2-5')], alert_rule_test: [{ eval_time: '25m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [] }, { eval_time: '25m', alertname: 'VPNEgressSteeringStale', exp_alerts: [] }] },
      { interval: '1m', input_series: [...base, ksm('10.2.0.2-4')], alert_rule_test: [{ eval_time: '25m', alertname: 'VPNEgressSteeringStale', exp_alerts: exp('VPNEgressSteeringStale') }] },
      { interval: '1m', input_series: base, alert_rule_test: [{ eval_time: '25m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: exp('VPNEgressUplinkLabelMissing', { node: 'prod-gw' }) }] },
    ];
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });
});
