import type { Container as IContainer, PodSpec as IPodSpec, Service as IService, VolumeProjection as IProjectedSource } from 'kubernetes-types/core/v1';
import type { Deployment as IDeployment, StatefulSet as IStatefulSet } from 'kubernetes-types/apps/v1';
import { asset, inlineScript } from '../../assets';
import type { StandbySpec, VpnGatewaySpec } from '../../model/vpn-gateway';
import { KubeObject } from '../../types';
import { VPN_INTERFACE } from './constants';
import { gluetunEnv } from './gluetun';

/** The label the holder's agent sets on its own pod (and clears on the other), which the gateway's Service selects. */
export const ROLE_LABEL = 'tunnelwright.io/role';
/** Which of the two gateway pods (its StatefulSet: `<name>-a`, `<name>-b`). */
export const MEMBER_LABEL = 'tunnelwright.io/gateway-member';
/** Seconds between two checks of the agent (client-go's leader election retries every 2 s too). */
export const FAILOVER_PERIOD_SECONDS = 2;

const AGENT_SCRIPT = inlineScript(asset(__dirname, 'failover-agent.sh'));
const READY_SCRIPT = inlineScript(asset(__dirname, 'failover-ready.sh'));

/**
 * The agent container's readinessProbe: its verdict (failover-ready.sh), so a pod is Ready while its tunnel is healthy
 * by the agent's checks (gluetun's health server, the tunnel interface, the probe through it), holder or standby.
 * gluetun's own readinessProbe (its health server) alone stays Ready after OpenVPN exited. A healthy holder goes not
 * Ready only after three failed execs in a row, 5 s apart, each allowed 5 s: a slow exec on a loaded kubelet is not a
 * dead tunnel. Its clients never see that lag: the agent unlabels the holder (out of the Service) in the check that
 * turns its verdict unhealthy.
 */
export const FAILOVER_READINESS = { periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3, successThreshold: 1 } as const;

/** The two members: StatefulSet name and its one pod's name (fixed: the RBAC names them). */
export function standbyMembers(f: Pick<VpnGatewaySpec, 'name'>): { member: 'a' | 'b'; statefulSet: string; pod: string }[] {
  return (['a', 'b'] as const).map((m) => ({ member: m, statefulSet: `${f.name}-${m}`, pod: `${f.name}-${m}-0` }));
}

function agentContainer(f: VpnGatewaySpec, sb: StandbySpec, peer: string): IContainer {
  return {
    name: 'failover-agent',
    // curlimages/curl: busybox sh and ip, and curl (the same pinned image as port-sync).
    image: f.images.portSync,
    command: ['/bin/sh', '-c', AGENT_SCRIPT],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'PEER_POD', value: peer },
      { name: 'NAMESPACE', value: f.namespace },
      { name: 'LEASE', value: f.name },
      { name: 'ROLE_LABEL', value: ROLE_LABEL },
      { name: 'SA_DIR', value: FAILOVER_TOKEN_DIR },
      { name: 'PERIOD', value: String(FAILOVER_PERIOD_SECONDS) },
      { name: 'LEASE_SECONDS', value: String(sb.leaseSeconds) },
      { name: 'ACQUIRE_AFTER', value: String(sb.acquireAfter) },
      { name: 'RELEASE_AFTER', value: String(sb.releaseAfter) },
      // The tunnel interface, which must exist and be up, with or without a probe: gluetun's VPN_INTERFACE, which the agent shares (one pod, one network namespace).
      { name: 'PROBE_INTERFACE', value: VPN_INTERFACE },
      // The probe out of it (none without PROBE_URL; its URLs separated by spaces, the model refuses a space in one).
      ...(sb.probeUrls ? [{ name: 'PROBE_URL', value: sb.probeUrls.join(' ') }] : []),
    ],
    readinessProbe: { exec: { command: ['/bin/sh', '-c', READY_SCRIPT] }, ...FAILOVER_READINESS },
    // Root with NET_ADMIN only: it takes the pod's vxlan0 down and up (curlimages/curl runs as uid 100 by default).
    securityContext: { runAsUser: 0, runAsNonRoot: false, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } },
    resources: { requests: { cpu: '5m', memory: '16Mi' }, limits: { memory: '32Mi' } },
    volumeMounts: [{ name: 'failover-state', mountPath: '/run/failover' }, { name: FAILOVER_TOKEN_VOLUME, mountPath: FAILOVER_TOKEN_DIR, readOnly: true }],
  };
}

/** The ServiceAccount token's volume, mounted into the failover agent only. */
export const FAILOVER_TOKEN_VOLUME = 'failover-token';
const FAILOVER_TOKEN_DIR = '/var/run/secrets/tunnelwright.io/failover';

/**
 * The token the kubelet would mount into every container (automountServiceAccountToken), mounted into the agent only:
 * the Role's patch on the two pods must not be usable by gluetun, the sidecar or a compromised tool in the pod. The same
 * three sources as the kubelet's own projected volume (token, the cluster's CA, the namespace), and the kubelet rotates it.
 */
const tokenVolume = {
  name: FAILOVER_TOKEN_VOLUME,
  projected: {
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
    ],
  },
};

/**
 * The standby member's pod spec: its own credential in place of the active member's: its WireGuard key (and
 * addresses, preshared key), or its OpenVPN login (the same files under SECRETS_DIR, so gluetun's environment is the
 * same: OPENVPN_USER_SECRETFILE, OPENVPN_PASSWORD_SECRETFILE); and its own servers (`standby.servers`: gluetun's
 * environment made by `gluetunEnv` from the gateway's spec with the standby's addresses and servers in place).
 */
function standbyKeys(f: VpnGatewaySpec, spec: IPodSpec, sb: StandbySpec): IPodSpec {
  const source = (s: IProjectedSource): IProjectedSource => {
    const p = s.secret?.items?.[0]?.path;
    if (p === 'wireguard_private_key' && sb.privateKey) return { secret: { name: sb.privateKey.name, items: [{ key: sb.privateKey.key, path: p }] } };
    const psk = sb.presharedKey;
    if (p === 'wireguard_preshared_key' && psk) return { secret: { name: psk.name, items: [{ key: psk.key, path: p }] } };
    const login = sb.openvpnCredentials;
    if (p === 'openvpn_user' && login) return { secret: { name: login.name, items: [{ key: login.userKey!, path: 'openvpn_user' }, { key: login.passwordKey, path: 'openvpn_password' }] } };
    return s;
  };
  return {
    ...spec,
    containers: spec.containers.map((c) => (c.name !== 'gluetun' ? c : { ...c, env: gluetunEnv(standbyGluetun(f, sb)) })),
    volumes: (spec.volumes ?? []).map((v) => (v.name !== 'gluetun-secrets' ? v : { ...v, projected: { ...v.projected, sources: (v.projected?.sources ?? []).map(source) } })),
  };
}

/** The gateway's spec as the standby's gluetun sees it: its own addresses, server filters and (custom) endpoint. */
function standbyGluetun(f: VpnGatewaySpec, sb: StandbySpec): VpnGatewaySpec {
  const wg = f.wireguard;
  return {
    ...f,
    serverFilters: sb.serverFilters,
    ...(wg ? { wireguard: {
      ...wg,
      ...(sb.addresses ? { addresses: sb.addresses } : {}),
      ...(sb.endpointIp !== undefined ? { endpointIp: sb.endpointIp } : {}),
      ...(sb.publicKey !== undefined ? { publicKey: sb.publicKey } : {}),
    } } : {}),
  };
}

/**
 * With `standby`: the Deployment becomes two StatefulSets of one pod each (fixed pod names, which the RBAC names;
 * required anti-affinity: never on one node), each with the failover agent; the Service selects only the pod labelled
 * `tunnelwright.io/role=active`; a Lease, a ServiceAccount with get/update on that Lease and patch on the two pods
 * only, and a PodDisruptionBudget that lets a drain evict one gateway at a time. The Lease is created here, so the
 * agent needs no `create` (which cannot be limited by resourceNames).
 */
export function withStandby(f: VpnGatewaySpec, objects: KubeObject[]): KubeObject[] {
  const sb = f.standby;
  if (!sb) return objects;
  const members = standbyMembers(f);
  const sa = `${f.name}-failover`;
  const out: KubeObject[] = [];
  for (const o of objects) {
    if (o.kind === 'Service') {
      const s = o as unknown as IService;
      // publishNotReadyAddresses: the role label is the health decision (the agent's, with its hysteresis), so the name
      // resolves to the holder even while it is not Ready for another reason: a kubelet restart (readiness starts at
      // Failure), a gluetun or sidecar container restart, slow readiness execs. Without it the EndpointSlice controller
      // marks the holder not ready (endpointslice/utils.go podToEndpoint) and CoreDNS drops it: pod-gateway's
      // client_init.sh:53 gets no address and new routed pods fail to start while the role stays put.
      out.push({ ...s, spec: { ...s.spec, publishNotReadyAddresses: true, selector: { ...s.spec!.selector, [ROLE_LABEL]: 'active' } } } as unknown as KubeObject);
    } else if (o.kind === 'Deployment') {
      const d = o as unknown as IDeployment;
      const template = d.spec!.template;
      for (const m of members) {
        const peer = members.find((p) => p.member !== m.member)!.pod;
        const base = m.member === 'b' ? standbyKeys(f, template.spec!, sb) : template.spec!;
        const spec: IPodSpec = {
          ...base,
          serviceAccountName: sa,
          // No token in every container: only the agent mounts one (tokenVolume).
          automountServiceAccountToken: false,
          affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: f.podLabels }, topologyKey: 'kubernetes.io/hostname' }] } },
          containers: [...base.containers, agentContainer(f, sb, peer)],
          volumes: [...(base.volumes ?? []), { name: 'failover-state', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }, tokenVolume],
        };
        const labels = { ...template.metadata!.labels, [MEMBER_LABEL]: m.member };
        const sts: IStatefulSet = {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          metadata: { name: m.statefulSet, namespace: f.namespace, labels: f.podLabels },
          spec: {
            replicas: 1,
            serviceName: f.name,
            selector: { matchLabels: { ...f.podLabels, [MEMBER_LABEL]: m.member } },
            template: { metadata: { ...template.metadata, labels }, spec },
            // Both members carry the same config hash: with the default RollingUpdate a change would replace both pods
            // at once (the PodDisruptionBudget guards evictions only). `-b` is replaced when its pod is deleted, after
            // `-a` is ready again (docs/vpn-gateway.md, "Rolling a change").
            ...(m.member === 'b' ? { updateStrategy: { type: 'OnDelete' } } : {}),
          },
        };
        out.push(sts as unknown as KubeObject);
      }
    } else {
      out.push(o);
    }
  }
  const meta = (name: string) => ({ name, namespace: f.namespace, labels: f.podLabels });
  out.push(
    { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: meta(f.name), spec: {} } as unknown as KubeObject,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(sa) } as unknown as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(sa),
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [f.name], verbs: ['get', 'update'] },
        { apiGroups: [''], resources: ['pods'], resourceNames: members.map((m) => m.pod), verbs: ['patch'] },
      ],
    } as unknown as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(sa),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: f.namespace }],
    } as unknown as KubeObject,
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(f.name),
      // One of the two at a time: a drain never takes both tunnels. A pod is healthy here while Ready, i.e. while its
      // tunnel is (the agent's readinessProbe). A pod whose tunnel is down serves no one, so it is always evictable
      // (AlwaysAllow; the default IfHealthyBudget would refuse it while no pod is healthy and hang the drain on two
      // dead tunnels); the healthy holder beside a dead standby is not (currentHealthy 1, minAvailable 1: its drain
      // waits for the standby). k8s.io/api policy/v1 types.go, PodDisruptionBudgetSpec.UnhealthyPodEvictionPolicy
      // (beta and on from 1.27, GA 1.31); pkg/registry/core/pod/storage/eviction.go, canIgnorePDB and the
      // IfHealthyBudget check.
      spec: { minAvailable: 1, selector: { matchLabels: f.podLabels }, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
    } as unknown as KubeObject,
  );
  return out;
}
