import { Problem, throwIfProblems } from '../errors';
import type { Cidr } from './common';
import {
  DEFAULT_AGENT_IMAGE, DEFAULT_CONFORMANCE_IMAGE, DEFAULT_RECOVERY_SECONDS, DEFAULT_REQUEST_TIMEOUT_SECONDS, EgressConformanceProps, inspectEgressConformance,
} from './egress-conformance';
import { ConformanceFailoverOptions, failoverSecondsOf, FailoverTiming, gatewayFailoverTiming, steeringFailoverTiming } from './egress-conformance-failover';
import type { EgressSteeringSpec } from './egress-steering-spec';
import { boundedName } from './labels';
import { checkRoute, RouteTarget, VpnGatewaySpec } from './vpn-gateway';

/** The labels every object of the check carries. */
export const CONFORMANCE_MANAGED_LABELS = { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'egress-conformance' } as const;

/** A gateway the check proves: its spec, and the routed vpn-class probe (the route's target) and the direct-class control. */
export interface ConformanceGatewaySpec {
  readonly gateway: VpnGatewaySpec;
  readonly probeNamespace: string;
  /** The vpn-class probe Deployment, as the gateway routes it. */
  readonly route: RouteTarget;
  /** The direct-class control probe's Deployment. */
  readonly directProbe: string;
  /** The failover step's bound (R5, egress-conformance-failover): absent when it runs none. */
  readonly failoverSeconds?: number;
  /** With the step: how long it lets the holder's agent settle after R4 (`FailoverTiming.settleSeconds`). */
  readonly failoverSettleSeconds?: number;
}

/** A steering the check proves: its spec, where its probes and node agent run, and the class the control probe carries. */
export interface ConformanceSteeringSpec {
  readonly steering: EgressSteeringSpec;
  readonly probeNamespace: string;
  /** The systemd unit of the tunnel, as given (else the steering's own: render names it). */
  readonly tunnelUnit?: string;
  /** `agentNamespace`, else `probeNamespace`. */
  readonly agentNamespace: string;
  /** The class the direct-class control probe and the node agent carry (`directClassOf`; the model refused a steering that admits none where they run). */
  readonly directClass: string;
  readonly vpnProbe: string;
  readonly directProbe: string;
  readonly agent: string;
  /** The failover step's bound (R5, egress-conformance-failover): absent when it runs none. */
  readonly failoverSeconds?: number;
  /** With the step: how long it lets the holder's agent settle after R4 (`FailoverTiming.settleSeconds`). */
  readonly failoverSettleSeconds?: number;
}

/**
 * EgressConformance's props parsed once (`parseEgressConformance`): defaults applied, each gateway and steering parsed
 * into its own spec, the probes' names derived. The render functions take only this.
 */
export interface EgressConformanceSpec {
  readonly cluster: string;
  readonly name: string;
  readonly namespaces: readonly string[];
  readonly targets: readonly string[];
  readonly wanIps: readonly string[];
  readonly vpnCidrs: readonly Cidr[];
  readonly recoverySeconds: number;
  readonly requestTimeoutSeconds: number;
  readonly image: string;
  readonly agentImage: string;
  readonly vpnGateways: readonly ConformanceGatewaySpec[];
  readonly egressSteerings: readonly ConformanceSteeringSpec[];
  /** The props' warnings (`checkEgressConformance`), carried to the plan. */
  readonly warnings?: readonly Problem[];
}

/** The class the direct-class control probe carries: 'direct', or the first class other than the vpn class that the steering's label enforcement admits. */
function directClassOf(s: EgressSteeringSpec): string {
  return s.enforceLabels ? s.enforceLabels.classes.find((c) => c !== s.vpnClass) ?? 'direct' : 'direct';
}

const bound = (source: ConformanceFailoverOptions, timing: FailoverTiming | undefined, global: number | undefined) => {
  const seconds = failoverSecondsOf(source, timing, global);
  return seconds === undefined || timing === undefined ? {} : { failoverSeconds: seconds, failoverSettleSeconds: timing.settleSeconds };
};

function specOf(p: EgressConformanceProps, gateways: readonly (VpnGatewaySpec | undefined)[], steerings: readonly (EgressSteeringSpec | undefined)[]): EgressConformanceSpec {
  const name = p.name ?? 'egress-conformance';
  return {
    cluster: p.cluster ?? 'default',
    name,
    namespaces: p.namespaces,
    targets: p.targets,
    wanIps: p.wanIps,
    vpnCidrs: p.vpnCidrs,
    recoverySeconds: p.recoverySeconds ?? DEFAULT_RECOVERY_SECONDS,
    requestTimeoutSeconds: p.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS,
    image: p.image ?? DEFAULT_CONFORMANCE_IMAGE,
    agentImage: p.agentImage ?? DEFAULT_AGENT_IMAGE,
    vpnGateways: (p.vpnGateways ?? []).map((g, i) => {
      const vpnProbe = boundedName(`${name}-g${i}`, '-vpn');
      return {
        gateway: gateways[i]!,
        probeNamespace: g.probeNamespace,
        route: { namespace: g.probeNamespace, podLabels: { 'app.kubernetes.io/name': vpnProbe, ...CONFORMANCE_MANAGED_LABELS }, name: vpnProbe },
        directProbe: boundedName(`${name}-g${i}`, '-direct'),
        ...bound(g, gatewayFailoverTiming(g.gateway as unknown as Record<string, unknown>), p.failoverSeconds),
      };
    }),
    egressSteerings: (p.egressSteerings ?? []).map((s, i) => ({
      steering: steerings[i]!,
      probeNamespace: s.probeNamespace,
      ...(s.tunnelUnit !== undefined ? { tunnelUnit: s.tunnelUnit } : {}),
      agentNamespace: s.agentNamespace ?? s.probeNamespace,
      directClass: directClassOf(steerings[i]!),
      vpnProbe: boundedName(`${name}-s${i}`, '-vpn'),
      directProbe: boundedName(`${name}-s${i}`, '-direct'),
      agent: boundedName(`${name}-s${i}`, '-agent'),
      ...bound(s, steeringFailoverTiming(s.steering as unknown as Record<string, unknown>), p.failoverSeconds),
    })),
  };
}

/**
 * Parses EgressConformance props: the spec, or the problems (all at once, the gateways' and steerings' among them).
 * A vpn-class probe named as its gateway's port-forwarding workload would be routed as that workload: refused at `name`.
 */
export function parseEgressConformance(input: unknown): { problems: Problem[]; warnings: Problem[]; spec?: EgressConformanceSpec } {
  const checked = inspectEgressConformance(input);
  if (!checked.value) return { problems: checked.problems, warnings: checked.warnings };
  const spec = { ...specOf(checked.value, checked.gateways, checked.steerings), ...(checked.warnings.length > 0 ? { warnings: checked.warnings } : {}) };
  const route = spec.vpnGateways.flatMap((g) => checkRoute(g.gateway.portForwarding?.workload, g.route)).map((p) => ({ ...p, path: 'name' }));
  if (route.length > 0) return { problems: route, warnings: checked.warnings };
  return { problems: [], warnings: checked.warnings, spec };
}

/** The spec of EgressConformance props, or a ValidationError with all their problems. */
export function egressConformanceSpec(input: unknown): EgressConformanceSpec {
  const parsed = parseEgressConformance(input);
  throwIfProblems(parsed.problems, 'EgressConformance props');
  return parsed.spec!;
}
