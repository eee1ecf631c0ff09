import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import type { WireguardMeshProps } from '../model/wireguard-mesh';
import { wireguardMeshSpec } from '../model/wireguard-mesh-spec';
import type { MeshPlan } from '../render/wireguard-mesh';
import { planAt, NodeArtefacts, TunnelwrightConstruct } from './base';
import * as meshRender from '../render/wireguard-mesh';

/**
 * Every node of a WireGuard overlay, generated and checked as a whole: `mesh.nodes[name].cloudConfig` / `.ignition`.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import { App, WireguardMesh } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * const keyFrom = { file: '/run/keys/wg0.key' }; // read on each node at boot: never a key in code
 * new WireguardMesh(new Chart(app, 'overlay'), 'overlay', {
 *   network: '10.10.0.0/24', listenPort: 51820, distribution: 'k3s',
 *   nodes: [
 *     { node: 'home-cp1', address: '10.10.0.1', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: keyFrom },
 *     { node: 'office-w2', address: '10.10.0.2', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: keyFrom }, // behind NAT
 *   ],
 * });
 * app.synth(); // dist/hosts/<node>/user-data, ignition.json and wg0.conf
 * ```
 */
export class WireguardMesh extends TunnelwrightConstruct {
  /** Each node's artefacts, by node name. */
  public readonly nodes: Readonly<Record<string, NodeArtefacts>>;
  /** The core plan. */
  public readonly plan: MeshPlan;

  public constructor(scope: Construct, id: string, props: WireguardMeshProps) {
    // Parsed once: props → spec → plan.
    const { spec, plan } = planAt(scope, id, 'WireguardMesh', () => {
      const parsed = wireguardMeshSpec(props);
      return { spec: parsed, plan: meshRender.renderWireguardMesh(parsed) };
    });
    super(scope, id, plan, [...objectClaims(plan.objects, spec.cluster)], spec.ignitionVersion);
    this.plan = plan;
    const version = spec.ignitionVersion;
    const nodes: Record<string, NodeArtefacts> = {};
    for (const [name, n] of Object.entries(plan.nodes)) nodes[name] = this.artefactsOf(n.host, version);
    this.nodes = nodes;
  }
}
