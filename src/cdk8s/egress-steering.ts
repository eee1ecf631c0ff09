import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import { IgnitionConfig } from '../host/ignition';
import type { EgressSteeringProps } from '../model/egress-steering';
import { egressSteeringSpec } from '../model/egress-steering-spec';
import { Plan } from '../types';
import { NodeArtefacts, planAt, TunnelwrightConstruct } from './base';
import * as egressSteeringRender from '../render/egress-steering';

/**
 * Cilium egress gateway out of a host VPN tunnel on one node: the CiliumEgressGatewayPolicy, label enforcement,
 * alerts, the re-steer hook's RBAC, Helm values (`plan.values`), and the gateway node's host artefacts.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import { App, EgressSteering } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * const steering = new EgressSteering(new Chart(app, 'egress'), 'egress', {
 *   gatewayNode: 'gw-1',
 *   clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
 *   kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' }, // the re-steer ServiceAccount's: see the guide
 *   tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/run/keys/vpn.key' }, peer: { publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '185.236.200.1:51820' } },
 *   ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
 *   acknowledge: ['dns-wan', 'policy-delay', 'ignition-packages'], // read in the EgressSteering guide
 * });
 * export const ciliumValues = steering.plan.values.cilium; // for your Cilium Helm release
 * app.synth();
 * ```
 */
export class EgressSteering extends TunnelwrightConstruct {
  /**
   * Each gateway node's artefacts by name: `gatewayNode` and, with `failover`, every standby (each with its own
   * tunnel and failover agent). Rendered when first read.
   */
  public get nodes(): Readonly<Record<string, NodeArtefacts>> {
    return Object.fromEntries(this.plan.hosts.map((h) => [h.node, h === this.plan.hosts[0] ? this.artefacts : this.artefactsOf(h, '3.4.0')]));
  }
  /** The gateway node's `#cloud-config` (this construct's part), rendered when first read. */
  public get cloudConfig(): string {
    return this.artefacts.cloudConfig;
  }
  /** The gateway node's Ignition config (this construct's part), rendered when first read. */
  public get ignition(): IgnitionConfig {
    return this.artefacts.ignition;
  }
  /** The core plan; `plan.values.cilium` and `plan.values.kubeStateMetrics` are the Helm values it needs. */
  public readonly plan: Plan;
  /** The props it was built from (EgressConformance takes the construct for them). */
  public readonly props: EgressSteeringProps;

  public constructor(scope: Construct, id: string, props: EgressSteeringProps) {
    // Parsed once: the plan and the claims come from the same spec.
    const { spec, plan } = planAt(scope, id, 'EgressSteering', () => {
      const parsed = egressSteeringSpec(props);
      return { spec: parsed, plan: egressSteeringRender.planSteering(parsed) };
    });
    super(scope, id, plan, [...egressSteeringRender.steeringClaims(spec), ...objectClaims(plan.objects, props.cluster)]);
    this.plan = plan;
    this.props = props;
    // Not rendered here: tunnelwright's App writes the node's merged artefacts itself, so this construct's own part
    // is rendered only for a program that reads it (issue 30: it was rendered twice in every synth).
    this.artefacts = this.artefactsOf(plan.hosts[0], '3.4.0');
  }

  private readonly artefacts: NodeArtefacts;
}
