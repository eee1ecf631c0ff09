import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { EgressProbeProps, egressProbeAlertGroups, planEgressProbe } from '../../src';
import { gatewayProbe } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from '../system/tools';

/*
 * EgressProbe's alert rules under promtool, at unit speed (moved from test/system/egress-probe.test.ts, which keeps
 * what needs the blackbox exporter in a network namespace, and the DNS cases promtool reads as the exporter printed
 * them): series named as the blackbox exporter names them, labelled as prometheus-operator labels a Probe's targets.
 */

// Outside describeWithTools: without promtool (a Stryker sandbox, a clone without the tools) the file still has a test.
describe('EgressProbe alert rules', () => {
  it('has VPNEgressLeak, VPNEgressProbeFailing and VPNEgressProbeAbsent, and the two DNS alerts with dnsLeak', () => {
    expect(egressProbeAlertGroups(gatewayProbe())[0].rules.map((r) => r.alert)).toEqual(['VPNEgressLeak', 'VPNEgressProbeFailing', 'VPNEgressProbeAbsent']);
    expect(egressProbeAlertGroups({ ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'] } })[0].rules.map((r) => r.alert)).toEqual(['VPNEgressLeak', 'VPNEgressProbeFailing', 'VPNEgressProbeAbsent', 'VPNDNSLeak', 'VPNDNSProbeFailing']);
  });
});

describeWithTools('EgressProbe alerts under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-prom-probe-');
  const groups = egressProbeAlertGroups(gatewayProbe());
  const rules = Object.fromEntries(groups[0].rules.map((r) => [r.alert as string, r as { labels: Record<string, string>; annotations: Record<string, string> }]));
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const target = 'https://ifconfig.example.test/ip';
  const series = (metric: string, values: string) => ({ series: `${metric}{namespace="media", job="egress-probe-vpn-ipv4", instance="${target}"}`, values });
  const fired = (alert: string) => ({
    exp_labels: { ...rules[alert].labels, namespace: 'media', job: 'egress-probe-vpn-ipv4', instance: target },
    exp_annotations: Object.fromEntries(Object.entries(rules[alert].annotations).map(([k, v]) => [k, v.replace('{{ $labels.job }}', 'egress-probe-vpn-ipv4').replace('{{ $labels.instance }}', target)])),
  });
  // The control beside the first three: the direct-class twin of the same target, in the other state (its failures
  // while the vpn probe is healthy, its health while the vpn probe leaks or fails): the alerts judge the vpn job alone.
  const direct = (success: string, regex: string) => [
    { series: `probe_success{namespace="media", job="egress-probe-direct-ipv4", instance="${target}"}`, values: success },
    { series: `probe_failed_due_to_regex{namespace="media", job="egress-probe-direct-ipv4", instance="${target}"}`, values: regex },
  ];
  const tests = [
    {
      name: 'healthy',
      input_series: [series('probe_success', '1x30'), series('probe_failed_due_to_regex', '0x30'), ...direct('0x30', '1x30')],
      alert_rule_test: ['VPNEgressLeak', 'VPNEgressProbeFailing'].map((a) => ({ eval_time: '30m', alertname: a, exp_alerts: [] })),
    },
    {
      name: 'leak: the probe saw a WAN address',
      input_series: [series('probe_success', '1x10 0x20'), series('probe_failed_due_to_regex', '0x10 1x20'), ...direct('1x30', '0x30')],
      alert_rule_test: [
        { eval_time: '10m', alertname: 'VPNEgressLeak', exp_alerts: [] },
        { eval_time: '13m', alertname: 'VPNEgressLeak', exp_alerts: [fired('VPNEgressLeak')] },
        { eval_time: '30m', alertname: 'VPNEgressProbeFailing', exp_alerts: [] },
      ],
    },
    {
      name: 'outage: no successful probe, longer than for',
      input_series: [series('probe_success', '1x10 0x30'), series('probe_failed_due_to_regex', '0x40'), ...direct('1x40', '0x40')],
      alert_rule_test: [
        { eval_time: '15m', alertname: 'VPNEgressProbeFailing', exp_alerts: [] },
        { eval_time: '22m', alertname: 'VPNEgressProbeFailing', exp_alerts: [fired('VPNEgressProbeFailing')] },
        { eval_time: '22m', alertname: 'VPNEgressLeak', exp_alerts: [] },
      ],
    },
    {
      name: 'absent: the vpn probe stops reporting at 10m (its pod gone), the direct twin goes on',
      input_series: [series('probe_success', '1x10'), { series: `probe_success{namespace="media", job="egress-probe-direct-ipv4", instance="${target}"}`, values: '1x30' }],
      alert_rule_test: [
        { eval_time: '14m', alertname: 'VPNEgressProbeAbsent', exp_alerts: [] },
        { eval_time: '16m', alertname: 'VPNEgressProbeAbsent', exp_alerts: [{ exp_labels: { ...rules.VPNEgressProbeAbsent.labels, namespace: 'media', job: 'egress-probe-vpn-ipv4' }, exp_annotations: fired('VPNEgressProbeAbsent').exp_annotations }] },
        { eval_time: '16m', alertname: 'VPNEgressProbeFailing', exp_alerts: [] },
      ],
    },
    {
      name: 'present: every job reports, failing or not, so nothing is absent',
      input_series: [series('probe_success', '1x10 0x20'), { series: `probe_success{namespace="media", job="egress-probe-direct-ipv4", instance="${target}"}`, values: '1x30' }],
      alert_rule_test: [{ eval_time: '30m', alertname: 'VPNEgressProbeAbsent', exp_alerts: [] }],
    },
    {
      name: 'never scraped: no probe_success at all (a pod never admitted): pending from the start, firing after for',
      input_series: [{ series: 'up{job="prometheus"}', values: '1x30' }],
      alert_rule_test: [
        { eval_time: '1m', alertname: 'VPNEgressProbeAbsent', exp_alerts: [] },
        { eval_time: '3m', alertname: 'VPNEgressProbeAbsent', exp_alerts: ['egress-probe-direct-ipv4', 'egress-probe-vpn-ipv4'].map((job) => ({ exp_labels: { ...rules.VPNEgressProbeAbsent.labels, namespace: 'media', job }, exp_annotations: { ...fired('VPNEgressProbeAbsent').exp_annotations, description: rules.VPNEgressProbeAbsent.annotations.description.replace('{{ $labels.job }}', job) } })) },
        { eval_time: '6m', alertname: 'VPNEgressProbeFailing', exp_alerts: [] },
      ],
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('promtool check rules accepts them', () => {
    const r = run('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(r.output).toBe(`Checking ${path.join(dir, 'rules.yaml')}\n  SUCCESS: 3 rules found\n\n`);
  });

  it('promtool test rules: VPNEgressLeak fires on a WAN address, VPNEgressProbeFailing after an outage longer than its for, VPNEgressProbeAbsent after five silent intervals', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
    expect(r.status).toBe(0);
  });
});

/**
 * Two EgressProbes of one name in two namespaces (the default name, `egress-probe`, in media and in downloads): the
 * prometheus-operator gives both the same `job` (the Probe's jobName) and a `namespace` label of the Probe's namespace
 * (pkg/prometheus/promcfg.go generateProbeConfig: `target_label: job, replacement: spec.jobName`; static targets get
 * `namespace` unless set). Each one's rules must judge its own namespace's series only.
 */
describeWithTools('EgressProbe alerts with a second EgressProbe of the same name in another namespace', ['promtool'], () => {
  const dir = tmpdir('tw-prom-probe-ns-');
  const groups = egressProbeAlertGroups(gatewayProbe());
  const rule = (alert: string) => groups[0].rules.find((r) => r.alert === alert) as { labels: Record<string, string>; annotations: Record<string, string> };
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const target = 'https://ifconfig.example.test/ip';
  const series = (ns: string, job: string, metric: string, values: string) => ({ series: `${metric}{namespace="${ns}", job="${job}", instance="${target}"}`, values });
  const twin = (ns: string) => series(ns, 'egress-probe-direct-ipv4', 'probe_success', '1x30');
  const tests = [
    {
      name: 'media\'s vpn probe stops at 10m while downloads\' goes on: media\'s VPNEgressProbeAbsent fires',
      input_series: [series('media', 'egress-probe-vpn-ipv4', 'probe_success', '1x10'), series('downloads', 'egress-probe-vpn-ipv4', 'probe_success', '1x30'), twin('media'), twin('downloads')],
      alert_rule_test: [
        { eval_time: '14m', alertname: 'VPNEgressProbeAbsent', exp_alerts: [] },
        { eval_time: '16m', alertname: 'VPNEgressProbeAbsent', exp_alerts: [{ exp_labels: { ...rule('VPNEgressProbeAbsent').labels, namespace: 'media', job: 'egress-probe-vpn-ipv4' }, exp_annotations: { ...rule('VPNEgressProbeAbsent').annotations, description: rule('VPNEgressProbeAbsent').annotations.description.replace('{{ $labels.job }}', 'egress-probe-vpn-ipv4') } }] },
      ],
    },
    {
      name: 'downloads\' probe sees the WAN address, media\'s does not: media\'s rules stay silent',
      input_series: [
        series('media', 'egress-probe-vpn-ipv4', 'probe_success', '1x30'), series('media', 'egress-probe-vpn-ipv4', 'probe_failed_due_to_regex', '0x30'),
        series('downloads', 'egress-probe-vpn-ipv4', 'probe_success', '0x30'), series('downloads', 'egress-probe-vpn-ipv4', 'probe_failed_due_to_regex', '1x30'),
        twin('media'), twin('downloads'),
      ],
      alert_rule_test: ['VPNEgressLeak', 'VPNEgressProbeFailing', 'VPNEgressProbeAbsent'].map((a) => ({ eval_time: '30m', alertname: a, exp_alerts: [] })),
    },
    {
      name: 'control: media\'s own probe sees the WAN address: media\'s VPNEgressLeak fires, naming the namespace',
      input_series: [series('media', 'egress-probe-vpn-ipv4', 'probe_success', '0x30'), series('media', 'egress-probe-vpn-ipv4', 'probe_failed_due_to_regex', '1x30'), twin('media')],
      alert_rule_test: [{ eval_time: '30m', alertname: 'VPNEgressLeak', exp_alerts: [{ exp_labels: { ...rule('VPNEgressLeak').labels, namespace: 'media', job: 'egress-probe-vpn-ipv4', instance: target }, exp_annotations: Object.fromEntries(Object.entries(rule('VPNEgressLeak').annotations).map(([k, v]) => [k, v.replace('{{ $labels.job }}', 'egress-probe-vpn-ipv4').replace('{{ $labels.instance }}', target)])) }] }],
    },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('promtool test rules: each namespace\'s rules see their own series only', () => {
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });
});

/**
 * Every alert of every EgressProbe fires on the series its own Probe objects produce and stays silent otherwise,
 * with the series written as Prometheus stores them, from the Probe objects alone (not from the rules):
 * prometheus-operator sets `job` to `spec.jobName` and `instance` to each static target, and adds the static
 * config's labels (pkg/prometheus/promcfg.go generateProbeConfig). Which alert concerns which Probe comes from its
 * labels: `egress_class: vpn` (an HTTP egress check: VPNEgressLeak, VPNEgressProbeFailing), `check: dns-leak`
 * (VPNDNSLeak), `check: dns-resolves` (VPNDNSProbeFailing); a direct Probe (`egress_class: direct`) sees the WAN by
 * design and must page nothing. A job matcher that stops matching one Probe's jobName (two vpn modules joined
 * without `|`, a renamed job) leaves its alert silent on its leak, and fails here.
 */
describeWithTools('every EgressProbe alert, fed the series of its own Probe objects', ['promtool'], () => {
  type ProbeObject = { metadata: { namespace: string }; spec: { jobName: string; module: string; targets: { staticConfig: { static: string[]; labels: Record<string, string> } } } };
  type AlertRule = { alert: string; for: string; labels: Record<string, string>; annotations: Record<string, string> };
  const VARIANTS: [string, EgressProbeProps][] = [
    ['through a gateway, with a direct twin', gatewayProbe()],
    ['two targets over IPv4 and IPv6 through a steering, with the DNS checks (the every-option golden)', {
      cluster: 'prod', name: 'wan-check', namespace: 'media', via: { egressSteering: { egressClassLabel: 'example.com/egress', vpnClass: 'tunnel' } },
      targets: ['https://ifconfig.example.test/ip', 'http://ip.example.test/'], wanIps: ['203.0.113.7', '2001:db8::7'], vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'], interval: '5m', ipv6: true,
      monitoring: { namespace: 'observability', ruleLabels: { release: 'prom' }, runbookUrl: 'https://wiki.example.test/runbooks' },
      dnsLeak: { queryName: 'o-o.myaddr.l.google.com', resolver: '10.43.0.10', tunnelCidrs: ['10.2.0.0/24'] },
    }],
    ['with a direct twin and the DNS checks through a gateway', { ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'] } }],
  ];
  /** Minutes: every series runs 30 of them; each alert is judged at the end, past its `for`. */
  const AT = '30m';
  type Case = { name: string; series: { series: string; values: string }[]; expect: Record<string, { job: string; instance: string }[]> };

  const casesOf = (props: EgressProbeProps, rules: Record<string, AlertRule>) => {
    const probes = planEgressProbe(props).objects.filter((o) => o.kind === 'Probe') as unknown as ProbeObject[];
    const seriesOf = (p: ProbeObject, instance: string, job = p.spec.jobName) => {
      const labels = { ...p.spec.targets.staticConfig.labels, namespace: p.metadata.namespace, job, instance };
      return (metric: string, values: string) => ({ series: `${metric}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(', ')}}`, values });
    };
    const cases: Case[] = [];
    for (const p of probes) {
      const { labels } = p.spec.targets.staticConfig;
      for (const instance of p.spec.targets.staticConfig.static) {
        const at = { job: p.spec.jobName, instance };
        const named = (what: string) => `${p.spec.jobName} ${instance}: ${what}`;
        const s = seriesOf(p, instance);
        // The same series under a job no Probe of this EgressProbe has: every alert silent (the control of the matcher).
        const foreign = seriesOf(p, instance, `${p.spec.jobName}-other`);
        if (labels.check === 'dns-leak') {
          const leak = (x: typeof s) => [x('probe_success', '0x30'), x('probe_dns_query_succeeded', '1x30'), x('probe_dns_answer_rrs', '1x30')];
          cases.push({ name: named('a leaked resolver answers'), series: leak(s), expect: { VPNDNSLeak: [at] } });
          cases.push({ name: named('the tunnel\'s resolver answers'), series: [s('probe_success', '1x30'), s('probe_dns_query_succeeded', '1x30'), s('probe_dns_answer_rrs', '1x30')], expect: { VPNDNSLeak: [] } });
          cases.push({ name: named('a leak under another job'), series: leak(foreign), expect: { VPNDNSLeak: [] } });
        } else if (labels.check === 'dns-resolves') {
          cases.push({ name: named('nothing resolves'), series: [s('probe_success', '0x30')], expect: { VPNDNSProbeFailing: [at] } });
          cases.push({ name: named('names resolve'), series: [s('probe_success', '1x30')], expect: { VPNDNSProbeFailing: [] } });
          cases.push({ name: named('an outage under another job'), series: [foreign('probe_success', '0x30')], expect: { VPNDNSProbeFailing: [] } });
        } else {
          const vpn = labels.egress_class === 'vpn';
          const leak = (x: typeof s) => [x('probe_success', '0x30'), x('probe_failed_due_to_regex', '1x30')];
          const outage = (x: typeof s) => [x('probe_success', '0x30'), x('probe_failed_due_to_regex', '0x30')];
          cases.push({ name: named('the answer names a WAN address'), series: leak(s), expect: { VPNEgressLeak: vpn ? [at] : [], VPNEgressProbeFailing: [] } });
          cases.push({ name: named('no answer'), series: outage(s), expect: { VPNEgressLeak: [], VPNEgressProbeFailing: vpn ? [at] : [] } });
          cases.push({ name: named('the answer names a VPN address'), series: [s('probe_success', '1x30'), s('probe_failed_due_to_regex', '0x30')], expect: { VPNEgressLeak: [], VPNEgressProbeFailing: [] } });
          cases.push({ name: named('a leak and an outage under another job'), series: [...leak(foreign), ...outage(seriesOf(p, `${instance}-2`, `${p.spec.jobName}-other`))], expect: { VPNEgressLeak: [], VPNEgressProbeFailing: [] } });
        }
      }
    }
    const fired = (alert: string, a: { job: string; instance: string }) => ({
      exp_labels: { ...rules[alert].labels, namespace: props.namespace, ...a },
      exp_annotations: Object.fromEntries(Object.entries(rules[alert].annotations).map(([k, v]) => [k, v.replace('{{ $labels.job }}', a.job).replace('{{ $labels.instance }}', a.instance)])),
    });
    return {
      probes,
      tests: cases.map((c) => ({ name: c.name, interval: '1m', input_series: c.series, alert_rule_test: Object.entries(c.expect).map(([alert, on]) => ({ eval_time: AT, alertname: alert, exp_alerts: on.map((a) => fired(alert, a)) })) })),
    };
  };

  it.each(VARIANTS)('%s: each Probe\'s own alerts fire on its leak or outage, none on a healthy probe, a direct one or another job', (_what, props) => {
    const dir = tmpdir('tw-prom-probes-');
    const groups = egressProbeAlertGroups(props);
    const rules = Object.fromEntries(groups[0].rules.map((r) => [r.alert as string, r as unknown as AlertRule]));
    const { probes, tests } = casesOf(props, rules);
    // Every rule is exercised: each one fires in some case and is silent in another.
    const exercised = (fires: boolean) => [...new Set(tests.flatMap((t) => t.alert_rule_test.filter((a) => (a.exp_alerts.length > 0) === fires).map((a) => a.alertname)))].sort();
    const concerned = Object.keys(rules).filter((a) => a !== 'VPNEgressProbeAbsent').sort();
    expect({ fires: exercised(true), silent: exercised(false) }).toEqual({ fires: concerned, silent: concerned });
    expect(probes.length).toBeGreaterThan(0);
    fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
    expect(r.status).toBe(0);
  });

  it('control: the leak alert with its job matcher written as the vpn jobs joined by a comma fails the IPv4+IPv6 probe\'s leak cases', () => {
    const dir = tmpdir('tw-prom-probes-');
    const props = VARIANTS[1][1];
    const groups = egressProbeAlertGroups(props);
    const rules = Object.fromEntries(groups[0].rules.map((r) => [r.alert as string, r as unknown as AlertRule]));
    const broken = groups.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, expr: String(r.expr).replace(/job=~"([^"]*)"/g, (_m, jobs: string) => `job=~"${jobs.split('|').join(',')}"`) })) }));
    expect(JSON.stringify(broken)).not.toBe(JSON.stringify(groups));
    fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups: broken }));
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: casesOf(props, rules).tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.status).not.toBe(0);
    expect(r.output).toMatch(/alertname: VPNEgressLeak, time: 30m,\s+exp:.*job="wan-check-vpn-ipv4"/s);
  });
});
