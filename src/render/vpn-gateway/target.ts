import type { VpnGatewayProps } from '../../model/vpn-gateway';
import * as commonModel from '../../model/common';

/** Kinds `route()` accepts. */
export const ROUTABLE_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet'] as const;

/** The workload a gateway routes: its namespace, pod labels and name. */
export interface RouteTarget {
  readonly namespace: string;
  readonly podLabels: Record<string, string>;
  /** The workload's name (a port-forwarding target is matched by it and its namespace). */
  readonly name: string;
  /**
   * The workload's kind. The port-forwarding workload (`portForwarding.workload`) must be a StatefulSet: it is the only
   * kind that never runs two pods of one replica at once (see `planRoute`). @default 'Deployment'
   */
  readonly kind?: typeof ROUTABLE_KINDS[number];
  /** The workload's `spec.replicas` (for the port-forwarding workload, a plain number: 0 or 1). @default 1 */
  readonly replicas?: number;
  /**
   * The StatefulSet's `spec.ordinals.start` (a plain whole number): the port-forwarding workload's one pod is
   * `<name>-<start>`, and its init container refuses to start in any other pod. @default 0
   */
  readonly ordinalsStart?: number;
}

/** Whether `target` is the gateway's port-forwarding workload (`portForwarding.workload` in `workloadNamespace`, with `toPort` or `app`). */
export function isForwardedTarget(gatewayProps: VpnGatewayProps, target: RouteTarget): boolean {
  const pf = commonModel.isRecord(gatewayProps) && commonModel.isRecord(gatewayProps.portForwarding) ? gatewayProps.portForwarding : undefined;
  return commonModel.isRecord(target) && pf !== undefined && (pf.toPort !== undefined || pf.app !== undefined)
    && pf.workload === target.name && pf.workloadNamespace === target.namespace;
}
