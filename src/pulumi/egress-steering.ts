import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { EgressSteeringProps } from '../model/egress-steering';
import { egressSteeringSpec } from '../model/egress-steering-spec';
import { planAt, emitPlan, nodeOutputs, NodeOutputs, reserve } from './base';
import * as egressSteeringRender from '../render/egress-steering';

/** Arguments of the EgressSteering component (plain values). */
export type EgressSteeringArgs = EgressSteeringProps;

/**
 * Cilium egress gateway out of a host VPN tunnel: Kubernetes objects as children, the gateway node's artefacts as outputs.
 *
 * @example
 * ```ts
 * import { EgressSteering } from 'tunnelwright/pulumi';
 *
 * const steering = new EgressSteering('egress', {
 *   gatewayNode: 'gw-1',
 *   clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
 *   kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' }, // the re-steer ServiceAccount's: see the guide
 *   tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/run/keys/vpn.key' }, peer: { publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '185.236.200.1:51820' } },
 *   ciliumValues: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
 *   acknowledge: ['dns-wan', 'policy-delay', 'ignition-packages'], // read in the EgressSteering guide
 * });
 * export const ciliumValues = steering.values.cilium; // for your Cilium Helm release
 * export const gatewayUserData = steering.cloudConfig; // the tunnel, kill switch and re-steer hook for gw-1
 * ```
 */
export class EgressSteering extends pulumi.ComponentResource {
  /** The Kubernetes resources registered as children, in plan order (for `dependsOn`). */
  public readonly kubernetesResources: pulumi.CustomResource[];
  /** The gateway node's `#cloud-config`. */
  public readonly cloudConfig: pulumi.Output<string>;
  /** The gateway node's Ignition config JSON. */
  public readonly ignition: pulumi.Output<string>;
  /** Each gateway node's outputs by name: `gatewayNode` and, with `failover`, every standby. */
  public readonly nodes: Readonly<Record<string, NodeOutputs>>;
  /** Helm values the policy needs: `cilium` and `kubeStateMetrics`. */
  public readonly values: Record<string, unknown>;

  public constructor(name: string, args: EgressSteeringArgs, opts?: pulumi.ComponentResourceOptions) {
    // Parsed once: the plan and the claims come from the same spec.
    const { spec, plan } = planAt(name, 'EgressSteering', () => {
      const parsed = egressSteeringSpec(args);
      return { spec: parsed, plan: egressSteeringRender.planSteering(parsed) };
    });
    reserve(name, plan, [...egressSteeringRender.steeringClaims(spec), ...objectClaims(plan.objects, args.cluster)]);
    super('tunnelwright:index:EgressSteering', name, {}, opts);
    this.kubernetesResources = emitPlan(this, name, plan, opts);
    const out = nodeOutputs(plan.hosts[0], '3.4.0');
    this.cloudConfig = out.cloudConfig;
    this.ignition = out.ignition;
    this.nodes = Object.fromEntries(plan.hosts.map((h, i) => [h.node, i === 0 ? out : nodeOutputs(h, '3.4.0')]));
    this.values = plan.values;
    this.registerOutputs({ cloudConfig: this.cloudConfig, ignition: this.ignition, nodes: this.nodes, values: this.values });
  }
}
