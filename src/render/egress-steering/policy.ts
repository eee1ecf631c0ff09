import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { KubeObject } from '../../types';
import { activeLabel } from '../../model/egress-steering-failover';
import { MANAGED } from './constants';

/** The CiliumEgressGatewayPolicy: vpn-class pods, by namespace or everywhere, out of the one gateway node. */
export function steeringPolicy(s: EgressSteeringSpec): KubeObject {
  const podSelector = { matchLabels: { [s.classLabel]: s.vpnClass } };
  const selectors = s.namespaces
    ? s.namespaces.map((ns) => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } }, podSelector }))
    : [{ podSelector }];
  return {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumEgressGatewayPolicy',
    metadata: { name: s.name, labels: MANAGED },
    spec: {
      selectors,
      destinationCIDRs: s.destinationCidrs,
      ...(s.excludedCidrs.length > 0 ? { excludedCIDRs: s.excludedCidrs } : {}),
      // One node, by hostname: a selector that could match a second node makes Cilium pick by name order, silently.
      // With failover, the node that holds the Lease carries the active label (egress-steering-failover.ts).
      egressGateway: {
        nodeSelector: { matchLabels: s.failover ? { [activeLabel(s.name)]: 'true' } : { 'kubernetes.io/hostname': s.gatewayNode } },
        ...(s.egressIp ? { egressIP: s.egressIp } : { interface: s.iface }),
      },
    },
  };
}

/** A Kyverno ClusterPolicy requiring the class label on pods in the enforced namespaces. */
export function kyvernoPolicy(s: EgressSteeringSpec, enforce: NonNullable<EgressSteeringSpec['enforceLabels']>): KubeObject {
  const classes = enforce.classes;
  return {
    apiVersion: 'kyverno.io/v1',
    kind: 'ClusterPolicy',
    metadata: { name: `${s.name}-require-egress-class`, labels: MANAGED, annotations: { 'policies.kyverno.io/title': 'Require an egress class', 'policies.kyverno.io/description': `Pods in ${enforce.namespaces.join(', ')} must say how they reach the internet: ${s.classLabel} is one of ${classes.join(', ')}.` } },
    spec: {
      background: true,
      rules: [
        {
          name: 'require-egress-class',
          match: { any: [{ resources: { kinds: ['Pod'], namespaces: [...enforce.namespaces] } }] },
          validate: {
            failureAction: 'Enforce',
            message: `label ${s.classLabel} must be one of ${classes.join(', ')}`,
            pattern: { metadata: { labels: { [s.classLabel]: classes.join(' | ') } } },
          },
        },
      ],
    },
  };
}

/**
 * vpn-class pods' IPv6 egress outside the cluster, denied: Cilium's egress gateway steers IPv4 destinations only
 * (IPv6 from 1.20), so IPv6 would leave natively. A deny-only policy that leaves default deny off.
 */
export function ipv6DenyPolicy(s: EgressSteeringSpec): KubeObject {
  const v6Cluster = s.ipv6ClusterCidrs;
  return {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumClusterwideNetworkPolicy',
    metadata: { name: `${s.name}-deny-ipv6`, labels: MANAGED },
    spec: {
      description: `pods of egress class ${s.vpnClass}: no IPv6 egress outside the cluster (it would not leave by the VPN)`,
      endpointSelector: {
        matchLabels: { [s.classLabel]: s.vpnClass },
        ...(s.namespaces ? { matchExpressions: [{ key: 'k8s:io.kubernetes.pod.namespace', operator: 'In', values: [...s.namespaces] }] } : {}),
      },
      enableDefaultDeny: { egress: false, ingress: false },
      egressDeny: [{ toCIDRSet: [{ cidr: '::/0', ...(v6Cluster.length > 0 ? { except: [...v6Cluster] } : {}) }] }],
    },
  };
}
