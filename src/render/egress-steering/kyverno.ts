import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { KubeObject } from '../../types';
import { MANAGED, RESTEER_NAMESPACE } from './constants';
import { admissionVariables, RESTEER_ADMISSION_VALIDATIONS } from './rbac';

/** The kinds the Kyverno variant replaces. */
export const VAP_KINDS: ReadonlySet<string> = new Set(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);

/**
 * The re-steer credential's scope as a Kyverno ClusterPolicy (kyverno.io/v1), for clusters that run Kyverno and not
 * Kubernetes 1.30's ValidatingAdmissionPolicy: the same variables and expressions, under `validate.cel`
 * (Kyverno 1.11+; kyverno api/kyverno/v1 spec_types.go `Validation.CEL *CEL`, whose `Expressions` are
 * admissionregistration Validations and `Variables` admissionregistration Variables). The re-steer ServiceAccount is
 * matched as a subject, so the kubelet, Cilium and the admins are not this policy's. `background: false`: the policy
 * reads `oldObject` and the request, which exist only at admission.
 */
export function resteerKyvernoPolicy(s: EgressSteeringSpec, sa = `${s.name}-resteer`): KubeObject {
  return {
    apiVersion: 'kyverno.io/v1',
    kind: 'ClusterPolicy',
    metadata: { name: `${sa}-scope`, labels: MANAGED },
    spec: {
      validationFailureAction: 'Enforce',
      background: false,
      rules: [{
        name: 'resteer-scope',
        match: {
          any: [{
            resources: { kinds: ['Node', 'cilium.io/*/CiliumNode'], operations: ['UPDATE'] },
            subjects: [{ kind: 'ServiceAccount', name: sa, namespace: RESTEER_NAMESPACE }],
          }],
        },
        validate: {
          failureAction: 'Enforce',
          cel: { variables: admissionVariables(s), expressions: RESTEER_ADMISSION_VALIDATIONS.map((v) => ({ ...v })) },
        },
      }],
    },
  } as KubeObject;
}
