import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import { IgnitionConfig } from '../host/ignition';
import type { KillSwitchProps } from '../model/kill-switch';
import { killSwitchSpec } from '../model/kill-switch-spec';
import { Plan } from '../types';
import { planAt, TunnelwrightConstruct } from './base';
import * as killSwitchRender from '../render/kill-switch';

/**
 * Fails closed: the selected pods reach only `allowCidrs`, cluster DNS and their gateway (a NetworkPolicy or
 * CiliumNetworkPolicy); with `host`, an nftables table on the node drops tunnel- and pod-sourced traffic leaving the WAN.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import { App, KillSwitch } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * new KillSwitch(new Chart(app, 'media'), 'scraper', {
 *   namespace: 'media',
 *   selector: { 'app.kubernetes.io/name': 'scraper' },
 *   allowCidrs: ['10.42.0.0/16', '10.43.0.0/16', '192.168.1.0/24'], // never a default route
 *   host: { node: 'gw-1', wanInterface: 'eth0', tunnelInterface: 'tun0', tunnelCidrs: ['10.2.0.2/32'], podCidrs: ['10.42.0.0/16'] },
 * });
 * app.synth(); // the NetworkPolicy, and dist/hosts/gw-1/{user-data,ignition.json} with the node's nftables table
 * ```
 */
export class KillSwitch extends TunnelwrightConstruct {
  /** The host part's `#cloud-config` (when `host` is set). */
  public readonly cloudConfig?: string;
  /** The host part's Ignition config (when `host` is set). */
  public readonly ignition?: IgnitionConfig;
  /** The core plan. */
  public readonly plan: Plan;

  public constructor(scope: Construct, id: string, props: KillSwitchProps) {
    // Parsed once: props → spec → plan, and the VXLAN endpoint and fence from the same spec.
    const { spec, plan } = planAt(scope, id, 'KillSwitch', () => {
      const parsed = killSwitchSpec(props);
      return { spec: parsed, plan: killSwitchRender.renderKillSwitch(parsed) };
    });
    super(scope, id, plan, [...objectClaims(plan.objects, spec.cluster)]);
    this.plan = plan;
    const vxlan = killSwitchRender.killSwitchVxlan(spec, this.node.path);
    if (vxlan) this._vxlan = { killSwitch: vxlan };
    this._fences.push(killSwitchRender.killSwitchFence(spec, this.node.path));
    if (plan.hosts.length > 0) {
      const a = this.artefactsOf(plan.hosts[0], '3.4.0');
      this.cloudConfig = a.cloudConfig;
      this.ignition = a.ignition;
    }
  }
}
