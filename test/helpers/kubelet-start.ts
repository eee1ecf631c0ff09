/**
 * Whether the kubelet would start a pod's containers as far as their user goes: its `runAsNonRoot` check, which refuses
 * a container (CreateContainerConfigError, the pod never runs) when the effective security context asks for a non-root
 * user and neither it nor the image gives one. The kubelet's rule, kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/security_context_others.go `verifyRunAsNonRoot` (commit 1f671eec): runAsNonRoot unset or
 * false passes; runAsUser 0 fails, any other runAsUser passes; else the image's user decides: uid 0 fails, a user name
 * fails ("cannot verify user is non-root"), another uid passes. An image without a USER runs as root
 * (pkg/kubelet/kuberuntime/helpers.go `getImageUser`: "If non of them is set, treat it as root").
 */

/** The USER each image this repository's docs and examples run declares (absent: none, so root). */
const IMAGE_USERS: ReadonlyArray<readonly [RegExp, string | undefined]> = [
  // linuxserver.io images start as root: s6-overlay's init chowns /config and drops to user abc (PUID/PGID).
  [/^(lscr\.io\/|ghcr\.io\/)?linuxserver\//, undefined],
];

/** The user an image declares: a uid, a name, or undefined for none (root); `unknown` for an image not in the table. */
export function imageUser(image: string, table: ReadonlyArray<readonly [RegExp, string | undefined]> = IMAGE_USERS): string | undefined | 'unknown' {
  const row = table.find(([pattern]) => pattern.test(image));
  return row ? row[1] : 'unknown';
}

interface SecurityContext { runAsNonRoot?: boolean; runAsUser?: number }
interface Container { name: string; image?: string; securityContext?: SecurityContext }
interface PodSpec { securityContext?: SecurityContext; containers?: Container[]; initContainers?: Container[] }
interface Manifest { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: Record<string, unknown> }

/** The pod spec a workload object runs, if it is one. */
function podSpec(object: Manifest): PodSpec | undefined {
  const spec = object.spec as { template?: { spec?: PodSpec }; jobTemplate?: { spec?: { template?: { spec?: PodSpec } } } } | undefined;
  if (object.kind === 'Pod') return object.spec as PodSpec;
  if (object.kind === 'CronJob') return spec?.jobTemplate?.spec?.template?.spec;
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(object.kind ?? '')) return spec?.template?.spec;
  return undefined;
}

/** The workload objects among `objects`, by `<kind>/<namespace>/<name>`. */
export function podTemplates(objects: readonly Manifest[]): string[] {
  return objects.filter((o) => podSpec(o) !== undefined).map((o) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
}

/** Why the kubelet would refuse each container of these objects' pods to start, one line each; empty: it starts them. */
export function kubeletRefusals(objects: readonly Manifest[], table = IMAGE_USERS): string[] {
  return objects.flatMap((object) => {
    const pod = podSpec(object);
    if (!pod) return [];
    const where = `${object.kind}/${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
    return [...(pod.initContainers ?? []), ...(pod.containers ?? [])].flatMap((c) => {
      const nonRoot = c.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot;
      const user = c.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
      if (nonRoot !== true) return [];
      if (user !== undefined) return user === 0 ? [`${where} ${c.name}: runAsUser 0 breaks runAsNonRoot`] : [];
      const declared = imageUser(c.image ?? '', table);
      if (declared === 'unknown') return [`${where} ${c.name}: runAsNonRoot, no runAsUser, and ${c.image}'s user is not known here (add it to IMAGE_USERS)`];
      if (declared === undefined || declared === '0' || declared === 'root') return [`${where} ${c.name}: runAsNonRoot, and ${c.image} runs as root`];
      if (!/^\d+$/.test(declared)) return [`${where} ${c.name}: runAsNonRoot, and ${c.image} has the non-numeric user ${declared}`];
      return [];
    });
  });
}
