import * as fs from 'node:fs';
import * as path from 'node:path';
import * as fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { blackboxConfig, egressProbeAlertGroups } from '../../src';
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

