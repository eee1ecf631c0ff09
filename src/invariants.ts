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
}

/** The claims of one construct, with its path (cdk8s node path or Pulumi name). */
export interface ClaimSet {
  readonly construct: string;
  readonly claims: readonly Claim[];
}

/** Every claim made twice, as problems `<construct path>:<prop path>`. O(n) in claims. */
export function checkClaims(sets: readonly ClaimSet[]): Problem[] {
  const first = new Map<string, { construct: string; claim: Claim }>();
  const problems: Problem[] = [];
  for (const set of sets) {
    for (const claim of set.claims) {
      const seen = first.get(claim.key);
      if (!seen) first.set(claim.key, { construct: set.construct, claim });
      else if (seen.construct !== set.construct || seen.claim.path !== claim.path) {
        problems.push({ path: `${set.construct}:${claim.path}`, code: 'claimed-twice', message: `${claim.what} is already claimed by ${seen.construct}:${seen.claim.path}` });
      }
    }
  }
  return problems;
}
