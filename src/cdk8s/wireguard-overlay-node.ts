import { Construct } from 'constructs';
import { objectClaims } from '../invariants';
import { IgnitionConfig } from '../host/ignition';
import type { WireguardOverlayNodeProps } from '../model/wireguard-overlay-node';
import { Plan } from '../types';
import { planAt, TunnelwrightConstruct } from './base';
import * as overlayNodeRender from '../render/wireguard-overlay-node';

/**
 * One node's host WireGuard interfaces, rendered into cloud-init and Ignition. Add it to an `App` (from
 * `tunnelwright/cdk8s`) to get `<outdir>/hosts/<node>/user-data` and `ignition.json` at synth.
 *
 * @example
 * ```ts
 * import { Chart } from 'cdk8s';
 * import { App, WireguardOverlayNode } from 'tunnelwright/cdk8s';
 *
 * const app = new App();
 * new WireguardOverlayNode(new Chart(app, 'vps-w1'), 'node', {
 *   node: 'vps-w1', role: 'worker', distribution: 'k3s', clusterEndpoint: 'https://10.10.0.1:6443',
 *   wireguard: [{
 *     name: 'wg0', address: '10.10.0.2/24', listenPort: 51820, nodeAddress: true, underlayMtu: 1500,
 *     privateKeyFrom: { file: '/run/keys/wg0.key' },
 *     peers: [{ publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '203.0.113.10:51820', allowedIPs: ['10.10.0.1/32'] }],
 *   }],
 * });
 * app.synth(); // dist/hosts/vps-w1/user-data, ignition.json and wg0.conf
 * ```
 */
export class WireguardOverlayNode extends TunnelwrightConstruct {
  /** This construct's part of the node's `#cloud-config`. */
  public readonly cloudConfig: string;
  /** This construct's part of the node's Ignition config. */
  public readonly ignition: IgnitionConfig;
  /** Each interface's config by file name (`wg0.conf`): copy it to `/etc/wireguard/` and reload after a change. */
  public readonly wireguardConfigs: Readonly<Record<string, string>>;
  /** The core plan (host plan, node IP values, warnings). */
  public readonly plan: Plan;

  public constructor(scope: Construct, id: string, props: WireguardOverlayNodeProps) {
    const plan = planAt(scope, id, 'WireguardOverlayNode', () => overlayNodeRender.planWireguardOverlayNode(props));
    super(scope, id, plan, [...objectClaims(plan.objects, props.cluster)], props.ignitionVersion);
    this.plan = plan;
    const a = this.artefactsOf(plan.hosts[0], props.ignitionVersion ?? '3.4.0');
    this.cloudConfig = a.cloudConfig;
    this.ignition = a.ignition;
    this.wireguardConfigs = a.wireguardConfigs;
  }
}
