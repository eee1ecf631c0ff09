import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { egressAlertGroups } from '../../src';
import { prodSteering } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from './tools';

/** `promtool check rules` and `promtool test rules` for the EgressSteering alerts, with series that make each fire and stay silent. */
describeWithTools('EgressSteering alerts under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-prom-');
  const groups = egressAlertGroups(prodSteering());
  const rules = Object.fromEntries(groups[0].rules.map((r) => [r.alert as string, r as { labels: Record<string, string>; annotations: Record<string, string> }]));
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const expect_ = (alert: string, extra: Record<string, string> = {}) => ({ exp_labels: { ...rules[alert].labels, ...extra }, exp_annotations: rules[alert].annotations });

  const node = 'node_uname_info{instance="gw:9100", nodename="prod-gw"}';
  const gateway = { series: 'kube_node_info{node="prod-gw"}', values: '1x70' };
  const uname = { series: node, values: '1x70' };
  const tunnel = { series: 'node_network_info{device="tun0", instance="gw:9100"}', values: '1x70' };
  const label = (v: string, values: string) => ({ series: `kube_node_labels{node="prod-gw", label_tunnelwright_dev_egress_uplink="${v}"}`, values });
  const ifaceFlapped = { series: 'node_network_iface_id{device="tun0", instance="gw:9100"}', values: '5x20 6x20 7x30' };
  const alerts = ['VPNTunnelDown', 'VPNEgressSteeringStale', 'VPNEgressUplinkLabelMissing'];
  const none = (at: string) => alerts.map((a) => ({ eval_time: at, alertname: a, exp_alerts: [] }));

  // kube-state-metrics restarted at 30m: the same label value from a new pod is a new series.
  const labelByPod = (v: string, pod: string, values: string) => ({ series: `kube_node_labels{node="prod-gw", pod="${pod}", label_tunnelwright_dev_egress_uplink="${v}"}`, values });
  const ifaceFlappedOnce = { series: 'node_network_iface_id{device="tun0", instance="gw:9100"}', values: '5x20 6x50' };
  const tests = [
    {
      name: 'a kube-state-metrics restart is no label change: the tunnel flapped once, the label followed once, KSM restarted',
      input_series: [gateway, uname, tunnel, ifaceFlappedOnce, labelByPod('10.2.0.2-5', 'ksm-a', '1x20 _x50'), labelByPod('10.2.0.2-6', 'ksm-a', '_x21 1x9 _x40'), labelByPod('10.2.0.2-6', 'ksm-b', '_x31 1x39')],
      alert_rule_test: none('65m'),
    },
    {
      name: 'a kube-state-metrics restart does not hide staleness: the tunnel flapped twice, the label followed once, KSM restarted',
      input_series: [gateway, uname, tunnel, ifaceFlapped, labelByPod('10.2.0.2-5', 'ksm-a', '1x20 _x50'), labelByPod('10.2.0.2-6', 'ksm-a', '_x21 1x9 _x40'), labelByPod('10.2.0.2-6', 'ksm-b', '_x31 1x39')],
      alert_rule_test: [{ eval_time: '65m', alertname: 'VPNEgressSteeringStale', exp_alerts: [expect_('VPNEgressSteeringStale')] }],
    },
    {
      name: 'a tunnel outage is reported once: VPNTunnelDown, not VPNEgressUplinkLabelMissing (the hook removed the label)',
      input_series: [gateway, uname],
      alert_rule_test: [{ eval_time: '30m', alertname: 'VPNTunnelDown', exp_alerts: [expect_('VPNTunnelDown')] }, { eval_time: '30m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [] }],
    },
    {
      name: 'healthy: the tunnel flapped twice and the label followed each time',
      input_series: [gateway, uname, tunnel, ifaceFlapped, label('10.2.0.2-5', '1x20 _x50'), label('10.2.0.2-6', '_x21 1x20 _x28'), label('10.2.0.2-7', '_x42 1x28')],
      alert_rule_test: none('65m'),
    },
    {
      name: 'stale: the tunnel flapped twice, the label followed once',
      input_series: [gateway, uname, tunnel, ifaceFlapped, label('10.2.0.2-5', '1x20 _x50'), label('10.2.0.2-6', '_x21 1x49')],
      alert_rule_test: [{ eval_time: '65m', alertname: 'VPNEgressSteeringStale', exp_alerts: [expect_('VPNEgressSteeringStale')] }, { eval_time: '65m', alertname: 'VPNTunnelDown', exp_alerts: [] }],
    },
    {
      name: 'tunnel down on the gateway node',
      input_series: [gateway, uname, label('10.2.0.2-5', '1x70')],
      alert_rule_test: [{ eval_time: '1m', alertname: 'VPNTunnelDown', exp_alerts: [] }, { eval_time: '10m', alertname: 'VPNTunnelDown', exp_alerts: [expect_('VPNTunnelDown')] }],
    },
    {
      name: 'the uplink label is missing',
      input_series: [gateway, uname, tunnel],
      alert_rule_test: [{ eval_time: '5m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [] }, { eval_time: '15m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [expect_('VPNEgressUplinkLabelMissing', { node: 'prod-gw' })] }],
    },
    {
      name: 'a cluster without the gateway node fires nothing, whatever else is missing',
      input_series: [uname, ifaceFlapped],
      alert_rule_test: none('65m'),
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('promtool check rules accepts the rules without a warning', () => {
    const r = run('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(r.output).toBe(`Checking ${path.join(dir, 'rules.yaml')}\n  SUCCESS: 3 rules found\n\n`);
    expect(r.status).toBe(0);
  });

  it('promtool test rules: each alert fires on its series and stays silent when healthy or without a gateway node', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
    expect(r.status).toBe(0);
  });

  it('control: counting series, as the Stale rule once did, goes silent after the kube-state-metrics restart', () => {
    const stale = rules.VPNEgressSteeringStale as unknown as { expr: string };
    const bySeries = stale.expr.replace(/count\(count by \([^)]*\) \((count_over_time\([^[]*\[1h\]\))\)\)/, 'count($1)');
    expect(bySeries).not.toBe(stale.expr);
    const g = [{ name: 'control', rules: [{ ...stale, expr: bySeries }] }];
    fs.writeFileSync(path.join(dir, 'control-rules.yaml'), stringify({ groups: g }));
    fs.writeFileSync(path.join(dir, 'control.yaml'), stringify({ rule_files: ['control-rules.yaml'], evaluation_interval: '1m', tests: [{ interval: '1m', ...tests[1], alert_rule_test: [{ eval_time: '65m', alertname: 'VPNEgressSteeringStale', exp_alerts: [expect_('VPNEgressSteeringStale')] }] }] }));
    expect(run('promtool', ['test', 'rules', 'control.yaml'], { cwd: dir }).status).not.toBe(0);
  });

  it('fails when an alert that must fire does not (the test can fail)', () => {
    const broken = { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: [{ interval: '1m', ...tests[0], alert_rule_test: [{ eval_time: '65m', alertname: 'VPNEgressSteeringStale', exp_alerts: [expect_('VPNEgressSteeringStale')] }] }] };
    fs.writeFileSync(path.join(dir, 'broken.yaml'), stringify(broken));
    expect(run('promtool', ['test', 'rules', 'broken.yaml'], { cwd: dir }).status).not.toBe(0);
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
  ];
  // The series as kube-state-metrics exports the label example.com/egressUplink.
  const ksm = { series: 'kube_node_labels{node="prod-gw", label_example_com_egress_uplink="10.2.0.2-5"}', values: '1x30' };

  it('VPNEgressUplinkLabelMissing stays silent while kube-state-metrics exports the label, and fires when it does not', () => {
    const missing = groups[0].rules.find((r) => r.alert === 'VPNEgressUplinkLabelMissing')!;
    const tests = [
      { interval: '1m', input_series: [...base, ksm], alert_rule_test: [{ eval_time: '25m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [] }] },
      { interval: '1m', input_series: base, alert_rule_test: [{ eval_time: '25m', alertname: 'VPNEgressUplinkLabelMissing', exp_alerts: [{ exp_labels: { ...(missing.labels as Record<string, string>), node: 'prod-gw' }, exp_annotations: missing.annotations }] }] },
    ];
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });
});
