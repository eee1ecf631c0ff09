import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
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

/**
 * The DNS-leak module with Debian's blackbox exporter in a network namespace, against resolvers that answer the whoami
 * name with their own address (as whoami.akamai.net does): a "tunnel" resolver at 10.64.0.53 and a "WAN" resolver at
 * 192.0.2.53, each a dnsmasq forwarding to an authoritative stand-in that answers with the address the query came from.
 */
describeWithTools('the DNS-leak module tells a WAN-side resolver from the tunnel\'s', ['blackbox_exporter', 'dnsmasq', 'ip', 'curl', 'python3'], () => {
  const ns = `twdl${process.pid % 10000}`;
  const dir = tmpdir('tw-dnsleak-');
  const props = { ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'], tunnelCidrs: ['10.64.0.0/10'] } };
  const env = { PATH: `${path.resolve(__dirname, '../../.tools/bin')}:${process.env.PATH}` };

  beforeAll(() => {
    fs.writeFileSync(path.join(dir, 'blackbox.yml'), blackboxConfig(props));
    // The no-validation control: the same module without validate_answer_rrs (the piece under test).
    const control = (parse(blackboxConfig(props)) as { modules: Record<string, { dns: Record<string, unknown> }> });
    delete control.modules.dns_leak.dns.validate_answer_rrs;
    fs.writeFileSync(path.join(dir, 'control.yml'), stringify(control));
    fs.writeFileSync(path.join(dir, 'whoami.py'), [
      '# An authoritative stand-in: answers every A query with the address the query came from.',
      'import socket, struct',
      's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
      's.bind(("198.18.0.53", 53))',
      'while True:',
      '    q, (src, port) = s.recvfrom(512)',
      '    end = q.index(b"\\x00", 12) + 5',
      '    header = q[:2] + b"\\x84\\x00" + b"\\x00\\x01\\x00\\x01\\x00\\x00\\x00\\x00"',
      '    answer = b"\\xc0\\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + socket.inet_aton(src)',
      '    s.sendto(header + q[12:end] + answer, (src, port))',
    ].join('\n'));
    const resolver = (addr: string) => `(ip netns exec ${ns} dnsmasq --keep-in-foreground --no-hosts --no-resolv --bind-interfaces --listen-address=${addr} --pid-file=${dir}/${addr}.pid --server=198.18.0.53@${addr} --cache-size=0 </dev/null >${dir}/${addr}.log 2>&1 &)`;
    must(sh([
      `ip netns add ${ns} && ip -n ${ns} link set lo up`,
      ...['198.18.0.53', '10.64.0.53', '192.0.2.53'].map((a) => `ip -n ${ns} addr add ${a}/32 dev lo`),
      `(ip netns exec ${ns} setsid python3 ${dir}/whoami.py </dev/null >${dir}/whoami.log 2>&1 &)`,
      resolver('10.64.0.53'),
      resolver('192.0.2.53'),
      `ip netns exec ${ns} setsid sh -c 'blackbox_exporter --config.file=${dir}/blackbox.yml --web.listen-address=127.0.0.1:9115 >${dir}/exporter.log 2>&1 &'`,
      `ip netns exec ${ns} setsid sh -c 'blackbox_exporter --config.file=${dir}/control.yml --web.listen-address=127.0.0.1:9116 >${dir}/control.log 2>&1 &'`,
      `for i in $(seq 50); do ip netns exec ${ns} curl -sf http://127.0.0.1:9115/-/healthy >/dev/null && ip netns exec ${ns} curl -sf http://127.0.0.1:9116/-/healthy >/dev/null && ip netns exec ${ns} dig +short +time=1 +tries=1 @192.0.2.53 whoami.akamai.net | grep -q . && exit 0; sleep 0.2; done; exit 1`,
    ].join(' && '), { env }), 'resolvers and exporters');
  });
  afterAll(() => sh(`ip netns pids ${ns} | xargs -r kill; sleep 0.2; ip netns del ${ns}`));

  const probe = (resolverAddr: string, port = 9115) => {
    const r = must(sh(`ip netns exec ${ns} curl -sf 'http://127.0.0.1:${port}/probe?module=dns_leak&target=${resolverAddr}'`), 'probe');
    const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(r.stdout)?.[1]);
    return { success: metric('probe_success'), answered: metric('probe_dns_query_succeeded') };
  };

  it('the resolvers answer with their own address (the stand-in works)', () => {
    const ask = (resolverAddr: string) => sh(`ip netns exec ${ns} dig +short +time=2 +tries=3 @${resolverAddr} whoami.akamai.net | grep -E '^[0-9.]+$'`).stdout.trim();
    expect(ask('10.64.0.53')).toBe('10.64.0.53');
    expect(ask('192.0.2.53')).toBe('192.0.2.53');
  });

  it('succeeds through the tunnel resolver and fails through the WAN one (answered, so a leak, not an outage)', () => {
    expect(probe('10.64.0.53')).toEqual({ success: 1, answered: 1 });
    expect(probe('192.0.2.53')).toEqual({ success: 0, answered: 1 });
  });

  it('control: without the answer checks, the WAN resolver passes', () => {
    expect(probe('192.0.2.53', 9116)).toEqual({ success: 1, answered: 1 });
  });
});

describeWithTools('VPNDNSLeak under promtool', ['promtool'], () => {
  const dir = tmpdir('tw-prom-dns-');
  const groups = egressProbeAlertGroups({ ...gatewayProbe(), dnsLeak: { leakedCidrs: ['192.0.2.0/24'] } });
  const rule = groups[0].rules.find((r) => r.alert === 'VPNDNSLeak') as { labels: Record<string, string>; annotations: Record<string, string> };
  fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
  const series = (metric: string, values: string) => ({ series: `${metric}{job="egress-probe-dns-leak", instance="172.16.0.1"}`, values });
  const fired = { exp_labels: { ...rule.labels, job: 'egress-probe-dns-leak', instance: '172.16.0.1' }, exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, v.replace('{{ $labels.instance }}', '172.16.0.1')])) };
  const tests = [
    { name: 'through the tunnel', input_series: [series('probe_success', '1x20'), series('probe_dns_query_succeeded', '1x20')], alert_rule_test: [{ eval_time: '15m', alertname: 'VPNDNSLeak', exp_alerts: [] }] },
    { name: 'leaked: answered by a WAN-side resolver', input_series: [series('probe_success', '1x5 0x15'), series('probe_dns_query_succeeded', '1x20')], alert_rule_test: [{ eval_time: '5m', alertname: 'VPNDNSLeak', exp_alerts: [] }, { eval_time: '8m', alertname: 'VPNDNSLeak', exp_alerts: [fired] }] },
    { name: 'an outage is no leak: nothing answered', input_series: [series('probe_success', '0x20'), series('probe_dns_query_succeeded', '0x20')], alert_rule_test: [{ eval_time: '15m', alertname: 'VPNDNSLeak', exp_alerts: [] }] },
  ];
  fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: tests.map((t) => ({ interval: '1m', ...t })) }));

  it('fires on a WAN-side answer, stays silent through the tunnel and during an outage', () => {
    expect(run('promtool', ['check', 'rules', path.join(dir, 'rules.yaml')]).output).toContain('SUCCESS: 3 rules found');
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });

  it('control: the test fails when the leak scenario expects no alert', () => {
    const broken = { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: [{ interval: '1m', ...tests[1], alert_rule_test: [{ eval_time: '8m', alertname: 'VPNDNSLeak', exp_alerts: [] }] }] };
    fs.writeFileSync(path.join(dir, 'broken.yaml'), stringify(broken));
    expect(run('promtool', ['test', 'rules', 'broken.yaml'], { cwd: dir }).status).not.toBe(0);
  });
});
