import { Problem } from './errors';

/**
 * Something a construct holds that no other construct may hold too: a VXLAN id in a cluster, a gateway node, a VPN
 * server with its credential. Claims with the same `key` from two constructs are a problem.
 */
export interface Claim {
  /** Identity of the thing claimed, including its scope (e.g. `cluster/prod/vxlan/42`). */
  readonly key: string;
  /** Where, in the construct's props, the claim comes from. */
  readonly path: string;
  /** What is claimed, for the message: `VXLAN id 42 in cluster "prod"`. */
  readonly what: string;
  /** The claim also covers every key below it (`…/egress/vpn` covers `…/egress/vpn/ns/media`). */
  readonly covers?: boolean;
  /** What to do about a clash, appended to its message: `set a different \`vxlanId\` on one of them`. @default - none */
  readonly remedy?: string;
}

/** The claims of one construct, with its path (cdk8s node path or Pulumi name). */
export interface ClaimSet {
  readonly construct: string;
  readonly claims: readonly Claim[];
}

/**
 * Every claim made twice, as problems `<construct path>:<prop path>`: the same key, or a key below one a covering
 * claim holds. O(n · depth) in claims.
 */
export function checkClaims(sets: readonly ClaimSet[]): Problem[] {
  const first = new Map<string, { construct: string; claim: Claim }>();
  const problems: Problem[] = [];
  const clash = (construct: string, claim: Claim, seen: { construct: string; claim: Claim }) => {
    if (seen.construct === construct && seen.claim.path === claim.path) return;
    problems.push({ path: `${construct}:${claim.path}`, code: 'claimed-twice', message: `${claim.what} is already claimed by ${seen.construct}:${seen.claim.path}${claim.remedy ? `: ${claim.remedy}` : ''}` });
  };
  // Keys below each key, for covering claims that come after them.
  const below = new Map<string, { construct: string; claim: Claim }[]>();
  for (const set of sets) {
    for (const claim of set.claims) {
      const seen = first.get(claim.key);
      if (seen) {
        clash(set.construct, claim, seen);
        continue;
      }
      const parts = claim.key.split('/');
      let reported = false;
      for (let i = parts.length - 1; i > 0 && !reported; i--) {
        const ancestor = first.get(parts.slice(0, i).join('/'));
        if (ancestor?.claim.covers && ancestor.construct !== set.construct) {
          clash(set.construct, claim, ancestor);
          reported = true;
        }
      }
      if (!reported && claim.covers) {
        const hit = (below.get(claim.key) ?? []).find((b) => b.construct !== set.construct);
        if (hit) {
          clash(set.construct, claim, hit);
          reported = true;
        }
      }
      if (reported) continue;
      const entry = { construct: set.construct, claim };
      first.set(claim.key, entry);
      for (let i = parts.length - 1; i > 0; i--) {
        const k = parts.slice(0, i).join('/');
        const list = below.get(k);
        if (list) list.push(entry);
        else below.set(k, [entry]);
      }
    }
  }
  return problems;
}

/** A VXLAN endpoint: a gateway's pods listening on a port, or a kill switch letting its pods reach them on a port. */
export interface VxlanEndpoint {
  /** The construct's path (cdk8s node path or Pulumi name). */
  readonly construct: string;
  readonly cluster: string;
  /** The gateway pods' namespace. */
  readonly namespace: string;
  /** The gateway pods' labels (a kill switch's `gatewayPodLabels`). */
  readonly podLabels: Readonly<Record<string, string>>;
  readonly port: number;
}

/**
 * Every kill switch that lets its pods reach a gateway's pods on another VXLAN port than the gateway uses (its
 * `gatewayPodLabels` select the gateway's pods in the gateway's namespace and cluster): the kill switch would drop the
 * pods' VXLAN to the gateway. One problem per such kill switch, at `<construct>:vxlanPort`.
 */
export function checkVxlanPorts(gateways: readonly VxlanEndpoint[], killSwitches: readonly VxlanEndpoint[]): Problem[] {
  const problems: Problem[] = [];
  for (const k of killSwitches) {
    const labels = Object.entries(k.podLabels);
    const gateway = gateways.find((g) => g.cluster === k.cluster && g.namespace === k.namespace && labels.length > 0 && labels.every(([key, v]) => g.podLabels[key] === v));
    if (gateway && gateway.port !== k.port) {
      problems.push({ path: `${k.construct}:vxlanPort`, code: 'vxlan-port', message: `VXLAN to the gateway pods is allowed on UDP ${k.port}, but the gateway ${gateway.construct} uses ${gateway.port} (derived from its cni): set vxlanPort: ${gateway.port}` });
    }
  }
  return problems;
}

/** The pods a kill switch fences: a KillSwitch's selection, or the one `route()` writes for a routed workload. */
export interface Fence {
  /** The construct's path (cdk8s node path or Pulumi name); for a route, the gateway's. */
  readonly construct: string;
  readonly cluster: string;
  readonly namespace: string;
  /** The selected pods' labels (a route's: the workload's pod template labels). */
  readonly selector: Readonly<Record<string, string>>;
  /** For a route's kill switch: the routed workload (`<namespace>/<name>`) and the policy's name. */
  readonly route?: { readonly workload: string; readonly policy: string };
  /** A KillSwitch that acknowledges `duplicate-kill-switch`. */
  readonly acknowledged?: boolean;
}

/**
 * A warning for every KillSwitch that selects the pods of a workload routed through a VpnGateway (same cluster and
 * namespace, every label of its selector on the routed pods), at `<construct>:selector`. `route()` already writes
 * a kill switch for those pods, and policies add up: the pods may reach the union of what every policy selecting
 * them allows ("Network policies do not conflict; they are additive", kubernetes/website
 * content/en/docs/concepts/services-networking/network-policies.md; Cilium likewise allows the union of its rules),
 * so the second one can only widen the route's.
 */
export function checkDuplicateKillSwitches(fences: readonly Fence[]): Problem[] {
  const warnings: Problem[] = [];
  const routes = fences.filter((f) => f.route);
  for (const k of fences) {
    if (k.route || k.acknowledged) continue;
    const labels = Object.entries(k.selector);
    for (const r of routes) {
      if (r.cluster !== k.cluster || r.namespace !== k.namespace || labels.length === 0 || !labels.every(([key, v]) => r.selector[key] === v)) continue;
      warnings.push({
        path: `${k.construct}:selector`,
        code: 'duplicate-kill-switch',
        message: `this KillSwitch selects the pods of ${r.route!.workload}, which ${r.construct} routes and already fences with its kill switch ${r.namespace}/${r.route!.policy}: policies add up, so this one can only widen what those pods may reach; remove it or narrow its selector, or acknowledge 'duplicate-kill-switch' if you mean both`,
      });
    }
  }
  return warnings;
}

/**
 * Claims on the names of a construct's Kubernetes objects in its cluster: two constructs that emit an object of one
 * kind, namespace and name would overwrite each other on apply (the second replaces the first). A Namespace is left
 * out: two constructs may both create the namespace they share.
 */
export function objectClaims(objects: readonly { kind: string; metadata: { name?: string; namespace?: string } }[], cluster: string | undefined, path = 'name'): Claim[] {
  const c = cluster ?? 'default';
  return objects.filter((o) => o.kind !== 'Namespace').map((o) => {
    const at = `${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name ?? ''}`;
    return { key: `cluster/${c}/object/${o.kind}/${at}`, path, what: `${o.kind} ${at} in cluster "${c}" (one object: the second to apply replaces the first; set a distinct name on one of them)` };
  });
}
