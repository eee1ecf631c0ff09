import type { EgressSteeringSpec } from '../../model/egress-steering-spec';

/**
 * The Helm values the policy needs, for Cilium and kube-state-metrics. Helm replaces lists: `devices` is given whole
 * (your `ciliumValues.devices` with the tunnel added) or not at all (a warning says to add the tunnel to yours).
 */
export function steeringValues(s: EgressSteeringSpec): Record<string, unknown> {
  const devices = s.ciliumDevices;
  return {
    cilium: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, ...(devices ? { devices: [...devices] } : {}) },
    kubeStateMetrics: { metricLabelsAllowlist: [...s.ksmAllowlist] },
  };
}
