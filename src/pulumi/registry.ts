import { Problem, throwIfProblems } from '../errors';
import { mergeContributions } from '../host/host-plan';
import { IgnitionVersion } from '../host/ignition';
import { checkClaims, checkDuplicateKillSwitches, checkVxlanPorts, ClaimSet, Fence, VxlanEndpoint } from '../invariants';
import { HostPlan } from '../types';

/**
 * The module-level registry of one Pulumi program: each component adds its claims and host plans here and is
 * refused (before it registers any child) when they clash with an earlier component's.
 */
interface Entry extends ClaimSet {
  readonly hosts: readonly { plan: HostPlan; ignitionVersion: IgnitionVersion }[];
  readonly vxlan?: { readonly gateway?: VxlanEndpoint; readonly killSwitch?: VxlanEndpoint };
}

const entries: Entry[] = [];

/** The Namespaces the program declared (its own, through `registerNamespaces()`, and the components'), by name. */
const namespaces = new Map<string, Record<string, string>>();

/** The pods fenced so far: each KillSwitch's selection and each route's. */
const fences: Fence[] = [];

/** Checks a component against every earlier one and records it; throws ValidationError on a clash. */
export function registerComponent(entry: Entry): void {
  const problems: Problem[] = checkClaims([...entries, entry]).filter((p) => p.path.startsWith(`${entry.construct}:`));
  if (entries.some((e) => e.construct === entry.construct)) {
    problems.push({ path: entry.construct, code: 'duplicate-name', message: `a tunnelwright component named "${entry.construct}" already exists in this program` });
  }
  // Earlier components were consistent among themselves: only plans on this component's nodes can clash.
  const nodes = new Set(entry.hosts.map((h) => h.plan.node));
  const earlier = entries.flatMap((e) => e.hosts.filter((h) => nodes.has(h.plan.node)).map((h) => ({ ...h, construct: e.construct })));
  if (earlier.length > 0) problems.push(...mergeContributions([...earlier, ...entry.hosts.map((h) => ({ ...h, construct: entry.construct }))]).problems);
  // A kill switch and a gateway that disagree on the VXLAN port, whichever of the two comes second.
  const all = [...entries, entry];
  const ports = checkVxlanPorts(all.flatMap((e) => (e.vxlan?.gateway ? [e.vxlan.gateway] : [])), all.flatMap((e) => (e.vxlan?.killSwitch ? [e.vxlan.killSwitch] : [])));
  problems.push(...ports.filter((p) => p.path.startsWith(`${entry.construct}:`) || p.message.includes(`gateway ${entry.construct} uses`)));
  throwIfProblems(problems, 'Pulumi program');
  entries.push(entry);
}

/** Forgets every registered component (for tests that run several programs in one process). */
export function resetRegistry(): void {
  entries.length = 0;
  namespaces.clear();
  fences.length = 0;
}

/**
 * Records the pods a KillSwitch or a route fences, and returns the `duplicate-kill-switch` warnings it makes with the
 * earlier ones (a KillSwitch selecting routed pods), whichever of the two comes second.
 */
export function registerFence(fence: Fence): Problem[] {
  const warnings = checkDuplicateKillSwitches(fence.route ? [...fences.filter((f) => !f.route), fence] : [fence, ...fences.filter((f) => f.route)]);
  fences.push(fence);
  return warnings;
}

/** Records a Namespace of the program with its labels (a later declaration of the same name replaces it). */
export function declareNamespace(name: string, labels: Readonly<Record<string, string>>): void {
  namespaces.set(name, { ...labels });
}

/** The Namespaces declared so far, by name, with their labels: what the Pod Security checks read. */
export function declaredNamespaces(): ReadonlyMap<string, Readonly<Record<string, string>>> {
  return namespaces;
}

/** Each node's host plans merged over every component registered so far. */
export function registeredHosts(): { node: string; plans: HostPlan[]; ignitionVersion: IgnitionVersion }[] {
  const byNode = new Map<string, { node: string; plans: HostPlan[]; ignitionVersion: IgnitionVersion }>();
  for (const e of entries) {
    for (const h of e.hosts) {
      const n = byNode.get(h.plan.node) ?? { node: h.plan.node, plans: [], ignitionVersion: h.ignitionVersion };
      n.plans.push(h.plan);
      byNode.set(h.plan.node, n);
    }
  }
  return [...byNode.values()];
}
