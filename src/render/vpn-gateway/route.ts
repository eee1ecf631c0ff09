import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { Container as IContainer } from 'kubernetes-types/core/v1';
import type { EnvVar as IEnvVar } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import type { Volume as IVolume } from 'kubernetes-types/core/v1';
import { asset, inlineScript } from '../../assets';
import { Fence } from '../../invariants';
import type { KillSwitchProps } from '../../model/kill-switch';
import { killSwitchSpecOf } from '../../model/kill-switch-spec';
import { boundedName } from '../../model/labels';
import { isForwardedTarget, RouteTarget, VpnGatewaySpec } from '../../model/vpn-gateway';
import { KubeObject } from '../../types';
import { configMapsHash } from '../config-hash';
import { renderKillSwitch } from '../kill-switch';
import { clientLookupName, natConf, settingsSh } from './pod-gateway-config';
import { portSync, slskdEnv } from './port-sync';

/** The forwarded workload's init script (forwarded-route-init.sh beside this module). */
const FORWARDED_ROUTE_INIT = inlineScript(asset(__dirname, 'forwarded-route-init.sh'));

/** The route init container's variable that holds the hash of the ConfigMaps a routed pod reads at start. */
export const ROUTE_CONFIG_HASH_ENV = 'TUNNELWRIGHT_CONFIG_HASH';

/** The changes routing makes to a workload's pod spec, and the objects it needs. */
export interface RoutePlan {
  /**
   * The client settings ConfigMap `<name>-vpn-route` (in the workload's namespace) and the kill switch
   * `<name>-vpn-kill-switch` for the workload. Past 63 characters, each is the start of the name, 8 hex digits of the
   * SHA-256 of the whole name, then the suffix: two long workload names never share a kill switch.
   */
  readonly objects: KubeObject[];
  /**
   * Init container put first: the workload's own init containers already run behind the VPN. Its
   * `TUNNELWRIGHT_CONFIG_HASH` (`ROUTE_CONFIG_HASH_ENV`) is the hash of the route's ConfigMaps, which the pod reads at
   * start: when they change, the pod template changes and the workload's controller rolls its pods.
   */
  readonly initContainer: IContainer;
  /** Sidecar appended to the containers: re-creates the VXLAN when the gateway moves. */
  readonly sidecar: IContainer;
  readonly volume: IVolume;
  readonly dnsPolicy: 'None';
  readonly dnsConfig: NonNullable<IPodSpec['dnsConfig']>;
  /** Containers appended after the sidecar: the port-sync sidecar of the port-forwarding workload. */
  readonly extraContainers: IContainer[];
  /** Volumes the extra containers mount. */
  readonly extraVolumes: IVolume[];
  /**
   * With `app: 'slskd'`: environment for the slskd container (`container`, else the workload's first), which
   * `applyRoute` adds; a variable of the same name already there is refused.
   */
  readonly appEnv?: { readonly container?: string; readonly env: IEnvVar[] };
}

/**
 * Plans routing one workload through the gateway from its spec (pure: the same for the cdk8s route() and Pulumi's
 * routeTransform()); the target is one `checkRoute` accepted.
 *
 * The port-forwarding workload is refused (by `checkRoute`) unless it is a StatefulSet of at most one replica: its pods take the one
 * fixed VXLAN address, and two at once would split the forwarded port and the control server between them (whichever
 * answers ARP last). A Deployment cannot promise one pod, even with `Recreate` (which covers rollouts only): when its
 * pod is deleted, drained or evicted, the ReplicaSet controller counts only active pods, and a pod with a deletion
 * timestamp is not active (kubernetes v1.28.0 pkg/controller/controller_utils.go:981-985 `IsPodActive`,
 * replicaset/replica_set.go:708 `FilterActivePods`, :567-574), so it creates the replacement at once; pod-gateway's
 * client_sidecar.sh (PID 1 of its container, no `trap`) ignores SIGTERM, so the old pod keeps the address for its
 * whole grace period. The StatefulSet controller puts an existing pod, terminating or not, in its ordinal's slot
 * (statefulset/stateful_set_control.go:566-570) and creates `<name>-0` only for an empty slot (:578-587, :397-406);
 * the API server holds one object per name (stateful_pod_control.go:115-125 sinks AlreadyExists), so the new pod
 * comes only once the old object is gone. A force delete (`--grace-period=0 --force`, or of a pod on a partitioned
 * node) removes the object before the old pod stops: that is the one way two pods still meet.
 */
export function renderRoute(f: VpnGatewaySpec, target: RouteTarget): RoutePlan {
  const isForwarded = isForwardedTarget(f.portForwarding?.workload, target);
  // One ConfigMap per routed workload: two routes in one namespace (or a probe beside them) never clash.
  const configName = boundedName(target.name, '-vpn-route');
  const settings = settingsSh([
    ['GATEWAY_NAME', `${f.name}.${f.namespace}.svc.${f.clusterDomain}`],
    ['K8S_DNS_IPS', f.clusterDnsIp],
    ['NOT_ROUTED_TO_GATEWAY_CIDRS', f.localCidrs.join(' ')],
    ['VXLAN_ID', f.vxlanId],
    ['VXLAN_PORT', f.vxlanPort],
    ['VXLAN_IP_NETWORK', f.vxlanPrefix],
    ['VPN_INTERFACE', 'tun0'],
    ['VPN_INTERFACE_MTU', f.vxlanMtu],
  ]);
  const configMap: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: configName, namespace: target.namespace, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'vpn-gateway-client' } },
    // The forwarded workload is a StatefulSet (checkForwardedTarget): its pods are hostnamed <name>-<ordinal>, and the
    // key is what client_init.sh cuts from that.
    data: { 'settings.sh': settings, 'nat.conf': natConf(f, isForwarded ? clientLookupName(target.name) : null) },
  };
  const killSwitch: KillSwitchProps = {
    cluster: f.cluster,
    name: boundedName(target.name, '-vpn-kill-switch'),
    selector: target.podLabels,
    namespace: target.namespace,
    allowCidrs: f.localCidrs,
    gatewayPodLabels: f.podLabels,
    gatewayNamespace: f.namespace,
    vxlanPort: f.vxlanPort,
    // Cilium never matches CIDR rules against endpoints it manages or node IPs ("CIDR rules do not apply to traffic
    // where both sides of the connection are either managed by Cilium or use an IP belonging to a node in the
    // cluster": cilium/cilium Documentation/security/policy/language.rst, "IP/CIDR based"): under Cilium the cluster
    // is allowed as the `cluster` entity, kube-dns and the gateway by endpoint (the KillSwitch's cilium flavour).
    flavor: f.killSwitchFlavor,
  };
  const mount = { name: 'vpn-gateway-client', mountPath: '/config', readOnly: true };
  const caps = { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] }, runAsUser: 0, runAsNonRoot: false };
  const app = isForwarded ? f.portForwarding!.app : undefined;
  const sync = app !== undefined && app !== 'slskd' ? portSync(f, target) : undefined;
  // What the routed pod reads once, at start (client_init.sh and port-sync): its hash on the route's own init container.
  // The pod template's metadata is the user's, and a changed container is a changed template as well: the workload's
  // controller rolls its pods when an apply changes these ConfigMaps (see CONFIG_HASH_ANNOTATION).
  const guard = isForwarded ? forwardedInit(target) : undefined;
  const configHash = configMapsHash([configMap, ...(sync ? [sync.configMap as unknown as IConfigMap] : [])]);
  return {
    objects: [configMap as KubeObject, ...(sync ? [sync.configMap] : []), ...renderKillSwitch(killSwitchSpecOf(killSwitch)).objects],
    initContainer: { name: 'vpn-route-init', image: f.images.podGateway, command: guard?.command ?? ['/bin/client_init.sh'], env: [{ name: ROUTE_CONFIG_HASH_ENV, value: configHash }, ...(guard?.env ?? [])], securityContext: caps, volumeMounts: [mount] },
    sidecar: { name: 'vpn-route-sidecar', image: f.images.podGateway, command: ['/bin/client_sidecar.sh'], securityContext: caps, volumeMounts: [mount] },
    volume: { name: 'vpn-gateway-client', configMap: { name: configName } },
    dnsPolicy: 'None',
    dnsConfig: {
      nameservers: [`${f.vxlanPrefix}.1`],
      searches: [`${target.namespace}.svc.${f.clusterDomain}`, `svc.${f.clusterDomain}`, f.clusterDomain],
      options: [{ name: 'ndots', value: '5' }],
    },
    extraContainers: sync ? [sync.container] : [],
    extraVolumes: sync ? sync.volumes : [],
    ...(app === 'slskd' ? { appEnv: slskdEnv(f) } : {}),
  };
}

/**
 * The forwarded workload's init command and its values (forwarded-route-init.sh): pod-gateway's client_init.sh, only in the StatefulSet's first pod
 * `<name>-<ordinals.start>`. client_init.sh looks its nat.conf entry up by `hostname | cut -d'-' -f1` (pod-gateway
 * v1.13.0 bin/client_init.sh:42-44, :54) and takes its fixed address (:93-95), and the StatefulSet controller hostnames
 * every ordinal by its pod name (kubernetes v1.28.0 pkg/controller/statefulset/stateful_set_utils.go:383-387
 * `initIdentity`): `<name>-1`, made by `kubectl scale`, an HPA or a `replicas` patch, cuts to the same key and would
 * take the same address. Any other pod exits 1 here and never starts. The sidecar's reconnect (client_sidecar.sh) runs
 * client_init.sh in a pod that passed this check. Only the first
 * label is compared (`${h%%.*}`, POSIX sh and busybox ash): with `setHostnameAsFQDN: true` the kernel hostname is
 * `<pod>.<subdomain>.<ns>.svc.<domain>` (kubernetes v1.28.0 pkg/kubelet/util/util.go:33-45, from kubelet_pods.go:482;
 * the StatefulSet sets the subdomain to serviceName, stateful_set_utils.go:387).
 */
function forwardedInit(target: RouteTarget): { command: string[]; env: IEnvVar[] } {
  return { command: ['/bin/sh', '-c', FORWARDED_ROUTE_INIT], env: [{ name: 'FORWARDED_POD', value: `${target.name}-${target.ordinalsStart ?? 0}` }, { name: 'FORWARDED_WORKLOAD', value: target.name }] };
}

/**
 * A pod spec routed through the gateway: the client init container first, the sidecar last, DNS by the gateway. Pure;
 * the spec is one `checkRoutedPodSpec` accepted (`applyRoute` checks it first).
 */
export function routePodSpec(spec: IPodSpec, route: RoutePlan): IPodSpec {
  const has = (list: { name: string }[] | undefined, name: string) => (list ?? []).some((c) => c.name === name);
  if (has(spec.initContainers, route.initContainer.name)) return spec;
  const containers = [...spec.containers];
  if (route.appEnv) {
    const i = appContainerIndex(spec, route);
    containers[i] = { ...containers[i], env: [...(containers[i].env ?? []), ...route.appEnv.env] };
  }
  return {
    ...spec,
    initContainers: [route.initContainer, ...(spec.initContainers ?? [])],
    containers: [...containers, route.sidecar, ...(route.extraContainers ?? [])],
    volumes: [...(spec.volumes ?? []), route.volume, ...(route.extraVolumes ?? [])],
    dnsPolicy: route.dnsPolicy,
    dnsConfig: route.dnsConfig,
  };
}

/**
 * The index of the container that gets `route.appEnv` (slskd's): the one named `portForwarding.appContainer`, else the
 * first (`checkRoutedPodSpec` refused a name the pod does not have). Pure; the cdk8s adapter patches the same index.
 */
export function appContainerIndex(spec: IPodSpec, route: RoutePlan): number {
  const want = route.appEnv?.container;
  return want === undefined ? 0 : spec.containers.findIndex((c) => c.name === want);
}

/** The pods a route's kill switch fences, for `checkDuplicateKillSwitches`; `construct` is the gateway's path. */
export function routeFence(f: VpnGatewaySpec, target: RouteTarget, route: RoutePlan, construct: string): Fence {
  const policy = route.objects.find((o) => o.kind.endsWith('NetworkPolicy'));
  return { construct, cluster: f.cluster, namespace: target.namespace, selector: target.podLabels, route: { workload: `${target.namespace}/${target.name}`, policy: policy?.metadata.name ?? '' } };
}