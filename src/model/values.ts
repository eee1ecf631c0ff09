/**
 * The model's plain values that the entry points export: defined here, where no zod is loaded, so that requiring
 * `tunnelwright` loads no schema (issue 30). The schema modules re-export them.
 */

/** The apps whose listen port tunnelwright keeps equal to the forwarded port (names as users say them). */
export const PORT_FORWARDING_APPS = ['qbittorrent', 'transmission', 'deluge', 'slskd', 'command'] as const;

/** The port-sync sidecar's metrics port (in the forwarded workload's pod). */
export const PORT_SYNC_METRICS_PORT = 9808;

/**
 * The keys of k0s.yaml's `spec` that tunnelwright sets (from the overlay), by path: a user's `k0sConfig` may not set
 * them (the provider may be given when it names the same CNI as `cni`).
 */
export const K0S_OWNED_KEYS = [
  'api.address', 'storage.etcd.peerAddress',
  'network.kuberouter.autoMTU', 'network.kuberouter.mtu', 'network.kuberouter.extraArgs.enable-overlay', 'network.kuberouter.extraArgs.overlay-type',
  'network.calico.mode', 'network.calico.mtu', 'network.calico.ipAutodetectionMethod',
] as const;

const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/** Seconds in a duration such as `1h30m`, or undefined when it is not one. */
export function durationSeconds(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m || text === '') return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}
