import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import type { EgressProbeProps } from '../model/egress-probe';
import { Plan } from '../types';
import { planAt, TunnelwrightConstruct } from './base';
import * as egressProbeRender from '../render/egress-probe';

/**
 * A blackbox-exporter probe running as a vpn-class workload (routed through a VpnGateway, or labelled for an
 * EgressSteering) that proves, continuously, that vpn-class traffic leaves by the VPN: VPNEgressLeak fires when it
 * sees a WAN address.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import { App, EgressProbe } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * new EgressProbe(new Chart(app, 'probe'), 'probe', {
 *   namespace: 'monitoring',
 *   via: { egressSteering: {} },                 // a vpn-class pod; or { vpnGateway: <its props> }: routed
 *   targets: ['https://ifconfig.example.net/ip'], // an IP-echo service of your choice
 *   wanIps: ['203.0.113.7'],                      // your WAN address: VPNEgressLeak fires when the echo shows it
 * });
 * app.synth();
 * ```
 */
export class EgressProbe extends TunnelwrightConstruct {
  /** The core plan. */
  public readonly plan: Plan;

  public constructor(scope: Construct, id: string, props: EgressProbeProps) {
    const plan = planAt(scope, id, 'EgressProbe', () => egressProbeRender.planEgressProbe(props));
    super(scope, id, plan, [...objectClaims(plan.objects, props.cluster)]);
    this.plan = plan;
  }
}
