import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { KubeObject } from '../../types';
import { MANAGED, RESTEER_NAMESPACE } from './constants';
import { admissionVariables, RESTEER_ADMISSION_VALIDATIONS } from './rbac';

/** The kinds the Kyverno variant replaces. */
export const VAP_KINDS: ReadonlySet<string> = new Set(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);

/**
 * The re-steer credential's scope as a Kyverno ClusterPolicy (kyverno.io/v1), for clusters that run Kyverno and not
 * Kubernetes 1.30's ValidatingAdmissionPolicy: the same variables and expressions, under `validate.cel`
 * (Kyverno 1.11+). Field names as kyverno v1.19.0 api/kyverno/v1/spec_types.go spells them: `validate.cel` (:518,
 * `CEL *CEL`), its `expressions` (:601, admissionregistration/v1 Validations) and `variables` (:619,
 * admissionregistration/v1 Variables); the rule-level `failureAction` (:474, Kyverno 1.13+) and the spec-level
 * `validationFailureAction` (:69, deprecated, default Audit) both Enforce, so 1.11 and 1.12 enforce too; `background`
 * (:91). The re-steer ServiceAccount is matched as a subject (user_info_types.go:23, rbac/v1 Subjects), so the
 * kubelet, Cilium and the admins are not this policy's. `background: false`: the policy reads `oldObject`, which
 * exists only at admission. Kyverno's chart skips Nodes by default (charts/kyverno/values.yaml:343 `[Node,*,*]`):
 * docs/egress-steering.md tells the user to remove that filter.
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
