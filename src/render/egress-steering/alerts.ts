import { ksmAllowlistEntry, ksmLabelName } from '../../model/egress-steering';
import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { KubeObject } from '../../types';
import { KILL_SWITCH_TABLE } from '../kill-switch';
import { activeLabel } from '../../model/egress-steering-failover';
import { failoverAlertGroup } from '../egress-steering-failover';
import { MANAGED, OPENVPN_UNIT, RESTEER_PATH, RESTEER_SERVICE, RESTEER_TIMER, WG_HANDSHAKE_METRIC, WG_HANDSHAKE_PATH, WG_HANDSHAKE_TIMER } from './constants';

/** How long kube-state-metrics' series may be gone (a restart) without resetting VPNEgressSteeringStale or VPNTunnelReconnectLoop. */
export const KSM_GAP = '4m';
/** VPNTunnelReconnectLoop: more re-creations of the interface than this in the window. */
export const RECONNECT_LOOP_THRESHOLD = 3;
export const RECONNECT_LOOP_WINDOW = '30m';
/** VPNTunnelHandshakeStale: seconds since the latest handshake (WireGuard's REJECT_AFTER_TIME is 180 s). */
export const WG_HANDSHAKE_MAX_AGE = 300;

/** The alert rules (PrometheusRule `spec.groups`), each gated on the gateway node existing. */
export function alertGroups(s: EgressSteeringSpec): { name: string; rules: Record<string, unknown>[] }[] {
  const node = s.gatewayNode;
  const label = ksmLabelName(s.uplinkLabel);
  const onGateway = (metric: string) => `${metric} * on(instance) group_left(nodename) node_uname_info{nodename="${node}"}`;
  const gate = `on() (count(kube_node_info{node="${node}"}) > 0)`;
  // The same over a kube-state-metrics restart (its series gone for a minute or two): a firing alert keeps firing.
  const ksmGate = `on() (count(last_over_time(kube_node_info{node="${node}"}[${KSM_GAP}])) > 0)`;
  const tunnelPresent = `on() (count(${onGateway(`node_network_info{device="${s.iface}"}`)}) > 0)`;
  const runbookUrl = s.monitoring?.runbookUrl;
  const annotations = (alert: string, summary: string, description: string) => ({
    summary, description, runbook: RUNBOOKS[alert](s, node), ...(runbookUrl ? { runbook_url: `${runbookUrl}#${alert.toLowerCase()}` } : {}),
  });
  return [
    {
      name: `tunnelwright-${s.name}`,
      rules: [
        {
          alert: 'VPNTunnelDown',
          expr: `absent(${onGateway(`node_network_info{device="${s.iface}"}`)}) and ${gate}`,
          for: '2m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNTunnelDown', `the VPN tunnel ${s.iface} is missing on ${node}`, `Pods of class ${s.vpnClass} have no way out: Cilium drops their traffic while the tunnel is down (fail closed).`),
        },
        {
          alert: 'VPNEgressSteeringStale',
          // The live ifindex against the one in the label's value (`<address>-<ifindex>`): firing for as long as they
          // differ, whatever the window, and resolved when the label follows. Series, not values, are compared by
          // ifindex: a restarted kube-state-metrics (a new series, the same value) changes nothing. Only while the label
          // is there (VPNEgressUplinkLabelMissing reports it missing) and the tunnel is up (else VPNTunnelDown).
          // One alert, without the ifindex label: in a reconnect loop that the label does not follow, each ifindex
          // would otherwise be an alert of its own, pending for 2 minutes and never firing.
          expr: `count(count_values("ifindex", max(${onGateway(`node_network_iface_id{device="${s.iface}"}`)})) unless on(ifindex) label_replace(kube_node_labels{node="${node}", ${label}!=""}, "ifindex", "$1", "${label}", "^.*-([0-9]+)$")) and on() (count(last_over_time(kube_node_labels{node="${node}", ${label}!=""}[${KSM_GAP}])) > 0) and ${ksmGate}`,
          for: '5m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNEgressSteeringStale', `the ${s.uplinkLabel} label of ${node} names another ${s.iface} than the live one`, 'Cilium caches the egress interface: after a re-creation it black-holes steered traffic until the node is re-labelled. Check the re-steer hook (tunnelwright-egress-resteer.service).'),
        },
        {
          alert: 'VPNTunnelReconnectLoop',
          // Each re-creation of the interface is a new ifindex (node-exporter's node_network_iface_id).
          expr: `(max(${onGateway(`changes(node_network_iface_id{device="${s.iface}"}[${RECONNECT_LOOP_WINDOW}])`)}) > ${RECONNECT_LOOP_THRESHOLD}) and ${ksmGate}`,
          for: '5m',
          labels: { severity: 'warning' },
          annotations: annotations('VPNTunnelReconnectLoop', `${s.iface} on ${node} was re-created more than ${RECONNECT_LOOP_THRESHOLD} times in ${RECONNECT_LOOP_WINDOW}`, 'The tunnel keeps reconnecting: every reconnect drops the steered connections. A second client on the same server and account steals the session each time it connects.'),
        },
        {
          alert: 'VPNEgressUplinkLabelMissing',
          // Only while the tunnel is up: the hook removes the label while it is gone, and VPNTunnelDown reports that.
          expr: `absent(kube_node_labels{node="${node}", ${label}!=""}) and ${tunnelPresent} and ${gate}`,
          for: '10m',
          labels: { severity: 'warning' },
          annotations: annotations('VPNEgressUplinkLabelMissing', `${node} has no ${s.uplinkLabel} label while ${s.iface} is up`, 'The re-steer hook has not labelled the gateway node (or kube-state-metrics does not export the label).'),
        },
        ...(s.tunnel?.type === 'wireguard' ? [{
          alert: 'VPNTunnelHandshakeStale',
          // WireGuard's interface outlives a dead peer: the age of the latest handshake, from the node's textfile. A
          // peer that answers re-handshakes at least every 2 minutes while traffic flows (REKEY_AFTER_TIME 120 s, and
          // the keepalive keeps traffic flowing); 0 (never) is as old as it gets. The metric absent while the tunnel
          // is up fires too: a node-exporter without the textfile collector's directory (kube-prometheus-stack's
          // default) never collects it, and a dead peer would otherwise raise nothing.
          expr: `((time() - max(${onGateway(`${WG_HANDSHAKE_METRIC}{interface="${s.iface}"}`)}) > ${WG_HANDSHAKE_MAX_AGE}) or (absent(${onGateway(`${WG_HANDSHAKE_METRIC}{interface="${s.iface}"}`)}) and ${tunnelPresent})) and ${gate}`,
          for: '2m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNTunnelHandshakeStale', `the WireGuard peer of ${s.iface} on ${node} has not completed a handshake for more than ${WG_HANDSHAKE_MAX_AGE} s, or its handshake is not collected`, `Pods of class ${s.vpnClass} have no way out while the interface is up and its peer does not answer. With no ${WG_HANDSHAKE_METRIC} series at all, node-exporter does not read the textfile directory the node writes it to: until it does, a dead peer cannot be seen.`),
        }] : []),
      ],
    },
  ];
}

/** Each alert's runbook, shipped in the alert itself (the `runbook` annotation): what to check, in order. */
const RUNBOOKS: Record<string, (s: EgressSteeringSpec, node: string) => string> = {
  VPNTunnelDown: (s) => [
    `1. On the gateway node: systemctl status ${OPENVPN_UNIT} (or wg-quick@${s.iface}) and its journal.`,
    "2. systemctl status 'tunnelwright-secret-*': a key or config that never arrived.",
    `3. nft list table inet ${KILL_SWITCH_TABLE}: the drop counters show what the kill switch held back.`,
  ].join('\n'),
  VPNEgressSteeringStale: (s, node) => [
    `1. systemctl status ${RESTEER_SERVICE} ${RESTEER_TIMER} on ${node}; run ${RESTEER_PATH} by hand (it prints kubectl's error).`,
    `2. kubectl get node,ciliumnode ${node} -L ${s.uplinkLabel}: both carry the same <address>-<ifindex>.`,
    `3. Label written but Cilium ignored it: in the Cilium agent on ${node}, cilium-dbg bpf egress list; its egress interface (ifindex) must be ip link show ${s.iface}'s.`,
  ].join('\n'),
  VPNTunnelReconnectLoop: (s, node) => [
    `1. journalctl -u ${OPENVPN_UNIT} (or wg-quick@${s.iface}) on ${node}: why each session ended (ping-restart, auth, a server restart).`,
    '2. Another client on the same VPN server with the same credential (the session is stolen at each connect): give each gateway its own server or account.',
  ].join('\n'),
  VPNTunnelHandshakeStale: (s, node) => [
    `1. wg show ${s.iface} on ${node}: latest handshake and transfer; the endpoint must answer on its UDP port.`,
    `2. No ${WG_HANDSHAKE_METRIC} series at all (absent): ${WG_HANDSHAKE_PATH} writes it (${WG_HANDSHAKE_TIMER}, systemctl list-timers) into monitoring.textfileDirectory; node-exporter reads it only with --collector.textfile.directory set to that directory (kube-prometheus-stack: prometheus-node-exporter.extraArgs and a hostPath mount).`,
  ].join('\n'),
  VPNEgressUplinkLabelMissing: (s, node) => [
    `1. ${RESTEER_PATH} on ${node}: it labels the node, or prints why not (credential, RBAC).`,
    `2. kube-state-metrics must export the label: metricLabelsAllowlist ["${ksmAllowlistEntry(s.uplinkLabel)}"] (plan.values.kubeStateMetrics, under kube-state-metrics: in kube-prometheus-stack's values).`,
  ].join('\n'),
};

/** The PrometheusRule that carries the alert groups. */
export function prometheusRule(s: EgressSteeringSpec, monitoring: NonNullable<EgressSteeringSpec['monitoring']>): KubeObject {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: `${s.name}-egress`, namespace: monitoring.namespace, labels: { ...MANAGED, ...monitoring.ruleLabels } },
    spec: { groups: [...alertGroups(s), ...(s.failover ? [failoverAlertGroup(s, s.name, ksmLabelName(activeLabel(s.name)), monitoring.runbookUrl)] : [])] },
  };
}
