import * as pulumi from '@pulumi/pulumi';
import { POD_SECURITY_LABEL } from '../model/pod-security';
import { declareNamespace } from './registry';
import type { RouteTransform } from './vpn-gateway';

const NAMESPACE_TYPE = 'kubernetes:core/v1:Namespace';

/**
 * A transformation that tells tunnelwright about the program's own Namespaces, so the Pod Security checks (a
 * VpnGateway's namespace, each workload `routeTransform()` routes) read their labels, as cdk8s's App reads every
 * Namespace in the app. Put it on each Namespace (`{ transformations: [registerNamespaces()] }`), or on the whole
 * stack before the first one (`pulumi.runtime.registerStackTransformation(registerNamespaces())`). It records the
 * Namespace's `metadata.name` and labels and changes nothing. A Namespace counts from its registration on: declare
 * it before the gateway and the workloads it admits. Its name and its `pod-security.kubernetes.io/*` labels must be
 * plain values (an auto-named Namespace, or one whose Pod Security labels are Outputs, is not recorded).
 *
 * @example new k8s.core.v1.Namespace('media', { metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }, { transformations: [registerNamespaces()] })
 */
export function registerNamespaces(): RouteTransform {
  return (args: { type: string; props: Record<string, unknown> }) => {
    if (args.type !== NAMESPACE_TYPE) return undefined;
    const metadata = args.props?.metadata as { name?: unknown; labels?: unknown } | undefined;
    if (typeof metadata?.name !== 'string') return undefined;
    const raw = typeof metadata.labels === 'object' && metadata.labels !== null && !pulumi.Output.isInstance(metadata.labels) ? (metadata.labels as Record<string, unknown>) : {};
    if (Object.entries(raw).some(([k, v]) => k.startsWith(`${POD_SECURITY_LABEL}/`) && typeof v !== 'string')) return undefined;
    declareNamespace(metadata.name, Object.fromEntries(Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === 'string')));
    return undefined;
  };
}
