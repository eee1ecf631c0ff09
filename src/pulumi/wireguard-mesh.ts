import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { WireguardMeshProps } from '../model/wireguard-mesh';
import { wireguardMeshSpec } from '../model/wireguard-mesh-spec';
import { planAt, emitPlan, NodeOutputs, nodeOutputs, reserve } from './base';
import * as meshRender from '../render/wireguard-mesh';

/** Arguments of the WireguardMesh component (plain values). */
export type WireguardMeshArgs = WireguardMeshProps;

/**
 * Every node of a WireGuard overlay, generated and checked as a whole: `mesh.nodes[name].cloudConfig` / `.ignition`.
 *
 * @example
 * ```ts
 * import { WireguardMesh } from 'tunnelwright/pulumi';
 *
 * const keyFrom = { file: '/run/keys/wg0.key' };
 * const mesh = new WireguardMesh('overlay', {
 *   network: '10.10.0.0/24', listenPort: 51820, distribution: 'k3s',
 *   nodes: [
 *     { node: 'home-cp1', address: '10.10.0.1', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: keyFrom },
 *     { node: 'vps-w1', address: '10.10.0.2', endpoint: '198.51.100.20', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: keyFrom },
 *   ],
 * });
 * export const userData = mesh.nodes['vps-w1'].cloudConfig; // for hcloud.Server, aws.ec2.Instance … `userData`
 * ```
 */
export class WireguardMesh extends pulumi.ComponentResource {
  /** Each node's outputs, by node name. */
  public readonly nodes: Readonly<Record<string, NodeOutputs>>;

  public constructor(name: string, args: WireguardMeshArgs, opts?: pulumi.ComponentResourceOptions) {
    // Parsed once: props → spec → plan.
    const { spec, plan } = planAt(name, 'WireguardMesh', () => {
      const parsed = wireguardMeshSpec(args);
      return { spec: parsed, plan: meshRender.renderWireguardMesh(parsed) };
    });
    reserve(name, plan, [...objectClaims(plan.objects, spec.cluster)], spec.ignitionVersion);
    super('tunnelwright:index:WireguardMesh', name, {}, opts);
    emitPlan(this, name, plan, opts);
    const nodes: Record<string, NodeOutputs> = {};
    for (const [node, p] of Object.entries(plan.nodes)) nodes[node] = nodeOutputs(p.host, spec.ignitionVersion);
    this.nodes = nodes;
    this.registerOutputs({ nodes });
  }
}
