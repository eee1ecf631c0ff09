import * as fs from 'node:fs';
import * as path from 'node:path';
import * as fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { blackboxConfig, EgressProbeProps, egressProbeAlertGroups, planEgressProbe } from '../../src';
import { gatewayProbe } from '../helpers/fixtures';
import { ipv6Full, ipv6Text } from '../helpers/ipv6-text';
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
  const series = (metric: string, values: string) => ({ series: `${metric}{namespace="media", job="egress-probe-vpn-ipv4", instance="${target}"}`, values });
  const fired = (alert: string) => ({
    exp_labels: { ...rules[alert].labels, namespace: 'media', job: 'egress-probe-vpn-ipv4', instance: target },
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
 * The DNS modules with Debian's blackbox exporter (0.23) in a network namespace, against a DNS stand-in that answers
 * the whoami name per listening address: with its own address (the tunnel's resolver 10.64.0.53, a WAN-side one
 * 192.0.2.53, as whoami.akamai.net names the resolver that asked), SERVFAIL, NOERROR without records, NXDOMAIN,
 * SERVFAIL carrying a tunnel answer, silence (a timeout), and no server at all (refused). Each case's series go on to
 * promtool as the exporter printed them.
 */
type DnsSeries = { success: number; answered: number; rrs: number };
const DNS_CASES: [string, string][] = [
  ['in-tunnel answer', '10.64.0.53'],
  ['WAN answer', '192.0.2.53'],
  ['SERVFAIL', '10.64.0.54'],
  ['NOERROR, no record', '10.64.0.55'],
  ['NXDOMAIN', '10.64.0.56'],
  ['SERVFAIL with an in-tunnel record', '10.64.0.57'],
  ['timeout (the server is silent)', '10.64.0.58'],
  ['no server (refused)', '10.64.0.59'],
];
const recorded: Record<string, { leak: DnsSeries; resolves: DnsSeries; before: DnsSeries }> = {};

describeWithTools('the DNS modules: a leaked answer fails the leak module and nothing else does', ['blackbox_exporter', 'ip', 'curl', 'python3'], () => {
  const ns = `tw32dns${process.pid % 10000}`;
  const dir = tmpdir('tw-dnsleak-');
  const props = { ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'], tunnelCidrs: ['10.64.0.0/10'] } };
  const env = { PATH: `${path.resolve(__dirname, '../../.tools/bin')}:${process.env.PATH}` };

  beforeAll(() => {
    fs.writeFileSync(path.join(dir, 'blackbox.yml'), blackboxConfig(props));
    // The module as it was before (the control): NOERROR only, the answer checked with fail_if_matches and
    // fail_if_none_matches, alerted on probe_dns_query_succeeded 1 and probe_success 0.
    const before = { modules: { dns_leak: { prober: 'dns', timeout: '10s', dns: {
      query_name: 'whoami.akamai.net', query_type: 'A', transport_protocol: 'udp', preferred_ip_protocol: 'ip4', ip_protocol_fallback: false, valid_rcodes: ['NOERROR'],
      validate_answer_rrs: { fail_if_matches_regexp: ['(^|[^0-9.])192\\.0\\.2\\.[0-9]+([^0-9.]|$)'], fail_if_none_matches_regexp: ['(^|[^0-9.])10\\.(64|65|66|67|68|69|7[0-9]|8[0-9]|9[0-9]|1[01][0-9]|12[0-7])\\.[0-9]+\\.[0-9]+([^0-9.]|$)'] },
    } } } };
    fs.writeFileSync(path.join(dir, 'before.yml'), stringify(before));
    fs.writeFileSync(path.join(dir, 'standin.py'), [
      '# A DNS stand-in: per listening address, an rcode and whether to answer the A query with that address.',
      'import select, socket, struct',
      'CASES = {"10.64.0.53": (0, True), "192.0.2.53": (0, True), "10.64.0.54": (2, False), "10.64.0.55": (0, False), "10.64.0.56": (3, False), "10.64.0.57": (2, True), "10.64.0.58": None}',
      'socks = {}',
      'for addr in CASES:',
      '    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
      '    s.bind((addr, 53))',
      '    socks[s] = addr',
      'while True:',
      '    for s in select.select(list(socks), [], [])[0]:',
      '        q, peer = s.recvfrom(512)',
      '        case = CASES[socks[s]]',
      '        if case is None:',
      '            continue',
      '        rcode, answer = case',
      '        end = q.index(b"\\x00", 12) + 5',
      '        header = q[:2] + struct.pack(">HHHHH", 0x8180 | rcode, 1, 1 if answer else 0, 0, 0)',
      '        rr = b"\\xc0\\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + socket.inet_aton(socks[s]) if answer else b""',
      '        s.sendto(header + q[12:end] + rr, peer)',
    ].join('\n'));
    must(sh([
      `ip netns add ${ns} && ip -n ${ns} link set lo up`,
      ...DNS_CASES.map(([, a]) => `ip -n ${ns} addr add ${a}/32 dev lo`),
      `(ip netns exec ${ns} setsid python3 ${dir}/standin.py </dev/null >${dir}/standin.log 2>&1 &)`,
      `ip netns exec ${ns} setsid sh -c 'blackbox_exporter --config.file=${dir}/blackbox.yml --web.listen-address=127.0.0.1:9115 >${dir}/exporter.log 2>&1 &'`,
      `ip netns exec ${ns} setsid sh -c 'blackbox_exporter --config.file=${dir}/before.yml --web.listen-address=127.0.0.1:9116 >${dir}/before.log 2>&1 &'`,
      `for i in $(seq 50); do ip netns exec ${ns} curl -sf http://127.0.0.1:9115/-/healthy >/dev/null && ip netns exec ${ns} curl -sf http://127.0.0.1:9116/-/healthy >/dev/null && ip netns exec ${ns} dig +short +time=1 +tries=1 @10.64.0.53 whoami.akamai.net | grep -qx 10.64.0.53 && exit 0; sleep 0.2; done; exit 1`,
    ].join(' && '), { env }), 'stand-in and exporters');
  });
  afterAll(() => sh(`ip netns pids ${ns} | xargs -r kill; sleep 0.2; ip netns del ${ns}`));

  // A 3 s scrape timeout (the exporter probes for it less 0.5 s, as Prometheus asks): the silent server times out quickly.
  const probe = (module: string, target: string, port = 9115): DnsSeries => {
    const r = must(sh(`ip netns exec ${ns} curl -sf -H 'X-Prometheus-Scrape-Timeout-Seconds: 3' 'http://127.0.0.1:${port}/probe?module=${module}&target=${target}'`), 'probe');
    const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(r.stdout)?.[1]);
    return { success: metric('probe_success'), answered: metric('probe_dns_query_succeeded'), rrs: metric('probe_dns_answer_rrs') };
  };

  it('the DNS modules pass --config.check', () => {
    expect(run('blackbox_exporter', ['--config.check', `--config.file=${path.join(dir, 'blackbox.yml')}`]).status).toBe(0);
  });

  it('the stand-in answers as each case says (dig sees the rcodes and records)', () => {
    const dig = (a: string) => sh(`ip netns exec ${ns} dig +time=1 +tries=1 @${a} whoami.akamai.net A`).output;
    expect(dig('10.64.0.53')).toMatch(/status: NOERROR[\s\S]*\nwhoami\.akamai\.net\.\s+0\s+IN\s+A\s+10\.64\.0\.53\n/);
    expect(dig('10.64.0.54')).toMatch(/status: SERVFAIL/);
    expect(dig('10.64.0.56')).toMatch(/status: NXDOMAIN/);
    expect(dig('10.64.0.57')).toMatch(/status: SERVFAIL[\s\S]*\nwhoami\.akamai\.net\.\s+0\s+IN\s+A\s+10\.64\.0\.57\n/);
  });

  it('records every case: the exporter\'s series for dns_leak, dns_resolves and the module as it was', () => {
    for (const [name, addr] of DNS_CASES) recorded[name] = { leak: probe('dns_leak', addr), resolves: probe('dns_resolves', addr), before: probe('dns_leak', addr, 9116) };
    const row = (s: DnsSeries) => `success=${s.success} query_succeeded=${s.answered} answer_rrs=${s.rrs}`;
    expect(Object.fromEntries(Object.entries(recorded).map(([k, v]) => [k, { leak: row(v.leak), resolves: row(v.resolves), before: row(v.before) }]))).toEqual({
      'in-tunnel answer': { leak: 'success=1 query_succeeded=1 answer_rrs=1', resolves: 'success=1 query_succeeded=1 answer_rrs=1', before: 'success=1 query_succeeded=1 answer_rrs=1' },
      'WAN answer': { leak: 'success=0 query_succeeded=1 answer_rrs=1', resolves: 'success=1 query_succeeded=1 answer_rrs=1', before: 'success=0 query_succeeded=1 answer_rrs=1' },
      'SERVFAIL': { leak: 'success=1 query_succeeded=1 answer_rrs=0', resolves: 'success=0 query_succeeded=1 answer_rrs=0', before: 'success=0 query_succeeded=1 answer_rrs=0' },
      'NOERROR, no record': { leak: 'success=1 query_succeeded=1 answer_rrs=0', resolves: 'success=0 query_succeeded=1 answer_rrs=0', before: 'success=0 query_succeeded=1 answer_rrs=0' },
      'NXDOMAIN': { leak: 'success=1 query_succeeded=1 answer_rrs=0', resolves: 'success=0 query_succeeded=1 answer_rrs=0', before: 'success=0 query_succeeded=1 answer_rrs=0' },
      'SERVFAIL with an in-tunnel record': { leak: 'success=1 query_succeeded=1 answer_rrs=1', resolves: 'success=0 query_succeeded=1 answer_rrs=1', before: 'success=0 query_succeeded=1 answer_rrs=1' },
      'timeout (the server is silent)': { leak: 'success=0 query_succeeded=0 answer_rrs=0', resolves: 'success=0 query_succeeded=0 answer_rrs=0', before: 'success=0 query_succeeded=0 answer_rrs=0' },
      'no server (refused)': { leak: 'success=0 query_succeeded=0 answer_rrs=0', resolves: 'success=0 query_succeeded=0 answer_rrs=0', before: 'success=0 query_succeeded=0 answer_rrs=0' },
    });
  });

  it('promtool over the recorded series: VPNDNSLeak fires on the WAN answer only, VPNDNSProbeFailing on every outage', () => {
    const groups = egressProbeAlertGroups(props);
    const rule = (alert: string) => groups[0].rules.find((r) => r.alert === alert) as { labels: Record<string, string>; annotations: Record<string, string> };
    const fired = (alert: string, job: string, instance: string) => ({ exp_labels: { ...rule(alert).labels, namespace: 'media', job, instance }, exp_annotations: Object.fromEntries(Object.entries(rule(alert).annotations).map(([k, v]) => [k, v.replace('{{ $labels.instance }}', instance)])) });
    fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
    // Healthy for 5 minutes, then the case for 20 (the exporter's values, held).
    const series = (job: string, addr: string, s: DnsSeries) => [['probe_success', s.success], ['probe_dns_query_succeeded', s.answered], ['probe_dns_answer_rrs', s.rrs]]
      .map(([m, v]) => ({ series: `${m}{namespace="media", job="${job}", instance="${addr}"}`, values: `1x5 ${v}x20` }));
    const leakAt = (name: string) => (name === 'WAN answer' ? ['VPNDNSLeak'] : []);
    const failingAt = (name: string) => (name === 'in-tunnel answer' || name === 'WAN answer' ? [] : ['VPNDNSProbeFailing']);
    const tests = DNS_CASES.map(([name, addr]) => ({
      name, interval: '1m',
      input_series: [...series('egress-probe-dns-leak', addr, recorded[name].leak), ...series('egress-probe-dns-resolves', addr, recorded[name].resolves)],
      alert_rule_test: [
        { eval_time: '5m', alertname: 'VPNDNSLeak', exp_alerts: [] },
        { eval_time: '6m', alertname: 'VPNDNSLeak', exp_alerts: [] },
        { eval_time: '7m', alertname: 'VPNDNSLeak', exp_alerts: leakAt(name).map((a) => fired(a, 'egress-probe-dns-leak', addr)) },
        { eval_time: '14m', alertname: 'VPNDNSProbeFailing', exp_alerts: [] },
        { eval_time: '16m', alertname: 'VPNDNSProbeFailing', exp_alerts: failingAt(name).map((a) => fired(a, 'egress-probe-dns-resolves', addr)) },
        { eval_time: '24m', alertname: 'VPNDNSLeak', exp_alerts: leakAt(name).map((a) => fired(a, 'egress-probe-dns-leak', addr)) },
      ],
    }));
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');

    // Control: the rule as it was (answered and failed), over the module as it was, pages on the WAN answer and on
    // every answered outage; silent only through the tunnel and when nothing answered.
    const beforeRule = { ...rule('VPNDNSLeak'), alert: 'VPNDNSLeakBefore', expr: 'max by (job, instance) (probe_dns_query_succeeded{job="egress-probe-dns-leak"}) == 1 and on(job, instance) max by (job, instance) (probe_success{job="egress-probe-dns-leak"}) == 0' };
    fs.writeFileSync(path.join(dir, 'before-rules.yaml'), stringify({ groups: [{ name: 'before', rules: [beforeRule] }] }));
    const pagedBefore = ['WAN answer', 'SERVFAIL', 'NOERROR, no record', 'NXDOMAIN', 'SERVFAIL with an in-tunnel record'];
    const beforeTests = DNS_CASES.map(([name, addr]) => ({
      name, interval: '1m', input_series: series('egress-probe-dns-leak', addr, recorded[name].before),
      alert_rule_test: [{ eval_time: '7m', alertname: 'VPNDNSLeakBefore', exp_alerts: pagedBefore.includes(name) ? [{ exp_labels: { ...rule('VPNDNSLeak').labels, job: 'egress-probe-dns-leak', instance: addr }, exp_annotations: fired('VPNDNSLeak', 'egress-probe-dns-leak', addr).exp_annotations }] : [] }],
    }));
    fs.writeFileSync(path.join(dir, 'before-tests.yaml'), stringify({ rule_files: ['before-rules.yaml'], evaluation_interval: '1m', tests: beforeTests }));
    expect(run('promtool', ['test', 'rules', 'before-tests.yaml'], { cwd: dir }).output).toBe('Unit Testing:  before-tests.yaml\n  SUCCESS\n\n');
  });
});

/**
 * The IPv6 module of a steering class, run by the real exporter against an HTTP echo on ::1 in a network namespace:
 * the echo answers a native (WAN) IPv6 address, then addresses of the tunnel's IPv6 ranges in several text forms.
 * The control is the module as it was (the WAN's IPv4 address its only pattern, no must-match): it passes the leak.
 */
describeWithTools('the IPv6 module fails on an IPv6 address outside the tunnel\'s ranges', ['blackbox_exporter', 'ip', 'curl', 'python3'], () => {
  const ns = `tw32b${process.pid % 10000}`;
  const dir = tmpdir('tw-bb6-');
  const answer = path.join(dir, 'www', 'ip');
  const env = { PATH: `${path.resolve(__dirname, '../../.tools/bin')}:${process.env.PATH}` };
  // wanIps as the README's example gives them (IPv4 only); the tunnel's ranges: a provider's /32 and a /61 (a range
  // that ends inside a nibble).
  const props = { ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true, directTwin: false, wanIps: ['203.0.113.7'], vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32', 'fd64:0:0:8::/61'] };

  beforeAll(() => {
    const config = parse(blackboxConfig(props)) as { modules: Record<string, { http: Record<string, unknown> }> };
    const before = structuredClone(config.modules.vpn_ipv6);
    delete before.http.fail_if_body_not_matches_regexp;
    config.modules.vpn_ipv6_before = before;
    fs.writeFileSync(path.join(dir, 'blackbox.yml'), stringify(config));
    fs.mkdirSync(path.dirname(answer));
    fs.writeFileSync(answer, '2a03:1b20:3::a\n');
    must(sh([
      `ip netns add ${ns} && ip -n ${ns} link set lo up`,
      `ip netns exec ${ns} setsid sh -c 'python3 -m http.server 8080 --bind ::1 --directory ${path.dirname(answer)} >/dev/null 2>&1 &'`,
      `ip netns exec ${ns} setsid sh -c 'blackbox_exporter --config.file=${dir}/blackbox.yml --web.listen-address=127.0.0.1:9115 >${dir}/exporter.log 2>&1 &'`,
      `for i in $(seq 50); do ip netns exec ${ns} curl -sf http://127.0.0.1:9115/-/healthy >/dev/null && ip netns exec ${ns} curl -sfg 'http://[::1]:8080/ip' | grep -qx 2a03:1b20:3::a && exit 0; sleep 0.2; done; exit 1`,
    ].join(' && '), { env }), 'exporter and IPv6 echo server');
  });
  afterAll(() => sh(`ip netns pids ${ns} | xargs -r kill; sleep 0.2; ip netns del ${ns}`));

  const probe = (module: string, body: string) => {
    fs.writeFileSync(answer, body);
    const r = must(sh(`ip netns exec ${ns} curl -sf 'http://127.0.0.1:9115/probe?module=${module}&target=http://%5B::1%5D:8080/ip'`), 'probe');
    const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(r.stdout)?.[1]);
    return { success: metric('probe_success'), regex: metric('probe_failed_due_to_regex'), ipv6: metric('probe_ip_protocol') };
  };

  it('the IPv6 module passes --config.check', () => {
    expect(run('blackbox_exporter', ['--config.check', `--config.file=${dir}/blackbox.yml`]).status).toBe(0);
  });

  it.each([
    ['a native IPv6 address (the leak)', '2001:db8:77::9\n', 0, 1],
    ['a native IPv6 address, fully written, upper case', '2001:0DB8:0077:0000:0000:0000:0000:0009\n', 0, 1],
    ['an address just past the /61', '{"ip":"fd64:0:0:10::1"}', 0, 1],
    ['an address just below the /61', '{"ip":"fd64:0:0:7::1"}', 0, 1],
    ['an address of the /32, compressed', '2a03:1b20:3::a\n', 1, 1],
    ['an address of the /32, fully written, upper case', '2A03:1B20:0003:0000:0000:0000:0000:000A\n', 1, 1],
    ['an address of the /32, :: for one group', '2a03:1b20:3:0:1:2:3:a\n'.replace(':0:', '::'), 1, 1],
    ['an address of the /61, JSON', '{"ip":"fd64:0:0:f::1"}', 1, 1],
    ['the first address of the /61, :: for three groups', 'fd64::8:0:0:0:0\n', 1, 1],
  ])('%s (%j): probe_success %d, and %d from the module as it was', (_n, body, now, before) => {
    expect(probe('vpn_ipv6', body)).toEqual({ success: now, regex: 1 - now, ipv6: 6 });
    expect(probe('vpn_ipv6_before', body)).toEqual({ success: before, regex: 1 - before, ipv6: 6 });
  });

  it('the exporter passes generated addresses of the ranges in any text form and fails those outside (fast-check)', () => {
    const inside = fc.oneof(
      fc.bigInt({ min: 0n, max: (1n << 96n) - 1n }).map((h) => (0x2a031b20n << 96n) | h),
      fc.bigInt({ min: 0n, max: (1n << 67n) - 1n }).map((h) => (0xfd64000000000008n << 64n) | h),
    );
    // One bit flipped inside the prefix leaves it.
    const outside = fc.tuple(inside, fc.nat()).map(([a, k]) => (a >> 96n === 0x2a031b20n ? a ^ (1n << BigInt(127 - (k % 32))) : a ^ (1n << BigInt(127 - (k % 61)))));
    const seen = { inside: 0, outside: 0 };
    fc.assert(fc.property(inside.chain((a) => ipv6Text(a)), (text) => {
      seen.inside++;
      expect(probe('vpn_ipv6', `${text}\n`).success).toBe(1);
    }), { numRuns: 30 });
    fc.assert(fc.property(outside.chain((a) => fc.tuple(ipv6Text(a), fc.constant(ipv6Full(a)))), ([text, full]) => {
      seen.outside++;
      expect([probe('vpn_ipv6', `${text}\n`).success, probe('vpn_ipv6', `${full}\n`).success]).toEqual([0, 0]);
    }), { numRuns: 30 });
    expect(seen).toEqual({ inside: 30, outside: 30 });
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
