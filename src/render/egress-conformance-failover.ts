import type { ClusterRole as IClusterRole } from 'kubernetes-types/rbac/v1';
import type { ConformanceGatewaySpec, ConformanceSteeringSpec } from '../model/egress-conformance-spec';
import { boundedName } from '../model/labels';
import { KubeObject } from '../types';
import { activeLabel } from '../model/egress-steering-failover';
import { candidatesOf, failoverLeaseName } from './egress-steering-failover';
import { standbyMembers } from './vpn-gateway/failover';

/** The failover step (R5) of one source: the Lease the agents hold, each candidate with what the check controls it by. */
export interface ConformanceFailover {
  /** `<namespace>/<name>` of the Lease. */
  readonly lease: string;
  /** The Lease's holderIdentity of each candidate (a node, a gateway pod) and its control (the node agent's Deployment, `pod/<name>`). */
  readonly candidates: { readonly identity: string; readonly control: string }[];
  /** The step's bound. */
  readonly seconds: number;
  /** How long the step waits after R4 before it stops the holder (`FailoverTiming.settleSeconds`). */
  readonly settle: number;
  /** EgressSteering: the label the CiliumEgressGatewayPolicy selects, which exactly the new holder's CiliumNode must carry. */
  readonly activeLabel?: string;
}

/**
 * A VpnGateway's failover step, or undefined when it runs none. The agent writes its pod's name as holderIdentity
 * (src/render/vpn-gateway/failover-agent.sh, POD_NAME) into the Lease named like the gateway, in its namespace.
 */
export function gatewayFailover(g: ConformanceGatewaySpec): ConformanceFailover | undefined {
  const seconds = g.failoverSeconds;
  if (seconds === undefined) return undefined;
  const f = g.gateway;
  return { lease: `${f.namespace}/${f.name}`, candidates: standbyMembers(f).map((m) => ({ identity: m.pod, control: `pod/${m.pod}` })), seconds, settle: g.failoverSettleSeconds ?? 0 };
}

/**
 * An EgressSteering's failover step, or undefined when it runs none. The agent writes its node's name as
 * holderIdentity (src/render/egress-failover-agent.sh, NODE); the check's node agent on each candidate: the first
 * (gatewayNode) is the one R1 to R4 use, `-agent<k>` for the k-th standby.
 */
export function steeringFailover(s: ConformanceSteeringSpec, prefix: string): ConformanceFailover | undefined {
  const seconds = s.failoverSeconds;
  if (seconds === undefined) return undefined;
  const st = s.steering;
  const lease = `${st.failover!.leaseNamespace}/${failoverLeaseName(st.name)}`;
  return { lease, candidates: candidatesOf(st).map((c, k) => ({ identity: c.node, control: boundedName(prefix, k === 0 ? '-agent' : `-agent${k}`) })), seconds, settle: s.failoverSettleSeconds ?? 0, activeLabel: activeLabel(st.name) };
}

/** The failover fields of a SOURCES line: lease, candidates ("<identity>=<control>" each), seconds, settle seconds, active label (or empty). */
export function failoverFields(f: ConformanceFailover | undefined): string[] {
  return f ? [f.lease, f.candidates.map((c) => `${c.identity}=${c.control}`).join(' '), String(f.seconds), String(f.settle), f.activeLabel ?? ''] : [];
}

/**
 * What the failover step needs beyond the rest of the check (which already execs into the probes and agents and
 * scales the agents): `get` on each Lease it reads the holder from, by name, and with an EgressSteering `list` on
 * CiliumNodes (which carry the active label). A ClusterRole, bound by you to whoever
 * runs the check (a Lease may sit in kube-system, outside the check's namespaces, where it creates nothing):
 * `kubectl create rolebinding -n <lease namespace> --clusterrole=<name>-failover --user=<you>`.
 */
export function failoverRunnerRole(name: string, failovers: ConformanceFailover[]): KubeObject[] {
  if (failovers.length === 0) return [];
  const names = [...new Set(failovers.map((f) => f.lease.split('/')[1]))].sort();
  const role: IClusterRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `${name}-failover`, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'egress-conformance' } },
    rules: [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: names, verbs: ['get'] },
      ...(failovers.some((f) => f.activeLabel !== undefined) ? [{ apiGroups: ['cilium.io'], resources: ['ciliumnodes'], verbs: ['list'] }] : []),
    ],
  };
  return [role as KubeObject];
}
