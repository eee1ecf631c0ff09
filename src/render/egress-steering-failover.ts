import type { Role as IRole, RoleBinding as IRoleBinding } from 'kubernetes-types/rbac/v1';
import { asset, withSettings } from '../assets';
import { activeLabel, EgressSteeringFailoverSpec, FAILOVER_REQUEST_TIMEOUT_SECONDS } from '../model/egress-steering-failover';
import { HostPlan, KubeObject } from '../types';

/*
 * Failover of EgressSteering: how Cilium picks the gateway, which binds the design (v1.16 to v1.18,
 * pkg/egressgateway): the manager keeps the nodes sorted by name (manager.go, onChangeNodeLocked: sort.Slice by
 * Name), and regenerateGatewayConfig (policy.go) walks them in that order and takes the first whose labels match the
 * policy's nodeSelector (selectsNodeAsGateway); when none matches the gateway stays GatewayNotFoundIPv4 and the
 * datapath drops the matched traffic. So: one label, moved by the agent that holds the Lease; two labelled nodes mean
 * the first by name, whatever its health; none means drop (closed).
 */

const AGENT_SCRIPT = asset(__dirname, 'egress-failover-agent.sh');
export const FAILOVER_AGENT_PATH = '/opt/tunnelwright/bin/egress-failover-agent';
export const FAILOVER_AGENT_SERVICE = 'tunnelwright-egress-failover.service';
/** The agent's textfile metrics, in node-exporter's textfile directory. */
export const FAILOVER_METRICS_FILE = 'tunnelwright_egress_failover.prom';

export interface Candidate {
  readonly node: string;
  readonly tunnel?: unknown;
}

/** What failover reads of EgressSteering's spec. */
export interface FailoverInput {
  readonly gatewayNode: string;
  readonly tunnel?: { readonly type: string };
  readonly failover?: EgressSteeringFailoverSpec<unknown>;
}

/** gatewayNode and the standbys, in that order. */
export function candidatesOf(p: FailoverInput): Candidate[] {
  return [{ node: p.gatewayNode, tunnel: p.tunnel }, ...(p.failover?.standbys ?? []).map((s) => ({ node: s.node, tunnel: s.tunnel }))];
}

/** The Lease's name: the policy's name with `-gateway`. */
export function failoverLeaseName(name: string): string {
  return `${name}-gateway`;
}

function settings(p: FailoverInput) {
  const fo = p.failover!;
  return { duration: fo.leaseDurationSeconds, interval: fo.checkIntervalSeconds, namespace: fo.leaseNamespace };
}

const MANAGED = { 'app.kubernetes.io/managed-by': 'tunnelwright' };

/**
 * The Lease (emitted, so the agents need no `create`, which RBAC cannot limit to one name), and a Role that lets the
 * re-steer ServiceAccount `get` and `patch` that Lease alone. Its Node and CiliumNode rights are the re-steer
 * ClusterRole's, widened to the candidates by name.
 */
export function failoverObjects(p: FailoverInput, name: string, serviceAccount: string, serviceAccountNamespace: string): KubeObject[] {
  const s = settings(p);
  const lease = failoverLeaseName(name);
  const leaseObject: KubeObject = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    // The holder fields are the agents': an apply that does not name them (kubectl apply's three-way merge, Pulumi's
    // patch of changed fields) leaves them as they are.
    metadata: { name: lease, namespace: s.namespace, labels: MANAGED },
    spec: { leaseDurationSeconds: s.duration },
  };
  const role: IRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: `${name}-failover`, namespace: s.namespace, labels: MANAGED },
    rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [lease], verbs: ['get', 'patch'] }],
  };
  const binding: IRoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `${name}-failover`, namespace: s.namespace, labels: MANAGED },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-failover` },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: serviceAccountNamespace }],
  };
  return [leaseObject, role, binding] as KubeObject[];
}

/** The agent script for one candidate node, its values in its settings block. */
export function renderFailoverAgent(p: FailoverInput, name: string, iface: string, node: string, textfileDirectory?: string, kubeconfig?: string): string {
  const fo = p.failover!;
  const s = settings(p);
  const others = candidatesOf(p).map((c) => c.node).filter((n) => n !== node);
  return withSettings(AGENT_SCRIPT, {
    NODE: node,
    OTHERS: others.join(' '),
    IFACE: iface,
    TUNNEL: p.tunnel?.type ?? 'none',
    LEASE: failoverLeaseName(name),
    LEASE_NAMESPACE: s.namespace,
    LEASE_DURATION: String(s.duration),
    INTERVAL: String(s.interval),
    HEALTHY_CHECKS: String(fo.healthyChecks),
    UNHEALTHY_CHECKS: String(fo.unhealthyChecks),
    HANDSHAKE_MAX_AGE: String(fo.handshakeMaxAgeSeconds),
    PROBE_URL: fo.probeUrl ?? '',
    LABEL: activeLabel(name),
    TEXTFILE: textfileDirectory ? `${textfileDirectory}/${FAILOVER_METRICS_FILE}` : '',
    POLICY: name,
    REQUEST_TIMEOUT: String(FAILOVER_REQUEST_TIMEOUT_SECONDS),
    ...(kubeconfig ? { KUBECONFIG_FILE: kubeconfig } : {}),
  });
}

/** Adds the agent (script and a long-running unit) to a candidate's host plan. */
export function addFailoverAgent(host: HostPlan, p: FailoverInput, o: { name: string; iface: string; textfileDirectory?: string; kubeconfig?: string; after: readonly string[] }): void {
  host.files.push({ path: FAILOVER_AGENT_PATH, mode: 0o755, owner: 'root:root', content: renderFailoverAgent(p, o.name, o.iface, host.node, o.textfileDirectory, o.kubeconfig) });
  host.units.push({
    name: FAILOVER_AGENT_SERVICE,
    enabled: true,
    content: [
      '[Unit]', `Description=tunnelwright: hold the ${o.name} egress gateway role while ${o.iface} is healthy`,
      'Wants=network-online.target', `After=network-online.target ${o.after.join(' ')}`.trimEnd(), ...(o.after.length > 0 ? [`Wants=${o.after.join(' ')}`] : []),
      // No StartLimit: an agent that cannot start keeps trying (a node without it never takes the role: closed).
      'StartLimitIntervalSec=0',
      '', '[Service]', 'Type=simple', `ExecStart=${FAILOVER_AGENT_PATH}`, 'Restart=always', 'RestartSec=5s',
      '', '[Install]', 'WantedBy=multi-user.target', '',
    ].join('\n'),
  });
}

/** The failover alerts (one PrometheusRule group). */
export function failoverAlertGroup(p: FailoverInput, name: string, ksmLabel: string, runbookUrl?: string): { name: string; rules: Record<string, unknown>[] } {
  const s = settings(p);
  const lease = failoverLeaseName(name);
  const nodes = candidatesOf(p).map((c) => c.node);
  const annotations = (alert: string, summary: string, description: string) => ({
    summary, description, runbook: FAILOVER_RUNBOOKS[alert](name, nodes, s.namespace), ...(runbookUrl ? { runbook_url: `${runbookUrl}#${alert.toLowerCase()}` } : {}),
  });
  const holders = `kube_node_labels{${ksmLabel}="true"}`;
  return {
    name: `tunnelwright-${name}-failover`,
    rules: [
      {
        alert: 'VPNEgressRoleMoved',
        // Distinct nodes that carried the active label in the last 15 minutes.
        expr: `count(count by (node) (count_over_time(${holders}[15m]))) > 1`,
        labels: { severity: 'warning' },
        annotations: annotations('VPNEgressRoleMoved', `the ${name} egress gateway role moved to another node in the last 15 minutes`, 'A candidate took the role: the former holder\'s tunnel failed its health check, or it stopped renewing the Lease. Steered connections through it were dropped.'),
      },
      {
        alert: 'VPNEgressTwoHolders',
        expr: `count(${holders}) > 1`,
        for: '1m',
        labels: { severity: 'critical' },
        annotations: annotations('VPNEgressTwoHolders', `more than one node carries the ${name} active label`, 'Cilium takes the first of them by name, whatever its tunnel\'s health. The holder of the Lease removes the others\' labels at every check: this lasting means its agent cannot.'),
      },
      {
        alert: 'VPNEgressNoActiveLabel',
        // kube-state-metrics reports nodes, none with the active label: Cilium drops every vpn-class connection. The
        // rule exists exactly as long as the policy (both are emitted by this EgressSteering).
        expr: `absent(${holders}) and on() (count(kube_node_labels) > 0)`,
        for: '2m',
        labels: { severity: 'critical' },
        annotations: annotations('VPNEgressNoActiveLabel', `no node carries the ${name} active label`, 'The policy selects no gateway: Cilium drops every steered connection (closed). Either no candidate holds the Lease, or the holder cannot label itself.'),
      },
      {
        alert: 'VPNEgressNoHealthyStandby',
        expr: `(count(tunnelwright_egress_failover_healthy{policy="${name}"} == 1) or on() vector(0)) < 2`,
        for: '5m',
        labels: { severity: 'warning' },
        annotations: annotations('VPNEgressNoHealthyStandby', `fewer than two of the ${name} candidates have a healthy tunnel`, 'One more failure leaves vpn-class pods without a way out (Cilium drops their traffic: closed).'),
      },
      {
        alert: 'VPNEgressLeaseNotRenewed',
        expr: `(time() - max(kube_lease_renew_time{namespace="${s.namespace}", lease="${lease}"})) > ${3 * s.duration}`,
        for: '1m',
        labels: { severity: 'critical' },
        annotations: annotations('VPNEgressLeaseNotRenewed', `no agent renewed the ${s.namespace}/${lease} Lease for ${3 * s.duration} s`, 'No candidate holds the role: no healthy tunnel, or no agent reaches the API server.'),
      },
    ],
  };
}

const FAILOVER_RUNBOOKS: Record<string, (name: string, nodes: string[], ns: string) => string> = {
  VPNEgressRoleMoved: (name, nodes, ns) => [
    `1. kubectl get lease -n ${ns} ${failoverLeaseName(name)} -o yaml: the holder and leaseTransitions.`,
    `2. journalctl -u ${FAILOVER_AGENT_SERVICE} on ${nodes.join(', ')}: "gave up the role" (its tunnel failed), "took the role from".`,
    '3. The former holder does not take the role back while the new one is healthy (no failback): nothing to undo.',
  ].join('\n'),
  VPNEgressTwoHolders: (name, nodes) => [
    `1. kubectl get node,ciliumnode -L ${activeLabel(name)}: which nodes carry it.`,
    `2. systemctl status ${FAILOVER_AGENT_SERVICE} on the Lease holder; its kubectl errors (RBAC: nodes and ciliumnodes ${nodes.join(', ')}, verb patch).`,
    `3. Remove the label from every node but the Lease holder: kubectl label node,ciliumnode <node> ${activeLabel(name)}-.`,
  ].join('\n'),
  VPNEgressNoActiveLabel: (name, nodes, ns) => [
    `1. kubectl get lease -n ${ns} ${failoverLeaseName(name)} -o yaml: the holder; kubectl get node,ciliumnode -L ${activeLabel(name)}.`,
    `2. journalctl -u ${FAILOVER_AGENT_SERVICE} on ${nodes.join(', ')}: "could not label" (RBAC no longer names that node: a candidate removed from standbys whose agent still runs), or every tunnel unhealthy.`,
    `3. Decommission a candidate: remove it from standbys and apply, then on that node: systemctl disable --now ${FAILOVER_AGENT_SERVICE} and rm ${FAILOVER_AGENT_PATH} (if it held the Lease, a healthy standby takes it after leaseDurationSeconds).`,
  ].join('\n'),
  VPNEgressNoHealthyStandby: (_name, nodes) => [
    `1. On ${nodes.join(', ')}: the tunnel (wg show, or systemctl status tunnelwright-openvpn.service) and journalctl -u ${FAILOVER_AGENT_SERVICE}.`,
    '2. No tunnelwright_egress_failover_healthy series at all: node-exporter must read the textfile directory (monitoring.textfileDirectory).',
  ].join('\n'),
  VPNEgressLeaseNotRenewed: (name, nodes, ns) => [
    `1. kubectl get lease -n ${ns} ${failoverLeaseName(name)} -o yaml: renewTime and holderIdentity.`,
    `2. systemctl status ${FAILOVER_AGENT_SERVICE} on ${nodes.join(', ')}: a kubectl error (credential, RBAC, API unreachable), or every tunnel unhealthy.`,
    '3. kube-state-metrics must collect leases (its default resources include them) for this alert to resolve.',
  ].join('\n'),
};

/** The runbooks as text, for docs/runbooks.md's test. */
export function failoverRunbook(alert: string, name: string, nodes: string[], ns: string): string {
  return FAILOVER_RUNBOOKS[alert](name, nodes, ns);
}
