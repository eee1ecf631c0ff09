import { CelInput, run } from '@bufbuild/cel';
import { planEgressSteering } from '../../src';
import { RESTEER_ADMISSION_VALIDATIONS } from '../../src/render/egress-steering/rbac';
import { failoverSteering, prodSteering } from '../helpers/fixtures';

/**
 * The re-steer credential's admission policy, its CEL run by a CEL evaluator (@bufbuild/cel) as kube-apiserver runs it
 * (k8s.io/apiserver pkg/admission/plugin/policy/validating: the match conditions first, a policy that does not match
 * admits; then every validation, and any that is false, or fails to evaluate under failurePolicy Fail, refuses). The
 * policy's variables are pure expressions: each `variables.<name>` is replaced by its expression before a run, which is
 * what their lazy evaluation gives. The objects are what the API server hands the policy: the Node (or CiliumNode)
 * before the patch (oldObject) and after it (object).
 */
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Verdict = { admitted: true } | { admitted: false; messages: string[] };

const objects = planEgressSteering(prodSteering()).objects;
const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
const binding = objects.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding')!;
const spec = policy.spec as {
  matchConditions: { name: string; expression: string }[];
  variables: { name: string; expression: string }[];
  validations: { expression: string; message: string }[];
  matchConstraints: { resourceRules: { apiGroups: string[]; resources: string[]; operations: string[] }[] };
};
const ACCOUNT = 'system:serviceaccount:kube-system:vpn-egress-resteer';
const UPLINK = 'tunnelwright.dev/egress-uplink';

/** CEL's input for a JSON value: objects as Maps, integers as int (bigint), as the API server's unstructured values are. */
function cel(v: Json): CelInput {
  if (Array.isArray(v)) return v.map(cel);
  if (v !== null && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, cel(x)]));
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return v;
}

function withVariables(expression: string, variables: { name: string; expression: string }[]): string {
  return expression.replace(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g, (_m, name: string) => `(${variables.find((x) => x.name === name)!.expression})`);
}

function evaluate(validations: { expression: string; message: string }[], oldObject: Json, object: Json, username = ACCOUNT, p: typeof spec = spec): Verdict {
  const bindings = { object: cel(object), oldObject: cel(oldObject), request: cel({ userInfo: { username }, operation: 'UPDATE' }) };
  if (!p.matchConditions.every((c) => run(c.expression, bindings) === true)) return { admitted: true };
  const messages = validations.filter((v) => {
    try {
      return run(withVariables(v.expression, p.variables), bindings) !== true;
    } catch {
      return true; // an evaluation error under failurePolicy Fail
    }
  }).map((v) => v.message);
  return messages.length === 0 ? { admitted: true } : { admitted: false, messages };
}

const node = (): { [k: string]: Json } => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'prod-gw',
    labels: { 'kubernetes.io/hostname': 'prod-gw', 'node-role.kubernetes.io/worker': '', [UPLINK]: '10.2.0.2-7' },
    annotations: { 'node.alpha.kubernetes.io/ttl': '0' },
  },
  spec: { podCIDR: '10.42.1.0/24', taints: [{ key: 'dedicated', value: 'vpn', effect: 'NoSchedule' }] },
});
const ciliumNode = (): { [k: string]: Json } => ({
  apiVersion: 'cilium.io/v2',
  kind: 'CiliumNode',
  metadata: { name: 'prod-gw', labels: { 'kubernetes.io/hostname': 'prod-gw', [UPLINK]: '10.2.0.2-7' } },
  spec: { addresses: [{ type: 'InternalIP', ip: '192.168.1.20' }], ipam: { podCIDRs: ['10.42.1.0/24'] } },
});
const changed = (base: () => { [k: string]: Json }, edit: (o: { [k: string]: Json }) => void) => {
  const o = base();
  edit(o);
  return o;
};
const labels = (o: { [k: string]: Json }) => (o.metadata as { labels: Record<string, string> }).labels;

const CASES: Array<[string, () => { [k: string]: Json }, (o: { [k: string]: Json }) => void, boolean]> = [
  ['Node: the uplink label to a new address and ifindex', node, (o) => { labels(o)[UPLINK] = '10.2.0.9-12'; }, true],
  ['Node: the uplink label removed (the tunnel gone)', node, (o) => { delete labels(o)[UPLINK]; }, true],
  ['Node: the uplink label added where there was none', () => changed(node, (o) => { delete labels(o)[UPLINK]; }), (o) => { labels(o)[UPLINK] = '10.2.0.2-7'; }, true],
  ['Node: an IPv6 uplink (":" written ".")', node, (o) => { labels(o)[UPLINK] = 'fd00..2-7'; }, true],
  ['Node: a taint removed', node, (o) => { (o.spec as { taints: Json[] }).taints = []; }, false],
  ['Node: a taint added', node, (o) => { (o.spec as { taints: Json[] }).taints.push({ key: 'x', effect: 'NoExecute' }); }, false],
  ['Node: cordoned (spec.unschedulable)', node, (o) => { (o.spec as Record<string, Json>).unschedulable = true; }, false],
  ['Node: another label changed (node-role)', node, (o) => { labels(o)['node-role.kubernetes.io/worker'] = 'x'; }, false],
  ['Node: another label added (node-restriction.kubernetes.io/)', node, (o) => { labels(o)['node-restriction.kubernetes.io/vpn'] = 'true'; }, false],
  ['Node: another label removed', node, (o) => { delete labels(o)['node-role.kubernetes.io/worker']; }, false],
  ['Node: the uplink label with a value that is no <address>-<ifindex>', node, (o) => { labels(o)[UPLINK] = 'anything'; }, false],
  ['Node: an annotation changed', node, (o) => { (o.metadata as { annotations: Record<string, string> }).annotations.x = 'y'; }, false],
  ['Node: a finalizer added', node, (o) => { (o.metadata as Record<string, Json>).finalizers = ['example.com/hold']; }, false],
  ['another Node (gw-2), its uplink label', () => changed(node, (o) => { (o.metadata as { name: string }).name = 'gw-2'; }), (o) => { labels(o)[UPLINK] = '10.2.0.9-12'; }, false],
  ['CiliumNode: the uplink label to a new value', ciliumNode, (o) => { labels(o)[UPLINK] = '10.2.0.9-12'; }, true],
  ['CiliumNode: its addresses changed', ciliumNode, (o) => { (o.spec as { addresses: Json[] }).addresses = [{ type: 'InternalIP', ip: '203.0.113.9' }]; }, false],
  ['CiliumNode: another label and the uplink at once', ciliumNode, (o) => { labels(o)[UPLINK] = '10.2.0.9-12'; labels(o).zone = 'a'; }, false],
  ['Node: the failover active label (this steering has no failover)', node, (o) => { labels(o)[ACTIVE] = 'true'; }, false],
];

// With failover the agents, under the same ServiceAccount, move the active label on the candidates (gw-1, gw-2).
const ACTIVE = 'egress-active.tunnelwright.dev/vpn-egress';
const failoverSpec = planEgressSteering({ ...failoverSteering(), acknowledge: ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages', 'default-kubeconfig'] }).objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!.spec as typeof spec;
const gw = (name: string) => () => changed(node, (o) => { (o.metadata as { name: string }).name = name; });
const FAILOVER_CASES: Array<[string, () => { [k: string]: Json }, (o: { [k: string]: Json }) => void, boolean]> = [
  ['gw-2: the active label set true (it took the role)', gw('gw-2'), (o) => { labels(o)[ACTIVE] = 'true'; }, true],
  ['gw-1: the active label removed (it gave the role up)', () => changed(gw('gw-1'), (o) => { labels(o)[ACTIVE] = 'true'; }), (o) => { delete labels(o)[ACTIVE]; }, true],
  ['gw-1: the active label with another value', gw('gw-1'), (o) => { labels(o)[ACTIVE] = 'yes'; }, false],
  ['gw-1: the active label and a taint at once', gw('gw-1'), (o) => { labels(o)[ACTIVE] = 'true'; (o.spec as { taints: Json[] }).taints = []; }, false],
  ['gw-1: another steering\'s active label', gw('gw-1'), (o) => { labels(o)['egress-active.tunnelwright.dev/other'] = 'true'; }, false],
  ['prod-gw (no candidate): the active label', node, (o) => { labels(o)[ACTIVE] = 'true'; }, false],
];

describe('the re-steer credential\'s admission policy (ValidatingAdmissionPolicy, its CEL evaluated)', () => {
  it('binds the policy with Deny, and matches updates of Nodes and CiliumNodes by the re-steer ServiceAccount only', () => {
    expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
    expect((policy.spec as { failurePolicy: string }).failurePolicy).toBe('Fail');
    expect(spec.matchConstraints.resourceRules.map((r) => `${r.apiGroups[0] || 'core'}/${r.resources[0]} ${r.operations.join(',')}`)).toEqual(['core/nodes UPDATE', 'cilium.io/ciliumnodes UPDATE']);
    // The kubelet, Cilium, an admin: the policy does not apply to them, whatever they change.
    const tainted = changed(node, (o) => { (o.spec as { taints: Json[] }).taints = []; });
    expect(evaluate(spec.validations, node(), tainted, 'system:node:prod-gw')).toEqual({ admitted: true });
    expect(evaluate(spec.validations, node(), tainted, 'system:serviceaccount:kube-system:cilium')).toEqual({ admitted: true });
  });

  it.each(CASES.map(([what, before, edit, admitted]) => [what, admitted, before, edit] as const))('%s: admitted %s', (_what, admitted, before, edit) => {
    const verdict = evaluate(spec.validations, before(), changed(before, edit));
    expect(verdict.admitted).toBe(admitted);
  });

  it.each(FAILOVER_CASES.map(([what, before, edit, admitted]) => [what, admitted, before, edit] as const))('with failover, %s: admitted %s', (_what, admitted, before, edit) => {
    expect(evaluate(failoverSpec.validations, before(), changed(before, edit), ACCOUNT, failoverSpec).admitted).toBe(admitted);
  });

  // The control of each refusal: every validation is needed. Without it, a case it exists for is admitted.
  it.each(RESTEER_ADMISSION_VALIDATIONS.map((v) => [v.message]))('without the validation "%s", a refused case is admitted', (message) => {
    const without = spec.validations.filter((v) => v.message !== message);
    expect(without).toHaveLength(spec.validations.length - 1);
    const nowAdmitted = CASES.filter(([, before, edit, admitted]) => !admitted && evaluate(without, before(), changed(before, edit)).admitted).length
      + FAILOVER_CASES.filter(([, before, edit, admitted]) => !admitted && evaluate(without, before(), changed(before, edit), ACCOUNT, failoverSpec).admitted).length;
    expect(nowAdmitted).toBeGreaterThan(0);
  });

  it('names the gateway node and the uplink label in variables, never in the expressions', () => {
    const other = planEgressSteering({ ...prodSteering(), gatewayNode: 'edge-7', uplinkLabel: 'example.com/up' }).objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
    const o = other.spec as typeof spec;
    expect(o.validations).toEqual(spec.validations);
    expect(o.variables.filter((v) => v.name === 'nodes' || v.name === 'uplink')).toEqual([{ name: 'nodes', expression: '[\'edge-7\']' }, { name: 'uplink', expression: '\'example.com/up\'' }]);
  });
});
