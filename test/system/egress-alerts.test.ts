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

  const tests = [
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

  it('fails when an alert that must fire does not (the test can fail)', () => {
    const broken = { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: [{ interval: '1m', ...tests[0], alert_rule_test: [{ eval_time: '65m', alertname: 'VPNEgressSteeringStale', exp_alerts: [expect_('VPNEgressSteeringStale')] }] }] };
    fs.writeFileSync(path.join(dir, 'broken.yaml'), stringify(broken));
    expect(run('promtool', ['test', 'rules', 'broken.yaml'], { cwd: dir }).status).not.toBe(0);
  });
});
