import * as z from '../zod';
import { Problem } from '../errors';
import { asArray, intInRange, isRecord, received } from './common';
import { FAILOVER_DEFAULTS } from './egress-steering-failover';

/**
 * The failover step (R5) of one gateway or steering that has a standby: stop the tunnel of the role's holder (the
 * Lease's `holderIdentity`, as the agents read it), and within `failoverSeconds` vpn-class egress must again come from
 * `vpnCidrs` through a standby, with no vpn-class packet counted on any candidate's WAN; then the stopped tunnel is
 * started again until healthy. The role does not come back to it (the agents never fail back from a healthy holder).
 */
export interface ConformanceFailoverOptions {
  /**
   * Run the failover step. Refused on a gateway without `standby` or a steering without `failover`.
   * @default - true when the gateway has `standby` or the steering has `failover`
   */
  readonly failover?: boolean;
  /**
   * The bound on the switch: seconds from the holder's stop until vpn-class egress comes from `vpnCidrs` again.
   * Refused below the agents' own bound: the failed checks × the check interval after which the stopped holder's
   * agent gives the role up (a standby takes it at its next check, without waiting for the Lease to expire: 5.4-5.7 s
   * in the project's lab with 3 checks of 1 s and a 14 s lease).
   * @default - `EgressConformanceProps.failoverSeconds`, else the lease duration (a holder that cannot give the role up)
   * + the agents' bound, plus what lies beyond them: for a steering, + healthy checks × interval + 30 s (Cilium re-reading the nodes' labels); for a gateway, + 180 s
   * (gluetun's health server changes only on its own check, every 60 s, a failure retried up to 120 s) + 30 s
   * (pod-gateway's clients: a 10 s heartbeat, then DHCP again; 20-23 s in the project's lab)
   */
  readonly failoverSeconds?: number;
}

/** @internal */
export const failoverOptionFields = {
  failover: z.optional(z.boolean()),
  failoverSeconds: z.optional(intInRange(1, 3600, 'a number of seconds')),
};

/** What the step needs of one source's agents, and the bound it is held to. */
export interface FailoverTiming {
  /** The agents' own lower bound: failed checks × interval (the holder's agent gives the role up itself). */
  readonly floor: number;
  /** The default bound (the floor with what lies beyond the agents). */
  readonly defaultSeconds: number;
  /** How the floor is made, in the user's words (for a refusal). */
  readonly floorWhy: string;
  /**
   * Seconds R5 waits, once every candidate's tunnel is healthy again after R4 (which it waits for first, up to
   * `recoverySeconds`), before it stops the holder: the longer of the agents' windows × the interval, plus one probe
   * (3 s); for a steering max(`healthyChecks`, `unhealthyChecks`) × `checkIntervalSeconds` + 3. A restarted candidate
   * takes the role only after `healthyChecks` good checks in a row (egress-failover-agent.sh); and the failed checks the
   * holder's agent counted while R3 stopped its tunnel carry over until a good check resets them, so the holder would
   * give the role up after fewer checks than a fresh failure needs: a switch measured shorter than it is (0.73 s in
   * the project's lab, with 3 checks of 1 s). R5 also waits this long after the restart before it reads the holder
   * for a failback.
   */
  readonly settleSeconds: number;
}

/** The gateway agent's check period (src/render/vpn-gateway/failover.ts FAILOVER_PERIOD_SECONDS). */
const GATEWAY_PERIOD_SECONDS = 2;
const num = (v: unknown, d: number) => (typeof v === 'number' ? v : d);

/** A VpnGateway's standby timing, or undefined without `standby`. */
export function gatewayFailoverTiming(gateway: Record<string, unknown>): FailoverTiming | undefined {
  const sb = gateway.standby;
  if (!isRecord(sb)) return undefined;
  const lease = num(sb.leaseSeconds, 15);
  const release = num(sb.releaseAfter, 3);
  const floor = release * GATEWAY_PERIOD_SECONDS;
  return { floor, defaultSeconds: lease + floor + 180 + 30, settleSeconds: floor + 3, floorWhy: `standby.releaseAfter ${release} × the agent's ${GATEWAY_PERIOD_SECONDS} s check, after which the holder gives the role up` };
}

/** An EgressSteering's failover timing, or undefined without `failover`. */
export function steeringFailoverTiming(steering: Record<string, unknown>): FailoverTiming | undefined {
  const fo = steering.failover;
  if (!isRecord(fo)) return undefined;
  const lease = num(fo.leaseDurationSeconds, FAILOVER_DEFAULTS.leaseDurationSeconds);
  const interval = num(fo.checkIntervalSeconds, FAILOVER_DEFAULTS.checkIntervalSeconds);
  const bad = num(fo.unhealthyChecks, FAILOVER_DEFAULTS.unhealthyChecks);
  const good = num(fo.healthyChecks, FAILOVER_DEFAULTS.healthyChecks);
  const floor = bad * interval;
  return { floor, defaultSeconds: lease + floor + good * interval + 30, settleSeconds: Math.max(good, bad) * interval + 3, floorWhy: `failover.unhealthyChecks ${bad} × failover.checkIntervalSeconds ${interval}, after which the holder gives the role up` };
}

/**
 * The failover step's refusals: a step asked for where there is no standby, and a bound below the agents' own
 * (global `failoverSeconds` checked against every source that runs the step without a bound of its own).
 */
export function checkConformanceFailover(input: Record<string, unknown>): Problem[] {
  const problems: Problem[] = [];
  const global = typeof input.failoverSeconds === 'number' ? input.failoverSeconds : undefined;
  const each = (list: unknown, at: string, inner: 'gateway' | 'steering', timing: (r: Record<string, unknown>) => FailoverTiming | undefined, what: string, remedy: string) => {
    asArray(list).forEach((s, i) => {
      if (!isRecord(s) || !isRecord(s[inner])) return;
      const t = timing(s[inner]);
      const path = `${at}[${i}]`;
      if (t === undefined) {
        if (s.failover === true) problems.push({ path: `${path}.failover`, code: 'no-standby', message: `the ${what} has no ${remedy}: there is nothing to fail over to; give it ${remedy}, or leave failover out` });
        if (s.failoverSeconds !== undefined) problems.push({ path: `${path}.failoverSeconds`, code: 'no-standby', message: `the ${what} has no ${remedy}, so no failover step runs; leave failoverSeconds out` });
        return;
      }
      if (s.failover === false) return;
      const own = typeof s.failoverSeconds === 'number' ? s.failoverSeconds : undefined;
      const bound = own ?? global;
      if (bound !== undefined && bound < t.floor) {
        problems.push({
          path: own !== undefined ? `${path}.failoverSeconds` : 'failoverSeconds',
          code: 'failover-seconds',
          message: `expected at least ${t.floor} s for ${path} (${t.floorWhy}: a standby may take the role no sooner), ${received(bound)}; give ${t.floor} or more, or shorten the agents' timing`,
        });
      }
    });
  };
  each(input.vpnGateways, 'vpnGateways', 'gateway', gatewayFailoverTiming, 'gateway', 'standby');
  each(input.egressSteerings, 'egressSteerings', 'steering', steeringFailoverTiming, 'steering', 'failover (standbys)');
  return problems;
}

/** The bound a source's step is held to, or undefined when it runs no failover step. @internal */
export function failoverSecondsOf(source: ConformanceFailoverOptions, timing: FailoverTiming | undefined, global: number | undefined): number | undefined {
  if (timing === undefined || source.failover === false) return undefined;
  return source.failoverSeconds ?? global ?? timing.defaultSeconds;
}
