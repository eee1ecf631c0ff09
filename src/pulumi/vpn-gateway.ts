import * as k8s from '@pulumi/kubernetes';
import { objectClaims } from '../invariants';
import * as pulumi from '@pulumi/pulumi';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import * as vpnGatewayModel from '../model/vpn-gateway';
import type { RouteTarget, VpnGatewayProps, VpnGatewaySpec } from '../model/vpn-gateway';
import { childName, planAt, emitPlan, reserve } from './base';
import { declaredNamespaces, registerFence } from './registry';
import { lowerInputs } from './inputs';
import { formatProblems, throwIfProblems, ValidationError } from '../errors';
import { checkPodSecurity, PodSecurityNeed, podSecurityNeeds, requiredLevel } from '../model/pod-security';
import { KubeObject } from '../types';
import { once } from '../lazy';
import * as vpnGatewayRender from '../render/vpn-gateway';

/** A Secret reference whose name and key may come from other resources (`Input`s). */
export interface InputSecretKeyRef {
  readonly name: pulumi.Input<string>;
  /** @default - depends on the prop (documented there) */
  readonly key?: pulumi.Input<string>;
}

/** Credentials in a Secret whose name and keys may come from other resources (`Input`s). */
export interface InputCredentialsSecretRef {
  readonly name: pulumi.Input<string>;
  /** @default 'username' */
  readonly userKey?: pulumi.Input<string>;
  /** @default 'password' */
  readonly passwordKey?: pulumi.Input<string>;
}

/**
 * Arguments of the VpnGateway component: VpnGatewayProps, with the names and keys of Secrets as `Input`s (a Secret
 * made by another resource). Every other prop is a plain value: the checks read it at preview time.
 */
export type VpnGatewayArgs = Omit<VpnGatewayProps, 'wireguardPrivateKeySecret' | 'wireguardPresharedKeySecret' | 'openvpnCredentialsSecret' | 'portForwarding'> & {
  readonly wireguardPrivateKeySecret?: InputSecretKeyRef;
  readonly wireguardPresharedKeySecret?: InputSecretKeyRef;
  readonly openvpnCredentialsSecret?: InputCredentialsSecretRef;
  readonly portForwarding?: Omit<NonNullable<VpnGatewayProps['portForwarding']>, 'credentialsSecret' | 'controlApiKeySecret'> & { readonly credentialsSecret?: InputCredentialsSecretRef; readonly controlApiKeySecret?: InputSecretKeyRef };
};

/** Where VpnGatewayArgs take Inputs. */
const INPUT_PATHS = [
  ['wireguardPrivateKeySecret', 'name'], ['wireguardPrivateKeySecret', 'key'],
  ['wireguardPresharedKeySecret', 'name'], ['wireguardPresharedKeySecret', 'key'],
  ['openvpnCredentialsSecret', 'name'], ['openvpnCredentialsSecret', 'userKey'], ['openvpnCredentialsSecret', 'passwordKey'],
  ['portForwarding', 'credentialsSecret', 'name'], ['portForwarding', 'credentialsSecret', 'userKey'], ['portForwarding', 'credentialsSecret', 'passwordKey'],
  ['portForwarding', 'controlApiKeySecret', 'name'], ['portForwarding', 'controlApiKeySecret', 'key'],
] as const;

/** A transform usable in both `transforms` and `transformations`. */
export type RouteTransform = pulumi.ResourceTransform & pulumi.ResourceTransformation;

const routableTypes = once(() => new Set(vpnGatewayModel.ROUTABLE_KINDS.map((k) => `kubernetes:apps/v1:${k}`)));

/**
 * A shared gluetun + pod-gateway egress gateway. `routeTransform()` routes workloads of the same program through it.
 *
 * @example
 * ```ts
 * import * as k8s from '@pulumi/kubernetes';
 * import { registerNamespaces, VpnGateway } from 'tunnelwright/pulumi';
 *
 * const gateway = new VpnGateway('nordvpn', {
 *   clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], nodeCidrs: ['192.168.1.0/24'],
 *   vpnProvider: 'nordvpn', wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, serverCountries: ['Switzerland'],
 * });
 * // Routed pods need Pod Security level privileged: registerNamespaces() lets the gateway's check read the label.
 * const media = new k8s.core.v1.Namespace('media', {
 *   metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
 * }, { transformations: [registerNamespaces()] });
 * new k8s.apps.v1.Deployment('qbittorrent', {
 *   metadata: { name: 'qbittorrent', namespace: 'media' },
 *   spec: {
 *     selector: { matchLabels: { app: 'qbittorrent' } },
 *     template: { metadata: { labels: { app: 'qbittorrent' } }, spec: { containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] } },
 *   },
 * }, { dependsOn: [media], transformations: [gateway.routeTransform()] });
 * ```
 */
export class VpnGateway extends pulumi.ComponentResource {
  /** The Kubernetes resources registered as children, in plan order (for `dependsOn`). */
  public readonly kubernetesResources: pulumi.CustomResource[];
  /** The props parsed once: what every plan of the gateway and its routes is made from. */
  private readonly spec: VpnGatewaySpec;
  private readonly componentName: string;
  private readonly routed = new Map<string, k8s.apiextensions.CustomResource>();
  private readonly resolve: (value: unknown) => unknown;

  public constructor(name: string, args: VpnGatewayArgs, opts?: pulumi.ComponentResourceOptions) {
    const inputs = lowerInputs(args as VpnGatewayProps, INPUT_PATHS);
    const props = inputs.plain;
    const { spec, plan } = planAt(name, 'VpnGateway', () => vpnGatewayRender.gatewayPlan(props));
    reserve(name, plan, [...spec.claims, ...objectClaims(plan.objects, spec.cluster)], undefined, { gateway: vpnGatewayRender.vpnGatewayVxlan(spec, name) });
    super('tunnelwright:index:VpnGateway', name, {}, opts);
    this.spec = spec;
    this.resolve = inputs.resolve;
    this.componentName = name;
    this.kubernetesResources = emitPlan(this, name, plan, opts, inputs.resolve);
    // The program's Namespaces declared so far (registerNamespaces()) and the library's: say what level the gateway's
    // namespace needs when neither declares it, or when its label would reject the gateway.
    this.warnPodSecurity(podSecurityNeeds(plan.objects, name), plan.objects);
    this.registerOutputs({});
  }

  private warnPodSecurity(needs: PodSecurityNeed[], objects: readonly KubeObject[]): void {
    const known = new Map([...declaredNamespaces(), ...objects.filter((o) => o.kind === 'Namespace').map((o) => [o.metadata.name, o.metadata.labels ?? {}] as const)]);
    const { problems, warnings } = checkPodSecurity(needs, known);
    const all = [...problems, ...warnings];
    if (all.length > 0) void pulumi.log.warn(formatProblems(all), this);
  }

  /**
   * A resource transform that routes every Deployment, StatefulSet and DaemonSet it is applied to through the
   * gateway (the same core `planRoute` as cdk8s `route()`), and registers each one's client ConfigMap and kill switch
   * beside the workload: with the workload's `parent`, `provider` and `dependsOn` (so they go to the workload's
   * cluster, after what it waits for, such as its Namespace), and an alias to their former parent, the gateway, so
   * that a stack made before keeps them. Workload metadata and pod labels must be plain values, `metadata.namespace`
   * must be set (the provider's or the kubeconfig context's namespace cannot be read here), and so must the
   * port-forwarding workload's `metadata.name` (Pulumi's auto-name would not match its hostname guard) and `spec.replicas`; that workload must be a `k8s.apps.v1.StatefulSet` of one replica (a
   * Deployment or DaemonSet is refused: either can run two pods on its fixed VXLAN address). It is synchronous, so
   * it serves both as a `transforms` entry (run by the engine) and a `transformations` entry (run in the program, also
   * under mocks). The Pod Security check of each routed workload reads the Namespaces declared so far through
   * `registerNamespaces()`.
   *
   * @example new k8s.apps.v1.Deployment('qbittorrent', { ... }, { transformations: [gateway.routeTransform()] })
   */
  public routeTransform(): RouteTransform {
    return (args: { type: string; name: string; props: Record<string, unknown>; opts: pulumi.CustomResourceOptions }) => {
      if (!routableTypes().has(args.type)) return undefined;
      const props = args.props as unknown as { metadata?: { name?: string; namespace?: string }; spec: { replicas?: number; ordinals?: { start?: number }; template: { metadata?: { labels?: Record<string, string> }; spec: IPodSpec } } };
      if (!Array.isArray(props?.spec?.template?.spec?.containers)) {
        throw new ValidationError([{ path: 'routeTransform(workload)', code: 'workload', message: `expected ${args.name} to have spec.template.spec.containers: a workload without a pod template cannot be routed` }], `VpnGateway route at ${this.componentName}`);
      }
      const name = props.metadata?.name ?? args.name;
      // Unset, the workload goes to the provider's `namespace` or the kubeconfig context's (@pulumi/kubernetes 4.34.2
      // provider.d.ts:95-101), which a transform cannot read: its ConfigMap and kill switch would go elsewhere.
      if (props.metadata?.namespace === undefined || props.metadata.namespace === '') {
        throw new ValidationError([{ path: `routeTransform(${args.name}).metadata.namespace`, code: 'namespace', message: `${args.type.split(':').pop()} ${args.name} has no metadata.namespace: it would go to the provider's or the kubeconfig context's namespace, which a transform cannot read, while its client ConfigMap and kill switch need theirs; set metadata.namespace explicitly` }], `VpnGateway route at ${this.componentName}`);
      }
      const namespace = props.metadata.namespace;
      const kind = args.type.split(':').pop() as RouteTarget['kind'];
      // Unset, @pulumi/kubernetes auto-names the object `<logical name>-<random hex>` (apps/v1/statefulSet.d.ts:25,
      // "Create a StatefulSet with auto-naming"; provider/pkg/metadata/naming.go), so its pod is `<name>-<hex>-0`
      // (the hostname: stateful_set_utils.go:383-387) and the forwarded workload's hostname guard would refuse it.
      const forwarded = this.spec.portForwarding?.workload;
      if ((props.metadata?.name === undefined || props.metadata.name === '') && vpnGatewayModel.isForwardedTarget(forwarded, { namespace, podLabels: {}, name: args.name, kind })) {
        throw new ValidationError([{ path: `routeTransform(${args.name}).metadata.name`, code: 'name', message: `${kind} ${args.name} is the port-forwarding workload and has no metadata.name: Pulumi would auto-name it ${args.name}-<random suffix>, so its pod would not be ${args.name}-<ordinal> and vpn-route-init's hostname guard would refuse it forever; set metadata.name explicitly` }], `VpnGateway route at ${this.componentName}`);
      }
      const target: RouteTarget = { namespace, podLabels: props.spec.template.metadata?.labels ?? {}, name, kind, ...(props.spec.replicas !== undefined ? { replicas: props.spec.replicas } : {}), ...(props.spec.ordinals?.start !== undefined ? { ordinalsStart: props.spec.ordinals.start } : {}) };
      throwIfProblems(vpnGatewayModel.checkRoute(forwarded, target), 'VpnGateway route');
      const route = vpnGatewayRender.renderRoute(this.spec, target);
      const duplicates = registerFence(vpnGatewayRender.routeFence(this.spec, target, route, this.componentName));
      if (duplicates.length > 0) void pulumi.log.warn(formatProblems(duplicates), this);
      const follow = routeObjectOptions(args.opts ?? {}, this);
      const configMaps: k8s.apiextensions.CustomResource[] = [];
      for (const o of route.objects) {
        const key = `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
        let made = this.routed.get(key);
        if (!made) {
          made = new k8s.apiextensions.CustomResource(childName(this.componentName, o), this.resolve(o) as k8s.apiextensions.CustomResourceArgs, follow);
          this.routed.set(key, made);
          this.kubernetesResources.push(made);
        }
        if (o.kind === 'ConfigMap') configMaps.push(made);
      }
      const spec = vpnGatewayRender.applyRoute(props.spec.template.spec, route);
      // A Secret named by an Input (the control API key's) is a placeholder in the plan: turned back into the Input.
      const resolved = this.resolve(spec) as IPodSpec;
      this.warnPodSecurity([{ namespace, what: `the routed ${args.type.split(':').pop()} ${namespace}/${name}`, need: requiredLevel(spec), at: `${this.componentName}:routeTransform(${args.name})` }], []);
      // The workload after the route's ConfigMaps, which its pods read at start (and whose hash its template carries).
      return { props: { ...props, spec: { ...props.spec, template: { ...props.spec.template, spec: resolved } } }, opts: { ...args.opts, dependsOn: withDependencies(args.opts?.dependsOn, configMaps) } };
    };
  }
}

/** `dependsOn` as given (a resource, a list, or an Input of either) with `more` added. */
function withDependencies(given: pulumi.CustomResourceOptions['dependsOn'], more: pulumi.Resource[]): pulumi.CustomResourceOptions['dependsOn'] {
  if (given === undefined) return more;
  if (Array.isArray(given)) return [...given, ...more];
  if (pulumi.Resource.isInstance(given)) return [given, ...more];
  return pulumi.output(given as pulumi.Input<pulumi.Resource | pulumi.Resource[]>).apply((d) => [...(Array.isArray(d) ? d : [d]), ...more]);
}

/**
 * The options of a routed workload's ConfigMap and kill switch: the workload's own `parent`, `provider` and
 * `dependsOn`, as the transform receives them (before @pulumi/pulumi resolves inheritance: `resource.js`, the
 * Resource constructor runs transformations first, then takes the provider from the parent's), so a provider the
 * workload inherits from its parent they inherit too. The alias names their former parent, the gateway.
 */
function routeObjectOptions(opts: pulumi.CustomResourceOptions, gateway: pulumi.ComponentResource): pulumi.CustomResourceOptions {
  return {
    ...(opts.parent ? { parent: opts.parent } : {}),
    ...(opts.provider ? { provider: opts.provider } : {}),
    ...(opts.dependsOn ? { dependsOn: opts.dependsOn } : {}),
    ...(opts.parent !== gateway ? { aliases: [{ parent: gateway }] } : {}),
  };
}
