import type { ClusterRole as IClusterRole } from 'kubernetes-types/rbac/v1';
import type { ClusterRoleBinding as IClusterRoleBinding } from 'kubernetes-types/rbac/v1';
import type { Secret as ISecret } from 'kubernetes-types/core/v1';
import type { ServiceAccount as IServiceAccount } from 'kubernetes-types/core/v1';
import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { KubeObject } from '../../types';
import { candidatesOf } from '../egress-steering-failover';
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
  return [account, token, role, binding] as KubeObject[];
}
