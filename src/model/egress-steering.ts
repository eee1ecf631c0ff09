import * as z from '../zod';
import { Problem } from '../errors';
import { isWireguardKey } from '../keys';
import {
  asArray, Cidr, locatedCidrs, networkCidrSchema, clusterSchema, isRecord, parseWith, redactProblems, received, SecretSource, secretSourceSchema, sortProblems,
} from './common';
import { KEY_FIELD_MESSAGE, quotedList } from './common';
import { checkInterfaceName } from './kill-switch';
import { DNS_SUBDOMAIN, isDnsLabel, isLabelKey, isLabelValue } from './labels';
import { cidrContains, hasHostBits, parseCidr, parseIp } from './net';
import { parseEndpoint } from './wireguard-overlay-node';
import { ksmAllowlistGroups, ksmGroupExports, ksmNodeGroup } from './ksm-allowlist';
import { checkFailover, EgressSteeringFailover, failoverSchema } from './egress-steering-failover';

/** A host tunnel the gateway node brings up (a split tunnel: no default-route takeover). */
export type EgressTunnel =
  | {
      readonly type: 'openvpn';
      /** The OpenVPN client config (it may embed keys: a secret source). */
      readonly configFrom: SecretSource;
      /** `auth-user-pass` file: username and password lines. */
      readonly credentialsFrom?: SecretSource;
      /** `host:port` to pin the server (overrides the config's remote). */
      readonly remote?: string;
    }
  | {
      readonly type: 'wireguard';
      /** The tunnel address the provider assigned, e.g. `10.2.0.2/32` (IPv4 unless every destination is IPv6). */
      readonly address: Cidr;
      readonly privateKeyFrom: SecretSource;
      readonly peer: { readonly publicKey: string; readonly endpoint: string; readonly presharedKeyFrom?: SecretSource };
    };

export interface EgressSteeringMonitoring {
  /** Namespace of the PrometheusRule. @default 'monitoring' */
  readonly namespace?: string;
  /** Labels your Prometheus `ruleSelector` needs on the rule. @default {} */
  readonly ruleLabels?: Record<string, string>;
  /** Your kube-state-metrics Helm values, checked for the allowlist that makes the uplink label a metric. @default - not checked: a warning */
  readonly kubeStateMetricsValues?: Record<string, unknown>;
  /**
   * node-exporter's textfile collector directory on the gateway node (`--collector.textfile.directory`): with a
   * WireGuard tunnel, a timer writes the latest handshake there for VPNTunnelHandshakeStale.
   * @default '/var/lib/node_exporter/textfile_collector'
   */
  readonly textfileDirectory?: string;
  /** Where each alert's `runbook_url` points (`<runbookUrl>#<alert in lowercase>`). @default - no link: each alert carries its runbook in its `runbook` annotation (docs/runbooks.md has them too) */
  readonly runbookUrl?: string;
}

export interface EgressSteeringProps {
  /** The cluster this policy belongs to. @default 'default' */
  readonly cluster?: string;
  /** Name of the CiliumEgressGatewayPolicy (and of the objects around it). @default 'vpn-egress' */
  readonly name?: string;
  /**
   * The one node traffic leaves by: the policy selects it by `kubernetes.io/hostname`, so it can match no other. A
   * label value: at most 63 characters.
   */
  readonly gatewayNode: string;
  /** The tunnel's interface on the gateway node. Never together with `egressIp`. @default 'tun0' */
  readonly interface?: string;
  /**
   * The egress IP instead of the interface (Cilium ignores a policy with both): with a WireGuard `tunnel`, its address
   * (only traffic from it is routed into the tunnel); never with an OpenVPN one, whose address changes at each connect.
   */
  readonly egressIp?: string;
  /** The pod label that carries the egress class. @default 'tunnelwright.dev/egress-class' */
  readonly egressClassLabel?: string;
  /** The class steered through the tunnel. @default 'vpn' */
  readonly vpnClass?: string;
  /** Limit the policy to pods in these namespaces. @default - every namespace */
  readonly namespaces?: string[];
  /** Pod and service CIDRs (excluded from steering). */
  readonly clusterCidrs: Cidr[];
  /** LAN CIDRs (excluded from steering). @default [] */
  readonly lanCidrs?: Cidr[];
  /** Destinations steered through the tunnel. IPv6 destinations need Cilium 1.20. @default ['0.0.0.0/0'] */
  readonly destinationCidrs?: Cidr[];
  /** Destinations never steered; each must lie inside a destination CIDR (Cilium ignores it otherwise). @default - the RFC 1918 blocks (one that is itself a destination is steered), cluster and LAN CIDRs, each that lies inside a destination */
  readonly excludedCidrs?: Cidr[];
  /** A Kyverno ClusterPolicy requiring the class label on pods in these namespaces. @default - none */
  readonly enforceLabels?: { readonly namespaces: string[]; readonly classes?: string[] };
  /**
   * A PrometheusRule with VPNTunnelDown, VPNEgressSteeringStale, VPNTunnelReconnectLoop and
   * VPNEgressUplinkLabelMissing (and VPNTunnelHandshakeStale with a WireGuard tunnel). @default - none
   */
  readonly monitoring?: EgressSteeringMonitoring;
  /** The node label the re-steer hook sets to `<address>-<ifindex>`. @default 'tunnelwright.dev/egress-uplink' */
  readonly uplinkLabel?: string;
  /**
   * How the re-steer credential is held to the uplink label on its own Node and CiliumNode at admission:
   * `'validating-admission-policy'` emits a ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1,
   * Kubernetes 1.30+); `'kyverno'` emits, instead of them, a Kyverno ClusterPolicy with the same CEL (`validate.cel`,
   * Kyverno 1.11+), for clusters that already run Kyverno (whose Helm chart skips Nodes unless `[Node,*,*]` and
   * `[Node/?*,*,*]` are removed from `config.resourceFilters`). @default 'validating-admission-policy'
   */
  readonly resteerAdmission?: 'validating-admission-policy' | 'kyverno';
  /**
   * The re-steer hook's kubeconfig, for the ServiceAccount emitted with it (build it from the Secret
   * `kube-system/<name>-resteer-token`); resolved again from its source at each run of the hook's timer, so a rotated
   * token is used within a minute. @default - kubectl's default config on the node (a warning: on a k3s server that is cluster-admin)
   */
  readonly kubeconfigFrom?: SecretSource;
  /** Your Cilium Helm values, checked against what the egress gateway needs. @default - not checked */
  readonly ciliumValues?: Record<string, unknown>;
  /** The host tunnel. Omitted: no tunnel is rendered; the re-steer hook is still installed for your own tunnel to call. */
  readonly tunnel?: EgressTunnel;
  /**
   * Deny vpn-class pods IPv6 egress outside the cluster with a CiliumClusterwideNetworkPolicy (`egressDeny`): the
   * egress gateway steers IPv4 destinations only, so their IPv6 would leave natively. Refused beside IPv6
   * `destinationCidrs` (the deny drops them before the redirect). @default false (a warning on an IPv6 cluster)
   */
  readonly denyIpv6?: boolean;
  /**
   * Warning codes you have read and accept, not reported again: `dns-wan`, `policy-delay`, `ipv6-egress`,
   * `ipv6-destination`, `hostname-endpoint`, `cilium-devices`, `kube-state-metrics`, `ignition-packages`,
   * `default-kubeconfig`. @default []
   */
  readonly acknowledge?: string[];
  /**
   * Standby gateway nodes, each with its own tunnel: the policy selects the node that holds the role (a Lease held
   * only while its tunnel is healthy) by its active label instead of `gatewayNode`'s hostname. See
   * docs/egress-steering.md, "Failover". @default - none: `gatewayNode` alone
   */
  readonly failover?: EgressSteeringFailover<EgressTunnel>;
}

export const DEFAULT_EGRESS_CLASS_LABEL = 'tunnelwright.dev/egress-class';
export const DEFAULT_UPLINK_LABEL = 'tunnelwright.dev/egress-uplink';
export const RFC1918 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'];

const labelsSchema = z.record(z.string(), z.string());

const tunnelSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('openvpn'), configFrom: secretSourceSchema, credentialsFrom: z.optional(secretSourceSchema), remote: z.optional(z.string()) }),
  z.strictObject({
    type: z.literal('wireguard'),
    address: z.string(),
    privateKeyFrom: secretSourceSchema,
    peer: z.strictObject({ publicKey: z.string(), endpoint: z.string(), presharedKeyFrom: z.optional(secretSourceSchema) }),
  }),
]);

/** @internal */
export const egressSteeringSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  name: z.optional(z.string()),
  // The policy selects the node by its kubernetes.io/hostname label, whose value is at most 63 characters.
  gatewayNode: z.string()
    .check(z.regex(DNS_SUBDOMAIN, { message: 'expected a hostname (lowercase letters, digits, "-" and ".")' }))
    .check(z.maxLength(63, { message: 'expected at most 63 characters: the policy selects the node by its kubernetes.io/hostname label, and a label value is at most 63' })),
  interface: z.optional(z.string()),
  egressIp: z.optional(z.string()),
  egressClassLabel: z.optional(z.string()),
  vpnClass: z.optional(z.string()),
  namespaces: z.optional(z.array(z.string())),
  clusterCidrs: z.array(networkCidrSchema),
  lanCidrs: z.optional(z.array(networkCidrSchema)),
  destinationCidrs: z.optional(z.array(networkCidrSchema)),
  excludedCidrs: z.optional(z.array(networkCidrSchema)),
  enforceLabels: z.optional(z.strictObject({ namespaces: z.array(z.string()), classes: z.optional(z.array(z.string())) })),
  monitoring: z.optional(z.strictObject({
    namespace: z.optional(z.string()), ruleLabels: z.optional(labelsSchema), kubeStateMetricsValues: z.optional(z.record(z.string(), z.unknown())),
    textfileDirectory: z.optional(z.string().check(z.regex(/^\/[A-Za-z0-9._/-]*$/, { message: 'expected an absolute path of letters, digits, ".", "_", "-" and "/"' }))),
    runbookUrl: z.optional(z.string().check(z.regex(/^https?:\/\/[^\s#"']+$/, { message: 'expected an http(s) URL without a fragment' }))),
  })),
  uplinkLabel: z.optional(z.string()),
  resteerAdmission: z.optional(z.enum(['validating-admission-policy', 'kyverno'])),
  kubeconfigFrom: z.optional(secretSourceSchema),
  ciliumValues: z.optional(z.record(z.string(), z.unknown())),
  denyIpv6: z.optional(z.boolean()),
  acknowledge: z.optional(z.array(z.enum(['dns-wan', 'policy-delay', 'ipv6-egress', 'ipv6-destination', 'hostname-endpoint', 'cilium-devices', 'kube-state-metrics', 'ignition-packages', 'default-kubeconfig']))),
  tunnel: z.optional(tunnelSchema),
  failover: z.optional(failoverSchema(tunnelSchema)),
});

export { ksmAllowlistEntry, ksmAllowlistGroups, ksmGroupExports, ksmLabelName, ksmNodeGroup } from './ksm-allowlist';
export type { KsmAllowlistGroup } from './ksm-allowlist';
function get(obj: unknown, path: string[]): unknown {
  return path.reduce<unknown>((o, k) => (isRecord(o) ? o[k] : undefined), obj);
}

/** Checks the user's Cilium values against what the egress gateway needs. */
export function checkCiliumValues(values: Record<string, unknown>, iface: string | undefined, problems: Problem[]): void {
  const need = (path: string[], ok: (v: unknown) => boolean, what: string) => {
    const v = get(values, path);
    if (!ok(v)) problems.push({ path: `ciliumValues.${path.join('.')}`, code: 'cilium-values', message: `the egress gateway needs ${what}, ${received(v)}` });
  };
  need(['egressGateway', 'enabled'], (v) => v === true, 'egressGateway.enabled: true');
  need(['bpf', 'masquerade'], (v) => v === true, 'bpf.masquerade: true');
  need(['kubeProxyReplacement'], (v) => v === true || v === 'true', 'kubeProxyReplacement: true');
  if (iface) {
    need(['devices'], (v) => {
      const list = Array.isArray(v) ? v : typeof v === 'string' ? v.split(/[ ,]+/) : [];
      return list.some((d) => d === iface || (typeof d === 'string' && d.endsWith('+') && iface.startsWith(d.slice(0, -1))));
    }, `the tunnel device "${iface}" in devices (Cilium only egresses by devices it manages)`);
  }
  need(['ciliumEndpointSlice', 'enabled'], (v) => v !== true, 'ciliumEndpointSlice off (it is not compatible with the egress gateway)');
}

/** Validates EgressSteering props: all problems at once, and the warnings. */
export function checkEgressSteering(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: EgressSteeringProps } {
  const parsed = parseWith<EgressSteeringProps>(egressSteeringSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  const warnings: Problem[] = [];
  if (isRecord(input)) {
    const push = (path: string, code: string, message: string) => problems.push({ path, code, message });
    if (input.interface !== undefined && input.egressIp !== undefined) push('egressIp', 'interface-and-egress-ip', 'expected interface or egressIp, never both: Cilium ignores a policy that sets both');
    checkInterfaceName(input.interface, 'interface', problems);
    if (typeof input.egressIp === 'string' && !parseIp(input.egressIp)) push('egressIp', 'ip', `expected an IP address, ${received(input.egressIp)}`);
    if (typeof input.name === 'string' && !isDnsLabel(input.name)) push('name', 'name', `expected a DNS label, ${received(input.name)}`);
    for (const key of ['egressClassLabel', 'uplinkLabel'] as const) {
      if (typeof input[key] === 'string' && !isLabelKey(input[key] as string)) push(key, 'label-key', `expected a label key, ${received(input[key])}`);
    }
    if (typeof input.vpnClass === 'string' && (!isLabelValue(input.vpnClass) || input.vpnClass === '')) push('vpnClass', 'label-value', `expected a label value, ${received(input.vpnClass)}`);
    asArray(input.namespaces).forEach((ns, i) => {
      if (typeof ns === 'string' && !isDnsLabel(ns)) push(`namespaces[${i}]`, 'namespace', `expected a namespace name, ${received(ns)}`);
    });
    if (Array.isArray(input.namespaces) && input.namespaces.length === 0) push('namespaces', 'required', 'expected at least one namespace (omit it for every namespace)');
    const givenDestinations = locatedCidrs(input, 'destinationCidrs');
    const destinations = input.destinationCidrs === undefined ? [parseCidr('0.0.0.0/0')!] : givenDestinations.map((d) => d.value);
    for (const d of givenDestinations) {
      if (d.value.family === 6) warnings.push({ path: d.at, code: 'ipv6-destination', message: 'IPv6 egress destinations need Cilium 1.20 or later' });
    }
    asArray(input.excludedCidrs).forEach((text, i) => {
      const e = parseCidr(text);
      if (e && !destinations.some((d) => cidrContains(d, e))) push(`excludedCidrs[${i}]`, 'excluded-outside', `expected an excluded CIDR inside a destination CIDR (Cilium ignores it otherwise), ${received(text)}`);
    });
    if (Array.isArray(input.clusterCidrs) && input.clusterCidrs.length === 0) push('clusterCidrs', 'required', 'expected the pod and service CIDRs: they are never steered');
    // Limits of Cilium's egress gateway that no setting here closes: said at synth, with the remedy.
    const v6Dest = givenDestinations.some((d) => d.value.family === 6);
    // A deny rule is enforced before the egress gateway redirects (Cilium's policy verdict comes first).
    if (v6Dest && input.denyIpv6 === true) push('denyIpv6', 'deny-steered', 'expected denyIpv6 off while IPv6 destinations are steered: its deny of ::/0 drops them before the egress gateway redirects them');
    for (const c of locatedCidrs(input, 'clusterCidrs')) {
      if (c.value.family === 6 && !v6Dest && input.denyIpv6 !== true) warnings.push({ path: c.at, code: 'ipv6-egress', message: 'an IPv6 cluster: vpn-class pods\' IPv6 traffic is not steered (only IPv4 destinations are) and leaves natively; set denyIpv6: true (a CiliumClusterwideNetworkPolicy denying it), or steer IPv6 destinations (Cilium 1.20+)' });
    }
    const steered = Array.isArray(input.namespaces) ? input.namespaces.filter((n): n is string => typeof n === 'string') : undefined;
    // CoreDNS runs in kube-system: labelling its pods steers its upstream queries only when the policy selects there.
    const coreDns = steered && !steered.includes('kube-system')
      ? `; labelling the CoreDNS pods with the vpn class does nothing here, since the policy selects pods only in ${quotedList(steered)} and CoreDNS runs in kube-system: add kube-system to namespaces for that, or point CoreDNS's forward at a resolver reached only through the tunnel`
      : ': label the CoreDNS pods with the vpn class, or point CoreDNS\'s forward at a resolver reached only through the tunnel';
    warnings.push({ path: 'clusterCidrs', code: 'dns-wan', message: `vpn-class pods resolve names through the cluster DNS (the cluster CIDRs are never steered), which forwards outside names over the WAN${coreDns} (see docs/egress-steering.md, "DNS leaves by the WAN")` });
    warnings.push({ path: 'vpnClass', code: 'policy-delay', message: 'Cilium applies the policy to a new pod shortly after it starts: until then its traffic leaves with its own node\'s address (Cilium\'s egress gateway docs, limitations). No policy closes that window: for workloads that must never leak, route them with VpnGateway (pod-level routing with its kill switch) instead' });
    const enforce = input.enforceLabels;
    if (isRecord(enforce)) {
      if (Array.isArray(enforce.namespaces) && enforce.namespaces.length === 0) push('enforceLabels.namespaces', 'required', 'expected at least one namespace to enforce the class label in');
      asArray(enforce.namespaces).forEach((ns, i) => {
        if (typeof ns === 'string' && !isDnsLabel(ns)) push(`enforceLabels.namespaces[${i}]`, 'namespace', `expected a namespace name, ${received(ns)}`);
      });
      const vpnClass = typeof input.vpnClass === 'string' ? input.vpnClass : 'vpn';
      // A namespace where the label is required but nothing steers: its vpn-class pods are admitted and leave by the WAN.
      if (steered && steered.length > 0) {
        // Listed once, and at most ten names: 10 000 enforced namespaces must not make 10 000 copies of 10 000 names.
        const [steeredSet, steeredText] = [new Set(steered), quotedList(steered)];
        asArray(enforce.namespaces).forEach((ns, i) => {
          if (typeof ns === 'string' && isDnsLabel(ns) && !steeredSet.has(ns)) push(`enforceLabels.namespaces[${i}]`, 'enforced-not-steered', `expected a namespace the policy steers (namespaces: ${steeredText}): Kyverno would admit pods of class ${vpnClass} in ${ns}, and they would leave by the WAN; add ${ns} to namespaces, or leave it out here`);
        });
      }
      if (Array.isArray(enforce.classes) && !enforce.classes.includes(vpnClass)) push('enforceLabels.classes', 'classes', `expected the allowed classes to include the vpn class "${vpnClass}", received ${JSON.stringify(enforce.classes)}`);
      asArray(enforce.classes).forEach((c, i) => {
        if (typeof c === 'string' && (!isLabelValue(c) || c === '' || c.includes('|'))) push(`enforceLabels.classes[${i}]`, 'label-value', `expected a non-empty label value without "|" (Kyverno reads "|" in a pattern as "or"), ${received(c)}`);
      });
    }
    const mon = input.monitoring;
    if (isRecord(mon)) {
      if (typeof mon.namespace === 'string' && !isDnsLabel(mon.namespace)) push('monitoring.namespace', 'namespace', `expected a namespace name, ${received(mon.namespace)}`);
      const uplink = typeof input.uplinkLabel === 'string' ? input.uplinkLabel : DEFAULT_UPLINK_LABEL;
      const ksm = mon.kubeStateMetricsValues;
      const allow = isRecord(ksm) ? ksm.metricLabelsAllowlist : undefined;
      // kube-state-metrics keeps the last group of a resource (ksmAllowlistGroups): a second nodes= group, in another
      // entry or in the same one, silently drops the first one's labels.
      const groups = ksmAllowlistGroups(asArray(allow));
      const nodeGroups = groups.filter((g) => g.resource === 'nodes');
      const found = quotedList([...new Set(nodeGroups.map((g) => (allow as string[])[g.entry]))]);
      for (const { entry } of nodeGroups.slice(1)) push(`monitoring.kubeStateMetricsValues.metricLabelsAllowlist[${entry}]`, 'ksm-nodes-repeated', `expected one nodes= entry, found ${found}: kube-state-metrics keeps only the last, so the labels of the others are never exported; list every node label in one nodes=[…] entry`);
      if (!ksmGroupExports(ksmNodeGroup(groups), uplink)) {
        warnings.push({ path: 'monitoring.kubeStateMetricsValues', code: 'kube-state-metrics', message: `kube-state-metrics must export the ${uplink} node label for VPNEgressSteeringStale and VPNEgressUplinkLabelMissing: plan.values.kubeStateMetrics holds the metricLabelsAllowlist to give it (under kube-state-metrics: in kube-prometheus-stack's values); Helm replaces a list, so give yours as monitoring.kubeStateMetricsValues to have it merged` });
      }
    }
    if (isRecord(input.ciliumValues)) checkCiliumValues(input.ciliumValues, input.egressIp === undefined ? ((input.interface as string | undefined) ?? 'tun0') : undefined, problems);
    else if (input.egressIp === undefined) {
      const iface = typeof input.interface === 'string' ? input.interface : 'tun0';
      warnings.push({ path: 'ciliumValues', code: 'cilium-devices', message: `Cilium egresses only by devices it manages: add "${iface}" to your Cilium values' devices list (Helm replaces a list, so plan.values.cilium cannot carry it without your other devices); pass ciliumValues to get the whole list in plan.values.cilium.devices` });
    }
    if (input.kubeconfigFrom === undefined) {
      const sa = `${typeof input.name === 'string' ? input.name : 'vpn-egress'}-resteer`;
      warnings.push({ path: 'kubeconfigFrom', code: 'default-kubeconfig', message: `no kubeconfigFrom: the re-steer hook runs kubectl with the node's default config (on a k3s server /etc/rancher/k3s/k3s.yaml, cluster-admin), not the ServiceAccount ${sa} emitted for it, which may change only the uplink label; build a kubeconfig from the Secret kube-system/${sa}-token and give it as kubeconfigFrom (docs/egress-steering.md, "The re-steer credential")` });
    }
    const t = input.tunnel;
    // OpenVPN assigns its address at each connect: the interface (tun0) is the only fixed way to name it.
    if (isRecord(t) && t.type === 'openvpn' && input.egressIp !== undefined) push('egressIp', 'egress-ip-tunnel', 'expected no egressIp with an OpenVPN tunnel (leave it out: the policy names the interface): OpenVPN assigns the tunnel address at each connect, and traffic masqueraded to any other address is not routed into the tunnel');
    if (isRecord(t) && t.type === 'wireguard') {
      if (typeof t.address === 'string') {
        const c = parseCidr(t.address);
        const bits = c?.family === 4 ? 32 : 128;
        if (!c) push('tunnel.address', 'cidr', `expected the tunnel address with its prefix such as 10.2.0.2/32, ${received(t.address)}`);
        else if (c.prefix < bits - 1 && !hasHostBits(c)) push('tunnel.address', 'host-address', `expected a host address, ${received(t.address)}`);
        // Cilium masquerades steered IPv4 to the interface's first IPv4 address (egressgateway getIfaceFirstIPv4Address:
        // "no IPv4 address assigned to interface"), and the tunnel's table is for its own family only.
        else if (c.family === 6 && destinations.some((d) => d.family === 4)) push('tunnel.address', 'tunnel-family', `expected an IPv4 tunnel address: the IPv4 destinations leave from the tunnel's IPv4 address, and ${t.address} is IPv6 (steer only IPv6 destinations through an IPv6-only tunnel)`);
        // Only traffic from the tunnel address is policy-routed into the tunnel (`from <address> lookup 51821`).
        else {
          const egress = parseIp(input.egressIp);
          if (egress && (egress.family !== c.family || egress.value !== c.address)) push('egressIp', 'egress-ip-tunnel', `expected the tunnel's address ${t.address.split('/')[0]} (or leave egressIp out): traffic masqueraded to ${input.egressIp as string} is not routed into the tunnel, only traffic from the tunnel's address is, and it would leave by the main table`);
        }
      }
      const peer = t.peer;
      if (isRecord(peer)) {
        if (typeof peer.publicKey === 'string' && !isWireguardKey(peer.publicKey)) push('tunnel.peer.publicKey', 'key', KEY_FIELD_MESSAGE);
        if (typeof peer.endpoint === 'string') {
          const e = parseEndpoint(peer.endpoint);
          if (!e) push('tunnel.peer.endpoint', 'endpoint', `expected host:port (an IPv6 host in brackets), ${received(peer.endpoint)}`);
          else if (e.isHostname) warnings.push({ path: 'tunnel.peer.endpoint', code: 'hostname-endpoint', message: `endpoint ${JSON.stringify(peer.endpoint)} is a hostname: it must resolve before the tunnel is up; prefer an IP` });
        }
      }
    }
    if (isRecord(t) && t.type === 'openvpn' && typeof t.remote === 'string' && !parseEndpoint(t.remote)) push('tunnel.remote', 'endpoint', `expected host:port, ${received(t.remote)}`);
    checkFailover(input, problems, warnings);
    // Each standby's tunnel passes the checks gatewayNode's passes, at its own path.
    if (isRecord(input.failover) && Array.isArray(input.failover.standbys)) {
      input.failover.standbys.forEach((s: unknown, i: number) => {
        if (!isRecord(s) || !isRecord(s.tunnel)) return;
        const own = checkEgressSteering({ ...input, tunnel: s.tunnel, failover: undefined });
        const at = (x: Problem) => ({ ...x, path: `failover.standbys[${i}].${x.path}` });
        problems.push(...own.problems.filter((x) => x.path.startsWith('tunnel.')).map(at));
        warnings.push(...own.warnings.filter((x) => x.path.startsWith('tunnel.')).map(at));
      });
    }
  }
  return { problems: redactProblems(sortProblems(problems)), warnings: redactProblems(warnings), value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}


