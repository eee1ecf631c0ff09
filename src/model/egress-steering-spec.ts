import { Problem, throwIfProblems } from '../errors';
import type { Cidr, SecretSource } from './common';
import {
  checkEgressSteering, DEFAULT_EGRESS_CLASS_LABEL, DEFAULT_UPLINK_LABEL, EgressSteeringProps, ksmAllowlistEntry, ksmAllowlistGroups, ksmGroupExports, ksmNodeGroup, RFC1918,
} from './egress-steering';
import { cidrContains, IpFamily, parseCidr } from './net';
import { parseEndpoint } from './wireguard-overlay-node';
import { activeLabel, EgressSteeringFailoverSpec, failoverSpecOf } from './egress-steering-failover';

/** Where node-exporter's textfile collector reads by default here (`--collector.textfile.directory`). */
export const DEFAULT_TEXTFILE_DIRECTORY = '/var/lib/node_exporter/textfile_collector';

/** The host tunnel, parsed: OpenVPN's pinned remote split into host and port, WireGuard's address into its parts. */
export type EgressTunnelSpec =
  | {
      readonly type: 'openvpn';
      readonly configFrom: SecretSource;
      readonly credentialsFrom?: SecretSource;
      /** The pinned server as written (`host:port`), and parsed (OpenVPN takes the host without brackets, the port apart). */
      readonly remote?: { readonly text: string; readonly host: string; readonly port: number };
    }
  | {
      readonly type: 'wireguard';
      /** As written, with its prefix. */
      readonly address: Cidr;
      readonly family: IpFamily;
      /** The address without its prefix (the policy rule's `from`). */
      readonly from: string;
      readonly privateKeyFrom: SecretSource;
      readonly peer: { readonly publicKey: string; readonly endpoint: string; readonly presharedKeyFrom?: SecretSource };
    };

/** EgressSteering's props, checked once and normalized: defaults applied, addresses parsed, derived facts computed. */
export interface EgressSteeringSpec {
  readonly name: string;
  readonly cluster: string;
  readonly gatewayNode: string;
  /** The tunnel's interface (`tun0` unless given). */
  readonly iface: string;
  readonly egressIp?: string;
  readonly classLabel: string;
  readonly vpnClass: string;
  readonly uplinkLabel: string;
  /** How the re-steer credential's scope is enforced at admission. */
  readonly resteerAdmission: 'validating-admission-policy' | 'kyverno';
  readonly namespaces?: readonly string[];
  readonly clusterCidrs: readonly Cidr[];
  readonly lanCidrs: readonly Cidr[];
  readonly destinationCidrs: readonly Cidr[];
  /** Given, else derived (see `excludedCidrsOf`). */
  readonly excludedCidrs: readonly Cidr[];
  /** Label enforcement, its classes defaulted to the vpn class and `direct`. */
  readonly enforceLabels?: { readonly namespaces: readonly string[]; readonly classes: readonly string[] };
  readonly monitoring?: {
    readonly namespace: string;
    readonly ruleLabels: Readonly<Record<string, string>>;
    readonly textfileDirectory: string;
    readonly runbookUrl?: string;
  };
  /** kube-state-metrics' whole `metricLabelsAllowlist` with the uplink label in it. */
  readonly ksmAllowlist: readonly string[];
  /** Cilium's `devices` given whole (the user's list with the tunnel), or undefined (not known, or an egress IP). */
  readonly ciliumDevices?: readonly string[];
  readonly kubeconfigFrom?: SecretSource;
  readonly denyIpv6: boolean;
  /** The IPv6 cluster and LAN CIDRs (kept out of the IPv6 deny). */
  readonly ipv6ClusterCidrs: readonly Cidr[];
  readonly tunnel?: EgressTunnelSpec;
  /** Standby gateway nodes (each tunnel parsed) and the agents' settings, defaults applied (see egress-steering-failover). */
  readonly failover?: EgressSteeringFailoverSpec<EgressTunnelSpec>;
  /** The props' warnings the user has not acknowledged. */
  readonly warnings: readonly Problem[];
  /** The warning codes the user acknowledged (for the warnings the plan adds: `ignition-packages`). */
  readonly acknowledged: readonly string[];
}

/** Ignition has no `packages`: the image must ship them (cloud-init installs them). */
export function ignitionPackagesWarning(packages: readonly string[], path: string): Problem {
  return { path, code: 'ignition-packages', message: `the host needs ${packages.join(', ')}: cloud-init installs them (packages), Ignition cannot; on Flatcar or Fedora CoreOS use an image that ships them` };
}

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

/**
 * kube-state-metrics' `metricLabelsAllowlist` whole (Helm replaces a list): your list with the uplink label added to
 * the group kube-state-metrics reads for nodes (the last `*=` group, else the last `nodes=` one, also inside an entry
 * such as `pods=[app],nodes=[zone]`), or a `nodes=` entry appended when there is none, or ours alone when you gave no
 * list. In kube-prometheus-stack it goes under `kube-state-metrics:`; in the kube-state-metrics chart, at the top.
 */
export function mergedKsmAllowlist(yours: unknown, uplinkLabel: string): string[] {
  // An empty entry joins into a leading or doubled "," that kube-state-metrics refuses at start-up: dropped.
  const list = Array.isArray(yours) ? yours.map(String).filter((e) => e.trim() !== '') : [];
  // The group kube-state-metrics reads for nodes (the last *= one, else the last nodes= one), wherever it is written:
  // the label goes in before its closing "]", and the rest of your text is left as it is.
  const kept = ksmNodeGroup(ksmAllowlistGroups(list));
  if (!kept) return [...list, ksmAllowlistEntry(uplinkLabel)];
  if (ksmGroupExports(kept, uplinkLabel)) return list;
  const { entry, offset } = kept.close;
  const text = list[entry];
  return list.map((e, k) => (k === entry ? `${text.slice(0, offset)}${kept.labels.length > 0 ? ',' : ''}${uplinkLabel}${text.slice(offset)}` : e));
}

/** Cilium's `devices` given whole: your `ciliumValues.devices` with the tunnel added, or undefined (none given, or an egress IP). */
function ciliumDevicesOf(p: EgressSteeringProps, iface: string): string[] | undefined {
  const yours = p.ciliumValues?.devices;
  const list = Array.isArray(yours) ? yours.map(String) : typeof yours === 'string' ? yours.split(/[ ,]+/).filter(Boolean) : undefined;
  return p.egressIp || !list ? undefined : list.includes(iface) ? list : [...list, iface];
}

export function tunnelSpec(t: EgressSteeringProps['tunnel']): EgressTunnelSpec | undefined {
  if (!t) return undefined;
  if (t.type === 'openvpn') {
    // Validated as host:port.
    const remote = t.remote ? parseEndpoint(t.remote)! : undefined;
    return {
      type: 'openvpn', configFrom: t.configFrom,
      ...(t.credentialsFrom ? { credentialsFrom: t.credentialsFrom } : {}),
      ...(remote ? { remote: { text: t.remote!, host: remote.host, port: remote.port! } } : {}),
    };
  }
  return { type: 'wireguard', address: t.address, family: parseCidr(t.address)!.family, from: t.address.split('/')[0], privateKeyFrom: t.privateKeyFrom, peer: t.peer };
}

/** The spec of props already checked (no problems). */
function specOf(p: EgressSteeringProps, modelWarnings: readonly Problem[]): EgressSteeringSpec {
  const iface = p.interface ?? 'tun0';
  const vpnClass = p.vpnClass ?? 'vpn';
  const uplinkLabel = p.uplinkLabel ?? DEFAULT_UPLINK_LABEL;
  const acknowledged = p.acknowledge ?? [];
  const m = p.monitoring;
  const devices = ciliumDevicesOf(p, iface);
  return {
    name: p.name ?? 'vpn-egress',
    cluster: p.cluster ?? 'default',
    gatewayNode: p.gatewayNode,
    iface,
    ...(p.egressIp ? { egressIp: p.egressIp } : {}),
    classLabel: p.egressClassLabel ?? DEFAULT_EGRESS_CLASS_LABEL,
    vpnClass,
    uplinkLabel,
    resteerAdmission: p.resteerAdmission ?? 'validating-admission-policy',
    ...(p.namespaces ? { namespaces: p.namespaces } : {}),
    clusterCidrs: p.clusterCidrs,
    lanCidrs: p.lanCidrs ?? [],
    destinationCidrs: p.destinationCidrs ?? ['0.0.0.0/0'],
    excludedCidrs: excludedCidrsOf(p),
    ...(p.enforceLabels ? { enforceLabels: { namespaces: p.enforceLabels.namespaces, classes: p.enforceLabels.classes ?? [vpnClass, 'direct'] } } : {}),
    ...(m ? { monitoring: { namespace: m.namespace ?? 'monitoring', ruleLabels: m.ruleLabels ?? {}, textfileDirectory: m.textfileDirectory ?? DEFAULT_TEXTFILE_DIRECTORY, ...(m.runbookUrl ? { runbookUrl: m.runbookUrl } : {}) } } : {}),
    // With failover, the active label too (VPNEgressTwoHolders and VPNEgressRoleMoved read it).
    ksmAllowlist: p.failover
      ? mergedKsmAllowlist(mergedKsmAllowlist(m?.kubeStateMetricsValues?.metricLabelsAllowlist, uplinkLabel), activeLabel(p.name ?? 'vpn-egress'))
      : mergedKsmAllowlist(m?.kubeStateMetricsValues?.metricLabelsAllowlist, uplinkLabel),
    ...(devices ? { ciliumDevices: devices } : {}),
    ...(p.kubeconfigFrom ? { kubeconfigFrom: p.kubeconfigFrom } : {}),
    denyIpv6: p.denyIpv6 === true,
    ipv6ClusterCidrs: [...p.clusterCidrs, ...(p.lanCidrs ?? [])].filter((c) => parseCidr(c)!.family === 6),
    ...(p.tunnel ? { tunnel: tunnelSpec(p.tunnel) } : {}),
    ...(p.failover ? { failover: failoverSpecOf(p.failover, (t) => tunnelSpec(t)!) } : {}),
    warnings: modelWarnings.filter((w) => !acknowledged.includes(w.code)),
    acknowledged,
  };
}

/** Checks EgressSteering props once: their problems, or the normalized spec that every render function takes. */
export function parseEgressSteering(input: unknown): { problems: Problem[]; spec?: EgressSteeringSpec } {
  const checked = checkEgressSteering(input);
  if (checked.problems.length > 0 || !checked.value) return { problems: checked.problems };
  return { problems: [], spec: specOf(checked.value, checked.warnings) };
}

/** The spec of EgressSteering props, or a ValidationError with all their problems. */
export function egressSteeringSpec(input: unknown): EgressSteeringSpec {
  const parsed = parseEgressSteering(input);
  throwIfProblems(parsed.problems, 'EgressSteering props');
  return parsed.spec!;
}
