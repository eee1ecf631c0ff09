import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { EgressProbeProps } from '../model/egress-probe';
import { egressProbeSpec } from '../model/egress-probe-spec';
import { planAt, emitPlan, reserve } from './base';
import * as egressProbeRender from '../render/egress-probe';

/** Arguments of the EgressProbe component (plain values). */
export type EgressProbeArgs = EgressProbeProps;

/**
 * A blackbox-exporter probe as a vpn-class workload, with its Probe objects and alerts, as children.
 *
 * @example
 * ```ts
 * import { EgressProbe } from 'tunnelwright/pulumi';
 *
 * new EgressProbe('probe', {
 *   namespace: 'monitoring',
 *   via: { egressSteering: {} },
 *   targets: ['https://ifconfig.example.net/ip'],
 *   wanIps: ['203.0.113.7'], // VPNEgressLeak fires when the echo shows it
 * });
 * ```
 */
export class EgressProbe extends pulumi.ComponentResource {
  /** The Kubernetes resources registered as children, in plan order (for `dependsOn`). */
  public readonly kubernetesResources: pulumi.CustomResource[];
  public constructor(name: string, args: EgressProbeArgs, opts?: pulumi.ComponentResourceOptions) {
    // Parsed once: props → spec → plan.
    const { spec, plan } = planAt(name, 'EgressProbe', () => {
      const parsed = egressProbeSpec(args);
      return { spec: parsed, plan: egressProbeRender.renderEgressProbe(parsed) };
    });
    reserve(name, plan, [...objectClaims(plan.objects, spec.cluster)]);
    super('tunnelwright:index:EgressProbe', name, {}, opts);
    this.kubernetesResources = emitPlan(this, name, plan, opts);
    this.registerOutputs({});
  }
}
