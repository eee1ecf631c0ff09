import * as z from '../zod';
import { Problem } from '../errors';
import { asArray, Cidr, cidrSchema, networkCidrSchema, clusterSchema, isRecord, parseWith, portSchema, received, sortProblems } from './common';
import { checkSelector, isDnsLabel } from './labels';
import { nodeNameSchema } from './wireguard-overlay-node/schema';
import { parseCidr, ParsedCidr } from './net';

/** The host part of a kill switch: an nftables table on one node. */
export interface HostKillSwitch {
  /** The node (hostname) the table is loaded on: a Kubernetes node name (a DNS subdomain, at most 253 characters). */
  readonly node: string;
  /** The interface that reaches the internet directly: tunnel- and pod-sourced traffic leaving by it is dropped. */
  readonly wanInterface: string;
  /** The VPN tunnel's interface (`tun0`, `wg0`). */
  readonly tunnelInterface: string;
  /** The tunnel's own addresses: traffic sourced from them leaves by the tunnel or not at all. */
  readonly tunnelCidrs: Cidr[];
  /** Pod (or other forwarded) sources that must leave by the tunnel or not at all. @default - none */
  readonly podCidrs?: Cidr[];
  /**
   * Ports on the node that a connection from the VPN side may open through the tunnel (TCP and UDP): a port your VPN
   * provider forwards to a program on the node itself. Every other connection the VPN side opens to the node through
   * the tunnel is dropped (the tunnel is an uplink, not a LAN); replies to the node's own connections pass.
   * @default - none
   */
  readonly tunnelInboundPorts?: number[];
}

export interface KillSwitchProps {
  /** The cluster this kill switch belongs to. @default 'default' */
  readonly cluster?: string;
  /**
   * Name of the policy.
   * @default - the selector's values joined, then `-kill-switch` (e.g. `qbittorrent-kill-switch`); past 63 characters, the
   * start of the values, 8 hex digits of their SHA-256, then `-kill-switch`, so two long selectors get two policies
   */
  readonly name?: string;
  /** Labels of the pods it confines; an empty selector is refused (it would select every pod). */
  readonly selector: Record<string, string>;
  /** Namespace of the selected pods (and of the policy). */
  readonly namespace: string;
  /** Destinations the pods may reach directly: the cluster's pod and service CIDRs (LAN CIDRs too, if needed). Never a default route. */
  readonly allowCidrs: Cidr[];
  /** Allow DNS (UDP and TCP 53) to the cluster DNS pods (`k8s-app=kube-dns` in `kube-system`), and nowhere else. @default true */
  readonly allowDns?: boolean;
  /** Labels of the VPN gateway pods: VXLAN (UDP `vxlanPort`) to them is allowed. @default - no gateway */
  readonly gatewayPodLabels?: Record<string, string>;
  /** Namespace of the gateway pods. @default - the kill switch's namespace */
  readonly gatewayNamespace?: string;
  /** UDP port of the VXLAN to the gateway pods. @default 4789 */
  readonly vxlanPort?: number;
  /** `kubernetes`: a NetworkPolicy; `cilium`: a CiliumNetworkPolicy (in-cluster destinations as the `cluster` entity). @default 'kubernetes' */
  readonly flavor?: 'kubernetes' | 'cilium';
  /** Allow IPv6 destinations in `allowCidrs` (IPv6 routed through the tunnel). Otherwise all IPv6 egress is denied. @default false */
  readonly ipv6?: boolean;
  /** The host part: an nftables table on one node. @default - none */
  readonly host?: HostKillSwitch;
  /**
   * Warning codes you have read and accept (`duplicate-kill-switch`: this kill switch selects pods that a VpnGateway's
   * `route()` already fences with its own): not reported again. @default []
   */
  readonly acknowledge?: 'duplicate-kill-switch'[];
}

export const DEFAULT_VXLAN_PORT = 4789;
/** Linux interface names: 1–15 characters, no '/', whitespace or ':' (nftables and iproute2 friendly). */
export const LINUX_INTERFACE = /^[A-Za-z0-9_.-]{1,15}$/;

const labels = z.record(z.string(), z.string());

/** @internal */
export const hostKillSwitchSchema = z.strictObject({
  node: nodeNameSchema,
  wanInterface: z.string(),
  tunnelInterface: z.string(),
  tunnelCidrs: z.array(cidrSchema),
  podCidrs: z.optional(z.array(networkCidrSchema)),
  tunnelInboundPorts: z.optional(z.array(portSchema)),
});

/** @internal */
export const killSwitchSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  name: z.optional(z.string()),
  selector: labels,
  namespace: z.string(),
  allowCidrs: z.array(networkCidrSchema),
  allowDns: z.optional(z.boolean()),
  gatewayPodLabels: z.optional(labels),
  gatewayNamespace: z.optional(z.string()),
  vxlanPort: z.optional(portSchema),
  flavor: z.optional(z.enum(['kubernetes', 'cilium'])),
  ipv6: z.optional(z.boolean()),
  host: z.optional(hostKillSwitchSchema),
  acknowledge: z.optional(z.array(z.enum(['duplicate-kill-switch']))),
});

/** True when the CIDRs together cover the whole IPv4 or IPv6 space (a default route, perhaps split as 0/1 + 128/1). O(n log n). */
export function coversEverything(cidrs: readonly ParsedCidr[], family: 4 | 6): boolean {
  const blocks = cidrs.filter((c) => c.family === family).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const top = family === 4 ? (1n << 32n) - 1n : (1n << 128n) - 1n;
  let next = 0n;
  for (const b of blocks) {
    if (b.start > next) return false;
    if (b.end + 1n > next) next = b.end + 1n;
    if (next > top) return true;
  }
  return false;
}

/** Checks of an interface name. */
export function checkInterfaceName(name: unknown, path: string, problems: Problem[]): void {
  if (typeof name !== 'string') return;
  if (!LINUX_INTERFACE.test(name) || name === '.' || name === '..') {
    problems.push({ path, code: 'interface-name', message: `expected a Linux interface name (1–15 characters of [A-Za-z0-9_.-]), ${received(name)}` });
  }
}

/**
 * Semantic checks of the host part (shared with EgressSteering's host kill switch), at `path` ('' for the host
 * itself). `tunnelCidrsMayBeEmpty`: an OpenVPN tunnel's address is learnt at connect and added by its up script.
 */
export function checkHostKillSwitch(host: Record<string, unknown>, path: string, problems: Problem[], tunnelCidrsMayBeEmpty = false): void {
  const at = (key: string) => (path === '' ? key : `${path}.${key}`);
  checkInterfaceName(host.wanInterface, at('wanInterface'), problems);
  checkInterfaceName(host.tunnelInterface, at('tunnelInterface'), problems);
  if (typeof host.wanInterface === 'string' && host.wanInterface === host.tunnelInterface) {
    problems.push({ path: at('tunnelInterface'), code: 'same-interface', message: `expected the tunnel and the WAN to be different interfaces, both are ${JSON.stringify(host.wanInterface)}` });
  }
  if (!tunnelCidrsMayBeEmpty && Array.isArray(host.tunnelCidrs) && host.tunnelCidrs.length === 0) {
    problems.push({ path: at('tunnelCidrs'), code: 'empty', message: "expected at least one CIDR: the tunnel's own addresses" });
  }
  for (const key of ['tunnelCidrs', 'podCidrs'] as const) {
    const parsed = asArray(host[key]).map(parseCidr).filter((c): c is ParsedCidr => c !== undefined);
    for (const fam of [4, 6] as const) {
      if (coversEverything(parsed, fam)) problems.push({ path: at(key), code: 'default-route', message: `expected the ${key === 'tunnelCidrs' ? "tunnel's" : "pods'"} own addresses, received CIDRs that cover all of IPv${fam}: every packet would count as ${key === 'tunnelCidrs' ? 'tunnel' : 'pod'}-sourced` });
    }
  }
}

/** Validates KillSwitch props: all problems at once. */
export function checkKillSwitch(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: KillSwitchProps } {
  const parsed = parseWith<KillSwitchProps>(killSwitchSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  if (isRecord(input)) {
    checkSelector(input.selector, 'selector', problems);
    if (input.gatewayPodLabels !== undefined) checkSelector(input.gatewayPodLabels, 'gatewayPodLabels', problems);
    for (const key of ['namespace', 'gatewayNamespace'] as const) {
      const v = input[key];
      if (typeof v === 'string' && !isDnsLabel(v)) problems.push({ path: key, code: 'namespace', message: `expected a namespace name (a DNS label), ${received(v)}` });
    }
    if (typeof input.name === 'string' && !isDnsLabel(input.name)) problems.push({ path: 'name', code: 'name', message: `expected an object name (a DNS label, ≤ 63 characters), ${received(input.name)}` });
    const allow = asArray(input.allowCidrs).map((raw, i) => ({ c: parseCidr(raw), i, raw }));
    if (Array.isArray(input.allowCidrs) && input.allowCidrs.length === 0) problems.push({ path: 'allowCidrs', code: 'required', message: 'expected the cluster CIDRs (pods and services): without them the pods cannot reach the cluster' });
    for (const { c, i, raw } of allow) {
      if (!c) continue;
      if (c.prefix === 0) problems.push({ path: `allowCidrs[${i}]`, code: 'default-route', message: `expected cluster CIDRs, ${received(raw)}: a default route would let every packet bypass the VPN` });
      else if (c.family === 6 && input.ipv6 !== true) problems.push({ path: `allowCidrs[${i}]`, code: 'ipv6-disabled', message: `IPv6 egress is denied unless ipv6 is true, ${received(raw)}` });
    }
    const parsedAllow = allow.map((a) => a.c).filter((c): c is ParsedCidr => c !== undefined && c.prefix > 0);
    for (const fam of [4, 6] as const) {
      if (coversEverything(parsedAllow, fam)) problems.push({ path: 'allowCidrs', code: 'default-route', message: `expected cluster CIDRs, received CIDRs that together cover all of IPv${fam}: a split default route lets every packet bypass the VPN` });
    }
    if (input.gatewayNamespace !== undefined && input.gatewayPodLabels === undefined) problems.push({ path: 'gatewayNamespace', code: 'gateway', message: 'gatewayNamespace needs gatewayPodLabels' });
    if (input.vxlanPort !== undefined && input.gatewayPodLabels === undefined) problems.push({ path: 'vxlanPort', code: 'gateway', message: 'vxlanPort needs gatewayPodLabels' });
    if (isRecord(input.host)) checkHostKillSwitch(input.host, 'host', problems);
  }
  return { problems: sortProblems(problems), warnings: [], value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}

/**
 * Validates a host kill switch on its own (the input of `planHostKillSwitch`, which EgressSteering also plans): the
 * schema with the WAN interface optional, and the host checks (tunnelCidrs may be empty). All problems at once.
 */
export function checkHostKillSwitchInput(input: unknown): Problem[] {
  const parsed = parseWith(z.partial(hostKillSwitchSchema, { wanInterface: true }), input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  if (isRecord(input)) checkHostKillSwitch(input, '', problems, true);
  return sortProblems(problems);
}
