import { planEgressSteering } from '../../src';
import { prodSteering } from '../helpers/fixtures';

/**
 * The re-steer scope as a Kyverno ClusterPolicy (resteerAdmission: 'kyverno'): Kyverno's field names (kyverno.io/v1
 * ClusterPolicy: spec.rules[].match.any[].resources.kinds/operations, .subjects; validate.cel.expressions/variables),
 * and the very CEL of the ValidatingAdmissionPolicy, which test/render/resteer-admission.test.ts evaluates case by case.
 */
const vapObjects = planEgressSteering(prodSteering()).objects;
const kyvObjects = planEgressSteering({ ...prodSteering(), resteerAdmission: 'kyverno' }).objects;
const vap = vapObjects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
const policy = kyvObjects.find((o) => o.kind === 'ClusterPolicy' && o.metadata?.name === 'vpn-egress-resteer-scope')!;
type Rule = { name: string; match: { any: { resources: { kinds: string[]; operations: string[] }; subjects: { kind: string; name: string; namespace: string }[] }[] }; validate: { failureAction: string; cel: { expressions: unknown[]; variables: unknown[] } } };
const spec = policy?.spec as { validationFailureAction: string; background: boolean; rules: Rule[] };

describe('resteerAdmission', () => {
  it('defaults to the ValidatingAdmissionPolicy and its binding, and no Kyverno policy for the re-steer account', () => {
    expect(vapObjects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy')).map((o) => o.kind).sort()).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    expect(vapObjects.filter((o) => o.kind === 'ClusterPolicy' && o.metadata?.name === 'vpn-egress-resteer-scope')).toEqual([]);
  });

  it("with 'kyverno' emits the ClusterPolicy instead of the ValidatingAdmissionPolicy objects", () => {
    expect(policy).toBeDefined();
    expect(kyvObjects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
    expect(kyvObjects.length).toBe(vapObjects.length - 1);
  });

  it('enforces at admission only, for UPDATE of Node and CiliumNode by the re-steer ServiceAccount', () => {
    expect(policy.apiVersion).toBe('kyverno.io/v1');
    expect(spec.validationFailureAction).toBe('Enforce');
    expect(spec.background).toBe(false);
    expect(spec.rules).toHaveLength(1);
    const [rule] = spec.rules;
    expect(rule.name).toMatch(/^[a-z0-9-]+$/);
    expect(rule.validate.failureAction).toBe('Enforce');
    expect(rule.match.any).toEqual([{
      resources: { kinds: ['Node', 'cilium.io/*/CiliumNode'], operations: ['UPDATE'] },
      subjects: [{ kind: 'ServiceAccount', name: 'vpn-egress-resteer', namespace: 'kube-system' }],
    }]);
  });

  it("carries the ValidatingAdmissionPolicy's variables and validations unchanged", () => {
    const v = vap.spec as { variables: unknown[]; validations: unknown[] };
    expect(spec.rules[0].validate.cel.variables).toEqual(v.variables);
    expect(spec.rules[0].validate.cel.expressions).toEqual(v.validations);
    expect(spec.rules[0].validate.cel.expressions.length).toBeGreaterThan(0);
  });

  it('refuses any other value', () => {
    expect(() => planEgressSteering({ ...prodSteering(), resteerAdmission: 'gatekeeper' as never })).toThrow(/resteerAdmission/);
  });
});
