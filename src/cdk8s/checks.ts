import { ApiObject, Chart } from 'cdk8s';
import { IConstruct } from 'constructs';
import { Problem } from '../errors';
import { HostContribution, mergeContributions } from '../host/host-plan';
import { IgnitionVersion } from '../host/ignition';
import { checkClaims, checkDuplicateKillSwitches, checkVxlanPorts, VxlanEndpoint } from '../invariants';
import { checkPodSecurity } from '../model/pod-security';
import type { AutoscalerTarget } from '../model/vpn-gateway';
import { HostPlan } from '../types';
import { isTunnelwrightConstruct } from './identity';

/** The cross-construct checks of every tunnelwright construct under `root`, and each node's merged host plan. */
export interface AppChecks {
  readonly problems: Problem[];
  readonly warnings: Problem[];
  readonly hosts: { plan: HostPlan; ignitionVersion: IgnitionVersion }[];
}

/**
 * Claims made twice, host files written twice differently, namespaces whose Pod Security level rejects the pods the
 * constructs make or route, and kill switches that reach a gateway on another VXLAN port than it uses; warnings for
 * namespaces not in the app and for a KillSwitch that selects pods a route already fences. One function
 * for tunnelwright's App (which runs it before writing anything) and for the validation every construct adds, so the
 * invariants hold under cdk8s's own App and `Testing.app()` too.
 */
export function appChecks(root: IConstruct): AppChecks {
  const constructs = root.node.findAll().filter(isTunnelwrightConstruct);
  const problems = checkClaims(constructs.map((c) => ({ construct: c.node.path, claims: c._claims })));
  const pods = checkPodSecurity(constructs.flatMap((c) => c._podSecurity), namespacesOf(root));
  problems.push(...pods.problems);
  const gateways = constructs.flatMap((c) => (c._vxlan?.gateway ? [c._vxlan.gateway] : []));
  const killSwitches = constructs.flatMap((c) => (c._vxlan?.killSwitch ? [c._vxlan.killSwitch] : []));
  problems.push(...checkVxlanPorts(gateways, killSwitches));
  for (const c of constructs) problems.push(...(c._synthProblems?.() ?? []));
  const contributions: HostContribution[] = constructs.flatMap((c) => c._hosts.map((h) => ({ construct: c.node.path, ...h })));
  const merged = mergeContributions(contributions);
  problems.push(...merged.problems);
  const warnings = [...pods.warnings, ...checkDuplicateKillSwitches(constructs.flatMap((c) => c._fences ?? []))];
  return { problems, warnings, hosts: merged.plans };
}

/** Every HorizontalPodAutoscaler in the app (the library's and yours): what it scales, and where. */
export function autoscalersOf(root: IConstruct): AutoscalerTarget[] {
  const out: AutoscalerTarget[] = [];
  for (const c of root.node.findAll()) {
    if (!(c instanceof ApiObject) || c.kind !== 'HorizontalPodAutoscaler') continue;
    const json = c.toJson() as { metadata?: { namespace?: string }; spec?: { scaleTargetRef?: { kind?: string; name?: string } } };
    const ref = json.spec?.scaleTargetRef;
    if (typeof ref?.kind === 'string' && typeof ref.name === 'string') out.push({ at: c.node.path, namespace: json.metadata?.namespace ?? Chart.of(c).namespace ?? 'default', kind: ref.kind, name: ref.name });
  }
  return out;
}

/** Every Namespace object in the app (the library's and yours), by name, with its labels. */
export function namespacesOf(root: IConstruct): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const c of root.node.findAll()) {
    if (!(c instanceof ApiObject) || c.kind !== 'Namespace') continue;
    const json = c.toJson() as { metadata?: { name?: string; labels?: Record<string, string> } };
    if (json.metadata?.name) out.set(json.metadata.name, json.metadata.labels ?? {});
  }
  return out;
}

/** The VXLAN endpoints a construct declares, for `checkVxlanPorts`. */
export interface VxlanEndpoints {
  readonly gateway?: VxlanEndpoint;
  readonly killSwitch?: VxlanEndpoint;
}
