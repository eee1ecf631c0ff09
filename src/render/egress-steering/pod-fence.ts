import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import type { PodFence } from '../kill-switch';

/**
 * With failover, every candidate's kill switch drops pod traffic to the steered destinations that would leave by
 * anything but the tunnel or Cilium's interfaces (audit finding 3: a new holder whose own Cilium agent has not yet
 * made it the gateway hands such a packet to the kernel unmasqueraded, bpf/lib/egress_gateway.h and nat.h
 * NAT_PUNT_TO_STACK; the kernel would route it out of the WAN).
 */
export function podFenceOf(s: EgressSteeringSpec): { podFence?: PodFence } {
  if (!s.failover?.dropPodTrafficOffTunnel) return {};
  return { podFence: { sources: s.clusterCidrs, destinations: s.destinationCidrs, exempt: [...s.excludedCidrs, ...s.clusterCidrs, ...s.lanCidrs] } };
}
