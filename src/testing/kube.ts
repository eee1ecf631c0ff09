import { CLUSTER_SCOPED_KINDS } from '../types';
import { requirePeer } from './peers';
import { resolveSchemaDir, schemaValidator } from './schemas';

interface ObjectLike {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
}

/** Custom resources checked against the upstream schema files (closed to unknown fields). */
export const CUSTOM_RESOURCE_SCHEMAS: Readonly<Record<string, string>> = {
  'cilium.io/v2/CiliumEgressGatewayPolicy': 'datree-ciliumegressgatewaypolicy_v2.json',
  'cilium.io/v2/CiliumNetworkPolicy': 'datree-ciliumnetworkpolicy_v2.json',
  'cilium.io/v2/CiliumClusterwideNetworkPolicy': 'datree-ciliumclusterwidenetworkpolicy_v2.json',
  'kyverno.io/v1/ClusterPolicy': 'datree-clusterpolicy_v1.json',
  'monitoring.coreos.com/v1/PrometheusRule': 'monitoring.coreos.com_prometheusrules.yaml',
};

function kubernetesModel(apiVersion: string, kind: string): { new (data: unknown): { validate(): void } } | undefined {
  // The packages themselves must be there (a clear error if not); a kind they do not model is skipped below.
  requirePeer(apiVersion.startsWith('monitoring.coreos.com/') ? '@kubernetes-models/prometheus-operator/package.json' : 'kubernetes-models/package.json');
  const modules = apiVersion.startsWith('monitoring.coreos.com/')
    ? [`@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`]
    : [`kubernetes-models/${apiVersion}/${kind}`];
  for (const m of modules) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const mod = require(m) as Record<string, { new (data: unknown): { validate(): void } }>;
      if (mod[kind]) return mod[kind];
    } catch {
      // not a kind this package models
    }
  }
  return undefined;
}

/** Cluster-scoped kinds must not carry a namespace; namespaced kinds must (tunnelwright names every object). */
const CLUSTER_SCOPED = CLUSTER_SCOPED_KINDS;

/**
 * Problems of Kubernetes objects, one line each (`Kind/name: /path: message`): core kinds with kubernetes-models,
 * custom resources against the upstream schemas in `schemaDir` (unknown fields fail), and namespace scoping (a
 * namespaced kind needs a namespace; a cluster-scoped object tunnelwright writes has none, while one of yours may
 * carry the namespace cdk8s gives it in a namespaced chart, which the API server ignores).
 */
export function checkKubeObjects(objects: readonly unknown[], schemaDir?: string): string[] {
  const out: string[] = [];
  for (const raw of objects) {
    const o = raw as ObjectLike;
    const id = `${o.kind ?? '?'}/${o.metadata?.name ?? '?'}`;
    if (!o.apiVersion || !o.kind || !o.metadata?.name) {
      out.push(`${id}: apiVersion, kind and metadata.name are required`);
      continue;
    }
    // Only tunnelwright's own objects (app.kubernetes.io/managed-by=tunnelwright) are held to this: cdk8s gives every
    // ApiObject of a namespaced chart the chart's namespace, a Namespace or ClusterRole too, and the API server clears
    // it on a cluster-scoped object (k8s.io/apiserver pkg/registry/rest/meta.go
    // EnsureObjectNamespaceMatchesRequestNamespace: "cluster-scoped, clear namespace"), as tunnelwright's App does.
    if (CLUSTER_SCOPED.has(o.kind) && o.metadata.namespace !== undefined && o.metadata.labels?.['app.kubernetes.io/managed-by'] === 'tunnelwright') out.push(`${id}: /metadata/namespace: a cluster-scoped ${o.kind} has no namespace`);
    if (!CLUSTER_SCOPED.has(o.kind) && !o.metadata.namespace) out.push(`${id}: /metadata/namespace: a namespaced ${o.kind} needs a namespace`);
    const crFile = CUSTOM_RESOURCE_SCHEMAS[`${o.apiVersion}/${o.kind}`];
    if (crFile) {
      for (const e of schemaValidator(resolveSchemaDir(schemaDir), crFile)(raw)) out.push(`${id}: ${e}`);
      continue;
    }
    const Model = kubernetesModel(o.apiVersion, o.kind);
    if (!Model) {
      out.push(`${id}: no schema known for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      new Model(raw).validate();
    } catch (e) {
      out.push(`${id}: ${(e as Error).message}`);
    }
  }
  return out;
}
