import { Problem, throwIfProblems } from '../errors';
import type { Cidr } from './common';
import { DEFAULT_BLACKBOX_IMAGE, DEFAULT_DNS_LEAK_NAME, EgressProbeProps, inspectEgressProbe } from './egress-probe';
import { DEFAULT_EGRESS_CLASS_LABEL } from './egress-steering';
import { parseCidr } from './net';
import { durationSeconds } from './values';
import { checkRoute, RouteTarget, VpnGatewaySpec } from './vpn-gateway';

/** One blackbox HTTP module of the probe: its key in blackbox.yml, its Probe's job, the class it runs as, its family. */
export interface ProbeModule {
  readonly key: 'vpn_ipv4' | 'vpn_ipv6' | 'direct_ipv4';
  readonly job: string;
  readonly egressClass: 'vpn' | 'direct';
  readonly family: 4 | 6;
}

/** The labels every object of the probe carries. */
export const PROBE_MANAGED_LABELS = { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'egress-probe' } as const;

/**
 * EgressProbe's props parsed once (`parseEgressProbe`): defaults applied, the gateway it goes through parsed into its
 * own spec, the ranges split by family, the modules and the DNS-leak resolver derived. The render functions take only this.
 */
export interface EgressProbeSpec {
  readonly cluster: string;
  readonly name: string;
  readonly namespace: string;
  /**
   * Routed through a VpnGateway (its spec, and the probe's vpn-class Deployment as the route's target), or labelled
   * for an EgressSteering's vpn class (its class label and value, defaults applied).
   */
  readonly via:
    | { readonly vpnGateway: VpnGatewaySpec; readonly route: RouteTarget }
    | { readonly egressSteering: { readonly classLabel: string; readonly vpnClass: string } };
  readonly targets: readonly string[];
  readonly wanIps: readonly string[];
  /** `vpnCidrs` by family (empty when not given). */
  readonly vpnCidrs: { readonly 4: readonly Cidr[]; readonly 6: readonly Cidr[] };
  /** The interval as written (`60s` unless given), and in seconds. */
  readonly interval: string;
  readonly intervalSeconds: number;
  readonly monitoring: { readonly namespace: string; readonly ruleLabels: Readonly<Record<string, string>>; readonly runbookUrl?: string };
  readonly directTwin: boolean;
  readonly image: string;
  /** The HTTP modules, in order: vpn IPv4, vpn IPv6 (with `ipv6`), direct IPv4 (with `directTwin`). */
  readonly modules: readonly ProbeModule[];
  /** The DNS-leak probe, its name and resolver defaulted (the gateway's dnsmasq, the VXLAN network's .1). */
  readonly dnsLeak?: { readonly queryName: string; readonly resolver: string; readonly leakedCidrs: readonly Cidr[]; readonly tunnelCidrs?: readonly Cidr[] };
}

/** The labels of the probe's exporter `workload` (its Deployment, Service and pods). */
export function probeWorkloadLabels(workload: string): Record<string, string> {
  return { 'app.kubernetes.io/name': workload, ...PROBE_MANAGED_LABELS };
}

function modulesOf(p: EgressProbeProps, name: string): ProbeModule[] {
  const out: ProbeModule[] = [{ key: 'vpn_ipv4', job: `${name}-vpn-ipv4`, egressClass: 'vpn', family: 4 }];
  if (p.ipv6) out.push({ key: 'vpn_ipv6', job: `${name}-vpn-ipv6`, egressClass: 'vpn', family: 6 });
  if (p.directTwin) out.push({ key: 'direct_ipv4', job: `${name}-direct-ipv4`, egressClass: 'direct', family: 4 });
  return out;
}

/** The spec of props `checkEgressProbe` accepted; `gateway` is the spec of `via.vpnGateway` when there is one. */
function specOf(p: EgressProbeProps, gateway: VpnGatewaySpec | undefined): EgressProbeSpec {
  const name = p.name ?? 'egress-probe';
  const interval = p.interval ?? '60s';
  const vpn = p.vpnCidrs ?? [];
  const steering = 'egressSteering' in p.via ? p.via.egressSteering : undefined;
  const d = p.dnsLeak;
  return {
    cluster: p.cluster ?? 'default',
    name,
    namespace: p.namespace,
    via: gateway ? { vpnGateway: gateway, route: { namespace: p.namespace, podLabels: probeWorkloadLabels(name), name } }
      : { egressSteering: { classLabel: steering?.egressClassLabel ?? DEFAULT_EGRESS_CLASS_LABEL, vpnClass: steering?.vpnClass ?? 'vpn' } },
    targets: p.targets,
    wanIps: p.wanIps,
    vpnCidrs: { 4: vpn.filter((c) => parseCidr(c)!.family === 4), 6: vpn.filter((c) => parseCidr(c)!.family === 6) },
    interval,
    intervalSeconds: durationSeconds(interval)!,
    monitoring: { namespace: p.monitoring?.namespace ?? 'monitoring', ruleLabels: p.monitoring?.ruleLabels ?? {}, ...(p.monitoring?.runbookUrl ? { runbookUrl: p.monitoring.runbookUrl } : {}) },
    directTwin: p.directTwin === true,
    image: p.image ?? DEFAULT_BLACKBOX_IMAGE,
    modules: modulesOf(p, name),
    // checkEgressProbe requires the resolver with egressSteering: the default is the gateway's.
    ...(d ? { dnsLeak: {
      queryName: d.queryName ?? DEFAULT_DNS_LEAK_NAME,
      resolver: d.resolver ? d.resolver : `${gateway!.vxlanPrefix}.1`,
      leakedCidrs: d.leakedCidrs ?? [],
      ...(d.tunnelCidrs ? { tunnelCidrs: d.tunnelCidrs } : {}),
    } } : {}),
  };
}

/**
 * Parses EgressProbe props: the spec, or the problems (all at once, the gateway's and the probe's route's among them).
 * A probe named as the gateway's port-forwarding workload would be routed as that workload: refused at `name`.
 */
export function parseEgressProbe(input: unknown): { problems: Problem[]; warnings: Problem[]; spec?: EgressProbeSpec } {
  const checked = inspectEgressProbe(input);
  if (!checked.value) return { problems: checked.problems, warnings: checked.warnings };
  const spec = specOf(checked.value, checked.gateway);
  if ('vpnGateway' in spec.via) {
    const route = checkRoute(spec.via.vpnGateway.portForwarding?.workload, spec.via.route).map((p) => ({ ...p, path: 'name' }));
    if (route.length > 0) return { problems: route, warnings: checked.warnings };
  }
  return { problems: [], warnings: checked.warnings, spec };
}

/** The spec of EgressProbe props, or a ValidationError with all their problems. */
export function egressProbeSpec(input: unknown): EgressProbeSpec {
  const parsed = parseEgressProbe(input);
  throwIfProblems(parsed.problems, 'EgressProbe props');
  return parsed.spec!;
}
