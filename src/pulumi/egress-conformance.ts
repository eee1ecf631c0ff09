import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { EgressConformanceProps } from '../model/egress-conformance';
import { egressConformanceSpec } from '../model/egress-conformance-spec';
import { emitPlan, planAt, reserve } from './base';
import * as conformanceRender from '../render/egress-conformance';

/** Arguments of the EgressConformance component (plain values: the props your gateways and steerings were built from). */
export type EgressConformanceArgs = EgressConformanceProps;

/**
 * A one-shot, destructive conformance check of the egress design: its probes as children, and the script (also in a
 * ConfigMap) that proves vpn-class egress, no leak while each tunnel is stopped, and recovery from a new interface.
 *
 * @example
 * ```ts
 * import * as k8s from '@pulumi/kubernetes';
 * import type { VpnGatewayProps } from 'tunnelwright';
 * import { EgressConformance, registerNamespaces, VpnGateway } from 'tunnelwright/pulumi';
 *
 * const gatewayProps: VpnGatewayProps = {
 *   clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], nodeCidrs: ['192.168.1.0/24'],
 *   vpnProvider: 'nordvpn', wireguardPrivateKeySecret: { name: 'nordvpn-wireguard' }, serverCountries: ['Switzerland'],
 * };
 * new VpnGateway('vpn', gatewayProps);
 * new k8s.core.v1.Namespace('media', {
 *   metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
 * }, { transformations: [registerNamespaces()] });
 * const conformance = new EgressConformance('conformance', {
 *   namespaces: ['media', 'vpn-gateway'],
 *   destructive: true, // it stops the tunnel to count what leaks
 *   targets: ['https://ifconfig.example.net/ip'],
 *   wanIps: ['203.0.113.7'],                      // your WAN address: it must never show
 *   vpnCidrs: ['185.236.200.0/22'],               // the provider's ranges: it must show one of these
 *   vpnGateways: [{ gateway: gatewayProps, probeNamespace: 'media' }],
 * });
 * export const command = conformance.command; // run it once after pulumi up
 * ```
 */
export class EgressConformance extends pulumi.ComponentResource {
  /** The Kubernetes resources registered as children, in plan order (for `dependsOn`). */
  public readonly kubernetesResources: pulumi.CustomResource[];
  /** The check: run it with `sh egress-conformance.sh --destructive`. */
  public readonly egressConformanceScript: string;
  /** The one command that fetches the script from its ConfigMap and runs it. */
  public readonly command: string;
  public constructor(name: string, args: EgressConformanceArgs, opts?: pulumi.ComponentResourceOptions) {
    // Parsed once: props → spec → plan.
    const { spec, plan } = planAt(name, 'EgressConformance', () => {
      const parsed = egressConformanceSpec(args);
      return { spec: parsed, plan: conformanceRender.renderEgressConformance(parsed) };
    });
    reserve(name, plan, objectClaims(plan.objects, spec.cluster));
    super('tunnelwright:index:EgressConformance', name, {}, opts);
    this.kubernetesResources = emitPlan(this, name, plan, opts);
    const values = plan.values.egressConformance as { script: string; command: string };
    this.egressConformanceScript = values.script;
    this.command = values.command;
    this.registerOutputs({ command: this.command });
  }
}
