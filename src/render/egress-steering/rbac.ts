import type { ClusterRole as IClusterRole } from 'kubernetes-types/rbac/v1';
import type { ClusterRoleBinding as IClusterRoleBinding } from 'kubernetes-types/rbac/v1';
import type { Secret as ISecret } from 'kubernetes-types/core/v1';
import type { ServiceAccount as IServiceAccount } from 'kubernetes-types/core/v1';
import type { NamedRuleWithOperations, ValidatingAdmissionPolicy as IValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding as IValidatingAdmissionPolicyBinding } from 'kubernetes-types/admissionregistration/v1';
import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { KubeObject } from '../../types';
import { candidatesOf } from '../egress-steering-failover';
import { activeLabel } from '../../model/egress-steering-failover';
import { MANAGED, RESTEER_NAMESPACE } from './constants';

/** The re-steer hook's ServiceAccount, its token Secret, and a ClusterRole that reaches only the gateway node. */
export function resteerRbac(s: EgressSteeringSpec): KubeObject[] {
  const sa = `${s.name}-resteer`;
  const account: IServiceAccount = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: RESTEER_NAMESPACE, labels: MANAGED } };
  const token: ISecret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/service-account-token',
    metadata: { name: `${sa}-token`, namespace: RESTEER_NAMESPACE, labels: MANAGED, annotations: { 'kubernetes.io/service-account.name': sa } },
  };
  const role: IClusterRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: sa, labels: MANAGED },
    // Only the gateway node (with failover: the candidates), and only what labelling needs.
    rules: [
      { apiGroups: [''], resources: ['nodes'], resourceNames: candidatesOf(s).map((c) => c.node), verbs: ['get', 'patch'] },
      { apiGroups: ['cilium.io'], resources: ['ciliumnodes'], resourceNames: candidatesOf(s).map((c) => c.node), verbs: ['get', 'patch'] },
    ],
  };
  const binding: IClusterRoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: sa, labels: MANAGED },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: RESTEER_NAMESPACE }],
  };
  return [account, token, role, binding, ...resteerAdmission(s, sa)] as KubeObject[];
}

/**
 * What the re-steer credential may change, enforced at admission: a patch by its ServiceAccount to a Node or a
 * CiliumNode must be to the gateway node, change no label but the uplink label (whose value must read
 * `<address>-<ifindex>`), and leave the annotations, finalizers, owner references and spec (taints included)
 * unchanged. RBAC alone lets it patch anything on that node; NodeRestriction does not apply to it (it is no kubelet).
 * The expressions are fixed text; the node, the label and the account reach them as variables.
 */
export const RESTEER_ADMISSION_VALIDATIONS: readonly { readonly expression: string; readonly message: string }[] = [
  { expression: 'object.metadata.name in variables.nodes', message: 'the re-steer ServiceAccount may change only the gateway node (with failover: its candidates)' },
  {
    expression: 'variables.labels.all(k, k == variables.uplink || k == variables.active || (k in variables.oldLabels && variables.oldLabels[k] == variables.labels[k])) && variables.oldLabels.all(k, k == variables.uplink || k == variables.active || k in variables.labels)',
    message: 'the re-steer ServiceAccount may change only the uplink label (with failover: and the active label): every other label unchanged',
  },
  { expression: '!(variables.active in variables.labels) || variables.labels[variables.active] == \'true\'', message: 'the active label reads true' },
  { expression: '!(variables.uplink in variables.labels) || variables.labels[variables.uplink].matches(\'^[0-9A-Fa-f.]+-[0-9]+$\')', message: 'the uplink label reads <address>-<ifindex>' },
  { expression: 'variables.annotations == variables.oldAnnotations', message: 'the re-steer ServiceAccount may not change annotations' },
  { expression: 'variables.finalizers == variables.oldFinalizers && variables.owners == variables.oldOwners', message: 'the re-steer ServiceAccount may not change finalizers or owner references' },
  { expression: 'variables.spec == variables.oldSpec', message: 'the re-steer ServiceAccount may not change the spec (taints, podCIDRs, unschedulable, CiliumNode addresses)' },
];

/** The policy's variables, each an expression: the node and label as string literals (names and label keys need no escaping: DNS names and label keys have no quote), the rest fields read with a default. */
export function admissionVariables(s: EgressSteeringSpec): { name: string; expression: string }[] {
  const field = (obj: string, path: string, empty: string) => `has(${obj}.${path}) ? ${obj}.${path} : ${empty}`;
  return [
    { name: 'nodes', expression: `[${candidatesOf(s).map((c) => `'${c.node}'`).join(', ')}]` },
    { name: 'uplink', expression: `'${s.uplinkLabel}'` },
    // With failover, the agents (the same ServiceAccount) move the active label; without, '' (no label key is empty).
    { name: 'active', expression: `'${s.failover ? activeLabel(s.name) : ''}'` },
    { name: 'labels', expression: field('object', 'metadata.labels', '{}') },
    { name: 'oldLabels', expression: field('oldObject', 'metadata.labels', '{}') },
    { name: 'annotations', expression: field('object', 'metadata.annotations', '{}') },
    { name: 'oldAnnotations', expression: field('oldObject', 'metadata.annotations', '{}') },
    { name: 'finalizers', expression: field('object', 'metadata.finalizers', '[]') },
    { name: 'oldFinalizers', expression: field('oldObject', 'metadata.finalizers', '[]') },
    { name: 'owners', expression: field('object', 'metadata.ownerReferences', '[]') },
    { name: 'oldOwners', expression: field('oldObject', 'metadata.ownerReferences', '[]') },
    { name: 'spec', expression: field('object', 'spec', '{}') },
    { name: 'oldSpec', expression: field('oldObject', 'spec', '{}') },
  ];
}

/** A rule with its `resources` (the API has them; kubernetes-types 1.30.0 leaves them out of NamedRuleWithOperations). */
function rule(r: { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] }): NamedRuleWithOperations {
  return r as NamedRuleWithOperations;
}

/** The ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.30+) and its binding (Deny). */
export function resteerAdmission(s: EgressSteeringSpec, sa = `${s.name}-resteer`): KubeObject[] {
  const name = `${sa}-scope`;
  const policy: IValidatingAdmissionPolicy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: MANAGED },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          rule({ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }),
          rule({ apiGroups: ['cilium.io'], apiVersions: ['*'], operations: ['UPDATE'], resources: ['ciliumnodes'] }),
        ],
      },
      // Only the re-steer hook's requests: the kubelet, Cilium and the admins are not this policy's.
      matchConditions: [{ name: 'resteer-service-account', expression: `request.userInfo.username == 'system:serviceaccount:${RESTEER_NAMESPACE}:${sa}'` }],
      variables: admissionVariables(s),
      validations: RESTEER_ADMISSION_VALIDATIONS.map((v) => ({ ...v })),
    },
  };
  const binding: IValidatingAdmissionPolicyBinding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels: MANAGED },
    spec: { policyName: name, validationActions: ['Deny'] },
  };
  return [policy, binding] as KubeObject[];
}
