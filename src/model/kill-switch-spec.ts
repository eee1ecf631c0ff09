import { Problem, throwIfProblems } from '../errors';
import type { Cidr } from './common';
import { checkKillSwitch, DEFAULT_VXLAN_PORT, HostKillSwitch, KillSwitchProps } from './kill-switch';
import { boundedName } from './labels';

/**
 * KillSwitch's props parsed once (`parseKillSwitch`): defaults applied (the policy's name, DNS, the flavour, the
 * gateway's namespace and VXLAN port). The render functions take only this.
 */
export interface KillSwitchSpec {
  readonly cluster: string;
  /** `name`, else derived from the selector (`killSwitchName`). */
  readonly name: string;
  readonly selector: Readonly<Record<string, string>>;
  readonly namespace: string;
  readonly allowCidrs: readonly Cidr[];
  readonly allowDns: boolean;
  /** The gateway pods the selected pods may reach by VXLAN: their labels, namespace and port, defaults applied. */
  readonly gateway?: { readonly podLabels: Readonly<Record<string, string>>; readonly namespace: string; readonly vxlanPort: number };
  readonly flavor: 'kubernetes' | 'cilium';
  /** The host part, as checked. */
  readonly host?: HostKillSwitch;
  /** `acknowledge` holds `duplicate-kill-switch`. */
  readonly duplicateAcknowledged: boolean;
}

/** The policy name: `name`, else the selector's values joined, then `-kill-switch`, as a DNS label; past 63 characters, its start, 8 hex digits of the SHA-256 of the whole, `-kill-switch`. */
export function killSwitchName(props: Pick<KillSwitchProps, 'name' | 'selector'>): string {
  if (props.name) return props.name;
  const base = Object.keys(props.selector).sort().map((k) => props.selector[k]).join('-').toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '');
  return boundedName(base || 'pods', '-kill-switch');
}

/**
 * The spec of props `checkKillSwitch` accepted, or that a construct derived from its own spec (VpnGateway's route
 * derives one kill switch per routed workload).
 */
export function killSwitchSpecOf(props: KillSwitchProps): KillSwitchSpec {
  return {
    cluster: props.cluster ?? 'default',
    name: killSwitchName(props),
    selector: props.selector,
    namespace: props.namespace,
    allowCidrs: props.allowCidrs,
    allowDns: props.allowDns !== false,
    ...(props.gatewayPodLabels ? { gateway: { podLabels: props.gatewayPodLabels, namespace: props.gatewayNamespace ?? props.namespace, vxlanPort: props.vxlanPort ?? DEFAULT_VXLAN_PORT } } : {}),
    flavor: props.flavor ?? 'kubernetes',
    ...(props.host ? { host: props.host } : {}),
    duplicateAcknowledged: (props.acknowledge ?? []).includes('duplicate-kill-switch'),
  };
}

/** Parses KillSwitch props: the spec, or the problems (all at once). */
export function parseKillSwitch(input: unknown): { problems: Problem[]; warnings: Problem[]; spec?: KillSwitchSpec } {
  const checked = checkKillSwitch(input);
  return { problems: checked.problems, warnings: checked.warnings, ...(checked.value ? { spec: killSwitchSpecOf(checked.value) } : {}) };
}

/** The spec of KillSwitch props, or a ValidationError with all their problems. */
export function killSwitchSpec(input: unknown): KillSwitchSpec {
  const parsed = parseKillSwitch(input);
  throwIfProblems(parsed.problems, 'KillSwitch props');
  return parsed.spec!;
}
