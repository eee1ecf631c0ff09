import { Problem } from '../errors';
import { HostFile, HostPlan } from '../types';
import { IgnitionVersion } from './ignition';

/** True when any file in the plan embeds a secret value. */
export function hostPlanHasSecret(plan: HostPlan): boolean {
  return plan.files.some((f) => f.secret === true);
}

/**
 * Merges the plans of one node (one machine takes one user-data). The same path, unit or drop-in written twice with
 * different content is a problem; written twice the same, it is kept once. `sources` names where each plan came from,
 * for the problem paths.
 */
export function mergeHostPlans(plans: readonly HostPlan[], sources: readonly string[] = []): { plans: HostPlan[]; problems: Problem[] } {
  const byNode = new Map<string, { plan: HostPlan; from: HostPlan | null; fileAt: Map<string, { file: HostFile; src: string }>; unitAt: Map<string, { content?: string; src: string }>; dropinAt: Map<string, { content: string; src: string }> }>();
  const problems: Problem[] = [];
  plans.forEach((p, i) => {
    const src = sources[i] ?? `hosts[${i}]`;
    let acc = byNode.get(p.node);
    if (!acc) {
      acc = { plan: { node: p.node, files: [], units: [], dropins: [], commands: [], packages: [] }, from: p, fileAt: new Map(), unitAt: new Map(), dropinAt: new Map() };
      byNode.set(p.node, acc);
    } else {
      // A second plan for the node: the node is no longer one plan's copy.
      acc.from = null;
    }
    const { plan, fileAt, unitAt, dropinAt } = acc;
    for (const f of p.files) {
      const seen = fileAt.get(f.path);
      if (!seen) {
        // The file itself, not its content: a lazy content (a mesh's interface config) is read only on a conflict.
        fileAt.set(f.path, { file: f, src });
        plan.files.push(f);
      } else if (seen.file !== f && (seen.file.mode !== f.mode || seen.file.owner !== f.owner || seen.file.content !== f.content)) {
        problems.push({ path: `${src}:${f.path}`, code: 'host-file-conflict', message: `node "${p.node}": ${f.path} is also written by ${seen.src} with different content; one machine takes one version of a file` });
      }
    }
    for (const u of p.units) {
      const seen = unitAt.get(u.name);
      if (!seen) {
        unitAt.set(u.name, { content: u.content, src });
        plan.units.push(u);
      } else if (u.content !== undefined && seen.content !== undefined && seen.content !== u.content) {
        problems.push({ path: `${src}:${u.name}`, code: 'host-file-conflict', message: `node "${p.node}": unit ${u.name} is also written by ${seen.src} with different content` });
      } else {
        const idx = plan.units.findIndex((x) => x.name === u.name);
        const prev = plan.units[idx];
        plan.units[idx] = { name: u.name, content: prev.content ?? u.content, enabled: (prev.enabled ?? false) || (u.enabled ?? false) || undefined };
        // The unit's writer is the source to name in a later conflict: the first to give content.
        unitAt.set(u.name, prev.content !== undefined ? seen : { content: u.content, src });
      }
    }
    for (const d of p.dropins) {
      const key = `${d.unit}/${d.name}`;
      const seen = dropinAt.get(key);
      if (!seen) {
        dropinAt.set(key, { content: d.content, src });
        plan.dropins.push(d);
      } else if (seen.content !== d.content) {
        problems.push({ path: `${src}:${key}`, code: 'host-file-conflict', message: `node "${p.node}": drop-in ${key} is also written by ${seen.src} with different content` });
      }
    }
    for (const c of p.commands) if (!plan.commands.includes(c)) plan.commands.push(c);
    for (const pkg of p.packages) if (!plan.packages.includes(pkg)) plan.packages.push(pkg);
  });
  return {
    plans: [...byNode.values()].map((a) => {
      // A node one plan makes alone: a rendering of that plan is the copy's while their contents agree (issue 30).
      if (a.from) copies.set(a.plan, a.from);
      return a.plan;
    }),
    problems,
  };
}

const copies = new WeakMap<HostPlan, HostPlan>();

/** The one plan `mergeHostPlans` made `plan` from, when one plan made its node. */
export function mergedFrom(plan: HostPlan): HostPlan | undefined {
  return copies.get(plan);
}

/**
 * A oneshot unit that loads an nft file and loads it again whenever nftables.service starts, reloads or stops: the
 * distribution's nftables.service runs `flush ruleset` (its /etc/nftables.conf) then, which would drop the table.
 * `head` and `tail` are the [Unit] lines before and after that binding.
 */
export function nftLoaderUnit(o: { description: string; file: string; head?: readonly string[]; tail?: readonly string[]; wantedBy: string }): string {
  return [
    '[Unit]',
    `Description=${o.description}`,
    ...(o.head ?? []),
    'After=nftables.service',
    'PartOf=nftables.service',
    'ReloadPropagatedFrom=nftables.service',
    ...(o.tail ?? []),
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    `ExecStart=/usr/sbin/nft -f ${o.file}`,
    `ExecReload=/usr/sbin/nft -f ${o.file}`,
    '',
    '[Install]',
    `WantedBy=${o.wantedBy}`,
    '',
  ].join('\n');
}

/** Systemd's path for a unit or drop-in file. */
export function unitPath(name: string): string {
  return `/etc/systemd/system/${name}`;
}

export function dropinPath(unit: string, name: string): string {
  return `/etc/systemd/system/${unit}.d/${name}`;
}

/** One construct's host plan, as the cross-construct check sees it. */
export interface HostContribution {
  /** The construct's path (cdk8s node path or Pulumi name). */
  readonly construct: string;
  readonly plan: HostPlan;
  readonly ignitionVersion: IgnitionVersion;
}

/**
 * The host plans of every construct of an App or program, merged per node, with the problems: a file written twice
 * differently, or one node given two Ignition versions. Each problem is reported at the later contribution.
 */
export function mergeContributions(contributions: readonly HostContribution[]): { plans: { plan: HostPlan; ignitionVersion: IgnitionVersion }[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const versions = new Map<string, { version: IgnitionVersion; source: string }>();
  for (const c of contributions) {
    const v = versions.get(c.plan.node);
    if (!v) versions.set(c.plan.node, { version: c.ignitionVersion, source: c.construct });
    else if (v.version !== c.ignitionVersion) {
      problems.push({ path: `${c.construct}:ignitionVersion`, code: 'ignition-version', message: `node "${c.plan.node}" gets Ignition ${c.ignitionVersion} here but ${v.version} from ${v.source}: one machine takes one config` });
    }
  }
  const merged = mergeHostPlans(contributions.map((c) => c.plan), contributions.map((c) => c.construct));
  return { plans: merged.plans.map((plan) => ({ plan, ignitionVersion: versions.get(plan.node)!.version })), problems: [...problems, ...merged.problems] };
}

const lengths = new WeakMap<HostFile, () => number>();

/** Records how to get a lazy content's length without rendering it (see `contentLength`). */
export function rememberLength(file: HostFile, length: () => number): void {
  lengths.set(file, length);
}

/** A file's content length in UTF-16 code units, without rendering a lazy content. */
export function contentLength(f: HostFile): number {
  const lazy = lengths.get(f);
  return lazy ? lazy() : f.content.length;
}
