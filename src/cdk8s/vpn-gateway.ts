import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { objectClaims } from '../invariants';
import { Construct, IConstruct } from 'constructs';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { Problem, throwIfProblems, ValidationError } from '../errors';
import { requiredLevel } from '../model/pod-security';
import * as vpnGatewayModel from '../model/vpn-gateway';
import type { RouteTarget, VpnGatewayProps, VpnGatewaySpec } from '../model/vpn-gateway';
import type { RoutePlan } from '../render/vpn-gateway';
import { Plan } from '../types';
import { planAt, emitObject, TunnelwrightConstruct } from './base';
import { autoscalersOf } from './checks';
import * as vpnGatewayRender from '../render/vpn-gateway';

/**
 * A shared VPN egress gateway: one gluetun + pod-gateway pod that routed workloads send their traffic through over
 * VXLAN. `route(workload)` routes a Deployment, StatefulSet or DaemonSet through it, with its kill switch.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import * as kplus from 'cdk8s-plus-28';
 * import { App, VpnGateway } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * const chart = new Chart(app, 'media');
 * // Routed pods need Pod Security level privileged (the client init container adds NET_ADMIN and NET_RAW).
 * new kplus.Namespace(chart, 'namespace', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
 * const gateway = new VpnGateway(chart, 'nordvpn', {
 *   clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], // pods, services
 *   nodeCidrs: ['192.168.1.0/24'],
 *   vpnProvider: 'nordvpn',
 *   wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, // key 'private-key', in namespace vpn-gateway
 *   serverCountries: ['Switzerland'],
 * });
 * const qbittorrent = new kplus.Deployment(chart, 'qbittorrent', {
 *   metadata: { name: 'qbittorrent', namespace: 'media' },
 *   // linuxserver images start as root and drop to PUID/PGID themselves
 *   containers: [{ image: 'lscr.io/linuxserver/qbittorrent:5.0.3', portNumber: 8080, securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false } }],
 * });
 * gateway.route(qbittorrent);
 * app.synth();
 * ```
 */
export class VpnGateway extends TunnelwrightConstruct {
  /** The core plan. */
  public readonly plan: Plan;
  /** The props it was built from (EgressConformance takes the construct for them). */
  public readonly props: VpnGatewayProps;
  /** The props parsed once: what every plan of the gateway and its routes is made from. */
  private readonly spec: VpnGatewaySpec;
  private readonly routed = new Set<string>();
  /** The port-forwarding workload's ApiObject, once routed, and where (read again at synth). */
  private forwarded?: { obj: ApiObject; at: string; routed: RouteTarget };
  /** Every workload routed, as planned. */
  private readonly routedTargets: RouteTarget[] = [];
  /** @internal */
  public readonly _synthProblems = (): Problem[] => this.forwardedProblems();

  public constructor(scope: Construct, id: string, props: VpnGatewayProps) {
    const { spec, plan } = planAt(scope, id, 'VpnGateway', () => vpnGatewayRender.gatewayPlan(props));
    super(scope, id, plan, [...spec.claims, ...objectClaims(plan.objects, spec.cluster)]);
    this.plan = plan;
    this.props = props;
    this.spec = spec;
    this._vxlan = { gateway: vpnGatewayRender.vpnGatewayVxlan(spec, this.node.path) };
  }

  /**
   * The port-forwarding workload as written: its final `spec.replicas` (a patch added after route() counts), its final
   * `metadata.name` and `spec.ordinals.start` against route()'s, and an autoscaler of the app that targets it.
   */
  private forwardedProblems(): Problem[] {
    return [...vpnGatewayModel.checkForwardedWorkloadRouted(this.spec, this.routedTargets, this.node.path), ...(this.forwarded ? forwardedAtSynth(this.forwarded) : [])];
  }

  /**
   * Routes a workload (an ApiObject of kind Deployment, StatefulSet or DaemonSet, or a cdk8s-plus workload) through
   * the gateway: the client init container first, the sidecar, DNS through the gateway, the settings ConfigMap in
   * the workload's namespace and a kill switch for its pods. Returns the route plan. The port-forwarding workload
   * (`portForwarding.workload`) must be a StatefulSet of one replica (`kplus.StatefulSet`): a Deployment or DaemonSet
   * is refused, since either can run two pods on its fixed VXLAN address. Its init container runs only in the pod
   * `<name>-<spec.ordinals.start>`, and at synth the workload as finally written (a `replicas` patch after route(), or
   * a `metadata.name` or `spec.ordinals` patch after route(): name and set ordinals before calling it) and a
   * HorizontalPodAutoscaler of the app that targets it are refused.
   *
   * The ConfigMap and the kill switch are children of the workload's ApiObject: they are written into the workload's
   * chart, and a dependency on the workload (`workload.node.addDependency(namespace)`) or on its chart
   * (`chart.addDependency(…)`) orders them too. A workload is routed once, through one gateway.
   */
  public route(workload: ApiObject | IConstruct): RoutePlan {
    const refuse = (message: string): never => {
      throw new ValidationError([{ path: 'route(workload)', code: 'workload', message }], `VpnGateway route at ${this.node.path}`);
    };
    let obj: ApiObject | undefined;
    try {
      obj = workload instanceof ApiObject ? workload : ApiObject.of(workload);
    } catch {
      obj = undefined;
    }
    if (!obj) return refuse(`expected an ApiObject of kind ${vpnGatewayModel.ROUTABLE_KINDS.join(', ')} (or a cdk8s-plus workload), received ${workload === null ? 'null' : typeof workload === 'object' ? 'a construct without an ApiObject' : typeof workload}`);
    if (!(vpnGatewayModel.ROUTABLE_KINDS as readonly string[]).includes(obj.kind)) refuse(`expected a ${vpnGatewayModel.ROUTABLE_KINDS.join(', ')}, received a ${obj.kind} (${obj.node.path})`);
    const json = targetJson(obj);
    if (!Array.isArray(json.spec?.template?.spec?.containers)) refuse(`expected ${obj.node.path} to have spec.template.spec.containers: a workload without a pod template cannot be routed`);
    const template = json.spec!.template!;
    const by = ROUTED_BY.get(obj);
    if (by !== undefined) refuse(`${obj.node.path} is already routed through ${by}: route a workload once, through one gateway (a second route would add a second client init container and a second kill switch)`);
    const target = targetOf(obj, json);
    const namespace = target.namespace;
    const forwarded = this.spec.portForwarding?.workload;
    throwIfProblems(vpnGatewayModel.checkRoute(forwarded, target), 'VpnGateway route');
    const route = vpnGatewayRender.renderRoute(this.spec, target);
    ROUTED_BY.set(obj, this.node.path);
    this.routedTargets.push(target);
    if (vpnGatewayModel.isForwardedTarget(forwarded, target)) this.forwarded = { obj, at: `${this.node.path}:route(${obj.node.path})`, routed: target };
    this._fences.push(vpnGatewayRender.routeFence(this.spec, target, route, this.node.path));
    const routed = vpnGatewayRender.applyRoute(template.spec as unknown as IPodSpec, route);
    this._podSecurity.push({ namespace, what: `the routed ${obj.kind} ${namespace}/${json.metadata.name}`, need: requiredLevel(routed), at: `${this.node.path}:route(${obj.node.path})` });
    const base = '/spec/template/spec';
    const pod = template.spec!;
    const l1 = obj.toJson !== ApiObject.prototype.toJson;
    const fit = <T>(c: T): T => (l1 ? l1Quantities(c) : c);
    // slskd's VPN integration: env on its container (the core picks the index; applyRoute above refused a clash).
    const appEnv: JsonPatch[] = [];
    if (route.appEnv) {
      const i = vpnGatewayRender.appContainerIndex(template.spec as unknown as IPodSpec, route);
      const own = (pod.containers as { env?: unknown[] }[])[i].env;
      if (own) appEnv.push(...route.appEnv.env.map((e) => JsonPatch.add(`${base}/containers/${i}/env/-`, e)));
      else appEnv.push(JsonPatch.add(`${base}/containers/${i}/env`, route.appEnv.env));
    }
    obj.addJsonPatch(
      ...appEnv,
      pod.initContainers ? JsonPatch.add(`${base}/initContainers/0`, fit(route.initContainer)) : JsonPatch.add(`${base}/initContainers`, [fit(route.initContainer)]),
      JsonPatch.add(`${base}/containers/-`, fit(route.sidecar)),
      ...route.extraContainers.map((c) => JsonPatch.add(`${base}/containers/-`, fit(c))),
      pod.volumes ? JsonPatch.add(`${base}/volumes/-`, route.volume) : JsonPatch.add(`${base}/volumes`, [route.volume]),
      ...route.extraVolumes.map((v) => JsonPatch.add(`${base}/volumes/-`, v)),
      JsonPatch.add(`${base}/dnsPolicy`, route.dnsPolicy),
      JsonPatch.add(`${base}/dnsConfig`, route.dnsConfig),
    );
    for (const o of route.objects) {
      const key = `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
      if (this.routed.has(key)) continue;
      this.routed.add(key);
      // Children of the workload's ApiObject, in the workload's chart: a dependency put on the workload, on any
      // construct above it or on its Chart covers them, because cdk8s adds every ApiObject under a dependency's
      // source to it (cdk8s lib/app.js resolveDependencies: `cache.findAll(dep.source.node)`), and a chart writes the
      // ApiObjects under it in that dependency order (chartToKube: DependencyGraph(chart.node).topology()).
      emitObject(obj, o);
    }
    return route;
  }
}

/** The port-forwarding workload as written (after every patch) and the app's autoscalers (`checkForwardedWorkloadAtSynth`). */
function forwardedAtSynth(forwarded: { obj: ApiObject; at: string; routed: RouteTarget }): Problem[] {
  const { obj, at, routed } = forwarded;
  const json = targetJson(obj);
  const target = targetOf(obj, json);
  return vpnGatewayModel.checkForwardedWorkloadAtSynth(target, autoscalersOf(obj.node.root), at, routed);
}

type WorkloadJson = { metadata: { name: string; namespace?: string }; spec?: { replicas?: number; ordinals?: { start?: number }; template?: { metadata?: { labels?: Record<string, string> }; spec?: { initContainers?: unknown[]; volumes?: unknown[]; containers?: unknown[] } } } };

function targetJson(obj: ApiObject): WorkloadJson {
  return obj.toJson() as WorkloadJson;
}

/** The core's view of a workload's ApiObject (as its JSON is now). */
function targetOf(obj: ApiObject, json: WorkloadJson): RouteTarget {
  const namespace = json.metadata.namespace ?? Chart.of(obj).namespace ?? 'default';
  return { namespace, podLabels: json.spec?.template?.metadata?.labels ?? {}, name: json.metadata.name, kind: obj.kind as RouteTarget['kind'], ...(json.spec?.replicas !== undefined ? { replicas: json.spec.replicas } : {}), ...(json.spec?.ordinals?.start !== undefined ? { ordinalsStart: json.spec.ordinals.start } : {}) };
}

/** The gateway (its construct path) each routed workload's ApiObject went through. */
const ROUTED_BY = new WeakMap<ApiObject, string>();

/**
 * A container for a JSON patch on an imported L1 (cdk8s-plus' `KubeDeployment` …): its `toJson()` maps the already
 * patched JSON through `toJson_ResourceRequirements`, which reads each quantity's `.value` (cdk8s-plus-28
 * lib/imports/k8s.js `toJson_ResourceRequirements`), so a plain '64Mi' would come out as null. Wrapped as
 * `{ value }` it comes out as '64Mi'.
 */
function l1Quantities<T>(container: T): T {
  const c = container as { resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> } };
  if (!c.resources) return container;
  const wrap = (q: Record<string, unknown>) => Object.fromEntries(Object.entries(q).map(([k, v]) => [k, { value: v }]));
  const resources = { ...(c.resources.requests ? { requests: wrap(c.resources.requests) } : {}), ...(c.resources.limits ? { limits: wrap(c.resources.limits) } : {}) };
  return { ...container, resources } as T;
}
