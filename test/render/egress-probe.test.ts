import { parse } from 'yaml';
import * as fc from 'fast-check';
import { addressRegexp, blackboxConfig, cidrRegexp, ipv6CidrsRegexp, planEgressProbe, validateEgressProbe } from '../../src';
import { checkKubeObjects } from '../../src/testing';
import { gatewayProbe } from '../helpers/fixtures';
import { ipv6Full, ipv6PrefixCase, ipv6Text } from '../helpers/ipv6-text';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';

/** An RE2 pattern whose only flag is a leading (?i), as a JavaScript RegExp. */
const go = (pattern: string) => (pattern.startsWith('(?i)') ? new RegExp(pattern.slice(4), 'i') : new RegExp(pattern));

describe('planEgressProbe', () => {
  it('two EgressProbes of one name in two namespaces share no object: the PrometheusRule (in the shared monitoring namespace) is named for the probe\'s namespace too', () => {
    const keys = (namespace: string) => planEgressProbe({ ...gatewayProbe(), namespace }).objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
    const media = keys('media');
    const downloads = keys('downloads');
    expect(media.filter((k) => downloads.includes(k))).toEqual([]);
    expect(media.filter((k) => k.startsWith('PrometheusRule'))).toEqual(['PrometheusRule monitoring/media-egress-probe']);
  });

  it('writes modules that fail on a WAN address and outside the VPN ranges; the twin only shows its address', () => {
    expect(parse(blackboxConfig(gatewayProbe()))).toEqual({
      modules: {
        vpn_ipv4: { prober: 'http', timeout: '10s', http: { preferred_ip_protocol: 'ip4', ip_protocol_fallback: false, valid_status_codes: [200], fail_if_body_matches_regexp: ['(^|[^0-9.])203\\.0\\.113\\.7([^0-9.]|$)'], fail_if_body_not_matches_regexp: [expect.any(String)] } },
        direct_ipv4: { prober: 'http', timeout: '10s', http: { preferred_ip_protocol: 'ip4', ip_protocol_fallback: false, valid_status_codes: [200] } },
      },
    });
    // The must-match pattern judged as the exporter does (Go's regexp.Match over the whole body: unanchored, RE2), on
    // bodies written from the range 185.236.200.0/22 (185.236.200.0 to 185.236.203.255), not from our helper.
    const [pattern] = (parse(blackboxConfig(gatewayProbe())) as { modules: { vpn_ipv4: { http: { fail_if_body_not_matches_regexp: string[] } } } }).modules.vpn_ipv4.http.fail_if_body_not_matches_regexp;
    const re = go(pattern);
    const inside = ['185.236.200.0\n', '{"ip":"185.236.203.255"}', 'Your IP: 185.236.201.9'];
    const outside = ['185.236.204.1\n', '185.236.199.255', '203.0.113.7', '1185.236.200.1', '185.236.200.1000', '85.236.200.1'];
    expect({ inside: inside.filter((b) => !re.test(b)), outside: outside.filter((b) => re.test(b)) }).toEqual({ inside: [], outside: [] });
  });

  it.each([
    ['185.236.200.0/22', ['185.236.200.1', '185.236.203.254'], ['185.236.204.1', '185.236.199.255', '1185.236.200.1']],
    ['10.0.0.0/8', ['10.255.0.1'], ['11.0.0.1']],
    ['198.51.100.7/32', ['198.51.100.7'], ['198.51.100.70', '198.51.100.6']],
  ])('the %s regexp finds exactly the addresses inside it', (cidr, inside, outside) => {
    const re = new RegExp(cidrRegexp(cidr));
    expect(inside.map((ip) => re.test(`{"ip":"${ip}"}`))).toEqual(inside.map(() => true));
    expect(outside.map((ip) => re.test(`{"ip":"${ip}"}`))).toEqual(outside.map(() => false));
  });

  it('passes an answer inside any of the VPN ranges of its family: one must-match pattern per module', () => {
    type Http = { fail_if_body_not_matches_regexp?: string[]; fail_if_body_matches_regexp?: string[] };
    const config = parse(blackboxConfig({ ...gatewayProbe(), via: { egressSteering: {} }, vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32', '10.64.0.0/10', 'fd64::/64'], ipv6: true })) as { modules: Record<string, { http: Http }> };
    // The exporter fails the probe when no pattern of the list matches the body: one pattern, any range.
    const [pattern, ...more] = config.modules.vpn_ipv4.http.fail_if_body_not_matches_regexp!;
    expect(more).toEqual([]);
    const re = new RegExp(pattern);
    expect(['185.236.200.1', '10.64.0.9', '11.0.0.1', '203.0.113.7', '2a03:1b20::1'].map((ip) => re.test(`${ip}\n`))).toEqual([true, true, false, false, false]);
    const [pattern6, ...more6] = config.modules.vpn_ipv6.http.fail_if_body_not_matches_regexp!;
    expect(more6).toEqual([]);
    const re6 = go(pattern6);
    expect(['2a03:1b20:1::9', 'FD64::0:1', '2001:db8::1', '185.236.200.1', 'fd64:0:0:1::1'].map((ip) => re6.test(`{"ip":"${ip}"}`))).toEqual([true, true, false, false, false]);
    // The WAN address is still a failure pattern of both.
    expect(config.modules.vpn_ipv6.http.fail_if_body_matches_regexp).toEqual(config.modules.vpn_ipv4.http.fail_if_body_matches_regexp);
  });

  it('finds an IPv6 address of the prefix in every text form, and no address outside it (fast-check)', () => {
    // ipv6CidrsRegexp emits RE2 syntax (the exporter compiles with Go's regexp); the constructs it uses, (?:…),
    // classes, {1,4}, ^ and $ without (?m), mean the same to JavaScript's engine once the leading (?i) is a flag.
    // The system test runs the exporter itself over generated addresses.
    fc.assert(fc.property(ipv6PrefixCase.chain((c) => fc.record({
      c: fc.constant(c),
      inside: ipv6Text(c.inside),
      outside: ipv6Text(c.outside),
    })), ({ c, inside, outside }) => {
      const re = go(ipv6CidrsRegexp([`${ipv6Full(c.start)}/${c.prefix}`]));
      expect([re.test(inside), re.test(`ip=${inside}\n`), re.test(ipv6Full(c.inside)), re.test(`"${ipv6Full(c.inside).toUpperCase()}"`)]).toEqual([true, true, true, true]);
      // Not found inside a longer token (a five-digit group is no address).
      expect([re.test(`f${ipv6Full(c.inside)}`), re.test(`${ipv6Full(c.inside)}0`), re.test(`${ipv6Full(c.inside)}.1`)]).toEqual([false, false, false]);
      expect([re.test(outside), re.test(`ip=${outside}\n`), re.test(ipv6Full(c.outside))]).toEqual([false, false, false]);
    }), { numRuns: 500 });
  });

  it('finds an IPv6 WAN address in any of its text forms', () => {
    const re = go(addressRegexp('2001:db8:0:12::7'));
    expect(['2001:db8:0:12::7', '2001:0DB8:0000:0012:0000:0000:0000:0007', '2001:db8::12:0:0:0:7', '2001:db8:0:12:0::7', '2001:db8:0:12::70', '2001:db8::12:7'].map((t) => re.test(`${t}\n`))).toEqual([true, true, true, true, false, false]);
  });

  it('writes no VPN-range check for an empty vpnCidrs, as for none (an empty pattern would pass every body)', () => {
    expect(blackboxConfig({ ...gatewayProbe(), vpnCidrs: [] })).toBe(blackboxConfig({ ...gatewayProbe(), vpnCidrs: undefined }));
    expect(blackboxConfig({ ...gatewayProbe(), vpnCidrs: undefined })).not.toContain('fail_if_body_not_matches_regexp');
  });

  it('finds a WAN address, not a longer one that contains it', () => {
    const re = new RegExp(addressRegexp('203.0.113.7'));
    expect([re.test('203.0.113.7\n'), re.test('203.0.113.70'), re.test('1203.0.113.7')]).toEqual([true, false, false]);
  });

  it('routes the probe through the gateway, runs the twin direct, and scrapes both with Probe objects', () => {
    const objects = planEgressProbe(gatewayProbe()).objects;
    expect(objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'ConfigMap media/egress-probe-config',
      'Deployment media/egress-probe',
      'Service media/egress-probe',
      'ConfigMap media/egress-probe-vpn-route',
      'NetworkPolicy media/egress-probe-vpn-kill-switch',
      'Deployment media/egress-probe-direct',
      'Service media/egress-probe-direct',
      'Probe media/egress-probe-vpn-ipv4',
      'Probe media/egress-probe-direct-ipv4',
      'PrometheusRule monitoring/media-egress-probe',
    ]);
    const pod = (name: string) => (objects.find((o) => o.kind === 'Deployment' && o.metadata.name === name)!.spec as { template: { spec: { initContainers?: { name: string }[] } } }).template.spec;
    expect(pod('egress-probe').initContainers!.map((c) => c.name)).toEqual(['vpn-route-init']);
    expect(pod('egress-probe-direct').initContainers).toBeUndefined();
    expect(objects.find((o) => o.metadata.name === 'egress-probe-vpn-ipv4')!.spec).toEqual({
      jobName: 'egress-probe-vpn-ipv4',
      interval: '60s',
      module: 'vpn_ipv4',
      prober: { url: 'egress-probe.media.svc:9115' },
      targets: { staticConfig: { static: ['https://ifconfig.example.test/ip'], labels: { namespace: 'media', egress_class: 'vpn', ip_family: 'ipv4' } } },
    });
  });

  it('labels the probe pods with their class for an EgressSteering', () => {
    const objects = planEgressProbe({ ...gatewayProbe(), via: { egressSteering: {} } }).objects;
    const labels = (name: string) => (objects.find((o) => o.kind === 'Deployment' && o.metadata.name === name)!.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    expect(labels('egress-probe')['tunnelwright.dev/egress-class']).toBe('vpn');
    expect(labels('egress-probe-direct')['tunnelwright.dev/egress-class']).toBe('direct');
  });
});

describeWithSchemas('EgressProbe objects against their schemas', () => {
  it.each([['through a gateway', gatewayProbe()], ['for a steering class, with IPv6', { ...gatewayProbe(), via: { egressSteering: {} }, ipv6: true, vpnCidrs: ['185.236.200.0/22', '2a03:1b20::/32'] }]])('%s', (_n, props) => {
    expect(checkKubeObjects(planEgressProbe(props).objects, SCHEMA_DIR)).toEqual([]);
  });
});

describe('EgressProbe DNS-leak probe', () => {
  const withDns = (dnsLeak: Record<string, unknown>, via?: unknown) => ({ ...gatewayProbe(), ...(via ? { via } : {}), dnsLeak } as never);

  it('adds a leak module that takes every rcode and fails on a leaked A record only, and an outage module', () => {
    const config = parse(blackboxConfig(withDns({ leakedCidrs: ['192.0.2.0/24'], tunnelCidrs: ['10.64.0.0/10'] }))) as { modules: Record<string, { dns: Record<string, unknown> }> };
    const dns = { query_name: 'whoami.akamai.net', query_type: 'A', transport_protocol: 'udp', preferred_ip_protocol: 'ip4', ip_protocol_fallback: false };
    expect(config.modules.dns_leak).toEqual({
      prober: 'dns',
      timeout: '10s',
      dns: {
        ...dns,
        valid_rcodes: ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED', 'YXDOMAIN', 'YXRRSET', 'NXRRSET', 'NOTAUTH', 'NOTZONE', 'BADSIG', 'BADKEY', 'BADTIME', 'BADMODE', 'BADNAME', 'BADALG', 'BADTRUNC', 'BADCOOKIE'],
        validate_answer_rrs: { fail_if_matches_regexp: [expect.any(String)] },
      },
    });
    expect(config.modules.dns_resolves).toEqual({ prober: 'dns', timeout: '10s', dns: { ...dns, valid_rcodes: ['NOERROR'], validate_answer_rrs: { fail_if_none_matches_regexp: ['\\tA\\t[0-9.]+$'] } } });
  });

  // The exporter matches each answer record as miekg/dns prints it (name, TTL, class, type, address, tab-separated),
  // with Go's regexp.MatchString: RE2, unanchored unless the pattern anchors it. JavaScript agrees with RE2 on these patterns.
  it.each([
    [{ leakedCidrs: ['192.0.2.0/24'] }, ['192.0.2.53', '192.0.2.255'], ['10.64.0.53', '192.0.3.1', '8.8.8.8', '1192.0.2.5']],
    [{ tunnelCidrs: ['10.64.0.0/10'] }, ['10.128.0.1', '10.63.255.255', '192.0.2.53', '0.0.0.0', '255.255.255.255'], ['10.64.0.0', '10.64.0.53', '10.127.255.255']],
    [{ tunnelCidrs: ['10.64.0.0/10', '100.64.0.0/10'], leakedCidrs: ['100.64.9.0/24'] }, ['100.64.9.9', '100.128.0.0', '192.0.2.1'], ['10.64.0.9', '100.64.1.1', '100.127.0.1']],
  ])('the leak pattern of %j fails on %j and not on %j', (dnsLeak, leaked, passed) => {
    const config = parse(blackboxConfig(withDns(dnsLeak))) as { modules: { dns_leak: { dns: { validate_answer_rrs: { fail_if_matches_regexp: string[] } } } } };
    const [pattern, ...more] = config.modules.dns_leak.dns.validate_answer_rrs.fail_if_matches_regexp;
    expect(more).toEqual([]);
    const re = new RegExp(pattern);
    const rr = (ip: string) => `whoami.akamai.net.\t20\tIN\tA\t${ip}`;
    expect(leaked.filter((ip) => !re.test(rr(ip)))).toEqual([]);
    expect(passed.filter((ip) => re.test(rr(ip)))).toEqual([]);
    // A record that is not an A record, and a name that holds a leaked-looking address, pass.
    expect(re.test(`192.0.2.53.nip.io.\t20\tIN\tCNAME\twhoami.akamai.net.`)).toBe(false);
  });

  it('asks the resolver routed pods use (the gateway\'s dnsmasq), from the vpn-class probe, and alerts VPNDNSLeak', () => {
    const plan = planEgressProbe(withDns({ leakedCidrs: ['192.0.2.0/24'] }));
    const probe = (name: string) => plan.objects.find((o) => o.kind === 'Probe' && o.metadata.name === name)!.spec;
    expect(probe('egress-probe-dns-leak')).toEqual({ jobName: 'egress-probe-dns-leak', interval: '60s', module: 'dns_leak', prober: { url: 'egress-probe.media.svc:9115' }, targets: { staticConfig: { static: ['172.16.0.1'], labels: { namespace: 'media', egress_class: 'vpn', check: 'dns-leak' } } } });
    expect(probe('egress-probe-dns-resolves')).toEqual({ jobName: 'egress-probe-dns-resolves', interval: '60s', module: 'dns_resolves', prober: { url: 'egress-probe.media.svc:9115' }, targets: { staticConfig: { static: ['172.16.0.1'], labels: { namespace: 'media', egress_class: 'vpn', check: 'dns-resolves' } } } });
    const rules = (plan.objects.find((o) => o.kind === 'PrometheusRule')!.spec as { groups: { rules: { alert: string; labels: Record<string, string> }[] }[] }).groups[0].rules;
    expect(rules.map((r) => `${r.alert} ${r.labels.severity}`)).toEqual(['VPNEgressLeak critical', 'VPNEgressProbeFailing warning', 'VPNEgressProbeAbsent warning', 'VPNDNSLeak critical', 'VPNDNSProbeFailing warning']);
  });

  it.each([
    ['neither range', withDns({}), [{ path: 'dnsLeak', code: 'required', message: 'expected leakedCidrs (answers that mean a leak) and/or tunnelCidrs (answers that mean the tunnel): without either the probe cannot tell' }]],
    ['an IPv6 range', withDns({ leakedCidrs: ['2001:db8::/32'] }), [{ path: 'dnsLeak.leakedCidrs[0]', code: 'ipv6-range', message: 'expected an IPv4 range (the probe asks for an A record), received "2001:db8::/32"' }]],
    ['no resolver with egressSteering', withDns({ leakedCidrs: ['192.0.2.0/24'] }, { egressSteering: {} }), [{ path: 'dnsLeak.resolver', code: 'required', message: 'required with egressSteering: the cluster DNS address vpn-class pods ask (kube-dns\'s ClusterIP)' }]],
  ])('refuses %s', (_name, props, problems) => {
    expect(validateEgressProbe(props)).toEqual(problems);
  });
});
