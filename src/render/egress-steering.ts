import type { ClusterRole as IClusterRole } from 'kubernetes-types/rbac/v1';
import type { ClusterRoleBinding as IClusterRoleBinding } from 'kubernetes-types/rbac/v1';
import type { Secret as ISecret } from 'kubernetes-types/core/v1';
import type { ServiceAccount as IServiceAccount } from 'kubernetes-types/core/v1';
import { Problem, throwIfProblems } from '../errors';
import { addResolvedSecret, planSecretSource } from '../host/secret-source';
import { SecretSource } from '../model/common';
import { Claim } from '../invariants';
import {
  checkEgressSteering, DEFAULT_EGRESS_CLASS_LABEL, DEFAULT_UPLINK_LABEL, EgressSteeringProps, ksmAllowlistEntry, ksmLabelName, RFC1918,
} from '../model/egress-steering';
import { cidrContains, parseCidr } from '../model/net';
import { parseEndpoint } from '../model/wireguard-overlay-node';
import { emptyHostPlan, HostPlan, KubeObject, Plan } from '../types';
import { KILL_SWITCH_LEARNT_DIR, KILL_SWITCH_SETS, KILL_SWITCH_TABLE, KILL_SWITCH_UNIT, planHostKillSwitch } from './kill-switch';
import { renderWireguardConfig } from './wireguard-overlay-node';
import { WG_RELOAD_FILE, wireguardReloadDropin } from '../host/wireguard-reload';
import { mergeHostPlans } from '../host/host-plan';

/** Returns the problems of EgressSteering props without throwing. */
export function validateEgressSteering(props: unknown): Problem[] {
  return checkEgressSteering(props).problems;
}

/** The routing table and rule priority that send tunnel-sourced traffic out of the tunnel. */
export const EGRESS_ROUTE_TABLE = 51821;
export const EGRESS_RULE_PRIORITY = 5210;
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
    classLabel: p.egressClassLabel ?? DEFAULT_EGRESS_CLASS_LABEL,
    vpnClass: p.vpnClass ?? 'vpn',
    uplinkLabel: p.uplinkLabel ?? DEFAULT_UPLINK_LABEL,
  };
}

const MANAGED = { 'app.kubernetes.io/managed-by': 'tunnelwright' };

/** The excluded CIDRs: given, else RFC 1918, cluster and LAN CIDRs that lie inside a destination. */
export function excludedCidrsOf(p: EgressSteeringProps): string[] {
  if (p.excludedCidrs) return p.excludedCidrs;
  const destinations = (p.destinationCidrs ?? ['0.0.0.0/0']).map((d) => parseCidr(d)!);
  const candidates = [...RFC1918, ...p.clusterCidrs, ...(p.lanCidrs ?? [])];
  // A private block that is itself a destination is steered, not excluded (that would steer nothing); the cluster and
  // LAN ranges are always excluded.
  const parsed = candidates.map((c, k) => ({ c, p: parseCidr(c)!, rfc1918: k < RFC1918.length }))
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

/** The alert rules (PrometheusRule `spec.groups`), each gated on the gateway node existing. */
export function egressAlertGroups(p: EgressSteeringProps): { name: string; rules: Record<string, unknown>[] }[] {
  const f = facts(p);
  const node = p.gatewayNode;
  const label = ksmLabelName(f.uplinkLabel);
  const onGateway = (metric: string) => `${metric} * on(instance) group_left(nodename) node_uname_info{nodename="${node}"}`;
  const gate = `on() (count(kube_node_info{node="${node}"}) > 0)`;
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
          // Distinct label values, not series: a restarted kube-state-metrics is a new series with the same value.
          expr: `(max(${onGateway(`changes(node_network_iface_id{device="${f.iface}"}[1h])`)}) > (count(count by (${label}) (count_over_time(kube_node_labels{node="${node}", ${label}!=""}[1h]))) - 1)) and ${gate}`,
          for: '5m',
          labels: { severity: 'critical' },
          annotations: annotations('VPNEgressSteeringStale', `${f.iface} on ${node} was re-created more often in the last hour than the uplink label changed`, 'Cilium caches the egress interface: after a re-creation it black-holes steered traffic until the node is re-labelled. Check the re-steer hook (tunnelwright-egress-resteer.service).'),
        },
        {
          alert: 'VPNEgressUplinkLabelMissing',
          // Only while the tunnel is up: the hook removes the label while it is gone, and VPNTunnelDown reports that.
          expr: `absent(kube_node_labels{node="${node}", ${label}!=""}) and ${tunnelPresent} and ${gate}`,
          for: '10m',
          labels: { severity: 'warning' },
          annotations: annotations('VPNEgressUplinkLabelMissing', `${node} has no ${f.uplinkLabel} label while ${f.iface} is up`, 'The re-steer hook has not labelled the gateway node (or kube-state-metrics does not export the label).'),
        },
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
  VPNEgressUplinkLabelMissing: (f, node) => [
    `1. ${RESTEER_PATH} on ${node}: it labels the node, or prints why not (credential, RBAC).`,
    `2. kube-state-metrics must export the label: metricLabelsAllowlist ["${ksmAllowlistEntry(f.uplinkLabel)}"] (plan.values.kubeStateMetrics).`,
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
  return `#!/bin/sh
# tunnelwright egress re-steer: Cilium caches the egress interface; a new <address>-<ifindex> label on the Node and
# the CiliumNode makes it re-select the tunnel after every reconnect. Run by the tunnel on connect and by a timer.
set -eu
IFACE=${iface}
NODE=${node}
LABEL=${label}
if [ -z "\${KUBECTL:-}" ]; then
  # kubectl, or the distribution's own (k3s and k0s ship one).
  if command -v kubectl >/dev/null 2>&1; then KUBECTL=kubectl
  elif command -v k3s >/dev/null 2>&1; then KUBECTL="k3s kubectl"
  elif command -v k0s >/dev/null 2>&1; then KUBECTL="k0s kubectl"
  else echo "egress-resteer: no kubectl, k3s or k0s on this node (set KUBECTL)" >&2; exit 1
  fi
fi
${kubeconfig ? `export KUBECONFIG=${kubeconfig}\n` : ''}value=""
# TUNNELWRIGHT_TUNNEL_DOWN: called from a down hook that runs while the interface still exists (OpenVPN --down-pre).
if [ -z "\${TUNNELWRIGHT_TUNNEL_DOWN:-}" ] && [ -r "/sys/class/net/$IFACE/ifindex" ]; then
  ifindex=$(cat "/sys/class/net/$IFACE/ifindex")
  addr=$(ip -o -4 addr show dev "$IFACE" | awk '{ split($4, a, "/"); print a[1]; exit }')
  if [ -z "$addr" ]; then
    # An IPv6 address is written with "." for ":" (a label value has no ":"), and never starts with ".".
    addr=$(ip -o -6 addr show dev "$IFACE" scope global | awk '{ split($4, a, "/"); print a[1]; exit }' | tr ':' '.' | sed 's/^\\./0./')
  fi
  [ -z "$addr" ] || value="$addr-$ifindex"
fi
for kind in node ciliumnode; do
  if [ -n "$value" ]; then
    $KUBECTL label "$kind" "$NODE" --overwrite "$LABEL=$value"
  else
    $KUBECTL label "$kind" "$NODE" "$LABEL-" || true
  fi
done
`;
}

/** The closed state of the egress table: a blackhole default below the tunnel's route, so tunnel-sourced traffic never falls through to the main table. */
export const EGRESS_BLACKHOLE = `blackhole default table ${EGRESS_ROUTE_TABLE} metric 4294967295`;

export const OPENVPN_UP_PATH = '/opt/tunnelwright/bin/egress-openvpn-up';
export const OPENVPN_DOWN_PATH = '/opt/tunnelwright/bin/egress-openvpn-down';
export const OPENVPN_PIN_PATH = '/opt/tunnelwright/bin/egress-openvpn-pin';

function openvpnScripts(): { up: string; down: string; pin: string } {
  const rule = `priority ${EGRESS_RULE_PRIORITY}`;
  return {
    up: `#!/bin/sh
# tunnelwright: OpenVPN --up (route-noexec: no routes of OpenVPN's). Policy routing for tunnel-sourced traffic,
# the address into the kill switch (live, and in a file the table includes, so a reload keeps it), then the re-steer hook.
set -eu
ip -4 route replace ${EGRESS_BLACKHOLE}
while ip -4 rule del ${rule} 2>/dev/null; do :; done
ip -4 rule add from "$ifconfig_local" lookup ${EGRESS_ROUTE_TABLE} ${rule}
ip -4 route replace default dev "$dev" table ${EGRESS_ROUTE_TABLE}
mkdir -p ${KILL_SWITCH_LEARNT_DIR}
echo "add element inet ${KILL_SWITCH_TABLE} ${KILL_SWITCH_SETS.tunnel[4]} { $ifconfig_local }" > ${KILL_SWITCH_LEARNT_DIR}/openvpn.nft.partial
mv -f ${KILL_SWITCH_LEARNT_DIR}/openvpn.nft.partial ${KILL_SWITCH_LEARNT_DIR}/openvpn.nft
nft add element inet ${KILL_SWITCH_TABLE} ${KILL_SWITCH_SETS.tunnel[4]} "{ $ifconfig_local }"
${RESTEER_PATH} || true
`,
    down: `#!/bin/sh
# tunnelwright: OpenVPN --down. The rule from the tunnel address stays, and with the tunnel's route gone the table's
# blackhole takes its traffic: it never falls through to the main table (and eth0) while the label still points here.
# The kill switch keeps the address too. The hook removes the label: the interface is going.
TUNNELWRIGHT_TUNNEL_DOWN=1 ${RESTEER_PATH} || true
`,
    pin: `#!/bin/sh
# tunnelwright: the config with its own remotes removed, so that the pinned --remote is the only server OpenVPN tries
# (a --remote given beside --config is appended to the config's list, and OpenVPN moves on to the next on failure).
# usage: egress-openvpn-pin CONFIG PINNED
set -eu
umask 077
if grep -Eq '^[[:space:]]*<connection>' "$1"; then
  echo "egress-openvpn-pin: $1 has <connection> blocks: remove them to pin a remote" >&2
  exit 1
fi
grep -Ev '^[[:space:]]*(remote|remote-random|remote-random-hostname)([[:space:]]|$)' "$1" > "$2.partial"
mv -f "$2.partial" "$2"
`,
  };
}

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
    content: ['[Unit]', `Description=tunnelwright: label ${p.gatewayNode} with the live ${f.iface} so Cilium re-selects it`, ...before.flatMap((u) => [`After=${u}`, `Wants=${u}`]), '', '[Service]', 'Type=oneshot', `ExecStart=${RESTEER_PATH}`, ''].join('\n'),
  });
  host.units.push({
    name: RESTEER_TIMER,
    enabled: true,
    content: ['[Unit]', `Description=tunnelwright: converge the ${f.uplinkLabel} label`, '', '[Timer]', 'OnBootSec=1min', 'OnUnitActiveSec=1min', `Unit=${RESTEER_SERVICE}`, '', '[Install]', 'WantedBy=timers.target', ''].join('\n'),
  });
  const t = p.tunnel;
  if (!t) return host;
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
  if (t.remote) host.files.push({ path: OPENVPN_PIN_PATH, mode: 0o755, owner: 'root:root', content: scripts.pin });
  // Validated as host:port: OpenVPN takes the host without brackets, and the port apart.
  const remote = t.remote ? parseEndpoint(t.remote)! : undefined;
  const pinned = `${config.path}.pinned`;
  const args = [
    '--suppress-timestamps', `--config ${t.remote ? pinned : config.path}`, `--dev ${f.iface}`, '--dev-type tun', '--route-noexec', '--pull-filter ignore redirect-gateway',
    '--script-security 2', `--up ${OPENVPN_UP_PATH}`, `--down ${OPENVPN_DOWN_PATH}`, '--down-pre',
    ...(creds ? [`--auth-user-pass ${creds.path}`] : []), ...(remote ? [`--remote ${remote.host} ${remote.port}`] : []),
  ];
  host.units.push({
    name: OPENVPN_UNIT,
    enabled: true,
    content: [
      '[Unit]', `Description=tunnelwright: OpenVPN split tunnel ${f.iface} (no default-route takeover)`,
      // Never without the kill switch: Requires= stops the tunnel when the table's unit fails or stops.
      'Wants=network-online.target', `After=network-online.target ${[...before, ...waits, KILL_SWITCH_UNIT].join(' ')}`, `Requires=${[...waits, KILL_SWITCH_UNIT].join(' ')}`,
      '', '[Service]', 'Type=simple', ...(t.remote ? [`ExecStartPre=${OPENVPN_PIN_PATH} ${config.path} ${pinned}`] : []), `ExecStart=/usr/sbin/openvpn ${args.join(' ')}`, 'Restart=on-failure', 'RestartSec=5s',
      '', '[Install]', 'WantedBy=multi-user.target', '',
    ].join('\n'),
  });
  // The address is learnt at connect: the up script adds it to the kill switch's set.
  return mergeHostPlans([host, planHostKillSwitch({ node: p.gatewayNode, tunnelInterface: f.iface, tunnelCidrs: [] })]).plans[0];
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
    kubeStateMetrics: { metricLabelsAllowlist: [ksmAllowlistEntry(f.uplinkLabel)] },
  };
}

/** Plans the steering: the policy, label enforcement, alerts, the hook's RBAC, Helm values and the gateway node's host plan. */
export function planEgressSteering(props: EgressSteeringProps): Plan {
  const checked = checkEgressSteering(props);
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
