import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import type { ConformanceGateway, ConformanceSteering, EgressConformanceProps } from '../model/egress-conformance';
import { egressConformanceSpec } from '../model/egress-conformance-spec';
import type { EgressSteeringProps } from '../model/egress-steering';
import type { VpnGatewayProps } from '../model/vpn-gateway';
import { Plan } from '../types';
import { planAt, TunnelwrightConstruct } from './base';
import { EgressSteering } from './egress-steering';
import { VpnGateway } from './vpn-gateway';
import * as conformanceRender from '../render/egress-conformance';

/** A gateway to prove: its props, or the VpnGateway construct itself. */
export interface EgressConformanceGateway extends Omit<ConformanceGateway, 'gateway'> {
  readonly gateway: VpnGatewayProps | VpnGateway;
}

/** A steering to prove: its props, or the EgressSteering construct itself. */
export interface EgressConformanceSteering extends Omit<ConformanceSteering, 'steering'> {
  readonly steering: EgressSteeringProps | EgressSteering;
}

/** EgressConformance props, with constructs accepted where props are. */
export interface EgressConformanceConstructProps extends Omit<EgressConformanceProps, 'vpnGateways' | 'egressSteerings'> {
  readonly vpnGateways?: EgressConformanceGateway[];
  readonly egressSteerings?: EgressConformanceSteering[];
}

/**
 * A one-shot, destructive conformance check of the egress design: the probes it needs and the script
 * (`egressConformanceScript`, also in a ConfigMap) that proves vpn-class egress, no leak while each tunnel is
 * stopped, and recovery from a new interface, and always restores the tunnel.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import * as kplus from 'cdk8s-plus-28';
 * import { App, EgressConformance, VpnGateway } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * const chart = new Chart(app, 'media');
 * new kplus.Namespace(chart, 'namespace', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
 * const gateway = new VpnGateway(chart, 'vpn', {
 *   clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], nodeCidrs: ['192.168.1.0/24'],
 *   vpnProvider: 'nordvpn', wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, serverCountries: ['Switzerland'],
 * });
 * new EgressConformance(chart, 'conformance', {
 *   namespaces: ['media', 'vpn-gateway'],
 *   destructive: true,                             // it stops the tunnel to count what leaks
 *   targets: ['https://ifconfig.example.net/ip'],
 *   wanIps: ['203.0.113.7'],                      // your WAN address: it must never show
 *   vpnCidrs: ['185.236.200.0/22'],               // the provider's ranges: it must show one of these
 *   vpnGateways: [{ gateway, probeNamespace: 'media' }],
 * });
 * app.synth(); // then run the script it writes (egressConformanceScript, also in a ConfigMap) once
 * ```
 */
export class EgressConformance extends TunnelwrightConstruct {
  /** The core plan. */
  public readonly plan: Plan;
  /** The check: run it with `sh egress-conformance.sh --destructive`. */
  public readonly egressConformanceScript: string;
  /** The one command that fetches the script from its ConfigMap and runs it. */
  public readonly command: string;

  public constructor(scope: Construct, id: string, props: EgressConformanceConstructProps) {
    const { vpnGateways, egressSteerings, ...rest } = props;
    const core: EgressConformanceProps = {
      ...rest,
      ...(vpnGateways ? { vpnGateways: vpnGateways.map((g) => ({ ...g, gateway: g.gateway instanceof VpnGateway ? g.gateway.props : g.gateway })) } : {}),
      ...(egressSteerings ? { egressSteerings: egressSteerings.map((s) => ({ ...s, steering: s.steering instanceof EgressSteering ? s.steering.props : s.steering })) } : {}),
    };
    // Parsed once: props → spec → plan.
    const { spec, plan } = planAt(scope, id, 'EgressConformance', () => {
      const parsed = egressConformanceSpec(core);
      return { spec: parsed, plan: conformanceRender.renderEgressConformance(parsed) };
    });
    super(scope, id, plan, objectClaims(plan.objects, spec.cluster));
    this.plan = plan;
    const values = plan.values.egressConformance as { script: string; command: string };
    this.egressConformanceScript = values.script;
    this.command = values.command;
  }
}
