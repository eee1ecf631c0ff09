import { z } from 'zod';
import { Problem } from '../errors';
import { asArray, Cidr, cidrSchema, clusterSchema, durationSchema, isRecord, parseWith, received, sortProblems } from './common';
import { isDnsLabel, isLabelKey, isLabelValue } from './labels';
import { cidrContainsIp, parseCidr, parseIp } from './net';
import { checkVpnGateway, VpnGatewayProps } from './vpn-gateway';

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
  /** IP-echo URLs (http or https) that answer with the caller's public address. No default: choose whom you ask. */
  readonly targets: string[];
  /** Your WAN addresses: a vpn-class probe that sees one of them is a leak. */
  readonly wanIps: string[];
  /** The VPN's egress ranges (IPv4): a probe that sees an address outside them fails too. @default - not checked */
  readonly vpnCidrs?: Cidr[];
  /** Probe interval. @default '60s' */
  readonly interval?: string;
  /** Where the PrometheusRule goes and the labels your Prometheus `ruleSelector` needs. @default - namespace 'monitoring', no labels */
  readonly monitoring?: { readonly namespace?: string; readonly ruleLabels?: Record<string, string> };
  /** Also probe from a direct-class twin, to see both public addresses side by side. @default false */
  readonly directTwin?: boolean;
  /** Probe over IPv6 too (a second module with IPv6 only). @default false */
  readonly ipv6?: boolean;
  /** The blackbox exporter image. @default 'prom/blackbox-exporter:v0.25.0' */
  readonly image?: string;
}

export const DEFAULT_BLACKBOX_IMAGE = 'prom/blackbox-exporter:v0.25.0';

export const egressProbeSchema = z.strictObject({
  cluster: clusterSchema.optional(),
  name: z.string().optional(),
  namespace: z.string(),
  via: z.union([
    z.strictObject({ vpnGateway: z.record(z.string(), z.unknown()) }),
    z.strictObject({ egressSteering: z.strictObject({ egressClassLabel: z.string().optional(), vpnClass: z.string().optional() }) }),
  ]),
  targets: z.array(z.string()),
  wanIps: z.array(z.string()),
  vpnCidrs: z.array(cidrSchema).optional(),
  interval: durationSchema.optional(),
  monitoring: z.strictObject({ namespace: z.string().optional(), ruleLabels: z.record(z.string(), z.string()).optional() }).optional(),
  directTwin: z.boolean().optional(),
  ipv6: z.boolean().optional(),
  image: z.string().optional(),
});

/** Validates EgressProbe props: all problems at once. */
export function checkEgressProbe(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: EgressProbeProps } {
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
      let ok = false;
      try {
        const u = new URL(t);
        ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
      } catch {
        ok = false;
      }
      if (!ok) push(`targets[${i}]`, 'url', `expected an http:// or https:// URL, ${received(t)}`);
    });
    if (Array.isArray(input.wanIps) && input.wanIps.length === 0) push('wanIps', 'required', 'expected your WAN addresses: the probe fails when it sees one');
    const vpn = asArray(input.vpnCidrs).map((c) => (typeof c === 'string' ? parseCidr(c) : undefined));
    vpn.forEach((c, i) => {
      if (c && c.family === 6) push(`vpnCidrs[${i}]`, 'ipv6-range', `expected an IPv4 range (IPv6 egress is checked against wanIps only), ${received((input.vpnCidrs as string[])[i])}`);
    });
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
    if (isRecord(via) && isRecord(via.vpnGateway)) {
      for (const p of checkVpnGateway(via.vpnGateway).problems) problems.push({ ...p, path: `via.vpnGateway.${p.path}` });
    }
    if (isRecord(via) && isRecord(via.egressSteering)) {
      const s = via.egressSteering;
      if (typeof s.egressClassLabel === 'string' && !isLabelKey(s.egressClassLabel)) push('via.egressSteering.egressClassLabel', 'label-key', `expected a label key, ${received(s.egressClassLabel)}`);
      if (typeof s.vpnClass === 'string' && !isLabelValue(s.vpnClass)) push('via.egressSteering.vpnClass', 'label-value', `expected a label value, ${received(s.vpnClass)}`);
    }
    const mon = input.monitoring;
    if (isRecord(mon) && typeof mon.namespace === 'string' && !isDnsLabel(mon.namespace)) push('monitoring.namespace', 'namespace', `expected a namespace name, ${received(mon.namespace)}`);
  }
  return { problems: sortProblems(problems), warnings: [], value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}
