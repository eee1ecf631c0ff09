import { Problem } from '../../errors';
import { describeValue, isRecord, received } from '../common';
import { isDnsLabel, isDnsSubdomain } from '../labels';
import type { VpnGatewaySpec } from './spec';

/** Kinds `route()` accepts. */
export const ROUTABLE_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet'] as const;

/** The workload a gateway routes: its namespace, pod labels and name. */
export interface RouteTarget {
  readonly namespace: string;
  readonly podLabels: Record<string, string>;
  /** The workload's name (a port-forwarding target is matched by it and its namespace). */
  readonly name: string;
  /**
   * The workload's kind. The port-forwarding workload (`portForwarding.workload`) must be a StatefulSet: it is the only
   * kind that never runs two pods of one replica at once (see `planRoute`). @default 'Deployment'
   */
  readonly kind?: typeof ROUTABLE_KINDS[number];
  /** The workload's `spec.replicas` (for the port-forwarding workload, a plain number: 0 or 1). @default 1 */
  readonly replicas?: number;
  /**
   * The StatefulSet's `spec.ordinals.start` (a plain whole number): the port-forwarding workload's one pod is
   * `<name>-<start>`, and its init container refuses to start in any other pod. @default 0
   */
  readonly ordinalsStart?: number;
}

/** The port-forwarding workload a gateway names (`portForwarding.workload` in `workloadNamespace`, with `toPort` or `app`). */
export type ForwardedWorkload = NonNullable<NonNullable<VpnGatewaySpec['portForwarding']>['workload']>;

/** Whether `target` is `forwarded`, the gateway's port-forwarding workload (its name and namespace). */
export function isForwardedTarget(forwarded: Pick<ForwardedWorkload, 'name' | 'namespace'> | undefined, target: RouteTarget): boolean {
  return forwarded !== undefined && isRecord(target) && forwarded.name === target.name && forwarded.namespace === target.namespace;
}

/**
 * The port-forwarding workload named by props that may not parse (`planRoute` reports a route's problems beside the
 * gateway's own, all at once): `portForwarding.workload` and `workloadNamespace`, with `toPort` or `app`.
 */
export function forwardedWorkloadOf(input: unknown): Pick<ForwardedWorkload, 'name' | 'namespace'> | undefined {
  const pf = isRecord(input) && isRecord(input.portForwarding) ? input.portForwarding : undefined;
  if (!pf || (pf.toPort === undefined && pf.app === undefined)) return undefined;
  return { name: pf.workload as string, namespace: pf.workloadNamespace as string };
}

/** The problems of routing `target` through a gateway whose port-forwarding workload is `forwarded`. */
export function checkRoute(forwarded: Pick<ForwardedWorkload, 'name' | 'namespace'> | undefined, target: unknown): Problem[] {
  const problems = checkRouteTarget(target);
  if (isForwardedTarget(forwarded, target as RouteTarget)) problems.push(...checkForwardedTarget(target as RouteTarget));
  return problems;
}

/**
 * The gateway's port-forwarding workload, if no route of the app matched it (its name and namespace): the gateway
 * would forward to the fixed VXLAN address nobody holds, and no port-sync sidecar would run. `routed` are the
 * workloads the gateway routed; `path` is where to report it (the gateway's construct path).
 */
export function checkForwardedWorkloadRouted(spec: VpnGatewaySpec, routed: readonly RouteTarget[], path: string): Problem[] {
  const w = spec.portForwarding?.workload;
  if (!w || routed.some((t) => isForwardedTarget(w, t))) return [];
  const seen = routed.length === 0 ? 'it routed no workload' : `it routed ${routed.map((t) => `${t.namespace}/${t.name}`).join(', ')}`;
  return [{ path: `${path}:portForwarding.workload`, code: 'not-routed', message: `the port-forwarding workload ${w.namespace}/${w.name} is not routed through this gateway (${seen}): the forwarded port would reach no pod; route it with route(), giving it metadata.name ${w.name} (cdk8s-plus names an object from its construct path otherwise) in namespace ${w.namespace}, or correct portForwarding.workload and workloadNamespace` }];
}

/** The problems of a route target (from JavaScript or YAML, anything may arrive). */
function checkRouteTarget(target: unknown): Problem[] {
  if (!isRecord(target)) return [{ path: 'route', code: 'type', message: `expected the workload to route ({ namespace, podLabels, name }), received ${typeof target === 'object' ? 'null' : typeof target}` }];
  const problems: Problem[] = [];
  if (typeof target.namespace !== 'string' || !isDnsLabel(target.namespace)) problems.push({ path: 'route.namespace', code: 'namespace', message: `expected the workload's namespace, ${typeof target.namespace === 'string' ? received(target.namespace) : `received ${typeof target.namespace}`}` });
  if (typeof target.name !== 'string' || !isDnsSubdomain(target.name)) problems.push({ path: 'route.name', code: 'name', message: `expected the workload's name, ${typeof target.name === 'string' ? received(target.name) : `received ${typeof target.name}`}` });
  const labels = target.podLabels;
  if (!isRecord(labels) || Object.values(labels).some((v) => typeof v !== 'string')) problems.push({ path: 'route.podLabels', code: 'labels', message: 'expected the pod template\'s labels: a map of strings' });
  else if (Object.keys(labels).length === 0) problems.push({ path: 'route.podLabels', code: 'selector-empty', message: 'the routed workload has no pod labels: its kill switch would select every pod in the namespace' });
  return problems;
}

/**
 * The problems of the port-forwarding workload: anything but a StatefulSet of 0 or 1 replica can run two pods on its
 * one fixed VXLAN address (see `planRoute`). `replicas` must be a plain number: a value known only later (a Pulumi
 * Output) cannot be checked.
 */
function checkForwardedTarget(target: RouteTarget): Problem[] {
  const what = `${String(target.namespace)}/${String(target.name)}`;
  const kind: unknown = target.kind ?? 'Deployment';
  const first = `${String(target.name)}-${typeof target.ordinalsStart === 'number' ? target.ordinalsStart : 0}`;
  // A cdk8s-plus StatefulSet makes its headless Service from a container port, or takes `service` (cdk8s-plus-28
  // lib/stateful-set.js:73-79 `_createHeadlessService`): without either it throws.
  const sts = `make it a StatefulSet with replicas 1 (portForwarding.workload names it; a cdk8s-plus StatefulSet needs a container port or \`service\`): its controller starts ${first} again only once the old pod is gone`;
  const problems: Problem[] = [];
  if (kind !== 'StatefulSet') {
    const shown = target.kind === undefined ? 'a Deployment (route.kind unset: the default)'
      : typeof kind === 'string' && /^[A-Z][A-Za-z]{0,62}$/.test(kind) ? `a ${kind}` : `of kind ${describeValue(kind)}`;
    const why = kind === 'DaemonSet'
      ? 'it runs a pod on every node it fits, and each would take the one fixed VXLAN address'
      : kind === 'Deployment' || kind === 'ReplicaSet'
        ? `${kind === 'Deployment' ? 'its ReplicaSet' : 'the ReplicaSet controller'} starts the replacement pod as soon as the old one is terminating (a pod delete, a drain, an eviction${kind === 'Deployment' ? '; `Recreate` covers rollouts only' : ''}), and both hold the one fixed VXLAN address until the old one is killed, since pod-gateway's sidecar ignores SIGTERM`
        : 'only a StatefulSet never runs two pods of one replica at once, and two would both take the one fixed VXLAN address';
    problems.push({ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload ${what} is ${shown}: ${why}; ${sts}` });
  }
  const start: unknown = target.ordinalsStart;
  if (start !== undefined && (typeof start !== 'number' || !Number.isInteger(start) || start < 0)) {
    problems.push({ path: 'route.ordinalsStart', code: 'type', message: `expected the port-forwarding workload ${what}'s spec.ordinals.start as a plain whole number, received ${describeValue(start)}: its init container lets only the pod of that ordinal start` });
  }
  const replicas: unknown = target.replicas;
  if (replicas !== undefined && (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)) {
    problems.push({ path: 'route.replicas', code: 'type', message: `expected the port-forwarding workload ${what}'s spec.replicas as a plain whole number (0 or 1), received ${describeValue(replicas)}: a value known only at deploy time (a Pulumi Output) cannot be checked for a second pod` });
  } else if (typeof replicas === 'number' && replicas > 1) {
    problems.push({ path: 'route.replicas', code: 'two-pods', message: `the port-forwarding workload ${what} has ${replicas} replicas: they would all take the one fixed VXLAN address and one forwarded port; set replicas to 1` });
  }
  return problems;
}

/** An autoscaler in the app (a HorizontalPodAutoscaler's `spec.scaleTargetRef`), for `checkForwardedWorkloadAtSynth`. */
export interface AutoscalerTarget {
  /** Where it is (a construct path), named in the problem. */
  readonly at: string;
  readonly namespace: string;
  /** `spec.scaleTargetRef.kind`. */
  readonly kind: string;
  /** `spec.scaleTargetRef.name`. */
  readonly name: string;
}

/**
 * The problems of the port-forwarding workload as it is finally written (an adapter reads it once the app is built,
 * after every patch): `final` is the routed target read again (a `replicas` patch added after route() counts), and
 * an autoscaler of the app that scales it is refused, since its second pod would start (and, without the init
 * container's check, take the fixed address: see `forwardedInit` in src/render/vpn-gateway/route.ts). `path` prefixes each problem's path.
 * `routed`, the target as route() saw it, is what its init command (`<name>-<ordinals.start>`) and nat.conf key were
 * made from: a `metadata.name` or `spec.ordinals.start` patched after route() is refused, since the StatefulSet
 * controller creates only `<final name>-<final start>` (kubernetes v1.28.0 pkg/controller/statefulset/
 * stateful_set_control.go:614-631, `podInOrdinalRange`/`newVersionedStatefulSetPod`), which the guard would refuse.
 */
export function checkForwardedWorkloadAtSynth(final: RouteTarget, autoscalers: readonly AutoscalerTarget[], path: string, routed?: RouteTarget): Problem[] {
  const problems = checkForwardedTarget(final).map((p) => ({ ...p, path: `${path}${p.path.replace(/^route/, '')}`, message: `as written, after every patch: ${p.message}` }));
  if (routed && routed.name !== final.name) {
    problems.push({ path: `${path}.metadata.name`, code: 'changed-after-route', message: `as written, after every patch: the port-forwarding workload is named ${final.namespace}/${final.name}, but route() made its vpn-route-init guard and nat.conf entry for ${routed.name}: its pod ${final.name}-${final.ordinalsStart ?? 0} would be refused and never start; call route() after naming the workload (or do not patch metadata.name after route())` });
  } else if (routed && (routed.ordinalsStart ?? 0) !== (final.ordinalsStart ?? 0)) {
    problems.push({ path: `${path}.ordinals`, code: 'changed-after-route', message: `as written, after every patch: the port-forwarding workload ${final.namespace}/${final.name} has spec.ordinals.start ${String(final.ordinalsStart ?? 0)}, but route() made its vpn-route-init guard for ${routed.name}-${String(routed.ordinalsStart ?? 0)}: the controller creates only ${final.name}-${String(final.ordinalsStart ?? 0)}, which the guard refuses, so it would never start; call route() after setting ordinals (or do not patch them after route())` });
  }
  for (const a of autoscalers) {
    if (a.kind !== final.kind || a.name !== final.name || a.namespace !== final.namespace) continue;
    problems.push({ path: `${path}.autoscaler`, code: 'two-pods', message: `the HorizontalPodAutoscaler ${a.at} scales the port-forwarding workload ${final.namespace}/${final.name}: a second pod could not take the one fixed VXLAN address (its init container refuses any pod but ${final.name}-${final.ordinalsStart ?? 0}) and would never start; remove the autoscaler (the forwarded workload runs one replica)` });
  }
  return problems;
}

/**
 * The problems of a pod spec to route (`spec.template.spec` as the user wrote it): its shape, and with slskd's
 * environment (`appEnv`) the container that gets it (`portForwarding.appContainer`, else the first) and a variable it
 * already sets (it would be set twice, and Kubernetes keeps the last). A spec that already has the route's init
 * container (`initContainer`) is routed already and has none. The first problem found, as the spec cannot be read past it.
 */
export function checkRoutedPodSpec(spec: unknown, initContainer: string, appEnv?: { readonly container?: string; readonly env: readonly { readonly name: string }[] }): Problem[] {
  if (!isRecord(spec) || !Array.isArray(spec.containers) || spec.containers.some((c) => !isRecord(c))) {
    return [{ path: 'spec', code: 'pod-spec', message: 'expected a pod spec with its containers (spec.template.spec of a Deployment, StatefulSet or DaemonSet)' }];
  }
  for (const key of ['initContainers', 'volumes'] as const) {
    if (spec[key] !== undefined && !Array.isArray(spec[key])) return [{ path: `spec.${key}`, code: 'type', message: `expected a list, received ${describeValue(spec[key])}` }];
  }
  const containers = spec.containers as { name: string; env?: { name: string }[] }[];
  if (((spec.initContainers ?? []) as { name: string }[]).some((c) => c.name === initContainer) || !appEnv) return [];
  const want = appEnv.container;
  const i = want === undefined ? 0 : containers.findIndex((c) => c.name === want);
  if (i < 0) {
    return [{ path: 'portForwarding.appContainer', code: 'container', message: `the routed workload has no container "${want}" (it has ${containers.map((c) => `"${c.name}"`).join(', ')}): name the container that runs slskd` }];
  }
  const own = new Set((containers[i].env ?? []).map((e) => e.name));
  const clash = appEnv.env.filter((e) => own.has(e.name)).map((e) => e.name);
  if (clash.length > 0) {
    return [{ path: `spec.containers[${i}].env`, code: 'conflict', message: `the container "${containers[i].name}" already sets ${clash.join(', ')}: remove ${clash.length > 1 ? 'them' : 'it'}, the gateway sets slskd's VPN integration (the API key from portForwarding.controlApiKeySecret)` }];
  }
  return [];
}
