import * as z from '../zod';
import { Problem } from '../errors';
import { asArray, Cidr, cidrSchema, clusterSchema, intInRange, isRecord, parseWith, received, sortProblems } from './common';
import { EgressSteeringProps } from './egress-steering';
import { EgressSteeringSpec, parseEgressSteering } from './egress-steering-spec';
import { isDnsLabel } from './labels';
import { checkConformanceFailover, ConformanceFailoverOptions, failoverOptionFields } from './egress-conformance-failover';
import { cidrContainsIp, parseCidr, parseIp } from './net';
import { parseVpnGateway, VpnGatewayProps, VpnGatewaySpec } from './vpn-gateway';

/** A VpnGateway the check proves: a routed probe in `probeNamespace`, the tunnel stopped through gluetun's control server. */
export interface ConformanceGateway extends ConformanceFailoverOptions {
  /** The props the gateway was built from (the same object you gave VpnGateway). */
  readonly gateway: VpnGatewayProps;
  /** Where the routed vpn-class probe runs (the namespace of the workloads you route): one of `namespaces`. */
  readonly probeNamespace: string;
}

/** An EgressSteering the check proves: a vpn-class probe in `probeNamespace`, the host tunnel unit stopped on the gateway node. */
export interface ConformanceSteering extends ConformanceFailoverOptions {
  /** The props the steering was built from (the same object you gave EgressSteering). */
  readonly steering: EgressSteeringProps;
  /** Where the vpn-class probe runs: one of `namespaces`, and one of the steering's `namespaces` when it limits them. */
  readonly probeNamespace: string;
  /**
   * The systemd unit of the tunnel on the gateway node.
   * @default - the steering's own tunnel unit: `tunnelwright-openvpn.service` or `wg-quick@<interface>.service`; required without a `tunnel`
   */
  readonly tunnelUnit?: string;
  /** Where the privileged node agent (hostPID, hostNetwork, on the gateway node) runs: one of `namespaces`, whose Pod Security level is privileged. @default - `probeNamespace` */
  readonly agentNamespace?: string;
}

export interface EgressConformanceProps {
  /** The cluster the check belongs to. @default 'default' */
  readonly cluster?: string;
  /** Name of the check's objects (probe Deployments, the script's ConfigMap). @default 'egress-conformance' */
  readonly name?: string;
  /**
   * Every namespace the check may create probes in or act on (a gateway's own namespace, where it stops gluetun,
   * included). The check is refused against any other.
   */
  readonly namespaces: string[];
  /**
   * Must be `true`: the check stops each tunnel (vpn-class egress pauses for up to `recoverySeconds`). No default.
   */
  readonly destructive: boolean;
  /** IP-echo URLs (`http://…` or `https://…`) answering with the caller's public address; the first that answers counts. */
  readonly targets: string[];
  /** Your WAN addresses: direct-class egress must leave from one of them, vpn-class never. */
  readonly wanIps: string[];
  /** The VPN's egress ranges (IPv4): vpn-class egress must leave from inside them. */
  readonly vpnCidrs: Cidr[];
  /** How long the tunnel may take to carry vpn-class egress again after it is started. @default 180 */
  readonly recoverySeconds?: number;
  /** How long one echo request may take. @default 5 */
  readonly requestTimeoutSeconds?: number;
  /**
   * The failover step's bound (R5) for every gateway with `standby` and steering with `failover` that gives none of its own.
   * @default - each one's own default (see `ConformanceFailoverOptions.failoverSeconds`)
   */
  readonly failoverSeconds?: number;
  /** The VpnGateways to prove. @default [] */
  readonly vpnGateways?: ConformanceGateway[];
  /** The EgressSteerings to prove. @default [] */
  readonly egressSteerings?: ConformanceSteering[];
  /** The probe image: it needs `curl` and `sleep`. @default 'curlimages/curl:8.11.1' */
  readonly image?: string;
  /** The node agent's image: it needs `nsenter`, `cat` and `sleep`. @default 'busybox:1.37.0' */
  readonly agentImage?: string;
}

export const DEFAULT_CONFORMANCE_IMAGE = 'curlimages/curl:8.11.1';
export const DEFAULT_AGENT_IMAGE = 'busybox:1.37.0';
export const DEFAULT_RECOVERY_SECONDS = 180;
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 5;

/**
 * The class the direct-class control probe and the node agent carry: 'direct', or the first class other than the vpn
 * class that the steering's `enforceLabels.classes` admits (its Kyverno ClusterPolicy refuses any other Pod in the
 * enforced namespaces). `undefined` when those classes leave none.
 * @internal
 */
export function directClassOf(steering: EgressSteeringProps): string | undefined {
  const classes = steering.enforceLabels?.classes;
  if (!classes) return 'direct';
  const vpn = steering.vpnClass ?? 'vpn';
  return classes.find((c) => c !== vpn);
}

const UNIT = /^[a-zA-Z0-9:_.\\@-]+\.service$/;

/** @internal */
export const egressConformanceSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  name: z.optional(z.string()),
  namespaces: z.array(z.string()),
  destructive: z.boolean(),
  targets: z.array(z.string()),
  wanIps: z.array(z.string()),
  vpnCidrs: z.array(cidrSchema),
  recoverySeconds: z.optional(intInRange(5, 3600, 'a number of seconds')),
  requestTimeoutSeconds: z.optional(intInRange(1, 60, 'a number of seconds')),
  failoverSeconds: failoverOptionFields.failoverSeconds,
  vpnGateways: z.optional(z.array(z.strictObject({ gateway: z.record(z.string(), z.unknown()), probeNamespace: z.string(), ...failoverOptionFields }))),
  egressSteerings: z.optional(z.array(z.strictObject({
    steering: z.record(z.string(), z.unknown()),
    probeNamespace: z.string(),
    tunnelUnit: z.optional(z.string().check(z.regex(UNIT, { message: 'expected a systemd service name such as wg-quick@tun0.service' }))),
    agentNamespace: z.optional(z.string()),
    ...failoverOptionFields,
  }))),
  image: z.optional(z.string()),
  agentImage: z.optional(z.string()),
});

/** Validates EgressConformance props: all problems at once, with the gateways' and steerings' own. */
export function checkEgressConformance(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: EgressConformanceProps } {
  const { problems, warnings, value } = inspectEgressConformance(input);
  return { problems, warnings, ...(value ? { value } : {}) };
}

/**
 * `checkEgressConformance`, with the specs of the gateways and steerings it parsed on the way, by index (for
 * `parseEgressConformance`). @internal
 */
export function inspectEgressConformance(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: EgressConformanceProps; gateways: (VpnGatewaySpec | undefined)[]; steerings: (EgressSteeringSpec | undefined)[] } {
  const gatewaySpecs: (VpnGatewaySpec | undefined)[] = [];
  const steeringSpecs: (EgressSteeringSpec | undefined)[] = [];
  const parsed = parseWith<EgressConformanceProps>(egressConformanceSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  const warnings: Problem[] = [];
  const push = (path: string, code: string, message: string) => problems.push({ path, code, message });
  if (isRecord(input)) {
    if (input.destructive === false) push('destructive', 'destructive', 'expected true: the check stops each tunnel and vpn-class egress pauses until it recovers; set destructive: true to say you accept that');
    if (typeof input.name === 'string' && !isDnsLabel(input.name)) push('name', 'name', `expected a DNS label, ${received(input.name)}`);
    const named = new Set<string>();
    asArray(input.namespaces).forEach((ns, i) => {
      if (typeof ns !== 'string') return;
      if (!isDnsLabel(ns)) push(`namespaces[${i}]`, 'namespace', `expected a namespace name, ${received(ns)}`);
      named.add(ns);
    });
    if (Array.isArray(input.namespaces) && input.namespaces.length === 0) push('namespaces', 'required', 'expected the namespaces the check may act on: it is refused against any other');
    const mustBeNamed = (path: string, ns: unknown, what: string) => {
      if (typeof ns === 'string' && Array.isArray(input.namespaces) && !named.has(ns)) push(path, 'unnamed-namespace', `${what} "${ns}" is not one of namespaces: the check acts only in namespaces you named (add it there, or choose one of them)`);
    };
    if (Array.isArray(input.targets) && input.targets.length === 0) push('targets', 'required', 'expected at least one IP-echo URL (there is no default: choose whom you ask)');
    asArray(input.targets).forEach((t, i) => {
      if (typeof t === 'string' && (!/^https?:\/\/[^/\\?#]/i.test(t) || !URL.canParse(t))) push(`targets[${i}]`, 'url', `expected an http:// or https:// URL, ${received(t)}`);
    });
    if (Array.isArray(input.wanIps) && input.wanIps.length === 0) push('wanIps', 'required', 'expected your WAN addresses: direct-class egress must leave from one');
    if (Array.isArray(input.vpnCidrs) && input.vpnCidrs.length === 0) push('vpnCidrs', 'required', 'expected the VPN\'s egress ranges: vpn-class egress must leave from inside one');
    const vpn = asArray(input.vpnCidrs).map((c) => parseCidr(c));
    vpn.forEach((c, i) => {
      if (c && c.family === 6) push(`vpnCidrs[${i}]`, 'ipv6-range', `expected an IPv4 range (the check asks the echo over IPv4), ${received((input.vpnCidrs as string[])[i])}`);
    });
    asArray(input.wanIps).forEach((w, i) => {
      if (typeof w !== 'string') return;
      const ip = parseIp(w);
      if (!ip || ip.family !== 4) {
        push(`wanIps[${i}]`, 'ip', `expected an IPv4 address, not a CIDR or a name, ${received(w)}`);
        return;
      }
      const inside = vpn.findIndex((c) => c !== undefined && cidrContainsIp(c, ip));
      if (inside >= 0) push(`wanIps[${i}]`, 'wan-in-vpn', `${w} is inside vpnCidrs[${inside}]: the check could not tell a leak from the tunnel`);
    });
    const gateways = asArray(input.vpnGateways);
    const steerings = asArray(input.egressSteerings);
    if (gateways.length === 0 && steerings.length === 0) push('vpnGateways', 'nothing-to-check', 'expected at least one of vpnGateways or egressSteerings: a check of nothing proves nothing');
    gateways.forEach((g, i) => {
      if (!isRecord(g)) return;
      mustBeNamed(`vpnGateways[${i}].probeNamespace`, g.probeNamespace, 'the probe namespace');
      if (isRecord(g.gateway)) {
        const gp = parseVpnGateway(g.gateway);
        gatewaySpecs[i] = gp.spec;
        for (const p of gp.problems) problems.push({ ...p, path: `vpnGateways[${i}].gateway.${p.path}` });
        mustBeNamed(`vpnGateways[${i}].gateway.namespace`, g.gateway.namespace ?? 'vpn-gateway', 'the gateway\'s namespace (where the check stops gluetun\'s VPN)');
        // With an app, gluetun's control server listens on the VXLAN address only, under the one role in its auth file
        // (GET /v1/portforward); a configured role list drops gluetun's built-in public role (gosettings.DefaultSlice,
        // internal/server/middlewares/auth/settings.go:66-67 at v3.41.1), so PUT /v1/vpn/status at 127.0.0.1:8000 can
        // neither connect nor be authorized.
        const pf = g.gateway.portForwarding;
        if (isRecord(pf) && pf.app !== undefined) push(`vpnGateways[${i}].gateway.portForwarding.app`, 'control-server-not-loopback', `the gateway forwards its port to an app ("${String(pf.app)}"): its gluetun control server is bound to the VXLAN address with a role granting only the port sync's routes, so the check could not stop or start its VPN (PUT /v1/vpn/status on 127.0.0.1:8000); prove a gateway without portForwarding.app, or leave this one out of vpnGateways`);
      }
    });
    steerings.forEach((s, i) => {
      if (!isRecord(s)) return;
      mustBeNamed(`egressSteerings[${i}].probeNamespace`, s.probeNamespace, 'the probe namespace');
      if (s.agentNamespace !== undefined) mustBeNamed(`egressSteerings[${i}].agentNamespace`, s.agentNamespace, 'the node agent\'s namespace');
      const st = s.steering;
      if (!isRecord(st)) return;
      const sp = parseEgressSteering(st);
      steeringSpecs[i] = sp.spec;
      for (const p of sp.problems) problems.push({ ...p, path: `egressSteerings[${i}].steering.${p.path}` });
      if (Array.isArray(st.namespaces) && typeof s.probeNamespace === 'string' && !st.namespaces.includes(s.probeNamespace)) {
        push(`egressSteerings[${i}].probeNamespace`, 'not-steered', `"${s.probeNamespace}" is not one of the steering's namespaces (${(st.namespaces as string[]).join(', ')}): a probe there is never steered`);
      }
      const enforce = st.enforceLabels;
      if (isRecord(enforce) && Array.isArray(enforce.classes) && Array.isArray(enforce.namespaces) && directClassOf(st as unknown as EgressSteeringProps) === undefined) {
        const enforcedNs = enforce.namespaces as unknown[];
        const enforced = [s.probeNamespace, s.agentNamespace ?? s.probeNamespace].filter((n, k, all) => typeof n === 'string' && enforcedNs.includes(n) && all.indexOf(n) === k);
        if (enforced.length > 0) push(`egressSteerings[${i}].steering.enforceLabels.classes`, 'no-direct-class', `the steering admits only the vpn class "${typeof st.vpnClass === 'string' ? st.vpnClass : 'vpn'}" in ${enforced.join(', ')}: the direct-class control probe (and the node agent) could not be admitted there; add a direct class to enforceLabels.classes, or choose a probeNamespace the steering does not enforce`);
      }
      if (st.tunnel === undefined && s.tunnelUnit === undefined) push(`egressSteerings[${i}].tunnelUnit`, 'required', 'required when the steering renders no tunnel: the systemd unit of your own tunnel on the gateway node');
    });
    const failover = checkConformanceFailover(input);
    problems.push(...failover.problems);
    warnings.push(...failover.warnings);
  }
  return { problems: sortProblems(problems), warnings, value: problems.length === 0 && parsed.ok ? parsed.value : undefined, gateways: gatewaySpecs, steerings: steeringSpecs };
}
