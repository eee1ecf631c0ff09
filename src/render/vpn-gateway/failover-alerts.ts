import { throwIfProblems } from '../../errors';
import type { VpnGatewayProps } from '../../model/vpn-gateway';
import { failoverAlertsProblems } from '../../model/vpn-gateway-failover';
import { gatewayFacts } from './plan';
import { standbyMembers } from './failover';

/**
 * Alerts on a VpnGateway with `standby`, from kube-state-metrics' series (its default metrics, no allowlist):
 * `kube_lease_owner{namespace, lease, lease_holder}` and `kube_lease_renew_time{lease}` (internal/store/lease.go: the
 * renew time carries only `lease`, no namespace), `kube_endpoint_address{namespace, endpoint, ip, ready}` (KSM ≥ 2.14
 * has only this one; internal/store/endpoint.go) and `kube_pod_status_ready{namespace, pod, condition}`.
 *   - VPNGatewayRoleMoved: more than one holder in `movedWithin` (info: a tunnel failed and the standby took over).
 *   - VPNGatewayNoHealthyStandby: fewer than two gateway pods ready for `standbyFor`: the next tunnel failure is an
 *     outage. Ready follows the failover agent's verdict (its readinessProbe, failover.ts): gluetun's health server,
 *     the tunnel interface and the probe through it; never gluetun's health server alone, which stays 200 after
 *     OpenVPN exited (internal/vpn/tunnelup.go:89-95 at v3.41.1).
 *   - VPNGatewayTwoHolders: the gateway's name resolves to two pods for a minute: new routed pods cannot start
 *     (pod-gateway's client_init.sh exits with two addresses).
 *   - VPNGatewayLeaseNotRenewed: nobody renewed the Lease for twice its duration (no gateway holds the role: every
 *     routed pod is without egress).
 */
export function failoverAlertGroups(props: VpnGatewayProps, opts: { movedWithin?: string; standbyFor?: string; runbookUrl?: string } = {}): { name: string; rules: Record<string, unknown>[] }[] {
  throwIfProblems(failoverAlertsProblems(props), 'failover alerts');
  const f = gatewayFacts(props);
  const ns = f.namespace;
  const lease = f.name;
  const pods = standbyMembers(f).map((m) => m.pod).join('|');
  const limit = 2 * (props.standby!.leaseSeconds ?? 15);
  const rules: { alert: keyof typeof FAILOVER_RUNBOOKS; expr: string; for: string; labels: Record<string, string>; annotations: Record<string, string> }[] = [
    {
      alert: 'VPNGatewayRoleMoved',
      expr: `count by (namespace, lease) (count_over_time(kube_lease_owner{namespace="${ns}", lease="${lease}", lease_holder!=""}[${opts.movedWithin ?? '15m'}])) > 1`,
      for: '0m',
      labels: { severity: 'info' },
      annotations: { summary: 'the VPN gateway role moved to the other pod', description: `${ns}/${lease}: more than one pod held the gateway role in the last ${opts.movedWithin ?? '15m'}: a tunnel failed (or a pod was drained) and the other took over.` },
    },
    {
      alert: 'VPNGatewayNoHealthyStandby',
      expr: `sum by (namespace) (kube_pod_status_ready{namespace="${ns}", pod=~"${pods}", condition="true"}) < 2`,
      for: opts.standbyFor ?? '10m',
      labels: { severity: 'warning' },
      annotations: { summary: 'the VPN gateway has no healthy standby', description: `${ns}: fewer than two of ${pods.replace('|', ', ')} are ready (ready follows the failover agent's verdict: gluetun's health, the tunnel interface, the probe): the next tunnel failure is an outage.` },
    },
    {
      alert: 'VPNGatewayTwoHolders',
      expr: `count by (namespace, endpoint) (kube_endpoint_address{namespace="${ns}", endpoint="${lease}", ready="true"}) > 1`,
      for: '1m',
      labels: { severity: 'critical' },
      annotations: { summary: 'the VPN gateway\'s name resolves to two pods', description: `${ns}/${lease}: two gateway pods carry the active label: routed pods that start now fail (pod-gateway's client_init.sh takes one address only).` },
    },
    {
      alert: 'VPNGatewayLeaseNotRenewed',
      expr: `time() - kube_lease_renew_time{lease="${lease}"} > ${limit}`,
      for: '1m',
      labels: { severity: 'critical' },
      annotations: { summary: 'no VPN gateway pod holds the role', description: `${ns}/${lease}: the Lease was not renewed for more than ${limit} s: neither gateway pod has a healthy tunnel (or neither reaches the API); routed pods have no egress (they stay closed).` },
    },
  ];
  return [{
    name: `tunnelwright-${f.name}-failover`,
    rules: rules.map((r) => ({ ...r, annotations: { ...r.annotations, runbook: FAILOVER_RUNBOOKS[r.alert], ...(opts.runbookUrl ? { runbook_url: `${opts.runbookUrl}#${r.alert.toLowerCase()}` } : {}) } })),
  }];
}

/** Each failover alert's runbook, shipped in the alert (the `runbook` annotation); docs/runbooks.md has them too. */
const FAILOVER_RUNBOOKS = {
  VPNGatewayRoleMoved: [
    '1. kubectl -n <namespace> logs <old holder> -c failover-agent: "fenced: tunnel unhealthy", "lease not renewed" or "stopping" says why.',
    '2. kubectl -n <namespace> logs <old holder> -c gluetun: why its tunnel failed. It does not take the role back while the new holder is healthy.',
  ].join('\n'),
  VPNGatewayNoHealthyStandby: [
    '1. kubectl -n <namespace> logs <pod> -c failover-agent for each gateway pod: "verdict: unhealthy (N checks: ...)" says which check failed: gluetun\'s health server, the tunnel interface gone or down (gluetun\'s VPN client stopped), or no answer through it (the probe). No verdict line and a pod not ready: its agent has not passed acquireAfter checks yet, or it hangs (its verdict expired).',
    '2. kubectl -n <namespace> get pods -l app.kubernetes.io/component=vpn-gateway -o wide: which pod is not ready, on which node (they never share one).',
    '3. kubectl -n <namespace> logs <pod> -c gluetun: a tunnel that does not come up (the standby\'s own key or login: standby.wireguardPrivateKeySecret, standby.openvpnCredentialsSecret; an OpenVPN AUTH_FAILED is a wrong login, a session that keeps restarting on both pods is one login the server allows once).',
  ].join('\n'),
  VPNGatewayTwoHolders: [
    '1. kubectl -n <namespace> get pods -L tunnelwright.io/role and get lease <name>: the Lease names the holder; the other pod keeps a stale label.',
    '2. Remove the stale label (kubectl label pod <other> tunnelwright.io/role-); its agent normally does it: read its log (an API it cannot reach?).',
  ].join('\n'),
  VPNGatewayLeaseNotRenewed: [
    '1. kubectl -n <namespace> get lease <name> -o yaml and the two pods\' failover-agent logs: both tunnels unhealthy, or both cut off from the API server.',
    '2. kubectl -n <namespace> logs <pod> -c gluetun for each: the provider, the keys, the network. Routed pods stay without egress (never in the clear) until one recovers.',
  ].join('\n'),
};
