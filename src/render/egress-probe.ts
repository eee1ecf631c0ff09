import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import type { Service as IService } from 'kubernetes-types/core/v1';
import { Problem } from '../errors';
import type { EgressProbeProps } from '../model/egress-probe';
import { egressProbeSpec, EgressProbeSpec, PROBE_MANAGED_LABELS, probeWorkloadLabels } from '../model/egress-probe-spec';
import { formatIp, parseCidr, parseIp } from '../model/net';
import { KubeObject, Plan } from '../types';
import { withConfigHashes } from './config-hash';
import { renderRoute, routePodSpec } from './vpn-gateway';
import { yaml } from '../lazy';
import * as egressProbeModel from '../model/egress-probe';

/** Returns the problems of EgressProbe props without throwing. */
export function validateEgressProbe(props: unknown): Problem[] {
  return egressProbeModel.checkEgressProbe(props).problems;
}

export const BLACKBOX_PORT = 9115;

/** A regular expression (RE2) that finds `ip` in a response body, not as part of a longer address; IPv6 in any textual form. */
export function addressRegexp(ip: string): string {
  const parsed = parseIp(ip)!;
  if (parsed.family === 4) return `(^|[^0-9.])${formatIp(4, parsed.value).replace(/\./g, '\\.')}([^0-9.]|$)`;
  return ipv6CidrsRegexp([`${formatIp(6, parsed.value)}/128`]);
}

/**
 * A regular expression (RE2: the blackbox exporter compiles body patterns with Go's `regexp` and matches them
 * anywhere in the body, prober/http.go `matchRegularExpressions` :43-70 at 00a3207, `regexp.Compile` then
 * `re.Match(body)`) that finds an IPv6 address inside any of `cidrs`,
 * in every RFC 4291 §2.2 text form without an embedded dotted quad: each group with or without its leading zeros, any
 * case, and `::` standing for any run of zero groups (one group included). The address must stand alone: no hex
 * digit, `:` or `.` beside it (so `2001:db8::1` is not found inside `2001:db8::12` or `12001:db8::1`).
 */
export function ipv6CidrsRegexp(cidrs: readonly string[]): string {
  const forms = cidrs.flatMap((c) => ipv6Forms(parseCidr(c)!));
  return `(?i)(?:^|[^0-9a-f:.])(?:${[...new Set(forms)].join('|')})(?:[^0-9a-f:.]|$)`;
}

const HEX_DIGITS = '0123456789abcdef';

/** The text forms of one IPv6 prefix, as RE2 alternatives: eight written groups, or `::` for groups i…7-m. */
function ipv6Forms(c: { start: bigint; prefix: number }): string[] {
  // Each group as four nibbles, each nibble the range of digits an address in the prefix may have there.
  const groups = Array.from({ length: 8 }, (_, g) => Array.from({ length: 4 }, (_, n) => {
    const offset = g * 16 + n * 4;
    const fixed = Math.min(4, Math.max(0, c.prefix - offset));
    const lo = Number((c.start >> BigInt(124 - offset)) & 15n);
    return [lo, lo + 2 ** (4 - fixed) - 1] as const;
  }));
  const written = groups.map(groupRegexp);
  const canBeZero = groups.map((g) => g.every(([lo]) => lo === 0));
  const forms = [written.join(':')];
  for (let before = 0; before <= 7; before++) {
    for (let after = 0; before + after <= 7; after++) {
      if (!canBeZero.slice(before, 8 - after).every(Boolean)) continue;
      forms.push(`${written.slice(0, before).join(':')}::${written.slice(8 - after).join(':')}`);
    }
  }
  return forms;
}

/** One group: its four nibbles, of which leading ones that may be 0 may be left out (one digit at least). */
function groupRegexp(nibbles: readonly (readonly [number, number])[]): string {
  if (nibbles.every(([lo, hi]) => lo === 0 && hi === 15)) return '[0-9a-f]{1,4}';
  const digit = ([lo, hi]: readonly [number, number]) => (lo === hi ? HEX_DIGITS[lo] : lo === 0 && hi === 15 ? '[0-9a-f]' : `[${HEX_DIGITS.slice(lo, hi + 1)}]`);
  const alternatives: string[] = [];
  for (let dropped = 0; dropped <= 3; dropped++) {
    alternatives.push(nibbles.slice(dropped).map(digit).join(''));
    if (nibbles[dropped][0] !== 0) break;
  }
  return alternatives.length === 1 ? alternatives[0] : `(?:${alternatives.join('|')})`;
}

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';

/** A regular expression (RE2) that finds an IPv4 address inside `cidr` in a response body. */
export function cidrRegexp(cidr: string): string {
  return `(^|[^0-9.])${ipv4RangeRegexp(cidr)}([^0-9.]|$)`;
}

/** The dotted quads inside an IPv4 `cidr`, as an unanchored RE2 alternation. */
function ipv4RangeRegexp(cidr: string): string {
  const c = parseCidr(cidr)!;
  const octets = [24n, 16n, 8n, 0n].map((s) => Number((c.start >> s) & 255n));
  const parts: string[] = [];
  for (let i = 0; i < 4; i++) {
    const fixedBits = Math.min(8, Math.max(0, c.prefix - i * 8));
    if (fixedBits === 8) parts.push(String(octets[i]));
    else if (fixedBits === 0) parts.push(OCTET);
    else {
      const size = 2 ** (8 - fixedBits);
      parts.push(`(${Array.from({ length: size }, (_, k) => octets[i] + size - 1 - k).join('|')})`);
    }
  }
  return parts.join('\\.');
}

/** The blackbox exporter's config: HTTP modules that fail on a WAN address (and outside the VPN ranges). */
export function renderBlackboxConfig(s: EgressProbeSpec): string {
  const config: Record<string, Record<string, unknown>> = {};
  for (const m of s.modules) {
    const http: Record<string, unknown> = { preferred_ip_protocol: m.family === 4 ? 'ip4' : 'ip6', ip_protocol_fallback: false, valid_status_codes: [200] };
    if (m.egressClass === 'vpn') {
      http.fail_if_body_matches_regexp = s.wanIps.map(addressRegexp);
      // A must-match pattern: an answer naming no address of the tunnel's ranges of this family fails (a native
      // IPv6 address included, whatever it is: a WAN prefix is rarely known, and privacy addresses change).
      const ranges = s.vpnCidrs[m.family];
      if (ranges.length > 0) http.fail_if_body_not_matches_regexp = [m.family === 4 ? ranges.map(cidrRegexp).join('|') : ipv6CidrsRegexp(ranges)];
    }
    config[m.key] = { prober: 'http', timeout: '10s', http };
  }
  if (s.dnsLeak) Object.assign(config, dnsModules(s.dnsLeak));
  return `# blackbox exporter modules, written by tunnelwright\n${yaml().stringify({ modules: config })}`;
}

/** The blackbox exporter's config of EgressProbe props (`renderBlackboxConfig` of their spec). */
export function blackboxConfig(p: EgressProbeProps): string {
  return renderBlackboxConfig(egressProbeSpec(p));
}

export const DNS_LEAK_MODULE = 'dns_leak';
export const DNS_RESOLVES_MODULE = 'dns_resolves';

/**
 * Every rcode the exporter knows (miekg/dns v1.1.50 msg.go:138-159, `StringToRcode` in reverse.go:13): the leak module
 * takes any of them, so that only its answer check can fail it (prober/dns.go:298 checks the rcode before the answer
 * records, v0.23 and v0.25 alike).
 */
export const DNS_RCODES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED', 'YXDOMAIN', 'YXRRSET', 'NXRRSET', 'NOTAUTH', 'NOTZONE', 'BADSIG', 'BADKEY', 'BADTIME', 'BADMODE', 'BADNAME', 'BADALG', 'BADTRUNC', 'BADCOOKIE'];

/** IPv4 CIDRs covering every address outside `cidrs`. */
function ipv4Complement(cidrs: readonly string[]): string[] {
  const ranges = cidrs.map((c) => parseCidr(c)!).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const gaps: [bigint, bigint][] = [];
  let next = 0n;
  for (const r of ranges) {
    if (r.start > next) gaps.push([next, r.start - 1n]);
    if (r.end + 1n > next) next = r.end + 1n;
  }
  if (next <= 0xffffffffn) gaps.push([next, 0xffffffffn]);
  const out: string[] = [];
  for (const [first, end] of gaps) {
    let start = first;
    while (start <= end) {
      let size = 32;
      while (size > 0 && (start & ((1n << BigInt(33 - size)) - 1n)) === 0n && start + (1n << BigInt(33 - size)) - 1n <= end) size--;
      out.push(`${formatIp(4, start)}/${size}`);
      start += 1n << BigInt(32 - size);
    }
  }
  return out;
}

/**
 * The blackbox `dns` modules. The exporter matches each answer record as miekg/dns prints it, `name\tTTL\tIN\tA\t<address>`
 * (dns.go:81-94, types.go:719-724), so the patterns are anchored on the A record's address.
 * - `dns_leak` fails only on an A answer that names a leaked resolver (or one outside `tunnelCidrs`): any rcode is
 *   valid, and an answer without records passes. With `probe_dns_query_succeeded` 1 (set once a reply came,
 *   prober/dns.go:282, before the rcode check) and `probe_dns_answer_rrs` above 0, its `probe_success` 0 is a leak.
 * - `dns_resolves` fails on anything but a NOERROR answer with an A record: the outage check (SERVFAIL, no answer, no reply).
 */
function dnsModules(d: NonNullable<EgressProbeSpec['dnsLeak']>): Record<string, Record<string, unknown>> {
  const bad = [...d.leakedCidrs, ...(d.tunnelCidrs ? ipv4Complement(d.tunnelCidrs) : [])].map(ipv4RangeRegexp);
  const dns = { query_name: d.queryName, query_type: 'A', transport_protocol: 'udp', preferred_ip_protocol: 'ip4', ip_protocol_fallback: false };
  return {
    [DNS_LEAK_MODULE]: { prober: 'dns', timeout: '10s', dns: { ...dns, valid_rcodes: DNS_RCODES, validate_answer_rrs: { fail_if_matches_regexp: [`\\tA\\t(${bad.join('|')})$`] } } },
    [DNS_RESOLVES_MODULE]: { prober: 'dns', timeout: '10s', dns: { ...dns, valid_rcodes: ['NOERROR'], validate_answer_rrs: { fail_if_none_matches_regexp: ['\\tA\\t[0-9.]+$'] } } },
  };
}

const PROBE_RUNBOOKS = {
  VPNEgressLeak: '1. Treat it as an incident: stop the affected vpn-class workloads.\n2. Check the steering or the gateway (VPNTunnelDown, VPNEgressSteeringStale) and the kill switch counters.',
  VPNEgressProbeFailing: '1. The IP-echo targets are unreachable from the vpn class: often the tunnel is down (VPNTunnelDown) and the kill switch is holding.\n2. Check the targets themselves from elsewhere.',
  VPNDNSLeak: '1. Find who resolves for the vpn class: the routed pods\' gateway dnsmasq forwards outside names to gluetun\'s DNS_ADDRESS through the tunnel; vpn-class pods of an EgressSteering ask CoreDNS, whose forward leaves from its own node.\n2. Make that resolver\'s upstream reachable only through the tunnel (docs/egress-steering.md, "DNS leaves by the WAN"), then watch probe_success of the dns-leak job return to 1.',
  VPNEgressProbeAbsent: '1. kubectl -n <namespace> get deploy,pods,probe -l app.kubernetes.io/component=egress-probe: a pod not admitted (Pod Security, quota) or not scheduled runs no probe.\n2. Prometheus must select the Probe objects (probeSelector, probeNamespaceSelector): the job must be listed under Status > Targets, and up for it must be 1.',
  VPNDNSProbeFailing: '1. Ask the resolver from a vpn-class pod (dig @<resolver> whoami.akamai.net): SERVFAIL or a timeout usually means the tunnel is down (VPNTunnelDown) or its DNS upstream is unreachable.\n2. The leak check cannot judge while nothing answers: VPNDNSLeak stays silent during an outage.',
};

/** The alert rules of EgressProbe props (`renderEgressProbeAlertGroups` of their spec). */
export function egressProbeAlertGroups(p: EgressProbeProps): { name: string; rules: Record<string, unknown>[] }[] {
  return renderEgressProbeAlertGroups(egressProbeSpec(p));
}

/** The alert rules: VPNEgressLeak (a vpn-class probe saw a WAN address), VPNEgressProbeFailing, and VPNDNSLeak with a DNS-leak probe. */
export function renderEgressProbeAlertGroups(p: EgressProbeSpec): { name: string; rules: Record<string, unknown>[] }[] {
  const name = p.name;
  const jobs = p.modules.filter((m) => m.egressClass === 'vpn').map((m) => m.job).join('|');
  const runbookUrl = p.monitoring.runbookUrl;
  const link = (alert: string) => (runbookUrl ? { runbook_url: `${runbookUrl}#${alert.toLowerCase()}` } : {});
  const dnsJob = `${name}-dns-leak`;
  const dnsResolvesJob = `${name}-dns-resolves`;
  const allJobs = [...p.modules.map((m) => m.job), ...(p.dnsLeak ? [dnsJob, dnsResolvesJob] : [])];
  const intervalSeconds = p.intervalSeconds;
  // Every selector names the probe's namespace: a second EgressProbe of the same name elsewhere has the same jobs, and
  // its series must neither silence this one's absent alert nor page from this one's rules. prometheus-operator sets
  // `job` to the Probe's jobName and gives static targets a `namespace` label (pkg/prometheus/promcfg.go,
  // generateProbeConfig); the Probes below also write it themselves, for operators that do not.
  const ns = `namespace="${p.namespace}"`;
  const by = 'max by (namespace, job, instance)';
  const on = 'on(namespace, job, instance)';
  return [
    {
      name: `tunnelwright-${name}`,
      rules: [
        {
          alert: 'VPNEgressLeak',
          expr: `${by} (probe_failed_due_to_regex{${ns}, job=~"${jobs}"}) == 1`,
          for: '1m',
          labels: { severity: 'critical' },
          annotations: { summary: 'vpn-class traffic left without the VPN: the probe saw a WAN address (or one outside the VPN ranges)', description: 'The blackbox probe running as a vpn-class workload in {{ $labels.job }} got an answer from {{ $labels.instance }} naming an address it must never have.', runbook: PROBE_RUNBOOKS.VPNEgressLeak, ...link('VPNEgressLeak') },
        },
        {
          alert: 'VPNEgressProbeFailing',
          expr: `${by} (probe_success{${ns}, job=~"${jobs}"}) == 0 unless ${on} (${by} (probe_failed_due_to_regex{${ns}, job=~"${jobs}"}) == 1)`,
          for: '10m',
          labels: { severity: 'warning' },
          annotations: { summary: 'no successful egress probe from the vpn class for 10 minutes', description: '{{ $labels.instance }} is unreachable from {{ $labels.job }}: the tunnel may be down (and the kill switch holding).', runbook: PROBE_RUNBOOKS.VPNEgressProbeFailing, ...link('VPNEgressProbeFailing') },
        },
        {
          alert: 'VPNEgressProbeAbsent',
          // Each job on its own: absent_over_time of a regex matcher is empty while any one job still reports.
          expr: allJobs.map((j) => `absent_over_time(probe_success{${ns}, job="${j}"}[${3 * intervalSeconds}s])`).join(' or '),
          for: `${2 * intervalSeconds}s`,
          labels: { severity: 'warning' },
          annotations: { summary: 'an egress probe has reported nothing for five scrape intervals', description: '{{ $labels.job }} has no probe_success series: the probe is not running or not scraped, and its other alerts cannot fire.', runbook: PROBE_RUNBOOKS.VPNEgressProbeAbsent, ...link('VPNEgressProbeAbsent') },
        },
        ...(p.dnsLeak ? [{
          alert: 'VPNDNSLeak',
          // A reply came (probe_dns_query_succeeded, set before any check), it carried records, and the leak module, which
          // takes every rcode and fails on nothing but an A record naming a leaked resolver, failed: a leak. A SERVFAIL,
          // an empty answer and a timeout leave one of the three terms false (VPNDNSProbeFailing's business).
          expr: `${by} (probe_dns_query_succeeded{${ns}, job="${dnsJob}"}) == 1 and ${on} ${by} (probe_dns_answer_rrs{${ns}, job="${dnsJob}"}) > 0 and ${on} ${by} (probe_success{${ns}, job="${dnsJob}"}) == 0`,
          for: '1m',
          labels: { severity: 'critical' },
          annotations: { summary: 'vpn-class DNS lookups leave by the WAN: the probe\'s resolver reached the name\'s servers from a WAN-side resolver', description: `{{ $labels.instance }} answered ${p.dnsLeak.queryName} with a resolver address that is not the tunnel's: every name vpn-class pods look up is seen outside the VPN.`, runbook: PROBE_RUNBOOKS.VPNDNSLeak, ...link('VPNDNSLeak') },
        }, {
          alert: 'VPNDNSProbeFailing',
          expr: `${by} (probe_success{${ns}, job="${dnsResolvesJob}"}) == 0`,
          for: '10m',
          labels: { severity: 'warning' },
          annotations: { summary: 'the vpn-class resolver has given no address for 10 minutes', description: `{{ $labels.instance }} answered ${p.dnsLeak.queryName} with an error rcode, no A record, or not at all: vpn-class pods cannot resolve names (an outage, not a leak).`, runbook: PROBE_RUNBOOKS.VPNDNSProbeFailing, ...link('VPNDNSProbeFailing') },
        }] : []),
      ],
    },
  ];
}

/** Plans the probe from EgressProbe props (`renderEgressProbe` of their spec, or a ValidationError with every problem). */
export function planEgressProbe(props: EgressProbeProps): Plan {
  return renderEgressProbe(egressProbeSpec(props));
}

/** Plans the probe from its spec: exporter config, exporter Deployment(s) and Service(s), Probe objects and the PrometheusRule. */
export function renderEgressProbe(p: EgressProbeSpec): Plan {
  const name = p.name;
  const ns = p.namespace;
  const managed = PROBE_MANAGED_LABELS;
  const configName = `${name}-config`;
  const objects: KubeObject[] = [];
  const config: IConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configName, namespace: ns, labels: { ...managed } }, data: { 'blackbox.yml': renderBlackboxConfig(p) } };
  objects.push(config as KubeObject);

  const exporter = (workload: string, egressClass: 'vpn' | 'direct'): { deployment: IDeployment; service: IService; extra: KubeObject[] } => {
    const steering = 'egressSteering' in p.via ? p.via.egressSteering : undefined;
    const classLabel = steering ? { [steering.classLabel]: egressClass === 'vpn' ? steering.vpnClass : 'direct' } : {};
    const labels = probeWorkloadLabels(workload);
    let spec: IPodSpec = {
      containers: [{
        name: 'blackbox-exporter',
        image: p.image,
        args: ['--config.file=/config/blackbox.yml'],
        ports: [{ name: 'http', containerPort: BLACKBOX_PORT, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/-/healthy', port: BLACKBOX_PORT } },
        // Restricted-compatible: a vpn-class probe (via EgressSteering) runs in any namespace.
        securityContext: { runAsNonRoot: true, runAsUser: 65534, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
        resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
        volumeMounts: [{ name: 'config', mountPath: '/config', readOnly: true }],
      }],
      volumes: [{ name: 'config', configMap: { name: configName } }],
    };
    const extra: KubeObject[] = [];
    if ('vpnGateway' in p.via && egressClass === 'vpn') {
      // The route's target was checked in the model (parseEgressProbe): the probe is no port-forwarding workload.
      const route = renderRoute(p.via.vpnGateway, p.via.route);
      spec = routePodSpec(spec, route);
      extra.push(...route.objects);
    }
    const deployment: IDeployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: workload, namespace: ns, labels },
      spec: { replicas: 1, selector: { matchLabels: { 'app.kubernetes.io/name': workload } }, template: { metadata: { labels: { ...labels, ...classLabel } }, spec } },
    };
    const service: IService = { apiVersion: 'v1', kind: 'Service', metadata: { name: workload, namespace: ns, labels }, spec: { selector: { 'app.kubernetes.io/name': workload }, ports: [{ name: 'http', port: BLACKBOX_PORT, targetPort: BLACKBOX_PORT, protocol: 'TCP' }] } };
    return { deployment, service, extra };
  };

  const vpn = exporter(name, 'vpn');
  objects.push(vpn.deployment as KubeObject, vpn.service as KubeObject, ...vpn.extra);
  const twin = p.directTwin ? exporter(`${name}-direct`, 'direct') : undefined;
  if (twin) objects.push(twin.deployment as KubeObject, twin.service as KubeObject);

  for (const m of p.modules) {
    const prober = m.egressClass === 'vpn' ? name : `${name}-direct`;
    objects.push({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Probe',
      metadata: { name: m.job, namespace: ns, labels: { ...managed, ...p.monitoring.ruleLabels } },
      spec: {
        jobName: m.job,
        interval: p.interval,
        module: m.key,
        prober: { url: `${prober}.${ns}.svc:${BLACKBOX_PORT}` },
        targets: { staticConfig: { static: [...p.targets], labels: { namespace: ns, egress_class: m.egressClass, ip_family: `ipv${m.family}` } } },
      },
    });
  }
  if (p.dnsLeak) {
    for (const [job, module, check] of [[`${name}-dns-leak`, DNS_LEAK_MODULE, 'dns-leak'], [`${name}-dns-resolves`, DNS_RESOLVES_MODULE, 'dns-resolves']]) {
      objects.push({
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Probe',
        metadata: { name: job, namespace: ns, labels: { ...managed, ...p.monitoring.ruleLabels } },
        spec: {
          jobName: job,
          interval: p.interval,
          module,
          // The dns prober's target is the resolver it asks: the one vpn-class pods use, asked from their placement.
          prober: { url: `${name}.${ns}.svc:${BLACKBOX_PORT}` },
          targets: { staticConfig: { static: [p.dnsLeak.resolver], labels: { namespace: ns, egress_class: 'vpn', check } } },
        },
      });
    }
  }
  objects.push({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    // Named for the probe's namespace too: the rules go to one shared namespace, where a same-named EgressProbe of
    // another namespace would otherwise write over this one's rules.
    metadata: { name: `${ns}-${name}`, namespace: p.monitoring.namespace, labels: { ...managed, ...p.monitoring.ruleLabels } },
    spec: { groups: renderEgressProbeAlertGroups(p) },
  });
  // The WAN addresses (`wanIps`, `dnsLeak.leakedCidrs`) are in blackbox.yml and in no other object of this plan: an
  // unsalted hash of it on every pod would let anyone who may read pods (not ConfigMaps) find them by trying each IPv4
  // address. The hash is of the config with documentation addresses in their place, so a change of those alone does
  // not roll the exporter (docs/vpn-gateway.md says to restart it).
  const redacted: EgressProbeSpec = { ...p, wanIps: p.wanIps.map(() => '192.0.2.1'), ...(p.dnsLeak ? { dnsLeak: { ...p.dnsLeak, leakedCidrs: p.dnsLeak.leakedCidrs.map(() => '192.0.2.0/24') } } : {}) };
  const hashed = (m: IConfigMap) => (m.metadata?.name === configName ? { ...m, data: { 'blackbox.yml': renderBlackboxConfig(redacted) } } : m);
  return { objects: withConfigHashes(objects, hashed), hosts: [], values: {}, warnings: [] };
}
