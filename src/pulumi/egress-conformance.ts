import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { EgressConformanceProps } from '../model/egress-conformance';
import { emitPlan, planAt, reserve } from './base';
import { conformanceRender } from '../lazy';

/** Arguments of the EgressConformance component (plain values: the props your gateways and steerings were built from). */
export type EgressConformanceArgs = EgressConformanceProps;

/**
 * A one-shot, destructive conformance check of the egress design: its probes as children, and the script (also in a
 * ConfigMap) that proves vpn-class egress, no leak while each tunnel is stopped, and recovery from a new interface.
 */
export class EgressConformance extends pulumi.ComponentResource {
  /** The Kubernetes resources registered as children, in plan order (for `dependsOn`). */
  public readonly kubernetesResources: pulumi.CustomResource[];
  /** The check: run it with `sh egress-conformance.sh --destructive`. */
  public readonly egressConformanceScript: string;
  /** The one command that fetches the script from its ConfigMap and runs it. */
  public readonly command: string;
  public constructor(name: string, args: EgressConformanceArgs, opts?: pulumi.ComponentResourceOptions) {
    const plan = planAt(name, 'EgressConformance', () => conformanceRender().planEgressConformance(args));
    reserve(name, plan, objectClaims(plan.objects, args.cluster));
    super('tunnelwright:index:EgressConformance', name, {}, opts);
    this.kubernetesResources = emitPlan(this, name, plan, opts);
    const values = plan.values.egressConformance as { script: string; command: string };
    this.egressConformanceScript = values.script;
    this.command = values.command;
    this.registerOutputs({ command: this.command });
  }
}
