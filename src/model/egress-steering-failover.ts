import * as z from '../zod';
import { Problem } from '../errors';
import { intInRange, isRecord, received, SecretSource } from './common';
import { DNS_SUBDOMAIN, isDnsLabel } from './labels';

/** A standby gateway node: it takes the role when the active node's tunnel fails (see `EgressSteeringProps.failover`). */
export interface EgressStandby<T = unknown> {
  /** The node's name (its `kubernetes.io/hostname`). */
  readonly node: string;
  /**
   * Its own host tunnel, of the same kind as `tunnel`, with its own credential (a WireGuard key, an OpenVPN
   * account): two hot gateways on one credential steal each other's session. Required when `tunnel` is given.
   */
  readonly tunnel?: T;
}

/**
 * Active/standby egress: an agent on each candidate node (`gatewayNode` and the standbys) holds a
 * `coordination.k8s.io/v1` Lease only while its own tunnel is healthy, and labels its Node and CiliumNode with the
 * policy's active label while it holds it; the policy selects that label instead of the hostname.
 */
export interface EgressSteeringFailover<T = unknown> {
  /** The standby gateway nodes: at least one. */
  readonly standbys: EgressStandby<T>[];
  /** Seconds without a renewal after which a standby may take the role from a holder that went silent. @default 15 */
  readonly leaseDurationSeconds?: number;
  /** Seconds between two health checks (and Lease renewals). @default 2 */
  readonly checkIntervalSeconds?: number;
  /** Healthy checks in a row before a node takes the role. @default 3 */
  readonly healthyChecks?: number;
  /** Failed checks in a row before the holder gives the role up (a shorter outage does not move it). @default 3 */
  readonly unhealthyChecks?: number;
  /**
   * WireGuard: the latest handshake must be at most this old. A live tunnel rekeys at the first packet it sends after
   * REKEY_AFTER_TIME (120 s; wireguard-linux send.c keep_key_fresh, run for keepalives too); idle, that packet is the
   * 25 s persistent keepalive, so a healthy handshake is at most ~125 s old, and 135 s tolerates two lost initiations
   * (REKEY_TIMEOUT 5 s each). A dead peer is then seen after at most 135 s + unhealthyChecks × checkIntervalSeconds.
   * @default 135
   */
  readonly handshakeMaxAgeSeconds?: number;
  /**
   * An http(s) URL fetched through the tunnel (`curl --interface`) at each check: the tunnel is healthy only when it
   * answers. @default - none: the interface's state and, with WireGuard, the handshake age
   */
  readonly probeUrl?: string;
  /** Namespace of the Lease. @default 'kube-system' */
  readonly leaseNamespace?: string;
  /**
   * Each candidate's kill switch also drops forwarded packets from `clusterCidrs` to `destinationCidrs` (but not
   * `excludedCidrs`, `clusterCidrs` or `lanCidrs`) that would leave by any interface but the tunnel and Cilium's own
   * (`cilium_*`): a steered pod's packet that reaches a new holder before that node's Cilium agent made it the
   * gateway is handed to the kernel unmasqueraded and would leave by the WAN. It also drops such packets of pods that
   * are not steered, running on a candidate, when Cilium routes pod traffic through the kernel (legacy host routing,
   * or iptables masquerading); with eBPF host routing their packets never reach the nftables forward hook. Keep the
   * candidates for gateway work (a taint), or set `false` to let pods on them reach the WAN directly.
   * @default true
   */
  readonly dropPodTrafficOffTunnel?: boolean;
}

export const FAILOVER_DEFAULTS = { leaseDurationSeconds: 15, checkIntervalSeconds: 2, healthyChecks: 3, unhealthyChecks: 3, handshakeMaxAgeSeconds: 135, leaseNamespace: 'kube-system' } as const;

/** Failover, parsed once: every default applied, each standby's tunnel parsed by the steering's model. */
export interface EgressSteeringFailoverSpec<T = unknown> {
  readonly standbys: readonly { readonly node: string; readonly tunnel?: T }[];
  readonly leaseDurationSeconds: number;
  readonly checkIntervalSeconds: number;
  readonly healthyChecks: number;
  readonly unhealthyChecks: number;
  readonly handshakeMaxAgeSeconds: number;
  /** As given; none: the interface's state (and the handshake's age) alone. */
  readonly probeUrl?: string;
  readonly leaseNamespace: string;
  readonly dropPodTrafficOffTunnel: boolean;
}

/** The failover spec of checked props: the defaults applied, each standby's tunnel through `tunnel`. */
export function failoverSpecOf<T, U>(fo: EgressSteeringFailover<T>, tunnel: (t: T) => U): EgressSteeringFailoverSpec<U> {
  return {
    standbys: fo.standbys.map((s) => ({ node: s.node, ...(s.tunnel !== undefined ? { tunnel: tunnel(s.tunnel) } : {}) })),
    leaseDurationSeconds: fo.leaseDurationSeconds ?? FAILOVER_DEFAULTS.leaseDurationSeconds,
    checkIntervalSeconds: fo.checkIntervalSeconds ?? FAILOVER_DEFAULTS.checkIntervalSeconds,
    healthyChecks: fo.healthyChecks ?? FAILOVER_DEFAULTS.healthyChecks,
    unhealthyChecks: fo.unhealthyChecks ?? FAILOVER_DEFAULTS.unhealthyChecks,
    handshakeMaxAgeSeconds: fo.handshakeMaxAgeSeconds ?? FAILOVER_DEFAULTS.handshakeMaxAgeSeconds,
    ...(fo.probeUrl !== undefined ? { probeUrl: fo.probeUrl } : {}),
    leaseNamespace: fo.leaseNamespace ?? FAILOVER_DEFAULTS.leaseNamespace,
    dropPodTrafficOffTunnel: fo.dropPodTrafficOffTunnel ?? true,
  };
}

/**
 * The agent's kubectl --request-timeout, and the most API calls one of its loops makes (read the Lease, remove the
 * others' labels from Node and CiliumNode, label its own Node and CiliumNode, renew): a holder renews at the latest
 * interval + calls × timeout after its previous renewal, which must be shorter than the lease.
 */
export const FAILOVER_REQUEST_TIMEOUT_SECONDS = 2;
export const FAILOVER_CALLS_PER_LOOP = 6;

/** The node label the policy selects with failover: `egress-active.tunnelwright.dev/<policy name>=true`. */
export function activeLabel(name: string): string {
  return `egress-active.tunnelwright.dev/${name}`;
}


/** @internal */
export function failoverSchema(tunnel: z.ZodType) {
  return z.strictObject({
    standbys: z.array(z.strictObject({ node: z.string(), tunnel: z.optional(tunnel) })),
    leaseDurationSeconds: z.optional(intInRange(1, 3600, 'seconds')),
    checkIntervalSeconds: z.optional(intInRange(1, 600, 'seconds')),
    healthyChecks: z.optional(intInRange(1, 100, 'checks')),
    unhealthyChecks: z.optional(intInRange(1, 100, 'checks')),
    handshakeMaxAgeSeconds: z.optional(intInRange(1, 3600, 'seconds')),
    probeUrl: z.optional(z.string().check(z.regex(/^https?:\/\/[^\s"'\\]+$/, { message: 'expected an http(s) URL' }))),
    leaseNamespace: z.optional(z.string()),
    dropPodTrafficOffTunnel: z.optional(z.boolean()),
  });
}

function sourceKey(s: unknown): string | undefined {
  if (!isRecord(s)) return undefined;
  const v = (s as SecretSource & Record<string, unknown>);
  return typeof v.file === 'string' ? `file ${v.file}` : typeof v.url === 'string' ? `url ${v.url}` : undefined;
}

/** The credential a tunnel logs in with: the WireGuard key, else the OpenVPN credentials (or its config, which then holds them). */
function credentialOf(t: unknown): string | undefined {
  if (!isRecord(t)) return undefined;
  if (t.type === 'wireguard') return sourceKey(t.privateKeyFrom);
  if (t.type === 'openvpn') return sourceKey(t.credentialsFrom) ?? sourceKey(t.configFrom);
  return undefined;
}

/** The failover checks of EgressSteering props (`input` is the whole props), pushed into `problems` and `warnings`. */
export function checkFailover(input: Record<string, unknown>, problems: Problem[], warnings: Problem[]): void {
  const fo = input.failover;
  if (!isRecord(fo)) return;
  const push = (path: string, code: string, message: string) => problems.push({ path, code, message });
  const standbys = Array.isArray(fo.standbys) ? fo.standbys : [];
  if (Array.isArray(fo.standbys) && standbys.length === 0) {
    push('failover.standbys', 'one-candidate', 'expected at least one standby node: with gatewayNode alone there is nothing to fail over to (leave failover out for one gateway node)');
  }
  const seen = new Map<string, string>();
  if (typeof input.gatewayNode === 'string') seen.set(input.gatewayNode, 'gatewayNode');
  const credentials = new Map<string, string>();
  const primaryCredential = credentialOf(input.tunnel);
  if (primaryCredential) credentials.set(primaryCredential, 'tunnel');
  standbys.forEach((s, i) => {
    if (!isRecord(s)) return;
    const at = `failover.standbys[${i}]`;
    if (typeof s.node === 'string') {
      if (!DNS_SUBDOMAIN.test(s.node) || s.node.length > 63) push(`${at}.node`, 'hostname', `expected a node name (lowercase letters, digits, "-" and ".", at most 63 characters), ${received(s.node)}`);
      else if (seen.has(s.node)) push(`${at}.node`, 'duplicate-candidate', `expected a node that is not already a candidate: ${s.node} is ${seen.get(s.node)} (each candidate is a different node)`);
      else seen.set(s.node, at);
    }
    if (input.tunnel !== undefined && s.tunnel === undefined) push(`${at}.tunnel`, 'standby-tunnel', 'expected the standby\'s own tunnel (with its own credential): every candidate needs a tunnel of its own when tunnel is given');
    if (input.tunnel === undefined && s.tunnel !== undefined) push(`${at}.tunnel`, 'standby-tunnel', 'expected no tunnel here while gatewayNode has none (give tunnel too, or bring every candidate\'s tunnel up yourself)');
    if (isRecord(s.tunnel) && isRecord(input.tunnel) && s.tunnel.type !== input.tunnel.type) push(`${at}.tunnel.type`, 'standby-tunnel', `expected a ${String(input.tunnel.type)} tunnel like gatewayNode's: the policy names one interface, and the hooks are those of one kind`);
    const cred = credentialOf(s.tunnel);
    if (cred) {
      const field = isRecord(s.tunnel) && s.tunnel.type === 'wireguard' ? 'privateKeyFrom' : isRecord(s.tunnel) && s.tunnel.credentialsFrom !== undefined ? 'credentialsFrom' : 'configFrom';
      if (credentials.has(cred)) push(`${at}.tunnel.${field}`, 'shared-credential', `expected a credential of its own: ${credentials.get(cred)} uses the same source. Two hot gateways on one key or account steal each other's session (the provider follows the latest handshake): give each candidate its own key or account`);
      else credentials.set(cred, `${at}.tunnel`);
    }
  });
  if (input.egressIp !== undefined) push('egressIp', 'failover-egress-ip', 'expected no egressIp with failover: each candidate\'s tunnel has its own address, and the policy carries one; leave egressIp out so the policy names the interface');
  if (typeof fo.leaseNamespace === 'string' && !isDnsLabel(fo.leaseNamespace)) push('failover.leaseNamespace', 'namespace', `expected a namespace name, ${received(fo.leaseNamespace)}`);
  const interval = typeof fo.checkIntervalSeconds === 'number' ? fo.checkIntervalSeconds : FAILOVER_DEFAULTS.checkIntervalSeconds;
  const duration = typeof fo.leaseDurationSeconds === 'number' ? fo.leaseDurationSeconds : FAILOVER_DEFAULTS.leaseDurationSeconds;
  const slowest = interval + FAILOVER_CALLS_PER_LOOP * FAILOVER_REQUEST_TIMEOUT_SECONDS;
  if (duration < 3 * interval) push('failover.leaseDurationSeconds', 'lease-duration', `expected at least 3 check intervals (${3 * interval} s), ${received(duration)}: a holder that misses one renewal would lose the role to a standby`);
  else if (duration <= slowest) push('failover.leaseDurationSeconds', 'lease-duration', `expected more than ${slowest} s (checkIntervalSeconds ${interval} + ${FAILOVER_CALLS_PER_LOOP} API calls per check × their ${FAILOVER_REQUEST_TIMEOUT_SECONDS} s timeout), ${received(duration)}: a holder whose API calls are slow would lose the Lease between two renewals while its label writes are still landing. Give leaseDurationSeconds ${slowest + 1} or more, or a shorter checkIntervalSeconds`);
  const kind = isRecord(input.tunnel) ? input.tunnel.type : undefined;
  if (fo.probeUrl === undefined && kind !== 'wireguard') {
    warnings.push({ path: 'failover.probeUrl', code: 'failover-probe', message: `without probeUrl the agent sees only the interface${kind === 'openvpn' ? ', which OpenVPN keeps up for up to 60 s (ping-restart) after its server went silent' : ''}: a tunnel whose far end stopped answering keeps the role; give a URL that answers through the tunnel` });
  }
}
