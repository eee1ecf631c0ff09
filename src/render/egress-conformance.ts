import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { Problem } from '../errors';
import type { EgressConformanceProps } from '../model/egress-conformance';
import { CONFORMANCE_MANAGED_LABELS, egressConformanceSpec, EgressConformanceSpec } from '../model/egress-conformance-spec';
import { KubeObject, Plan } from '../types';
import { OPENVPN_UNIT } from './egress-steering/constants';
import { withConfigHashes } from './config-hash';
import { renderRoute, routePodSpec } from './vpn-gateway';
import * as conformanceModel from '../model/egress-conformance';
import { asset, withSettings } from '../assets';
import { ConformanceFailover, failoverFields, failoverRunnerRole, gatewayFailover, steeringFailover } from './egress-conformance-failover';
import { candidatesOf } from './egress-steering-failover';

const CONFORMANCE_BODY = asset(__dirname, 'egress-conformance.sh');

/** Returns the problems of EgressConformance props without throwing. */
export function validateEgressConformance(props: unknown): Problem[] {
  return conformanceModel.checkEgressConformance(props).problems;
}

/** The file name of the check in its ConfigMap and in `plan.values.egressConformance`. */
export const CONFORMANCE_SCRIPT = 'egress-conformance.sh';
/** gluetun's control server as VpnGateway binds it (`HTTP_CONTROL_SERVER_ADDRESS`). */
export const GLUETUN_CONTROL = 'http://127.0.0.1:8000';
const PROBE_CONTAINER = 'probe';

/** One tunnel the check stops and restarts, with the probes on either side of it. */
export interface ConformanceSource {
  /** `vpn-gateway <namespace>/<name>` or `egress-steering <name>`. */
  readonly label: string;
  readonly kind: 'gateway' | 'steering';
  readonly probeNamespace: string;
  /** Deployment of the vpn-class probe (container `probe`). */
  readonly vpnProbe: string;
  /** Deployment of the direct-class control probe. */
  readonly directProbe: string;
  /** Where the stop/start and ifindex commands run: namespace, Deployment, container. */
  readonly control: { readonly namespace: string; readonly deployment: string; readonly container: string };
  /** The tunnel interface (its ifindex must change across the restart). */
  readonly iface: string;
  /** EgressSteering: the gateway node, the unit, and the uplink label the re-steer hook writes. */
  readonly node?: string;
  readonly unit?: string;
  readonly uplinkLabel?: string;
  /** With a standby: the failover step (R5), and R1 to R4 act on the Lease's holder. */
  readonly failover?: ConformanceFailover;
}

const MANAGED = CONFORMANCE_MANAGED_LABELS;

/** The tunnels EgressConformance props prove (`renderConformanceSources` of their spec). */
export function conformanceSources(p: EgressConformanceProps): ConformanceSource[] {
  return renderConformanceSources(egressConformanceSpec(p));
}

/** The tunnels the check proves, in the order it proves them (gateways, then steerings). */
export function renderConformanceSources(p: EgressConformanceSpec): ConformanceSource[] {
  const out: ConformanceSource[] = [];
  for (const g of p.vpnGateways) {
    const f = g.gateway;
    out.push({
      label: `vpn-gateway ${f.namespace}/${f.name}`,
      kind: 'gateway',
      probeNamespace: g.probeNamespace,
      vpnProbe: g.route.name,
      directProbe: g.directProbe,
      control: { namespace: f.namespace, deployment: f.name, container: 'gluetun' },
      iface: 'tun0',
      failover: gatewayFailover(g),
    });
  }
  p.egressSteerings.forEach((s, i) => {
    const st = s.steering;
    const unit = s.tunnelUnit ?? (st.tunnel?.type === 'openvpn' ? OPENVPN_UNIT : `wg-quick@${st.iface}.service`);
    out.push({
      label: `egress-steering ${st.name}`,
      kind: 'steering',
      probeNamespace: s.probeNamespace,
      vpnProbe: s.vpnProbe,
      directProbe: s.directProbe,
      control: { namespace: s.agentNamespace, deployment: s.agent, container: 'agent' },
      iface: st.iface,
      node: st.gatewayNode,
      unit,
      uplinkLabel: st.uplinkLabel,
      failover: steeringFailover(s, `${p.name}-s${i}`),
    });
  });
  return out;
}

/** check_source's arguments, one line of SOURCES: joined by "|" (no field holds one: names, labels, a unit). */
function sourceLine(s: ConformanceSource): string {
  return [s.kind, s.label, s.probeNamespace, s.vpnProbe, s.directProbe, s.control.namespace, s.control.deployment, s.control.container, s.iface, s.node ?? '', s.unit ?? '', s.uplinkLabel ?? '', ...failoverFields(s.failover)].join('|');
}

/**
 * The check: a POSIX sh script over kubectl. It refuses to run without `--destructive`; for each tunnel it proves
 * vpn-class egress from `vpnCidrs` and direct-class from `wanIps` (R1, R2), stops the tunnel and sends a vpn-class
 * and a direct-class request at the same moment (R3: no answer, while the control is answered from a WAN address),
 * starts it again and waits for vpn-class egress from `vpnCidrs` within the bound, from a new interface (R4); with a
 * standby it stops the Lease holder's tunnel and waits for egress through a standby within `failoverSeconds`, with no
 * vpn-class packet on any candidate's WAN (R5); it restores every tunnel it stopped from an EXIT trap, saying so (R6).
 * Exit 0 when every requirement holds.
 */
export function renderConformanceScript(p: EgressConformanceProps): string {
  return renderConformance(egressConformanceSpec(p));
}

/** The check's script from the spec (see `renderConformanceScript`). */
export function renderConformance(p: EgressConformanceSpec): string {
  const sources = renderConformanceSources(p);
  const timeout = p.requestTimeoutSeconds;
  const recovery = p.recoverySeconds;
  // Each target with the host:port curl's --resolve pins (`-` for an address literal: nothing to resolve).
  const targets = p.targets.map((t) => {
    const u = new URL(t);
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    return `${/^\d{1,3}(\.\d{1,3}){3}$/.test(u.hostname) ? '-' : `${u.hostname}:${port}`} ${t}`;
  });
  return withSettings(CONFORMANCE_BODY, {
    TIMEOUT: String(timeout), DEFAULT_RECOVERY_SECONDS: String(recovery),
    // Past R3's requests (one timeout per target) with a margin for the kubectl calls around them.
    DEFAULT_DEADMAN_SECONDS: String(timeout * p.targets.length + 60),
    TARGETS: targets.join(' '), VPN_CIDRS: p.vpnCidrs.join(' '), WAN_IPS: p.wanIps.join(' '),
    SOURCES: sources.map(sourceLine).join('\n'), PROBE: PROBE_CONTAINER, CONTROL_URL: GLUETUN_CONTROL,
  });
}

/** Plans the check from EgressConformance props (`renderEgressConformance` of their spec, or a ValidationError with every problem). */
export function planEgressConformance(props: EgressConformanceProps): Plan {
  return renderEgressConformance(egressConformanceSpec(props));
}

/** Plans the check from its spec: a vpn-class and a direct-class probe per tunnel, the node agent per steering, the script. */
export function renderEgressConformance(p: EgressConformanceSpec): Plan {
  const name = p.name;
  const objects: KubeObject[] = [];
  const probeSpec = (): IPodSpec => ({
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    containers: [{
      name: PROBE_CONTAINER,
      image: p.image,
      command: ['sleep', 'infinity'],
      securityContext: { runAsNonRoot: true, runAsUser: 65534, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
      resources: { requests: { cpu: '5m', memory: '16Mi' }, limits: { memory: '32Mi' } },
    }],
  });
  const deployment = (workload: string, namespace: string, spec: IPodSpec, podLabels: Record<string, string> = {}, replicas = 1): KubeObject => {
    const labels = { 'app.kubernetes.io/name': workload, ...MANAGED };
    const d: IDeployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: workload, namespace, labels },
      spec: { replicas, selector: { matchLabels: { 'app.kubernetes.io/name': workload } }, template: { metadata: { labels: { ...labels, ...podLabels } }, spec } },
    };
    return d as KubeObject;
  };
  for (const g of p.vpnGateways) {
    // The route's target was checked in the model (parseEgressConformance): the probe is no port-forwarding workload.
    const route = renderRoute(g.gateway, g.route);
    objects.push(deployment(g.route.name, g.probeNamespace, routePodSpec(probeSpec(), route)), ...route.objects);
    objects.push(deployment(g.directProbe, g.probeNamespace, probeSpec()));
  }
  const sources = renderConformanceSources(p);
  p.egressSteerings.forEach((st, j) => {
    const source = sources[p.vpnGateways.length + j];
    const classLabel = st.steering.classLabel;
    // Off every candidate gateway node (required): there Cilium leaves a local pod's packet to the kernel, the WAN
    // counter counts it although it went through the tunnel, and failover.dropPodTrafficOffTunnel's fence drops it.
    const off: Pick<IPodSpec, 'affinity'> = { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{
      matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: candidatesOf(st.steering).map((c) => c.node) }],
    }] } } } };
    objects.push(deployment(st.vpnProbe, st.probeNamespace, { ...probeSpec(), ...off }, { [classLabel]: st.steering.vpnClass }));
    // The steering's own Kyverno policy (enforceLabels) refuses any Pod in its namespaces without an admitted class:
    // the control probe and the agent carry its direct class (the agent is hostNetwork: no class steers it).
    const direct = { [classLabel]: st.directClass };
    objects.push(deployment(st.directProbe, st.probeNamespace, { ...probeSpec(), ...off }, direct));
    // The node agent: on the gateway node, in the host's PID and network namespaces, to stop and start the unit
    // (nsenter -t 1) and read the tunnel's ifindex.
    // At 0 replicas: the script scales it to 1 for its run and back to 0 after restoring every tunnel, so no
    // privileged pod stands on the gateway node between runs.
    // With failover, one on each candidate node (R5 counts each one's WAN; R1 to R4 use the holder's).
    const agents = source.failover?.candidates.map((c) => ({ node: c.identity, deployment: c.control })) ?? [{ node: st.steering.gatewayNode, deployment: st.agent }];
    for (const a of agents) objects.push(deployment(a.deployment, st.agentNamespace, {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      nodeSelector: { 'kubernetes.io/hostname': a.node },
      tolerations: [{ operator: 'Exists' }],
      hostPID: true,
      hostNetwork: true,
      containers: [{
        name: 'agent',
        image: p.agentImage,
        command: ['sleep', '2147483647'],
        securityContext: { privileged: true },
        resources: { requests: { cpu: '5m', memory: '8Mi' }, limits: { memory: '32Mi' } },
      }],
    }, direct, 0));
  });
  objects.push(...failoverRunnerRole(name, sources.flatMap((s) => (s.failover ? [s.failover] : []))));
  const script = renderConformance(p);
  const cm: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: p.namespaces[0], labels: MANAGED },
    data: { [CONFORMANCE_SCRIPT]: script },
  };
  objects.push(cm as KubeObject);
  const command = `kubectl -n ${p.namespaces[0]} get configmap ${name} -o jsonpath='{.data.${CONFORMANCE_SCRIPT.replace(/\./g, '\\.')}}' > ${CONFORMANCE_SCRIPT} && sh ${CONFORMANCE_SCRIPT} --destructive`;
  return { objects: withConfigHashes(objects), hosts: [], values: { egressConformance: { script, command } }, warnings: [...(p.warnings ?? [])] };
}
