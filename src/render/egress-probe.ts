import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import type { Service as IService } from 'kubernetes-types/core/v1';
import { stringify } from 'yaml';
import { Problem, throwIfProblems } from '../errors';
import { DEFAULT_EGRESS_CLASS_LABEL } from '../model/egress-steering';
import { checkEgressProbe, DEFAULT_BLACKBOX_IMAGE, DEFAULT_DNS_LEAK_NAME, DnsLeakProbe, EgressProbeProps } from '../model/egress-probe';
import { VpnGatewayProps } from '../model/vpn-gateway';
import { formatIp, parseCidr, parseIp } from '../model/net';
import { KubeObject, Plan } from '../types';
import { applyRoute, gatewayFacts, planRoute } from './vpn-gateway';

/** Returns the problems of EgressProbe props without throwing. */
export function validateEgressProbe(props: unknown): Problem[] {
  return checkEgressProbe(props).problems;
}

export const BLACKBOX_PORT = 9115;

/** A regular expression (RE2) that finds `ip` in a response body, not as part of a longer address. */
export function addressRegexp(ip: string): string {
  const parsed = parseIp(ip)!;
  if (parsed.family === 4) return `(^|[^0-9.])${formatIp(4, parsed.value).replace(/\./g, '\\.')}([^0-9.]|$)`;
  return `(?i)(^|[^0-9a-f:])${formatIp(6, parsed.value)}([^0-9a-f:]|$)`;
}

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';

/** A regular expression (RE2) that finds an IPv4 address inside `cidr` in a response body. */
export function cidrRegexp(cidr: string): string {
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
  return `(^|[^0-9.])${parts.join('\\.')}([^0-9.]|$)`;
}

interface Module {
  readonly key: string;
  readonly job: string;
  readonly egressClass: 'vpn' | 'direct';
  readonly family: 4 | 6;
}

function modules(p: EgressProbeProps, name: string): Module[] {
  const out: Module[] = [{ key: 'vpn_ipv4', job: `${name}-vpn-ipv4`, egressClass: 'vpn', family: 4 }];
  if (p.ipv6) out.push({ key: 'vpn_ipv6', job: `${name}-vpn-ipv6`, egressClass: 'vpn', family: 6 });
  if (p.directTwin) out.push({ key: 'direct_ipv4', job: `${name}-direct-ipv4`, egressClass: 'direct', family: 4 });
  return out;
}

/** The blackbox exporter's config: HTTP modules that fail on a WAN address (and outside the VPN ranges). */
export function blackboxConfig(p: EgressProbeProps, name = p.name ?? 'egress-probe'): string {
  const config: Record<string, Record<string, unknown>> = {};
  for (const m of modules(p, name)) {
    const http: Record<string, unknown> = { preferred_ip_protocol: m.family === 4 ? 'ip4' : 'ip6', ip_protocol_fallback: false, valid_status_codes: [200] };
    if (m.egressClass === 'vpn') {
      http.fail_if_body_matches_regexp = p.wanIps.map(addressRegexp);
      if (m.family === 4 && p.vpnCidrs && p.vpnCidrs.length > 0) http.fail_if_body_not_matches_regexp = [p.vpnCidrs.map(cidrRegexp).join('|')];
    }
    config[m.key] = { prober: 'http', timeout: '10s', http };
  }
  if (p.dnsLeak) config[DNS_LEAK_MODULE] = dnsLeakModule(p.dnsLeak);
  return `# blackbox exporter modules, written by tunnelwright\n${stringify({ modules: config })}`;
}

export const DNS_LEAK_MODULE = 'dns_leak';

/** The blackbox `dns` module: asks for the whoami name and fails on an answer that names a WAN-side resolver. */
function dnsLeakModule(d: DnsLeakProbe): Record<string, unknown> {
  const rrs: Record<string, string[]> = {};
  if (d.leakedCidrs) rrs.fail_if_matches_regexp = d.leakedCidrs.map(cidrRegexp);
  if (d.tunnelCidrs) rrs.fail_if_none_matches_regexp = [d.tunnelCidrs.map(cidrRegexp).join('|')];
  return {
    prober: 'dns',
    timeout: '10s',
    dns: {
      query_name: d.queryName ?? DEFAULT_DNS_LEAK_NAME, query_type: 'A', transport_protocol: 'udp', preferred_ip_protocol: 'ip4', ip_protocol_fallback: false,
      valid_rcodes: ['NOERROR'], validate_answer_rrs: rrs,
    },
  };
}

/** The resolver the DNS-leak probe asks: given, or the gateway's dnsmasq (the VXLAN network's .1), which routed pods use. */
export function dnsLeakResolver(p: EgressProbeProps): string {
  if (p.dnsLeak?.resolver) return p.dnsLeak.resolver;
  const gateway = (p.via as { vpnGateway: VpnGatewayProps }).vpnGateway;
  return `${gatewayFacts(gateway).vxlanPrefix}.1`;
}

const PROBE_RUNBOOKS = {
  VPNEgressLeak: '1. Treat it as an incident: stop the affected vpn-class workloads.\n2. Check the steering or the gateway (VPNTunnelDown, VPNEgressSteeringStale) and the kill switch counters.',
  VPNEgressProbeFailing: '1. The IP-echo targets are unreachable from the vpn class: often the tunnel is down (VPNTunnelDown) and the kill switch is holding.\n2. Check the targets themselves from elsewhere.',
  VPNDNSLeak: '1. Find who resolves for the vpn class: the routed pods\' gateway dnsmasq forwards outside names to gluetun\'s DNS_ADDRESS through the tunnel; vpn-class pods of an EgressSteering ask CoreDNS, whose forward leaves from its own node.\n2. Make that resolver\'s upstream reachable only through the tunnel (README: "DNS leaves by the WAN"), then watch probe_success of the dns-leak job return to 1.',
};

/** The alert rules: VPNEgressLeak (a vpn-class probe saw a WAN address), VPNEgressProbeFailing, and VPNDNSLeak with a DNS-leak probe. */
export function egressProbeAlertGroups(p: EgressProbeProps): { name: string; rules: Record<string, unknown>[] }[] {
  const name = p.name ?? 'egress-probe';
  const jobs = modules(p, name).filter((m) => m.egressClass === 'vpn').map((m) => m.job).join('|');
  const runbookUrl = p.monitoring?.runbookUrl;
  const link = (alert: string) => (runbookUrl ? { runbook_url: `${runbookUrl}#${alert.toLowerCase()}` } : {});
  const dnsJob = `${name}-dns-leak`;
  return [
    {
      name: `tunnelwright-${name}`,
      rules: [
        {
          alert: 'VPNEgressLeak',
          expr: `max by (job, instance) (probe_failed_due_to_regex{job=~"${jobs}"}) == 1`,
          for: '1m',
          labels: { severity: 'critical' },
          annotations: { summary: 'vpn-class traffic left without the VPN: the probe saw a WAN address (or one outside the VPN ranges)', description: 'The blackbox probe running as a vpn-class workload in {{ $labels.job }} got an answer from {{ $labels.instance }} naming an address it must never have.', runbook: PROBE_RUNBOOKS.VPNEgressLeak, ...link('VPNEgressLeak') },
        },
        {
          alert: 'VPNEgressProbeFailing',
          expr: `max by (job, instance) (probe_success{job=~"${jobs}"}) == 0 unless on(job, instance) (max by (job, instance) (probe_failed_due_to_regex{job=~"${jobs}"}) == 1)`,
          for: '10m',
          labels: { severity: 'warning' },
          annotations: { summary: 'no successful egress probe from the vpn class for 10 minutes', description: '{{ $labels.instance }} is unreachable from {{ $labels.job }}: the tunnel may be down (and the kill switch holding).', runbook: PROBE_RUNBOOKS.VPNEgressProbeFailing, ...link('VPNEgressProbeFailing') },
        },
        ...(p.dnsLeak ? [{
          alert: 'VPNDNSLeak',
          // The query was answered (the resolver works) and the answer named a WAN-side resolver: a leak, not an outage.
          expr: `max by (job, instance) (probe_dns_query_succeeded{job="${dnsJob}"}) == 1 and on(job, instance) max by (job, instance) (probe_success{job="${dnsJob}"}) == 0`,
          for: '1m',
          labels: { severity: 'critical' },
          annotations: { summary: 'vpn-class DNS lookups leave by the WAN: the probe\'s resolver reached the name\'s servers from a WAN-side resolver', description: `{{ $labels.instance }} answered ${p.dnsLeak.queryName ?? DEFAULT_DNS_LEAK_NAME} with a resolver address that is not the tunnel's: every name vpn-class pods look up is seen outside the VPN.`, runbook: PROBE_RUNBOOKS.VPNDNSLeak, ...link('VPNDNSLeak') },
        }] : []),
      ],
    },
  ];
}

/** Plans the probe: exporter config, exporter Deployment(s) and Service(s), Probe objects and the PrometheusRule. */
export function planEgressProbe(props: EgressProbeProps): Plan {
  const checked = checkEgressProbe(props);
  throwIfProblems(checked.problems, 'EgressProbe props');
  const p = checked.value!;
  const name = p.name ?? 'egress-probe';
  const ns = p.namespace;
  const managed = { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'egress-probe' };
  const configName = `${name}-config`;
  const objects: KubeObject[] = [];
  const config: IConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configName, namespace: ns, labels: managed }, data: { 'blackbox.yml': blackboxConfig(p, name) } };
  objects.push(config as KubeObject);

  const exporter = (workload: string, egressClass: 'vpn' | 'direct'): { deployment: IDeployment; service: IService; extra: KubeObject[] } => {
    const steering = 'egressSteering' in p.via ? p.via.egressSteering : undefined;
    const classLabel = steering ? { [steering.egressClassLabel ?? DEFAULT_EGRESS_CLASS_LABEL]: egressClass === 'vpn' ? (steering.vpnClass ?? 'vpn') : 'direct' } : {};
    const labels = { 'app.kubernetes.io/name': workload, ...managed };
    let spec: IPodSpec = {
      containers: [{
        name: 'blackbox-exporter',
        image: p.image ?? DEFAULT_BLACKBOX_IMAGE,
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
      const route = planRoute(p.via.vpnGateway, { namespace: ns, podLabels: labels, name: workload });
      spec = applyRoute(spec, route);
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

  for (const m of modules(p, name)) {
    const prober = m.egressClass === 'vpn' ? name : `${name}-direct`;
    objects.push({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Probe',
      metadata: { name: m.job, namespace: ns, labels: { ...managed, ...(p.monitoring?.ruleLabels ?? {}) } },
      spec: {
        jobName: m.job,
        interval: p.interval ?? '60s',
        module: m.key,
        prober: { url: `${prober}.${ns}.svc:${BLACKBOX_PORT}` },
        targets: { staticConfig: { static: [...p.targets], labels: { egress_class: m.egressClass, ip_family: `ipv${m.family}` } } },
      },
    });
  }
  if (p.dnsLeak) {
    objects.push({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Probe',
      metadata: { name: `${name}-dns-leak`, namespace: ns, labels: { ...managed, ...(p.monitoring?.ruleLabels ?? {}) } },
      spec: {
        jobName: `${name}-dns-leak`,
        interval: p.interval ?? '60s',
        module: DNS_LEAK_MODULE,
        // The dns prober's target is the resolver it asks: the one vpn-class pods use, asked from their placement.
        prober: { url: `${name}.${ns}.svc:${BLACKBOX_PORT}` },
        targets: { staticConfig: { static: [dnsLeakResolver(p)], labels: { egress_class: 'vpn', check: 'dns-leak' } } },
      },
    });
  }
  objects.push({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name, namespace: p.monitoring?.namespace ?? 'monitoring', labels: { ...managed, ...(p.monitoring?.ruleLabels ?? {}) } },
    spec: { groups: egressProbeAlertGroups(p) },
  });
  return { objects, hosts: [], values: {}, warnings: [] };
}
