import * as z from '../zod';
import { Problem } from '../errors';
import { asArray, Cidr, cidrSchema, networkCidrSchema, clusterSchema, durationSchema, isRecord, parseWith, received, sortProblems } from './common';
import { isDnsLabel, isLabelKey, isLabelValue } from './labels';
import { cidrContainsIp, parseCidr, parseIp } from './net';
import { parseVpnGateway, VpnGatewayProps, VpnGatewaySpec } from './vpn-gateway';

/** What the probe is attached to: routed through a VpnGateway, or labelled for an EgressSteering's vpn class. */
export type EgressProbeVia =
  | { readonly vpnGateway: VpnGatewayProps }
  | { readonly egressSteering: { readonly egressClassLabel?: string; readonly vpnClass?: string } };

export interface EgressProbeProps {
  /** The cluster this probe belongs to. @default 'default' */
  readonly cluster?: string;
  /** Name of the probe's objects. @default 'egress-probe' */
  readonly name?: string;
  /** Namespace the probe runs in (among the vpn-class workloads it vouches for). */
  readonly namespace: string;
  /** What the probe's traffic goes through. Required: a probe attached to nothing proves nothing. */
  readonly via: EgressProbeVia;
  /** IP-echo URLs, written `http://host…` or `https://host…`, that answer with the caller's public address. No default: choose whom you ask. */
  readonly targets: string[];
  /** Your WAN addresses: a vpn-class probe that sees one of them is a leak. */
  readonly wanIps: string[];
  /**
   * The VPN's egress ranges, IPv4 and IPv6: a probe that sees no address inside the ranges of its family fails too.
   * With `ipv6: true` at least one IPv6 range is required (the tunnel's IPv6 egress range, such as your provider's
   * /32 or the /64 of your exit): the IPv6 probe fails on every address outside it, a native one included.
   * @default - not checked
   */
  readonly vpnCidrs?: Cidr[];
  /** Probe interval. @default '60s' */
  readonly interval?: string;
  /** Where the PrometheusRule goes and the labels your Prometheus `ruleSelector` needs. @default - namespace 'monitoring', no labels */
  readonly monitoring?: { readonly namespace?: string; readonly ruleLabels?: Record<string, string>; readonly runbookUrl?: string };
  /** Also probe from a direct-class twin, to see both public addresses side by side. @default false */
  readonly directTwin?: boolean;
  /**
   * Probe over IPv6 too (a second module, `vpn_ipv6`, IPv6 only), which fails on any answer outside the IPv6 entries
   * of `vpnCidrs` (required with it). Refused with `vpnGateway`, whose routed pods have no IPv6 egress.
   * @default false
   */
  readonly ipv6?: boolean;
  /** The blackbox exporter image. @default 'prom/blackbox-exporter:v0.25.0' */
  readonly image?: string;
  /** A DNS-leak probe beside the address probe: which resolver answered for vpn-class pods. @default - none */
  readonly dnsLeak?: DnsLeakProbe;
}

/**
 * The blackbox exporter's `dns` prober, from the same vpn-class placement, asks `resolver` for a name whose answer is
 * the address of the resolver that asked the name's authoritative server (`whoami.akamai.net`): an answer in
 * `leakedCidrs` (your ISP's resolvers) is a leak, and with `tunnelCidrs` an answer outside them is one too.
 */
export interface DnsLeakProbe {
  /** The name to ask; its answer must be the asking resolver's address. @default 'whoami.akamai.net' */
  readonly queryName?: string;
  /** The resolver vpn-class pods use. @default - the gateway's (the VXLAN network's .1) with vpnGateway; required with egressSteering (your cluster DNS address) */
  readonly resolver?: string;
  /** Answers that mean the lookup left by the WAN (your ISP's resolvers, your WAN range). */
  readonly leakedCidrs?: Cidr[];
  /** Answers that mean the lookup went through the tunnel (the VPN provider's resolvers); anything else fails. */
  readonly tunnelCidrs?: Cidr[];
}

export const DEFAULT_DNS_LEAK_NAME = 'whoami.akamai.net';

export const DEFAULT_BLACKBOX_IMAGE = 'prom/blackbox-exporter:v0.25.0';

/** @internal */
export const egressProbeSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  name: z.optional(z.string()),
  namespace: z.string(),
  via: z.union([
    z.strictObject({ vpnGateway: z.record(z.string(), z.unknown()) }),
    z.strictObject({ egressSteering: z.strictObject({ egressClassLabel: z.optional(z.string()), vpnClass: z.optional(z.string()) }) }),
  ], { error: 'expected { vpnGateway: <its props> } or { egressSteering: { egressClassLabel?, vpnClass? } }' }),
  targets: z.array(z.string()),
  wanIps: z.array(z.string()),
  vpnCidrs: z.optional(z.array(networkCidrSchema)),
  interval: z.optional(durationSchema),
  monitoring: z.optional(z.strictObject({
    namespace: z.optional(z.string()), ruleLabels: z.optional(z.record(z.string(), z.string())),
    runbookUrl: z.optional(z.string().check(z.regex(/^https?:\/\/[^\s#"']+$/, { message: 'expected an http(s) URL without a fragment' }))),
  })),
  directTwin: z.optional(z.boolean()),
  ipv6: z.optional(z.boolean()),
  image: z.optional(z.string()),
  dnsLeak: z.optional(z.strictObject({
    queryName: z.optional(z.string().check(z.regex(/^([a-zA-Z0-9_]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}\.?$/, { message: 'expected a DNS name such as whoami.akamai.net' })).check(z.maxLength(253))),
    resolver: z.optional(z.string()),
    leakedCidrs: z.optional(z.array(networkCidrSchema)),
    tunnelCidrs: z.optional(z.array(cidrSchema)),
  })),
});

/** Validates EgressProbe props: all problems at once. */
export function checkEgressProbe(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: EgressProbeProps } {
  const { problems, warnings, value } = inspectEgressProbe(input);
  return { problems, warnings, ...(value ? { value } : {}) };
}

/** `checkEgressProbe`, with the spec of `via.vpnGateway` it parsed on the way (for `parseEgressProbe`). @internal */
export function inspectEgressProbe(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: EgressProbeProps; gateway?: VpnGatewaySpec } {
  let gateway: VpnGatewaySpec | undefined;
  const parsed = parseWith<EgressProbeProps>(egressProbeSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  const push = (path: string, code: string, message: string) => problems.push({ path, code, message });
  if (isRecord(input)) {
    if (input.via === undefined) {
      problems.splice(0, problems.length, ...problems.filter((p) => p.path !== 'via'));
      push('via', 'attached-to-nothing', 'expected { vpnGateway } or { egressSteering }: a probe attached to nothing proves nothing about vpn-class traffic');
    }
    for (const key of ['name', 'namespace'] as const) {
      if (typeof input[key] === 'string' && !isDnsLabel(input[key] as string)) push(key, key, `expected a DNS label, ${received(input[key])}`);
    }
    if (Array.isArray(input.targets) && input.targets.length === 0) push('targets', 'required', 'expected at least one IP-echo URL (there is no default: choose whom you ask)');
    asArray(input.targets).forEach((t, i) => {
      if (typeof t !== 'string') return;
      // The blackbox exporter parses with Go's net/url, which finds no host in `http:host` or `http:///host` (the
      // WHATWG parser reads both as http://host/): so the host must follow `//` as written.
      if (!/^https?:\/\/[^/\\?#]/i.test(t) || !URL.canParse(t)) push(`targets[${i}]`, 'url', `expected an http:// or https:// URL, ${received(t)}`);
    });
    if (Array.isArray(input.wanIps) && input.wanIps.length === 0) push('wanIps', 'required', 'expected your WAN addresses: the probe fails when it sees one');
    const vpn = asArray(input.vpnCidrs).map((c) => parseCidr(c));
    asArray(input.wanIps).forEach((w, i) => {
      if (typeof w !== 'string') return;
      const ip = parseIp(w);
      if (!ip) {
        push(`wanIps[${i}]`, 'ip', `expected an address, not a CIDR or a name, ${received(w)}`);
        return;
      }
      const inside = vpn.findIndex((c) => c !== undefined && cidrContainsIp(c, ip));
      if (inside >= 0) push(`wanIps[${i}]`, 'wan-in-vpn', `${w} is inside vpnCidrs[${inside}]: a WAN address cannot also be a VPN egress address`);
    });
    const via = input.via;
    // pod-gateway's client_init.sh deletes routed pods' IPv6 default route (see checkVpnGateway's ipv6 warning): an IPv6
    // probe through the gateway could never succeed, and proves nothing.
    if (isRecord(via) && isRecord(via.vpnGateway) && input.ipv6 === true) push('ipv6', 'ipv6-through-gateway', 'expected ipv6 off with vpnGateway: routed pods have no IPv6 egress (pod-gateway removes their IPv6 default route), so an IPv6 probe would fail forever; probe IPv6 from an EgressSteering class instead');
    // Without a must-match pattern the IPv6 probe fails only on the wanIps it is given: a native IPv6 address (often a
    // changing privacy address) passes, and the leak it exists to catch goes unseen.
    if (isRecord(via) && isRecord(via.egressSteering) && input.ipv6 === true && !vpn.some((c) => c?.family === 6)) {
      push('vpnCidrs', 'ipv6-range-required', 'expected an IPv6 range in vpnCidrs with ipv6 (the tunnel\'s IPv6 egress range, such as 2a03:1b20::/32): without one the IPv6 probe cannot fail on a native IPv6 address; add the range, or set ipv6 false');
    }
    if (isRecord(via) && isRecord(via.vpnGateway)) {
      const g = parseVpnGateway(via.vpnGateway);
      for (const p of g.problems) problems.push({ ...p, path: `via.vpnGateway.${p.path}` });
      gateway = g.spec;
    }
    if (isRecord(via) && isRecord(via.egressSteering)) {
      const s = via.egressSteering;
      if (typeof s.egressClassLabel === 'string' && !isLabelKey(s.egressClassLabel)) push('via.egressSteering.egressClassLabel', 'label-key', `expected a label key, ${received(s.egressClassLabel)}`);
      if (typeof s.vpnClass === 'string' && !isLabelValue(s.vpnClass)) push('via.egressSteering.vpnClass', 'label-value', `expected a label value, ${received(s.vpnClass)}`);
    }
    const mon = input.monitoring;
    if (isRecord(mon) && typeof mon.namespace === 'string' && !isDnsLabel(mon.namespace)) push('monitoring.namespace', 'namespace', `expected a namespace name, ${received(mon.namespace)}`);
    const dns = input.dnsLeak;
    if (isRecord(dns)) {
      if (!Array.isArray(dns.leakedCidrs) && !Array.isArray(dns.tunnelCidrs)) push('dnsLeak', 'required', 'expected leakedCidrs (answers that mean a leak) and/or tunnelCidrs (answers that mean the tunnel): without either the probe cannot tell');
      for (const key of ['leakedCidrs', 'tunnelCidrs'] as const) {
        if (Array.isArray(dns[key]) && (dns[key] as unknown[]).length === 0) push(`dnsLeak.${key}`, 'required', 'expected at least one range (or leave it out)');
        asArray(dns[key]).forEach((c, i) => {
          if (parseCidr(c)?.family === 6) push(`dnsLeak.${key}[${i}]`, 'ipv6-range', `expected an IPv4 range (the probe asks for an A record), ${received(c)}`);
        });
      }
      if (dns.resolver !== undefined && !parseIp(dns.resolver)) push('dnsLeak.resolver', 'ip', `expected the resolver's address, ${received(dns.resolver)}`);
      if (dns.resolver === undefined && isRecord(via) && via.egressSteering !== undefined) push('dnsLeak.resolver', 'required', 'required with egressSteering: the cluster DNS address vpn-class pods ask (kube-dns\'s ClusterIP)');
    }
  }
  const ok = problems.length === 0 && parsed.ok;
  return { problems: sortProblems(problems), warnings: [], value: ok ? parsed.value : undefined, ...(ok && gateway ? { gateway } : {}) };
}
