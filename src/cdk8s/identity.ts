import { IConstruct } from 'constructs';
import { Problem } from '../errors';
import { IgnitionVersion } from '../host/ignition';
import { Claim, Fence } from '../invariants';
import { PodSecurityNeed } from '../model/pod-security';
import type { VxlanEndpoints } from './checks';
import { HostPlan } from '../types';

/**
 * What makes a construct a tunnelwright construct, for the App's cross-construct checks (`checks.ts`) and the base
 * class (`base.ts`) alike: a module of its own, so neither imports the other for it.
 */
export const MARK = Symbol.for('tunnelwright.cdk8s.construct');
/** Set on tunnelwright's App: under it, synth() runs the cross-construct checks itself. */
export const TUNNELWRIGHT_APP = Symbol.for('tunnelwright.cdk8s.app');

/** What the App needs from every tunnelwright construct. */
export interface ITunnelwrightConstruct extends IConstruct {
  /** Warnings of this construct's props (they never stop synth). */
  readonly warnings: readonly Problem[];
  /** @internal */
  readonly _claims: readonly Claim[];
  /** @internal */
  readonly _hosts: readonly { plan: HostPlan; ignitionVersion: IgnitionVersion }[];
  /** @internal The pods this construct makes or routes, and the Pod Security level each needs. */
  readonly _podSecurity: readonly PodSecurityNeed[];
  /** @internal */
  readonly _vxlan?: VxlanEndpoints;
  /** @internal The pods its kill switches fence (a KillSwitch's selection, each route's). */
  readonly _fences?: readonly Fence[];
  /** @internal Problems only the finished app shows (read at synth, after every patch). */
  readonly _synthProblems?: () => Problem[];
}

export function isTunnelwrightConstruct(x: unknown): x is ITunnelwrightConstruct {
  return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[MARK] === true;
}

