import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { blackboxConfig, egressProbeAlertGroups } from '../../src';
import { gatewayProbe } from '../helpers/fixtures';
import { describeWithTools, must, run, sh, tmpdir } from './tools';

/**
 * The real blackbox exporter (Debian's) with the generated modules, against a local IP-echo server in a network
 * namespace that answers first with a VPN address, then with the WAN address.
 */
describeWithTools('the generated blackbox modules catch a WAN address', ['blackbox_exporter', 'ip', 'curl', 'python3'], () => {
  const ns = `twbb${process.pid % 10000}`;
  const dir = tmpdir('tw-bb-');
  const config = path.join(dir, 'blackbox.yml');
  const answer = path.join(dir, 'www', 'ip');

  beforeAll(() => {
    fs.writeFileSync(config, blackboxConfig(gatewayProbe()));
    fs.mkdirSync(path.dirname(answer));
    fs.writeFileSync(answer, '185.236.201.9\n');
    must(sh([
      `ip netns add ${ns} && ip -n ${ns} link set lo up`,
      `ip netns exec ${ns} setsid sh -c 'python3 -m http.server 8080 --bind 127.0.0.1 --directory ${path.dirname(answer)} >/dev/null 2>&1 &'`,
      `ip netns exec ${ns} setsid sh -c 'blackbox_exporter --config.file=${config} --web.listen-address=127.0.0.1:9115 >${dir}/exporter.log 2>&1 &'`,
      `for i in $(seq 50); do ip netns exec ${ns} curl -sf http://127.0.0.1:9115/-/healthy >/dev/null && ip netns exec ${ns} curl -sf http://127.0.0.1:8080/ip >/dev/null && exit 0; sleep 0.2; done; exit 1`,
    ].join(' && '), { env: { PATH: `${path.resolve(__dirname, '../../.tools/bin')}:${process.env.PATH}` } }), 'exporter and echo server');
  });
  afterAll(() => sh(`ip netns pids ${ns} | xargs -r kill; sleep 0.2; ip netns del ${ns}`));

  const probe = (module: string) => {
    const r = must(sh(`ip netns exec ${ns} curl -sf 'http://127.0.0.1:9115/probe?module=${module}&target=http://127.0.0.1:8080/ip'`), 'probe');
    const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(r.stdout)?.[1]);
    return { success: metric('probe_success'), regex: metric('probe_failed_due_to_regex') };
  };

  it('passes --config.check', () => {
    const r = run('blackbox_exporter', ['--config.check', `--config.file=${config}`]);
    expect(r.status).toBe(0);
  });

  it('probe_success is 1 while the echo shows a VPN address, 0 once it shows the WAN address', () => {
    expect(probe('vpn_ipv4')).toEqual({ success: 1, regex: 0 });
    fs.writeFileSync(answer, '203.0.113.7\n');
    expect(probe('vpn_ipv4')).toEqual({ success: 0, regex: 1 });
    // The direct twin only shows the address: it succeeds either way.
    expect(probe('direct_ipv4')).toEqual({ success: 1, regex: 0 });
    // An address outside the VPN ranges that is not the WAN either fails as well.
    fs.writeFileSync(answer, '198.51.100.99\n');
    expect(probe('vpn_ipv4')).toEqual({ success: 0, regex: 1 });
  });
});

describeWithTools('EgressProbe alerts under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-prom-probe-');
  const groups = egressProbeAlertGroups(gatewayProbe());
  const rules = Object.fromEntries(groups[0].rules.map((r) => [r.alert as string, r as { labels: Record<string, string>; annotations: Record<string, string> }]));
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const target = 'https://ifconfig.example.test/ip';
  const series = (metric: string, values: string) => ({ series: `${metric}{job="egress-probe-vpn-ipv4", instance="${target}"}`, values });
  const fired = (alert: string) => ({
    exp_labels: { ...rules[alert].labels, job: 'egress-probe-vpn-ipv4', instance: target },
    exp_annotations: Object.fromEntries(Object.entries(rules[alert].annotations).map(([k, v]) => [k, v.replace('{{ $labels.job }}', 'egress-probe-vpn-ipv4').replace('{{ $labels.instance }}', target)])),
  });
  const tests = [
    {
      name: 'healthy',
      input_series: [series('probe_success', '1x30'), series('probe_failed_due_to_regex', '0x30')],
      alert_rule_test: ['VPNEgressLeak', 'VPNEgressProbeFailing'].map((a) => ({ eval_time: '30m', alertname: a, exp_alerts: [] })),
    },
    {
      name: 'leak: the probe saw a WAN address',
      input_series: [series('probe_success', '1x10 0x20'), series('probe_failed_due_to_regex', '0x10 1x20')],
      alert_rule_test: [
        { eval_time: '10m', alertname: 'VPNEgressLeak', exp_alerts: [] },
        { eval_time: '13m', alertname: 'VPNEgressLeak', exp_alerts: [fired('VPNEgressLeak')] },
        { eval_time: '30m', alertname: 'VPNEgressProbeFailing', exp_alerts: [] },
      ],
    },
    {
      name: 'outage: no successful probe, longer than for',
      input_series: [series('probe_success', '1x10 0x30'), series('probe_failed_due_to_regex', '0x40')],
      alert_rule_test: [
        { eval_time: '15m', alertname: 'VPNEgressProbeFailing', exp_alerts: [] },
        { eval_time: '22m', alertname: 'VPNEgressProbeFailing', exp_alerts: [fired('VPNEgressProbeFailing')] },
        { eval_time: '22m', alertname: 'VPNEgressLeak', exp_alerts: [] },
      ],
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('promtool check rules accepts them', () => {
    const r = run('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(r.output).toBe(`Checking ${path.join(dir, 'rules.yaml')}\n  SUCCESS: 2 rules found\n\n`);
  });

  it('promtool test rules: VPNEgressLeak fires on a WAN address, VPNEgressProbeFailing after an outage longer than its for', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
    expect(r.status).toBe(0);
  });
});
