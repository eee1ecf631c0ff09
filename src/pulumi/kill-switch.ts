import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { KillSwitchProps } from '../model/kill-switch';
import { killSwitchSpec } from '../model/kill-switch-spec';
import { formatProblems } from '../errors';
import { registerFence } from './registry';
import { planAt, emitPlan, nodeOutputs, reserve } from './base';
import * as killSwitchRender from '../render/kill-switch';

/** Arguments of the KillSwitch component (plain values). */
export type KillSwitchArgs = KillSwitchProps;

/**
 * Fails closed: the pod policy as a child resource; with `host`, the node's nftables table as host outputs.
 *
 * @example
 * ```ts
 * import { KillSwitch } from 'tunnelwright/pulumi';
 *
 * const killSwitch = new KillSwitch('scraper', {
 *   namespace: 'media',
 *   selector: { 'app.kubernetes.io/name': 'scraper' },
 *   allowCidrs: ['10.42.0.0/16', '10.43.0.0/16', '192.168.1.0/24'],
 *   host: { node: 'gw-1', wanInterface: 'eth0', tunnelInterface: 'tun0', tunnelCidrs: ['10.2.0.2/32'], podCidrs: ['10.42.0.0/16'] },
 * });
 * export const userData = killSwitch.cloudConfig; // the node's nftables table, for its server's user data
 * ```
 */
export class KillSwitch extends pulumi.ComponentResource {
  /** The Kubernetes resources registered as children, in plan order (for `dependsOn`). */
  public readonly kubernetesResources: pulumi.CustomResource[];
  /** The host part's `#cloud-config` (when `host` is set). */
  public readonly cloudConfig?: pulumi.Output<string>;
  /** The host part's Ignition config JSON (when `host` is set). */
  public readonly ignition?: pulumi.Output<string>;

  public constructor(name: string, args: KillSwitchArgs, opts?: pulumi.ComponentResourceOptions) {
    // Parsed once: props → spec → plan, and the VXLAN endpoint and fence from the same spec.
    const { spec, plan } = planAt(name, 'KillSwitch', () => {
      const parsed = killSwitchSpec(args);
      return { spec: parsed, plan: killSwitchRender.renderKillSwitch(parsed) };
    });
    const vxlan = killSwitchRender.killSwitchVxlan(spec, name);
    reserve(name, plan, [...objectClaims(plan.objects, spec.cluster)], undefined, vxlan ? { killSwitch: vxlan } : undefined);
    super('tunnelwright:index:KillSwitch', name, {}, opts);
    this.kubernetesResources = emitPlan(this, name, plan, opts);
    const duplicates = registerFence(killSwitchRender.killSwitchFence(spec, name));
    if (duplicates.length > 0) void pulumi.log.warn(formatProblems(duplicates), this);
    if (plan.hosts.length > 0) {
      const out = nodeOutputs(plan.hosts[0], '3.4.0');
      this.cloudConfig = out.cloudConfig;
      this.ignition = out.ignition;
    }
    this.registerOutputs({ cloudConfig: this.cloudConfig, ignition: this.ignition });
  }
}
