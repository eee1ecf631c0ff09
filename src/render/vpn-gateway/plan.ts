/**
 * VpnGateway's entry points for a program that holds props, not a spec: each parses the props once
 * (`parseVpnGateway`), throws every problem at once, and renders from the spec. The adapters parse once in their
 * constructor and call the spec's render functions themselves.
 */
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { Problem, throwIfProblems } from '../../errors';
import { Claim } from '../../invariants';
import {
  checkPortForwardAlerts, checkRoute, checkRoutedPodSpec, checkVpnGateway, forwardedWorkloadOf, parseVpnGateway, RouteTarget, VpnGatewayProps, VpnGatewaySpec,
} from '../../model/vpn-gateway';
import { Plan } from '../../types';
import { PortForwardAlertOptions, renderPortForwardAlertGroups } from './alerts';
import { renderVpnGateway } from './gateway';
import { renderRoute, RoutePlan, routePodSpec } from './route';

/** Everything the gateway and its routes derive from the props, computed once: the gateway's spec. */
export type GatewayFacts = VpnGatewaySpec;

/** Returns the problems of VpnGateway props without throwing. */
export function validateVpnGateway(props: unknown): Problem[] {
  return checkVpnGateway(props).problems;
}

/** The spec of VpnGateway props, or a ValidationError with every problem. */
export function gatewayFacts(props: VpnGatewayProps): VpnGatewaySpec {
  const parsed = parseVpnGateway(props);
  throwIfProblems(parsed.problems, 'VpnGateway props');
  return parsed.spec!;
}

/** Plans the gateway: settings ConfigMap, headless Service (clients find the pod by DNS) and the Deployment. */
export function planVpnGateway(props: VpnGatewayProps): Plan {
  return gatewayPlan(props).plan;
}

/** The gateway's spec and its plan (with the props' warnings): what an adapter's constructor parses and emits. */
export function gatewayPlan(props: VpnGatewayProps): { spec: VpnGatewaySpec; plan: Plan } {
  const parsed = parseVpnGateway(props);
  throwIfProblems(parsed.problems, 'VpnGateway props');
  return { spec: parsed.spec!, plan: { ...renderVpnGateway(parsed.spec!), warnings: parsed.warnings } };
}

/** What the gateway claims across an App: its VXLAN id in its cluster, its key Secret, a pinned server with its credential. */
export function vpnGatewayClaims(props: VpnGatewayProps): Claim[] {
  return gatewayFacts(props).claims;
}

/**
 * Plans routing one workload through the gateway (`renderRoute`): the gateway's problems and the route's are thrown
 * together, all at once (the port-forwarding workload is read from the props as given when they do not parse).
 */
export function planRoute(gatewayProps: VpnGatewayProps, target: RouteTarget): RoutePlan {
  const parsed = parseVpnGateway(gatewayProps);
  const forwarded = parsed.spec ? parsed.spec.portForwarding?.workload : forwardedWorkloadOf(gatewayProps);
  throwIfProblems([...parsed.problems, ...checkRoute(forwarded, target)], 'VpnGateway route');
  return renderRoute(parsed.spec!, target);
}

/**
 * A pod spec routed through the gateway: the client init container first, the sidecar last, DNS by the gateway.
 * Refuses a spec that is not one, and slskd's environment for a container it lacks or that already sets it.
 */
export function applyRoute(spec: IPodSpec, route: RoutePlan): IPodSpec {
  throwIfProblems(checkRoutedPodSpec(spec, route.initContainer.name, route.appEnv), 'routed pod spec');
  return routePodSpec(spec, route);
}

/** Port forwarding's alert groups (`renderPortForwardAlertGroups`); refused for slskd, which has no port-sync to read. */
export function portForwardAlertGroups(props: VpnGatewayProps, opts: PortForwardAlertOptions = {}): { name: string; rules: Record<string, unknown>[] }[] {
  const spec = gatewayFacts(props);
  throwIfProblems(checkPortForwardAlerts(spec), 'port-forwarding alerts');
  return renderPortForwardAlertGroups(spec, opts);
}
