import { createHash } from 'node:crypto';
import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { KubeObject } from '../types';

/**
 * The pod-template annotation that holds `configMapsHash` of the ConfigMaps a workload tunnelwright writes mounts.
 * Every program that reads those files reads them once, at start (pod-gateway's scripts, gluetun's post-rules,
 * blackbox_exporter's config; a `subPath` file is never even updated), so a ConfigMap changed by an apply would
 * otherwise stay unread until the pod happened to restart. A changed annotation is a changed pod template: the
 * Deployment controller hashes the whole template into a new ReplicaSet (kube-controller-manager,
 * pkg/controller/deployment/sync.go, `ComputeHash(&d.Spec.Template, …)`) and rolls the pods.
 */
export const CONFIG_HASH_ANNOTATION = 'tunnelwright.dev/config-hash';

/** `namespace/name`, an empty namespace for an object that leaves it to the tool that applies it. */
function namespacedName(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`;
}

/** SHA-256 (hex) of the ConfigMaps' namespaces, names and data, in name order and key order: deterministic. */
export function configMapsHash(maps: readonly IConfigMap[]): string {
  const hash = createHash('sha256');
  // One ConfigMap per namespace and name (as in a cluster), in the order of their keys as strings.
  const byKey = new Map(maps.map((m) => [namespacedName(m.metadata?.namespace, m.metadata?.name), m]));
  const sorted = (d: Record<string, string> | undefined) => Object.keys(d ?? {}).sort().map((k) => [k, d![k]]);
  for (const key of [...byKey.keys()].sort()) {
    const m = byKey.get(key)!;
    hash.update(JSON.stringify([key, sorted(m.data), sorted(m.binaryData)]));
  }
  return hash.digest('hex');
}

/** The names of the ConfigMaps a pod mounts: `configMap` volumes and the ConfigMap sources of `projected` ones. */
export function mountedConfigMapNames(spec: IPodSpec): string[] {
  const names = new Set<string>();
  for (const v of spec.volumes ?? []) {
    if (v.configMap?.name) names.add(v.configMap.name);
    for (const s of v.projected?.sources ?? []) if (s.configMap?.name) names.add(s.configMap.name);
  }
  return [...names];
}

type Workload = KubeObject & { spec: { template: { metadata?: { annotations?: Record<string, string> }; spec: IPodSpec } } };

/**
 * For each of `objects`, the indices of the ConfigMaps among them (same namespace) that its pod mounts: a Deployment's,
 * StatefulSet's or DaemonSet's; empty for every other kind. What must be applied before each workload (the Pulumi
 * adapter's `dependsOn`), and what its hash covers.
 */
export function mountedConfigMaps(objects: readonly KubeObject[]): number[][] {
  const at = new Map<string, number>();
  objects.forEach((o, i) => { if (o.kind === 'ConfigMap') at.set(namespacedName(o.metadata.namespace, o.metadata.name), i); });
  return objects.map((o) => {
    if (!['Deployment', 'StatefulSet', 'DaemonSet'].includes(o.kind)) return [];
    return mountedConfigMapNames((o as Workload).spec.template.spec).flatMap((n) => at.get(namespacedName(o.metadata.namespace, n)) ?? []);
  });
}

/**
 * `objects` with each Deployment, StatefulSet and DaemonSet among them that mounts ConfigMaps among them (same
 * namespace) annotated with `CONFIG_HASH_ANNOTATION`: the hash of those ConfigMaps, each as `hashed` gives it (a copy
 * without what the annotation must not let anyone recover). Other objects are returned as given.
 */
export function withConfigHashes(objects: readonly KubeObject[], hashed: (map: IConfigMap) => IConfigMap = (m) => m): KubeObject[] {
  const mounts = mountedConfigMaps(objects);
  return objects.map((o, i) => {
    if (mounts[i].length === 0) return o;
    const w = o as Workload;
    const template = w.spec.template;
    const hash = configMapsHash(mounts[i].map((j) => hashed(objects[j] as unknown as IConfigMap)));
    const metadata = { ...template.metadata, annotations: { ...template.metadata?.annotations, [CONFIG_HASH_ANNOTATION]: hash } };
    return { ...w, spec: { ...w.spec, template: { ...template, metadata } } } as KubeObject;
  });
}
