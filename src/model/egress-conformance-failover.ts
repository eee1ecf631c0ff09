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
   * Refused below the agents' own switch, (failed checks + 1) × the check interval: the stopped holder's agent gives
   * the role up after its failed checks, and a standby takes it at its own next check (without waiting for the Lease
   * to expire); a steering `(failover.unhealthyChecks + 1) × failover.checkIntervalSeconds`, a gateway
   * `(standby.releaseAfter + 1) × 2 s`. Warned below a realistic switch, that floor plus what follows the agents: a
   * steering + 1 s (Cilium's `egress-gateway-reconciliation-trigger-interval`, 1 s by default), a gateway + 30 s
   * (pod-gateway's clients: a 10 s heartbeat, then DHCP again; 20-23 s in the project's lab); then + one of R5's
   * tries that began in the gap (`requestTimeoutSeconds` × the number of `targets`) + 1 s (R5's pause between tries).
   * Data point: 5.4-5.7 s measured in the project's lab with 3 checks of 1 s (floor 4 s; realistic with 2 targets of
   * 3 s: 12 s).
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
  /** The agents' own switch: (failed checks + 1) × interval (the holder's agent gives the role up itself, a standby takes it at its next check). */
  readonly floor: number;
  /** What follows the agents before traffic moves (Cilium's reconcile for a steering; pod-gateway's clients for a gateway), in seconds. */
  readonly beyond: number;
  /** `beyond` in the user's words (for a warning). */
  readonly beyondWhy: string;
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
  const release_ = num(sb.releaseAfter, 3);
  const release = release_ * GATEWAY_PERIOD_SECONDS;
  const floor = release + GATEWAY_PERIOD_SECONDS;
  return {
    floor, beyond: 30, beyondWhy: '30 s for pod-gateway\'s clients (a 10 s heartbeat, then DHCP again)',
    defaultSeconds: lease + release + 180 + 30, settleSeconds: release + 3,
    floorWhy: `(standby.releaseAfter ${release_} + 1) × the agent's ${GATEWAY_PERIOD_SECONDS} s check: the holder gives the role up after its failed checks, a standby takes it at its next check`,
  };
}

/** An EgressSteering's failover timing, or undefined without `failover`. */
export function steeringFailoverTiming(steering: Record<string, unknown>): FailoverTiming | undefined {
  const fo = steering.failover;
  if (!isRecord(fo)) return undefined;
  const lease = num(fo.leaseDurationSeconds, FAILOVER_DEFAULTS.leaseDurationSeconds);
  const interval = num(fo.checkIntervalSeconds, FAILOVER_DEFAULTS.checkIntervalSeconds);
  const bad = num(fo.unhealthyChecks, FAILOVER_DEFAULTS.unhealthyChecks);
  const good = num(fo.healthyChecks, FAILOVER_DEFAULTS.healthyChecks);
  const floor = (bad + 1) * interval;
  return {
    floor, beyond: 1, beyondWhy: '1 s for Cilium\'s egress-gateway-reconciliation-trigger-interval',
    defaultSeconds: lease + bad * interval + good * interval + 30, settleSeconds: Math.max(good, bad) * interval + 3,
    floorWhy: `(failover.unhealthyChecks ${bad} + 1) × failover.checkIntervalSeconds ${interval}: the holder gives the role up after its failed checks, a standby takes it at its next check`,
  };
}

/**
 * The failover step's refusals: a step asked for where there is no standby, and a bound below the agents' own
 * (global `failoverSeconds` checked against every source that runs the step without a bound of its own); and its
 * warnings: a bound at or above that floor but below a realistic switch (`ConformanceFailoverOptions.failoverSeconds`).
 */
export function checkConformanceFailover(input: Record<string, unknown>): { problems: Problem[]; warnings: Problem[] } {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const timeout = typeof input.requestTimeoutSeconds === 'number' ? input.requestTimeoutSeconds : 5;
  const targets = Math.max(1, asArray(input.targets).length);
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
          message: `expected at least ${t.floor} s for ${path} (${t.floorWhy}: a switch faster than that needs the checks' phases to line up), ${received(bound)}; give ${t.floor} or more, or shorten the agents' timing`,
        });
        return;
      }
      const tries = timeout * targets + 1;
      const realistic = t.floor + t.beyond + tries;
      if (bound !== undefined && bound < realistic) {
        warnings.push({
          path: own !== undefined ? `${path}.failoverSeconds` : 'failoverSeconds',
          code: 'failover-seconds-tight',
          message: `${bound} s for ${path} is below a realistic switch of ${realistic} s: the agents' ${t.floor} s, ${t.beyondWhy}, and ${tries} s for one of R5's tries begun in the gap (requestTimeoutSeconds ${timeout} × ${targets} target(s), and its 1 s pause): R5 may fail a sound failover; give ${realistic} or more`,
        });
      }
    });
  };
  each(input.vpnGateways, 'vpnGateways', 'gateway', gatewayFailoverTiming, 'gateway', 'standby');
  each(input.egressSteerings, 'egressSteerings', 'steering', steeringFailoverTiming, 'steering', 'failover (standbys)');
  return { problems, warnings };
}

/** The bound a source's step is held to, or undefined when it runs no failover step. @internal */
export function failoverSecondsOf(source: ConformanceFailoverOptions, timing: FailoverTiming | undefined, global: number | undefined): number | undefined {
  if (timing === undefined || source.failover === false) return undefined;
  return source.failoverSeconds ?? global ?? timing.defaultSeconds;
}
