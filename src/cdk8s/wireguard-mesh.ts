import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import type { WireguardMeshProps } from '../model/wireguard-mesh';
import type { MeshPlan } from '../render/wireguard-mesh';
import { planAt, NodeArtefacts, TunnelwrightConstruct } from './base';
import { meshRender } from '../lazy';

/** Every node of a WireGuard overlay, generated and checked as a whole: `mesh.nodes[name].cloudConfig` / `.ignition`. */
export class WireguardMesh extends TunnelwrightConstruct {
  /** Each node's artefacts, by node name. */
  public readonly nodes: Readonly<Record<string, NodeArtefacts>>;
  /** The core plan. */
  public readonly plan: MeshPlan;

  public constructor(scope: Construct, id: string, props: WireguardMeshProps) {
    const plan = planAt(scope, id, 'WireguardMesh', () => meshRender().planWireguardMesh(props));
    super(scope, id, plan, [...objectClaims(plan.objects, props.cluster)], props.ignitionVersion);
    this.plan = plan;
    const version = props.ignitionVersion ?? '3.4.0';
    const nodes: Record<string, NodeArtefacts> = {};
    for (const [name, n] of Object.entries(plan.nodes)) nodes[name] = this.artefactsOf(n.host, version);
    this.nodes = nodes;
  }
}
