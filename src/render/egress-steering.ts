import * as path from 'node:path';
import type { ClusterRole as IClusterRole } from 'kubernetes-types/rbac/v1';
import type { ClusterRoleBinding as IClusterRoleBinding } from 'kubernetes-types/rbac/v1';
import type { Secret as ISecret } from 'kubernetes-types/core/v1';
import type { ServiceAccount as IServiceAccount } from 'kubernetes-types/core/v1';
import { Problem, throwIfProblems } from '../errors';
import { addResolvedSecret, planSecretSource } from '../host/secret-source';
import type { SecretSource } from '../model/common';
import { Claim } from '../invariants';
import type { EgressSteeringProps } from '../model/egress-steering';
import { cidrContains, parseCidr } from '../model/net';
import { emptyHostPlan, HostPlan, KubeObject, Plan } from '../types';
import { KILL_SWITCH_LEARNT_DIR, KILL_SWITCH_NFT_PATH, KILL_SWITCH_SETS, KILL_SWITCH_TABLE, KILL_SWITCH_UNIT, planHostKillSwitch } from './kill-switch';
import { renderWireguardConfig } from './wireguard-overlay-node';
import { WG_RELOAD_FILE, wireguardReloadDropin } from '../host/wireguard-reload';
import { mergeHostPlans } from '../host/host-plan';
import * as egressSteeringModel from '../model/egress-steering';
import * as overlayNodeModel from '../model/wireguard-overlay-node';
import { asset, withSettings } from '../assets';

const RESTEER_SCRIPT = asset(__dirname, 'egress-resteer.sh');
const HANDSHAKE_SCRIPT = asset(__dirname, 'egress-wireguard-handshake.sh');
const OPENVPN_UP_SCRIPT = asset(__dirname, 'egress-openvpn-up.sh');
const OPENVPN_DOWN_SCRIPT = asset(__dirname, 'egress-openvpn-down.sh');
const OPENVPN_PIN_SCRIPT = asset(__dirname, 'egress-openvpn-pin.sh');

/** Returns the problems of EgressSteering props without throwing. */
export function validateEgressSteering(props: unknown): Problem[] {
  return egressSteeringModel.checkEgressSteering(props).problems;
}

/** The routing table and rule priority that send tunnel-sourced traffic out of the tunnel. */
export const EGRESS_ROUTE_TABLE = 51821;
export const EGRESS_RULE_PRIORITY = 5210;
/** An OpenVPN address held after its session ended: `from <address> blackhole` at this priority (above the table's rule). */
export const EGRESS_HOLD_PRIORITY = 5209;
export const RESTEER_PATH = '/opt/tunnelwright/bin/egress-resteer';
export const RESTEER_SERVICE = 'tunnelwright-egress-resteer.service';
export const RESTEER_TIMER = 'tunnelwright-egress-resteer.timer';
export const OPENVPN_UNIT = 'tunnelwright-openvpn.service';
export const RESTEER_NAMESPACE = 'kube-system';

interface Facts {
  readonly name: string;
  readonly cluster: string;
  readonly iface: string;
  readonly classLabel: string;
  readonly vpnClass: string;
  readonly uplinkLabel: string;
}

function facts(p: EgressSteeringProps): Facts {
  return {
    name: p.name ?? 'vpn-egress',
    cluster: p.cluster ?? 'default',
    iface: p.interface ?? 'tun0',
    classLabel: p.egressClassLabel ?? egressSteeringModel.DEFAULT_EGRESS_CLASS_LABEL,
    vpnClass: p.vpnClass ?? 'vpn',
    uplinkLabel: p.uplinkLabel ?? egressSteeringModel.DEFAULT_UPLINK_LABEL,
  };
}

const MANAGED = { 'app.kubernetes.io/managed-by': 'tunnelwright' };

/** The excluded CIDRs: given, else RFC 1918, cluster and LAN CIDRs that lie inside a destination. */
export function excludedCidrsOf(p: EgressSteeringProps): string[] {
  if (p.excludedCidrs) return p.excludedCidrs;
  const destinations = (p.destinationCidrs ?? ['0.0.0.0/0']).map((d) => parseCidr(d)!);
  const candidates = [...egressSteeringModel.RFC1918, ...p.clusterCidrs, ...(p.lanCidrs ?? [])];
  // A private block that is itself a destination is steered, not excluded (that would steer nothing); the cluster and
  // LAN ranges are always excluded.
  const parsed = candidates.map((c, k) => ({ c, p: parseCidr(c)!, rfc1918: k < egressSteeringModel.RFC1918.length }))
    .filter(({ p, rfc1918 }) => destinations.some((d) => cidrContains(d, p) && !(rfc1918 && p.start === d.start && p.end === d.end)));
  // Keep each block once, and none that another candidate already covers (an equal block: the first one; a block
  // always contains itself, so it is kept unless an earlier one equals it).
  return parsed.filter((x, i) => !parsed.some((y, j) => cidrContains(y.p, x.p) && (!cidrContains(x.p, y.p) || j < i))).map(({ c }) => c);
}

function policy(p: EgressSteeringProps, f: Facts): KubeObject {
  const podSelector = { matchLabels: { [f.classLabel]: f.vpnClass } };
  const selectors = p.namespaces
    ? p.namespaces.map((ns) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } }, podSelector }))
    : [{ podSelector }];
  const excluded = excludedCidrsOf(p);
  return {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumEgressGatewayPolicy',
    metadata: { name: f.name, labels: MANAGED },
    spec: {
      selectors,
      destinationCIDRs: p.destinationCidrs ?? ['0.0.0.0/0'],
      ...(excluded.length > 0 ? { excludedCIDRs: excluded } : {}),
      // One node, by hostname: a selector that could match a second node makes Cilium pick by name order, silently.
      egressGateway: { nodeSelector: { matchLabels: { 'kubernetes.io/hostname': p.gatewayNode } }, ...(p.egressIp ? { egressIP: p.egressIp } : { interface: f.iface }) },
    },
  };
}

function kyvernoPolicy(p: EgressSteeringProps, f: Facts): KubeObject {
  const classes = p.enforceLabels!.classes ?? [f.vpnClass, 'direct'];
  return {
    apiVersion: 'kyverno.io/v1',
    kind: 'ClusterPolicy',
    metadata: { name: `${f.name}-require-egress-class`, labels: MANAGED, annotations: { 'policies.kyverno.io/title': 'Require an egress class', 'policies.kyverno.io/description': `Pods in ${p.enforceLabels!.namespaces.join(', ')} must say how they reach the internet: ${f.classLabel} is one of ${classes.join(', ')}.` } },
    spec: {
      background: true,
      rules: [
        {
          name: 'require-egress-class',
          match: { any: [{ resources: { kinds: ['Pod'], namespaces: [...p.enforceLabels!.namespaces] } }] },
          validate: {
            failureAction: 'Enforce',
            message: `label ${f.classLabel} must be one of ${classes.join(', ')}`,
            pattern: { metadata: { labels: { [f.classLabel]: classes.join(' | ') } } },
          },
        },
      ],
    },
  };
}

/** How long kube-state-metrics' series may be gone (a restart) without resetting VPNEgressSteeringStale or VPNTunnelReconnectLoop. */
export const KSM_GAP = '4m';
/** VPNTunnelReconnectLoop: more re-creations of the interface than this in the window. */
export const RECONNECT_LOOP_THRESHOLD = 3;
export const RECONNECT_LOOP_WINDOW = '30m';
/** The node's textfile metric: the latest handshake of each peer of a WireGuard tunnel, in Unix seconds (0: never). */
export const WG_HANDSHAKE_METRIC = 'tunnelwright_wireguard_latest_handshake_timestamp_seconds';
/** VPNTunnelHandshakeStale: seconds since the latest handshake (WireGuard's REJECT_AFTER_TIME is 180 s). */
export const WG_HANDSHAKE_MAX_AGE = 300;
export const WG_HANDSHAKE_PATH = '/opt/tunnelwright/bin/egress-wireguard-handshake';
export const WG_HANDSHAKE_SERVICE = 'tunnelwright-wireguard-handshake.service';
export const WG_HANDSHAKE_TIMER = 'tunnelwright-wireguard-handshake.timer';
/** Where node-exporter's textfile collector reads by default here (`--collector.textfile.directory`). */
export const DEFAULT_TEXTFILE_DIRECTORY = '/var/lib/node_exporter/textfile_collector';

/** The alert rules (PrometheusRule `spec.groups`), each gated on the gateway node existing. */
export function egressAlertGroups(p: EgressSteeringProps): { name: string; rules: Record<string, unknown>[] }[] {
  const f = facts(p);
  const node = p.gatewayNode;
  const label = egressSteeringModel.ksmLabelName(f.uplinkLabel);
  const onGateway = (metric: string) => `${metric} * on(instance) group_left(nodename) node_uname_info{nodename="${node}"}`;
  const gate = `on() (count(kube_node_info{node="${node}"}) > 0)`;
  // The same over a kube-state-metrics restart (its series gone for a minute or two): a firing alert keeps firing.
  const ksmGate = `on() (count(last_over_time(kube_node_info{node="${node}"}[${KSM_GAP}])) > 0)`;
  const tunnelPresent = `on() (count(${onGateway(`node_network_info{device="${f.iface}"}`)}) > 0)`;
  const runbookUrl = p.monitoring?.runbookUrl;
  const annotations = (alert: string, summary: string, description: string) => ({
    summary, description, runbook: RUNBOOKS[alert](f, node), ...(runbookUrl ? { runbook_url: `${runbookUrl}#${alert.toLowerCase()}` } : {}),
  });
  return [
    {
      name: `tunnelwright-${f.name}`,
      rules: [
        {
          alert: 'VPNTunnelDown',
          expr: `absent(${onGateway(`node_network_info{device="${f.iface}"}`)}) and ${gate}`,
          for: '2m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNTunnelDown', `the VPN tunnel ${f.iface} is missing on ${node}`, `Pods of class ${f.vpnClass} have no way out: Cilium drops their traffic while the tunnel is down (fail closed).`),
        },
        {
          alert: 'VPNEgressSteeringStale',
          // The live ifindex against the one in the label's value (`<address>-<ifindex>`): firing for as long as they
          // differ, whatever the window, and resolved when the label follows. Series, not values, are compared by
          // ifindex: a restarted kube-state-metrics (a new series, the same value) changes nothing. Only while the label
          // is there (VPNEgressUplinkLabelMissing reports it missing) and the tunnel is up (else VPNTunnelDown).
          // One alert, without the ifindex label: in a reconnect loop that the label does not follow, each ifindex
          // would otherwise be an alert of its own, pending for 2 minutes and never firing.
          expr: `count(count_values("ifindex", max(${onGateway(`node_network_iface_id{device="${f.iface}"}`)})) unless on(ifindex) label_replace(kube_node_labels{node="${node}", ${label}!=""}, "ifindex", "$1", "${label}", "^.*-([0-9]+)$")) and on() (count(last_over_time(kube_node_labels{node="${node}", ${label}!=""}[${KSM_GAP}])) > 0) and ${ksmGate}`,
          for: '5m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNEgressSteeringStale', `the ${f.uplinkLabel} label of ${node} names another ${f.iface} than the live one`, 'Cilium caches the egress interface: after a re-creation it black-holes steered traffic until the node is re-labelled. Check the re-steer hook (tunnelwright-egress-resteer.service).'),
        },
        {
          alert: 'VPNTunnelReconnectLoop',
          // Each re-creation of the interface is a new ifindex (node-exporter's node_network_iface_id).
          expr: `(max(${onGateway(`changes(node_network_iface_id{device="${f.iface}"}[${RECONNECT_LOOP_WINDOW}])`)}) > ${RECONNECT_LOOP_THRESHOLD}) and ${ksmGate}`,
          for: '5m',
          labels: { severity: 'warning' },
          annotations: annotations('VPNTunnelReconnectLoop', `${f.iface} on ${node} was re-created more than ${RECONNECT_LOOP_THRESHOLD} times in ${RECONNECT_LOOP_WINDOW}`, 'The tunnel keeps reconnecting: every reconnect drops the steered connections. A second client on the same server and account steals the session each time it connects.'),
        },
        {
          alert: 'VPNEgressUplinkLabelMissing',
          // Only while the tunnel is up: the hook removes the label while it is gone, and VPNTunnelDown reports that.
          expr: `absent(kube_node_labels{node="${node}", ${label}!=""}) and ${tunnelPresent} and ${gate}`,
          for: '10m',
          labels: { severity: 'warning' },
          annotations: annotations('VPNEgressUplinkLabelMissing', `${node} has no ${f.uplinkLabel} label while ${f.iface} is up`, 'The re-steer hook has not labelled the gateway node (or kube-state-metrics does not export the label).'),
        },
        ...(p.tunnel?.type === 'wireguard' ? [{
          alert: 'VPNTunnelHandshakeStale',
          // WireGuard's interface outlives a dead peer: the age of the latest handshake, from the node's textfile. A
          // peer that answers re-handshakes at least every 2 minutes while traffic flows (REKEY_AFTER_TIME 120 s, and
          // the keepalive keeps traffic flowing); 0 (never) is as old as it gets. The metric absent while the tunnel
          // is up fires too: a node-exporter without the textfile collector's directory (kube-prometheus-stack's
          // default) never collects it, and a dead peer would otherwise raise nothing.
          expr: `((time() - max(${onGateway(`${WG_HANDSHAKE_METRIC}{interface="${f.iface}"}`)}) > ${WG_HANDSHAKE_MAX_AGE}) or (absent(${onGateway(`${WG_HANDSHAKE_METRIC}{interface="${f.iface}"}`)}) and ${tunnelPresent})) and ${gate}`,
          for: '2m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNTunnelHandshakeStale', `the WireGuard peer of ${f.iface} on ${node} has not completed a handshake for more than ${WG_HANDSHAKE_MAX_AGE} s, or its handshake is not collected`, `Pods of class ${f.vpnClass} have no way out while the interface is up and its peer does not answer. With no ${WG_HANDSHAKE_METRIC} series at all, node-exporter does not read the textfile directory the node writes it to: until it does, a dead peer cannot be seen.`),
        }] : []),
      ],
    },
  ];
}

/** Each alert's runbook, shipped in the alert itself (the `runbook` annotation): what to check, in order. */
const RUNBOOKS: Record<string, (f: Facts, node: string) => string> = {
  VPNTunnelDown: (f) => [
    `1. On the gateway node: systemctl status ${OPENVPN_UNIT} (or wg-quick@${f.iface}) and its journal.`,
    "2. systemctl status 'tunnelwright-secret-*': a key or config that never arrived.",
    `3. nft list table inet ${KILL_SWITCH_TABLE}: the drop counters show what the kill switch held back.`,
  ].join('\n'),
  VPNEgressSteeringStale: (f, node) => [
    `1. systemctl status ${RESTEER_SERVICE} ${RESTEER_TIMER} on ${node}; run ${RESTEER_PATH} by hand (it prints kubectl's error).`,
    `2. kubectl get node,ciliumnode ${node} -L ${f.uplinkLabel}: both carry the same <address>-<ifindex>.`,
    `3. Label written but Cilium ignored it: in the Cilium agent on ${node}, cilium-dbg bpf egress list; its egress interface (ifindex) must be ip link show ${f.iface}'s.`,
  ].join('\n'),
  VPNTunnelReconnectLoop: (f, node) => [
    `1. journalctl -u ${OPENVPN_UNIT} (or wg-quick@${f.iface}) on ${node}: why each session ended (ping-restart, auth, a server restart).`,
    '2. Another client on the same VPN server with the same credential (the session is stolen at each connect): give each gateway its own server or account.',
  ].join('\n'),
  VPNTunnelHandshakeStale: (f, node) => [
    `1. wg show ${f.iface} on ${node}: latest handshake and transfer; the endpoint must answer on its UDP port.`,
    `2. No ${WG_HANDSHAKE_METRIC} series at all (absent): ${WG_HANDSHAKE_PATH} writes it (${WG_HANDSHAKE_TIMER}, systemctl list-timers) into monitoring.textfileDirectory; node-exporter reads it only with --collector.textfile.directory set to that directory (kube-prometheus-stack: prometheus-node-exporter.extraArgs and a hostPath mount).`,
  ].join('\n'),
  VPNEgressUplinkLabelMissing: (f, node) => [
    `1. ${RESTEER_PATH} on ${node}: it labels the node, or prints why not (credential, RBAC).`,
    `2. kube-state-metrics must export the label: metricLabelsAllowlist ["${egressSteeringModel.ksmAllowlistEntry(f.uplinkLabel)}"] (plan.values.kubeStateMetrics, under kube-state-metrics: in kube-prometheus-stack's values).`,
  ].join('\n'),
};

function prometheusRule(p: EgressSteeringProps, f: Facts): KubeObject {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: `${f.name}-egress`, namespace: p.monitoring!.namespace ?? 'monitoring', labels: { ...MANAGED, ...(p.monitoring!.ruleLabels ?? {}) } },
    spec: { groups: egressAlertGroups(p) },
  };
}

function rbac(p: EgressSteeringProps, f: Facts): KubeObject[] {
  const sa = `${f.name}-resteer`;
  const account: IServiceAccount = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: RESTEER_NAMESPACE, labels: MANAGED } };
  const token: ISecret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/service-account-token',
    metadata: { name: `${sa}-token`, namespace: RESTEER_NAMESPACE, labels: MANAGED, annotations: { 'kubernetes.io/service-account.name': sa } },
  };
  const role: IClusterRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: sa, labels: MANAGED },
    // Only the gateway node, and only what labelling needs.
    rules: [
      { apiGroups: [''], resources: ['nodes'], resourceNames: [p.gatewayNode], verbs: ['get', 'patch'] },
      { apiGroups: ['cilium.io'], resources: ['ciliumnodes'], resourceNames: [p.gatewayNode], verbs: ['get', 'patch'] },
    ],
  };
  const binding: IClusterRoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: sa, labels: MANAGED },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: RESTEER_NAMESPACE }],
  };
  return [account, token, role, binding] as KubeObject[];
}

/**
 * The re-steer hook: labels the Node and the CiliumNode `<label>=<address>-<ifindex>` from the live interface (an
 * IPv6 address with `:` written `.`), or removes the label while the interface is gone. It uses `$KUBECTL`, else
 * kubectl, `k3s kubectl` or `k0s kubectl`, whichever the node has.
 */
export function renderResteerScript(node: string, iface: string, label: string, kubeconfig?: string): string {
  return withSettings(RESTEER_SCRIPT, { IFACE: iface, NODE: node, LABEL: label, ...(kubeconfig ? { KUBECONFIG_FILE: kubeconfig } : {}) });
}

/**
 * Writes `<metric>{interface, public_key} <unix seconds>` for each peer of the interface (`wg show latest-handshakes`,
 * 0 for never) into node-exporter's textfile directory, atomically (the collector reads only `*.prom`). With the
 * interface gone the file holds no sample: VPNTunnelDown reports that.
 */
export function renderHandshakeScript(iface: string, dir: string): string {
  return withSettings(HANDSHAKE_SCRIPT, { IFACE: iface, DIR: dir, METRIC: WG_HANDSHAKE_METRIC });
}

/** The closed state of the egress table: a blackhole default below the tunnel's route, so tunnel-sourced traffic never falls through to the main table. */
export const EGRESS_BLACKHOLE = `blackhole default table ${EGRESS_ROUTE_TABLE} metric 4294967295`;

export const OPENVPN_UP_PATH = '/opt/tunnelwright/bin/egress-openvpn-up';
export const OPENVPN_DOWN_PATH = '/opt/tunnelwright/bin/egress-openvpn-down';
export const OPENVPN_PIN_PATH = '/opt/tunnelwright/bin/egress-openvpn-pin';
/** OpenVPN's keepalive on the node's command line: a server silent for OPENVPN_PING_RESTART seconds ends the session (and tun0). */
export const OPENVPN_PING = 10;
export const OPENVPN_PING_RESTART = 60;

function openvpnScripts(): { up: string; down: string; pin: string } {
  return {
    up: withSettings(OPENVPN_UP_SCRIPT, {
      LEARNT_DIR: KILL_SWITCH_LEARNT_DIR, TABLE: KILL_SWITCH_TABLE, SET: KILL_SWITCH_SETS.tunnel[4], NFT_PATH: KILL_SWITCH_NFT_PATH,
      BLACKHOLE: EGRESS_BLACKHOLE, PRIORITY: String(EGRESS_RULE_PRIORITY), HOLD_PRIORITY: String(EGRESS_HOLD_PRIORITY), TABLE_ID: String(EGRESS_ROUTE_TABLE), RESTEER: RESTEER_PATH,
    }),
    down: withSettings(OPENVPN_DOWN_SCRIPT, { HOLD_PRIORITY: String(EGRESS_HOLD_PRIORITY), RESTEER: RESTEER_PATH }),
    pin: OPENVPN_PIN_SCRIPT,
  };
}

/** The first digits of a pushed ping-restart the unit keeps: a positive number of seconds (see hostPlan). */
const OPENVPN_PING_RESTART_KEPT = ['1', '2', '3', '4', '5', '6', '7', '8', '9'];

function hostPlan(p: EgressSteeringProps, f: Facts): HostPlan {
  const host = emptyHostPlan(p.gatewayNode);
  // The unit that resolves the kubeconfig: the hook and the tunnel start after it.
  const before: string[] = [];
  let kubeconfig: string | undefined;
  if (p.kubeconfigFrom) {
    const s = planSecretSource(`${f.name}-kubeconfig`, p.kubeconfigFrom, RESTEER_SERVICE);
    addResolvedSecret(host, s);
    kubeconfig = s.path;
    before.push(s.unit);
  }
  host.files.push({ path: RESTEER_PATH, mode: 0o755, owner: 'root:root', content: renderResteerScript(p.gatewayNode, f.iface, f.uplinkLabel, kubeconfig) });
  host.units.push({
    name: RESTEER_SERVICE,
    content: ['[Unit]', `Description=tunnelwright: label ${p.gatewayNode} with the live ${f.iface} so Cilium re-selects it`, ...before.flatMap((u) => [`After=${u}`, `Wants=${u}`]), '', '[Service]', 'Type=oneshot', `ExecStart=${RESTEER_PATH}`,
      // A oneshot has no start timeout by default (systemd.service(5)): a hung API call would stall the unit, and the
      // timer that starts it would never fire again. kubectl's own calls stop after 10 s (--request-timeout).
      'TimeoutStartSec=60', ''].join('\n'),
  });
  host.units.push({
    name: RESTEER_TIMER,
    enabled: true,
    content: ['[Unit]', `Description=tunnelwright: converge the ${f.uplinkLabel} label`, '', '[Timer]', 'OnBootSec=1min', 'OnUnitActiveSec=1min', `Unit=${RESTEER_SERVICE}`, '', '[Install]', 'WantedBy=timers.target', ''].join('\n'),
  });
  const t = p.tunnel;
  if (!t) return host;
  if (t.type === 'wireguard' && p.monitoring) {
    const dir = p.monitoring.textfileDirectory ?? DEFAULT_TEXTFILE_DIRECTORY;
    host.files.push({ path: WG_HANDSHAKE_PATH, mode: 0o755, owner: 'root:root', content: renderHandshakeScript(f.iface, dir) });
    host.units.push({
      name: WG_HANDSHAKE_SERVICE,
      content: ['[Unit]', `Description=tunnelwright: ${f.iface}'s latest WireGuard handshake for node-exporter`, '', '[Service]', 'Type=oneshot', `ExecStart=${WG_HANDSHAKE_PATH}`, ''].join('\n'),
    });
    host.units.push({
      name: WG_HANDSHAKE_TIMER,
      enabled: true,
      content: ['[Unit]', `Description=tunnelwright: export ${f.iface}'s latest handshake`, '', '[Timer]', 'OnBootSec=30s', 'OnUnitActiveSec=30s', 'AccuracySec=5s', `Unit=${WG_HANDSHAKE_SERVICE}`, '', '[Install]', 'WantedBy=timers.target', ''].join('\n'),
    });
  }
  if (t.type === 'wireguard') {
    const unit = `wg-quick@${f.iface}.service`;
    // wg-quick and wg come from wireguard-tools (the kernel module alone has no wg-quick@.service).
    host.packages.push('wireguard-tools');
    const key = planSecretSource(`${f.iface}-private-key`, t.privateKeyFrom, unit);
    addResolvedSecret(host, key);
    const waits = [key.unit];
    const psk = t.peer.presharedKeyFrom ? planSecretSource(`${f.iface}-peer0-preshared-key`, t.peer.presharedKeyFrom, unit) : undefined;
    if (psk) {
      addResolvedSecret(host, psk);
      waits.push(psk.unit);
    }
    const addr = parseCidr(t.address)!;
    const ipCmd = addr.family === 4 ? 'ip -4' : 'ip -6';
    const from = t.address.split('/')[0];
    const conf = renderWireguardConfig(p.gatewayNode, {
      name: f.iface,
      address: t.address,
      mtu: 1420,
      table: 'off',
      privateKeyFrom: t.privateKeyFrom,
      // Idempotent (wg-quick runs hooks under set -e; a rule left by an unclean exit must not block the next up), and the
      // rule and blackhole stay after down: tunnel-sourced traffic never falls through to the main table.
      postUp: [
        `${ipCmd} route replace ${EGRESS_BLACKHOLE}`,
        `while ${ipCmd} rule del priority ${EGRESS_RULE_PRIORITY} 2>/dev/null; do :; done`,
        `${ipCmd} rule add from ${from} lookup ${EGRESS_ROUTE_TABLE} priority ${EGRESS_RULE_PRIORITY}`,
        `${ipCmd} route replace default dev %i table ${EGRESS_ROUTE_TABLE}`,
        `${RESTEER_PATH} || true`,
      ],
      postDown: [`${RESTEER_PATH} || true`],
      peers: [{ publicKey: t.peer.publicKey, endpoint: t.peer.endpoint, allowedIPs: [addr.family === 4 ? '0.0.0.0/0' : '::/0'], persistentKeepalive: 25, ...(t.peer.presharedKeyFrom ? { presharedKeyFrom: t.peer.presharedKeyFrom } : {}) }],
    }, key.path, psk ? new Map([[0, psk.path]]) : new Map());
    host.files.push({ path: `/etc/wireguard/${f.iface}.conf`, mode: 0o600, owner: 'root:root', content: conf }, WG_RELOAD_FILE);
    host.units.push({ name: unit, enabled: true });
    host.dropins.push(wireguardReloadDropin(unit, psk ? [key.refresh, psk.refresh] : [key.refresh]));
    host.dropins.push({ unit, name: '10-tunnelwright-egress.conf', content: `[Unit]\nAfter=${[...before, ...waits, KILL_SWITCH_UNIT].join(' ')}\nRequires=${[...waits, KILL_SWITCH_UNIT].join(' ')}\n` });
    return mergeHostPlans([host, planHostKillSwitch({ node: p.gatewayNode, tunnelInterface: f.iface, tunnelCidrs: [t.address] })]).plans[0];
  }
  const config = planSecretSource(`${f.name}-openvpn-config`, t.configFrom, OPENVPN_UNIT);
  addResolvedSecret(host, config);
  const waits = [config.unit];
  const creds = t.credentialsFrom ? planSecretSource(`${f.name}-openvpn-credentials`, t.credentialsFrom, OPENVPN_UNIT) : undefined;
  if (creds) {
    addResolvedSecret(host, creds);
    waits.push(creds.unit);
  }
  host.packages.push('openvpn');
  const scripts = openvpnScripts();
  host.files.push({ path: OPENVPN_UP_PATH, mode: 0o755, owner: 'root:root', content: scripts.up });
  host.files.push({ path: OPENVPN_DOWN_PATH, mode: 0o755, owner: 'root:root', content: scripts.down });
  host.files.push({ path: OPENVPN_PIN_PATH, mode: 0o755, owner: 'root:root', content: scripts.pin });
  // Validated as host:port: OpenVPN takes the host without brackets, and the port apart.
  const remote = t.remote ? overlayNodeModel.parseEndpoint(t.remote)! : undefined;
  const pinned = `${config.path}.pinned`;
  const args = [
    // The pull-filters come before --config, the other options after it. OpenVPN reads --config where it stands on the
    // command line, so the config's options are parsed between the two groups. A scalar option takes the last value
    // parsed: the options after --config win over the config's. A pull-filter is a prefix match on the pushed line,
    // kept in parse order, and the first match wins (openvpn v2.6.14 src/openvpn/options.c:5487-5498, and
    // alloc_pull_filter appends at the tail; a removed one logs "Pushed option removed by filter"). So ours come
    // first: a provider's `pull-filter accept ping-exit` (or `accept redirect-gateway`) cannot let the line through
    // before ours. The provider's own filters for other lines (`pull-filter ignore "route-ipv6"`) still apply.
    // With these, a silent server ends the session within ping-restart (the server's pushed value when it pushes one:
    // pushed options are applied after the command line), and a pushed persist-tun is ignored like the config's.
    // - ping-restart: a pushed 0 turns silent-server detection off (ping_rec_timeout 0, options.c:6950-6955), so tun0
    //   would stay up on a dead server. A server's real ping-restart is kept (its ping may be slower than our 60 s):
    //   "ping-restart " then a digit 1-9 is accepted, and every other pushed ping-restart is ignored. A filter is a
    //   prefix match on the raw line, split into words only after it (options.c:5481-5497), so ignoring "ping-restart 0"
    //   alone let "ping-restart  0" (two spaces), a tab or "-1" (positive_atoi gives 0, options.c:4952-4956) through.
    //   systemd unquotes ExecStart's "…" into one argument, as OpenVPN's `pull-filter` needs (three words).
    // - A pushed line that starts with a quote: OpenVPN unquotes it after the filters (options.c:5532), so
    //   `"persist-tun"` or `"ping-restart" 0` would pass every filter above. No server quotes what it pushes.
    // - --auth-retry none, after --config: OpenVPN exits on AUTH_FAILED (push.c:91-104), and the unit's next start
    //   resolves the secrets again. A config's `auth-retry nointeract` would retry in the same process, with the same
    //   rotated-away password, forever.
    // - ping-exit, any value: it shares ping-restart's timer (options.c:6944-6949), so `ping-exit 0` also turns it off,
    //   and any other value makes a silent server end OpenVPN (ping.c:56, openvpn.c:356) where ping-restart would
    //   reconnect it, with status 0.
    // Restart=always, not on-failure: OpenVPN also exits with status 0 on a pushed `inactive` or `session-timeout` and
    // on a server's HALT, which on-failure never restarts (systemd.service(5), Restart=): the node would stay without a
    // tunnel, the kill switch holding. `systemctl stop`, and a stop through Requires=, are not restarted.
    '--suppress-timestamps', `--pull-filter ignore '"'`, `--pull-filter ignore "'"`, '--pull-filter ignore redirect-gateway', '--pull-filter ignore persist-tun',
    ...OPENVPN_PING_RESTART_KEPT.map((d) => `--pull-filter accept "ping-restart ${d}"`), '--pull-filter ignore ping-restart', '--pull-filter ignore ping-exit',
    `--config ${pinned}`, `--dev ${f.iface}`, '--dev-type tun', '--route-noexec', '--auth-retry none',
    `--ping ${OPENVPN_PING} --ping-restart ${OPENVPN_PING_RESTART}`,
    '--script-security 2', `--up ${OPENVPN_UP_PATH}`, `--down ${OPENVPN_DOWN_PATH}`, '--down-pre',
    ...(creds ? [`--auth-user-pass ${creds.path}`] : []), ...(remote ? [`--remote ${remote.host} ${remote.port}`] : []),
  ];
  host.units.push({
    name: OPENVPN_UNIT,
    enabled: true,
    content: [
      '[Unit]', `Description=tunnelwright: OpenVPN split tunnel ${f.iface} (no default-route takeover)`,
      // Never without the kill switch: Requires= stops the tunnel when the table's unit fails or stops. The secret
      // units only Wants=: one whose source was out of reach at boot fails, and Requires= would then never start the
      // tunnel, nor retry. This way the unit starts, its ExecStartPre resolves the secrets again, and a start that
      // still finds no config fails and is retried every RestartSec (at most 3 starts in systemd's default 10 s
      // start-limit window, whose burst is 5).
      `Wants=network-online.target ${waits.join(' ')}`, `After=network-online.target ${[...before, ...waits, KILL_SWITCH_UNIT].join(' ')}`, `Requires=${KILL_SWITCH_UNIT}`,
      '', '[Service]', 'Type=simple',
      // A relative path in the config (`ca ca.crt` beside a provider's .ovpn) is read from the working directory, as
      // with OpenVPN's own openvpn-client@.service (WorkingDirectory=/etc/openvpn/client): the config file's folder.
      // "-": a folder not there yet is not fatal (systemd.exec(5)); the pin then fails on the missing config, retried.
      ...('file' in t.configFrom ? [`WorkingDirectory=-${path.posix.dirname(t.configFrom.file).replace(/%/g, '%%')}`] : []),
      // The boot units resolve the secrets once (RemainAfterExit=yes); each start resolves them again from their
      // sources, so a restart (Restart=always, after AUTH_FAILED for a rotated password) reads the rotated value. The
      // "-": a source not reachable keeps the file the boot resolved.
      `ExecStartPre=-${config.refresh}`, ...(creds ? [`ExecStartPre=-${creds.refresh}`] : []),
      `ExecStartPre=${OPENVPN_PIN_PATH} ${config.path} ${pinned}${t.remote ? ' pin' : ''}`, `ExecStart=/usr/sbin/openvpn ${args.join(' ')}`, 'Restart=always', 'RestartSec=5s',
      '', '[Install]', 'WantedBy=multi-user.target', '',
    ].join('\n'),
  });
  // The address is learnt at connect: the up script adds it to the kill switch's set.
  return mergeHostPlans([host, planHostKillSwitch({ node: p.gatewayNode, tunnelInterface: f.iface, tunnelCidrs: [] })]).plans[0];
}

/**
 * kube-state-metrics' `metricLabelsAllowlist` whole (Helm replaces a list): your list with the uplink label added to
 * the group kube-state-metrics reads for nodes (the last `*=` group, else the last `nodes=` one, also inside an entry
 * such as `pods=[app],nodes=[zone]`), or a `nodes=` entry appended when there is none, or ours alone when you gave no
 * list. In kube-prometheus-stack it goes under `kube-state-metrics:`; in the kube-state-metrics chart, at the top.
 */
export function mergedKsmAllowlist(yours: unknown, uplinkLabel: string): string[] {
  // An empty entry joins into a leading or doubled "," that kube-state-metrics refuses at start-up: dropped.
  const list = Array.isArray(yours) ? yours.map(String).filter((e) => e.trim() !== '') : [];
  const model = egressSteeringModel;
  // The group kube-state-metrics reads for nodes (the last *= one, else the last nodes= one), wherever it is written:
  // the label goes in before its closing "]", and the rest of your text is left as it is.
  const kept = model.ksmNodeGroup(model.ksmAllowlistGroups(list));
  if (!kept) return [...list, model.ksmAllowlistEntry(uplinkLabel)];
  if (model.ksmGroupExports(kept, uplinkLabel)) return list;
  const { entry, offset } = kept.close;
  const text = list[entry];
  return list.map((e, k) => (k === entry ? `${text.slice(0, offset)}${kept.labels.length > 0 ? ',' : ''}${uplinkLabel}${text.slice(offset)}` : e));
}

/**
 * The Helm values the policy needs, for Cilium and kube-state-metrics. Helm replaces lists: `devices` is given whole
 * (your `ciliumValues.devices` with the tunnel added) or not at all (a warning says to add the tunnel to yours).
 */
export function egressSteeringValues(p: EgressSteeringProps): Record<string, unknown> {
  const f = facts(p);
  const yours = p.ciliumValues?.devices;
  const list = Array.isArray(yours) ? yours.map(String) : typeof yours === 'string' ? yours.split(/[ ,]+/).filter(Boolean) : undefined;
  const devices = p.egressIp || !list ? undefined : list.includes(f.iface) ? list : [...list, f.iface];
  return {
    cilium: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, ...(devices ? { devices } : {}) },
    kubeStateMetrics: { metricLabelsAllowlist: mergedKsmAllowlist(p.monitoring?.kubeStateMetricsValues?.metricLabelsAllowlist, f.uplinkLabel) },
  };
}

/** Plans the steering: the policy, label enforcement, alerts, the hook's RBAC, Helm values and the gateway node's host plan. */
export function planEgressSteering(props: EgressSteeringProps): Plan {
  const checked = egressSteeringModel.checkEgressSteering(props);
  throwIfProblems(checked.problems, 'EgressSteering props');
  const p = checked.value!;
  const f = facts(p);
  const objects: KubeObject[] = [policy(p, f)];
  if (p.enforceLabels) objects.push(kyvernoPolicy(p, f));
  if (p.monitoring) objects.push(prometheusRule(p, f));
  objects.push(...rbac(p, f));
  const host = hostPlan(p, f);
  const all = host.packages.length > 0 ? [...checked.warnings, ignitionPackagesWarning(host.packages, 'tunnel')] : checked.warnings;
  const warnings = all.filter((w) => !(p.acknowledge ?? []).includes(w.code));
  if (p.denyIpv6) objects.push(ipv6DenyPolicy(p, f));
  return { objects, hosts: [host], values: egressSteeringValues(p), warnings };
}

/** Ignition has no `packages`: the image must ship them (cloud-init installs them). */
export function ignitionPackagesWarning(packages: readonly string[], path: string): Problem {
  return { path, code: 'ignition-packages', message: `the host needs ${packages.join(', ')}: cloud-init installs them (packages), Ignition cannot; on Flatcar or Fedora CoreOS use an image that ships them` };
}

/**
 * vpn-class pods' IPv6 egress outside the cluster, denied: Cilium's egress gateway steers IPv4 destinations only
 * (IPv6 from 1.20), so IPv6 would leave natively. A deny-only policy that leaves default deny off.
 */
function ipv6DenyPolicy(p: EgressSteeringProps, f: Facts): KubeObject {
  const v6Cluster = [...p.clusterCidrs, ...(p.lanCidrs ?? [])].filter((c) => parseCidr(c)!.family === 6);
  return {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumClusterwideNetworkPolicy',
    metadata: { name: `${f.name}-deny-ipv6`, labels: MANAGED },
    spec: {
      description: `pods of egress class ${f.vpnClass}: no IPv6 egress outside the cluster (it would not leave by the VPN)`,
      endpointSelector: {
        matchLabels: { [f.classLabel]: f.vpnClass },
        ...(p.namespaces ? { matchExpressions: [{ key: 'k8s:io.kubernetes.pod.namespace', operator: 'In', values: [...p.namespaces] }] } : {}),
      },
      enableDefaultDeny: { egress: false, ingress: false },
      egressDeny: [{ toCIDRSet: [{ cidr: '::/0', ...(v6Cluster.length > 0 ? { except: v6Cluster } : {}) }] }],
    },
  };
}

function sourceId(s: SecretSource): string {
  return 'url' in s ? s.url : s.file;
}

/** Claims: the pods it steers in its cluster (by class, per namespace or all), and a pinned VPN server with its credential across the App. */
export function egressSteeringClaims(props: EgressSteeringProps): Claim[] {
  const f = facts(props);
  const base = `cluster/${f.cluster}/egress-class/${f.classLabel}=${f.vpnClass}`;
  const claims: Claim[] = props.namespaces
    ? props.namespaces.map((ns, i) => ({ key: `${base}/ns/${ns}`, path: `namespaces[${i}]`, what: `pods with ${f.classLabel}=${f.vpnClass} in namespace ${ns} of cluster "${f.cluster}"` }))
    : [{ key: base, path: 'vpnClass', what: `pods with ${f.classLabel}=${f.vpnClass} in cluster "${f.cluster}"`, covers: true }];
  const t = props.tunnel;
  if (t?.type === 'openvpn') {
    // The server and session: the pinned remote, else the config that names the servers; with the credential when
    // there is one. (A hostname and its address are two names here: they are not recognised as one server.)
    const server = t.remote ?? `config ${sourceId(t.configFrom)}`;
    const credential = t.credentialsFrom ? sourceId(t.credentialsFrom) : 'the config\'s own credential';
    claims.push({ key: `vpn-server/openvpn/${server}/${credential}`, path: t.remote ? 'tunnel.remote' : 'tunnel.configFrom', what: `VPN server ${server} with ${t.credentialsFrom ? `the credential ${credential}` : credential} (two gateways on one server and account steal each other's session)` });
  }
  if (t?.type === 'wireguard') {
    claims.push({ key: `vpn-server/wireguard/${t.peer.endpoint}/${sourceId(t.privateKeyFrom)}`, path: 'tunnel.peer.endpoint', what: `VPN server ${t.peer.endpoint} with the key ${sourceId(t.privateKeyFrom)}` });
  }
  return claims;
}
