import * as pulumi from '@pulumi/pulumi';
import { objectClaims } from '../invariants';
import type { WireguardOverlayNodeProps } from '../model/wireguard-overlay-node';
import { planAt, emitPlan, nodeOutputs, reserve } from './base';
import * as overlayNodeRender from '../render/wireguard-overlay-node';

/** Arguments of the WireguardOverlayNode component: the core props, as plain values (validated before anything is registered). */
export type WireguardOverlayNodeArgs = WireguardOverlayNodeProps;

/**
 * One node's host WireGuard interfaces: `cloudConfig` and `ignition` outputs to pass as a server's user data.
 *
 * @example
 * ```ts
 * import { WireguardOverlayNode } from 'tunnelwright/pulumi';
 *
 * const node = new WireguardOverlayNode('vps-w1', {
 *   node: 'vps-w1', role: 'worker', distribution: 'k3s', clusterEndpoint: 'https://10.10.0.1:6443',
 *   wireguard: [{
 *     name: 'wg0', address: '10.10.0.2/24', listenPort: 51820, nodeAddress: true, underlayMtu: 1500,
 *     privateKeyFrom: { file: '/run/keys/wg0.key' },
 *     peers: [{ publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', endpoint: '203.0.113.10:51820', allowedIPs: ['10.10.0.1/32'] }],
 *   }],
 * });
 * export const userData = node.cloudConfig; // an Output<string>, secret when it embeds a secret
 * ```
 */
export class WireguardOverlayNode extends pulumi.ComponentResource {
  /** `#cloud-config` user-data (secret when it embeds an inline key). */
  public readonly cloudConfig: pulumi.Output<string>;
  /** Ignition config JSON (secret when it embeds an inline key). */
  public readonly ignition: pulumi.Output<string>;
  /** Each interface's config by file name (`wg0.conf`), secret when it embeds a key: copy it to `/etc/wireguard/` and reload after a change. */
  public readonly wireguardConfigs: Readonly<Record<string, pulumi.Output<string>>>;

  public constructor(name: string, args: WireguardOverlayNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    const plan = planAt(name, 'WireguardOverlayNode', () => overlayNodeRender.planWireguardOverlayNode(args));
    reserve(name, plan, [...objectClaims(plan.objects, args.cluster)], args.ignitionVersion);
    super('tunnelwright:index:WireguardOverlayNode', name, {}, opts);
    emitPlan(this, name, plan, opts);
    const out = nodeOutputs(plan.hosts[0], args.ignitionVersion ?? '3.4.0');
    this.cloudConfig = out.cloudConfig;
    this.ignition = out.ignition;
    this.wireguardConfigs = out.wireguardConfigs;
    this.registerOutputs({ cloudConfig: this.cloudConfig, ignition: this.ignition, wireguardConfigs: this.wireguardConfigs });
  }
}
