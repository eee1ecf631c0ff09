import type { Container as IContainer } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { Problem } from '../errors';
import { KubeObject } from '../types';

/** The Pod Security Standards levels, least strict first. */
export type PodSecurityLevel = 'privileged' | 'baseline' | 'restricted';
const ORDER: Record<PodSecurityLevel, number> = { privileged: 0, baseline: 1, restricted: 2 };

/** Capabilities the baseline level lets a container add (Pod Security Standards, "Capabilities"). */
const BASELINE_CAPABILITIES = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);

/** Why a pod needs more than the next stricter level: the first reason found, for the message. */
export interface LevelNeed {
  readonly level: PodSecurityLevel;
  readonly why: string;
}

/**
 * The strictest Pod Security level that admits this pod spec, with the reason it needs no stricter one. Covers the
 * controls of the Pod Security Standards that the library's pods touch (privileged containers, added capabilities,
 * host namespaces, host paths and ports; for restricted: non-root, no privilege escalation, all capabilities
 * dropped, a seccomp profile) and reads any pod the same way.
 */
export function requiredLevel(spec: IPodSpec): LevelNeed {
  const containers: IContainer[] = [...(spec.initContainers ?? []), ...spec.containers];
  for (const c of containers) {
    if (c.securityContext?.privileged) return { level: 'privileged', why: `container ${c.name} is privileged` };
    // Compared as written, as the admission plugin does (check_capabilities_baseline.go): `CAP_CHOWN` is not `CHOWN`.
    const added = (c.securityContext?.capabilities?.add ?? []).filter((cap) => !BASELINE_CAPABILITIES.has(cap));
    if (added.length > 0) return { level: 'privileged', why: `container ${c.name} adds ${added.join(', ')}` };
    if ((c.ports ?? []).some((p) => p.hostPort)) return { level: 'privileged', why: `container ${c.name} uses a host port` };
  }
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) return { level: 'privileged', why: 'the pod shares a host namespace' };
  const hostPath = (spec.volumes ?? []).find((v) => v.hostPath);
  if (hostPath) return { level: 'privileged', why: `volume ${hostPath.name} is a hostPath` };
  const pod = spec.securityContext;
  for (const c of containers) {
    const sc = c.securityContext ?? {};
    const nonRoot = sc.runAsNonRoot ?? pod?.runAsNonRoot;
    const uid = sc.runAsUser ?? pod?.runAsUser;
    const seccomp = sc.seccompProfile?.type ?? pod?.seccompProfile?.type;
    if (nonRoot !== true || uid === 0) return { level: 'baseline', why: `container ${c.name} may run as root` };
    if (sc.allowPrivilegeEscalation !== false) return { level: 'baseline', why: `container ${c.name} allows privilege escalation` };
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) return { level: 'baseline', why: `container ${c.name} does not drop ALL capabilities` };
    if ((sc.capabilities?.add ?? []).some((cap) => cap !== 'NET_BIND_SERVICE')) return { level: 'baseline', why: `container ${c.name} adds a capability` };
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') return { level: 'baseline', why: `container ${c.name} sets no seccomp profile` };
  }
  return { level: 'restricted', why: 'it meets the restricted level' };
}

/** True when `level` admits pods that need `need`. */
export function admits(level: PodSecurityLevel, need: PodSecurityLevel): boolean {
  return ORDER[level] <= ORDER[need];
}

export const POD_SECURITY_LABEL = 'pod-security.kubernetes.io';

/** One mode of a namespace's policy as the admission plugin reads it. */
export interface ModePolicy {
  readonly level: PodSecurityLevel;
  readonly version: string;
  /** The label's value when it is not a level the plugin knows (the plugin then evaluates as shown). */
  readonly invalid?: string;
}

/**
 * A namespace's Pod Security policy from its labels, the way the admission plugin reads them
 * (pod-security-admission `api.PolicyToEvaluate`): an unknown `enforce` level is evaluated as restricted (fail
 * closed), an unknown `audit`/`warn` level as privileged (fail open), an unknown version as `latest`. A mode without
 * its label is absent: the cluster's default applies (privileged unless the admission configuration says otherwise).
 */
export function namespacePolicy(labels: Readonly<Record<string, string>> = {}): Partial<Record<'enforce' | 'audit' | 'warn', ModePolicy>> {
  const out: Partial<Record<'enforce' | 'audit' | 'warn', ModePolicy>> = {};
  for (const mode of ['enforce', 'audit', 'warn'] as const) {
    const value = labels[`${POD_SECURITY_LABEL}/${mode}`];
    if (value === undefined) continue;
    const known = value === 'privileged' || value === 'baseline' || value === 'restricted';
    const versionLabel = labels[`${POD_SECURITY_LABEL}/${mode}-version`];
    // `latest` and any label that is no version both read as latest.
    const version = versionLabel !== undefined && /^v1\.(0|[1-9][0-9]*)$/.test(versionLabel) ? versionLabel : 'latest';
    out[mode] = { level: known ? value : mode === 'enforce' ? 'restricted' : 'privileged', version, ...(known ? {} : { invalid: value }) };
  }
  return out;
}

/** The labels that let a namespace admit pods of `level` (and warn and audit at it too, so the cluster stays quiet). */
export function podSecurityLabels(level: PodSecurityLevel): Record<string, string> {
  return {
    [`${POD_SECURITY_LABEL}/enforce`]: level,
    [`${POD_SECURITY_LABEL}/enforce-version`]: 'latest',
    [`${POD_SECURITY_LABEL}/audit`]: level,
    [`${POD_SECURITY_LABEL}/warn`]: level,
  };
}

/** A pod the library makes (or routes) and the level it needs, in its namespace. */
export interface PodSecurityNeed {
  readonly namespace: string;
  /** What the pod is, for messages: `the gateway vpn-gateway`, `the routed workload media/qbittorrent`. */
  readonly what: string;
  readonly need: LevelNeed;
  /** Where it comes from: `<construct path>:<prop path>`. */
  readonly at: string;
}

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'ReplicaSet']);

/** The pod templates among planned objects, each with the level it needs. */
export function podSecurityNeeds(objects: readonly KubeObject[], at: string): PodSecurityNeed[] {
  return objects.flatMap((o) => {
    if (!WORKLOADS.has(o.kind) || !o.metadata.namespace) return [];
    const spec = (o as { spec?: { template?: { spec?: IPodSpec } } }).spec?.template?.spec;
    return spec ? [{ namespace: o.metadata.namespace, what: `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`, need: requiredLevel(spec), at }] : [];
  });
}

/**
 * Checks every pod need against the namespaces known (their labels): a namespace whose enforced level rejects a pod is
 * a problem; one that warns or audits at a stricter level, or that is not known here (so its level is not), is a
 * warning naming the level to set.
 */
export function checkPodSecurity(needs: readonly PodSecurityNeed[], namespaces: ReadonlyMap<string, Readonly<Record<string, string>>>): { problems: Problem[]; warnings: Problem[] } {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const label = (level: PodSecurityLevel) => `${POD_SECURITY_LABEL}/enforce=${level}`;
  for (const n of needs) {
    const labels = namespaces.get(n.namespace);
    if (labels === undefined) {
      if (n.need.level !== 'restricted') warnings.push({ path: n.at, code: 'pod-security', message: `namespace ${n.namespace} is not in this app: it must admit ${n.what} at Pod Security level ${n.need.level} (${n.need.why}); label it ${label(n.need.level)}` });
      continue;
    }
    const policy = namespacePolicy(labels);
    const enforce = policy.enforce;
    if (!enforce && n.need.level !== 'restricted') {
      warnings.push({ path: n.at, code: 'pod-security', message: `namespace ${n.namespace} sets no enforce level: the cluster's default decides whether ${n.what} is admitted (it needs ${n.need.level}: ${n.need.why}); label it ${label(n.need.level)}` });
    }
    if (enforce && !admits(enforce.level, n.need.level)) {
      const how = enforce.invalid !== undefined ? `enforces "${enforce.invalid}", which the admission plugin reads as restricted` : `enforces ${enforce.level}`;
      problems.push({ path: n.at, code: 'pod-security', message: `namespace ${n.namespace} ${how}, which rejects ${n.what} (${n.need.why}): label it ${label(n.need.level)}` });
    }
    for (const mode of ['warn', 'audit'] as const) {
      const p = policy[mode];
      if (p && !admits(p.level, n.need.level)) warnings.push({ path: n.at, code: 'pod-security', message: `namespace ${n.namespace} ${mode}s at ${p.level}: ${n.what} is admitted but ${mode === 'warn' ? 'every create warns' : 'every create is audited'} (${n.need.why}); label it ${POD_SECURITY_LABEL}/${mode}=${n.need.level}` });
    }
  }
  return { problems, warnings };
}
