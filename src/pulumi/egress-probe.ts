import * as pulumi from '@pulumi/pulumi';
import { EgressProbeProps } from '../model/egress-probe';
import { planEgressProbe } from '../render/egress-probe';
import { emitPlan, reserve } from './base';

/** Arguments of the EgressProbe component (plain values). */
export type EgressProbeArgs = EgressProbeProps;

/** A blackbox-exporter probe as a vpn-class workload, with its Probe objects and alerts, as children. */
export class EgressProbe extends pulumi.ComponentResource {
  public constructor(name: string, args: EgressProbeArgs, opts?: pulumi.ComponentResourceOptions) {
    const plan = planEgressProbe(args);
    reserve(name, plan, []);
    super('tunnelwright:index:EgressProbe', name, {}, opts);
    emitPlan(this, name, plan, opts);
    this.registerOutputs({});
  }
}
