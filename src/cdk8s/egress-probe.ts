import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import type { EgressProbeProps } from '../model/egress-probe';
import { egressProbeSpec } from '../model/egress-probe-spec';
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
    // Parsed once: props → spec → plan.
    const { spec, plan } = planAt(scope, id, 'EgressProbe', () => {
      const parsed = egressProbeSpec(props);
      return { spec: parsed, plan: egressProbeRender.renderEgressProbe(parsed) };
    });
    super(scope, id, plan, [...objectClaims(plan.objects, spec.cluster)]);
    this.plan = plan;
  }
}
