// kube-state-metrics' --metric-labels-allowlist, as EgressSteering reads it: which Node labels become metrics.

/**
 * `kube_node_labels`' name for a label, as kube-state-metrics writes it (internal/store/utils.go): `label_`, then the
 * key with every character but `[a-zA-Z0-9_]` turned to `_`, then snake case (`egressUplink` → `egress_uplink`).
 */
export function ksmLabelName(label: string): string {
  const sanitized = label.replace(/[^a-zA-Z0-9_]/g, '_');
  return `label_${sanitized.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase()}`;
}

/** The kube-state-metrics allowlist entry that makes the uplink label a metric. */
export function ksmAllowlistEntry(uplinkLabel: string): string {
  return `nodes=[${uplinkLabel}]`;
}

/** One `resource=[label,…]` group of kube-state-metrics' allowlist, and where the list holds it. */
export interface KsmAllowlistGroup {
  /** The list entry the group starts in. */
  readonly entry: number;
  readonly resource: string;
  readonly labels: string[];
  /** Where its closing `]` is: the entry, and the offset in that entry. */
  readonly close: { readonly entry: number; readonly offset: number };
}

const KSM_GROUP = /(?:^|,)\s*([^=,[\]\s](?:[^=,[\]]*[^=,[\]\s])?)\s*=\[([^[\]]*)\]/g;

/**
 * kube-state-metrics' allowlist as it reads it. The chart joins the list with "," into one flag
 * (`--metric-labels-allowlist`, templates/deployment.yaml), so one entry may hold several groups
 * (`pods=[app],nodes=[zone]`) and one group may span entries (`helm --set` splits `{nodes=[zone,rack]}` at the comma).
 * A resource named again replaces its earlier labels (pkg/options/types.go, LabelsAllowList.Set: `m[name] = []string{}`
 * at each "="). Text that is not in that grammar gives no group: kube-state-metrics refuses it at start-up.
 */
export function ksmAllowlistGroups(list: readonly unknown[]): KsmAllowlistGroup[] {
  const texts = list.map((e) => (typeof e === 'string' ? e : ''));
  const starts: number[] = [];
  let at = 0;
  for (const t of texts) {
    starts.push(at);
    at += t.length + 1;
  }
  const entryAt = (index: number) => {
    let e = 0;
    while (e + 1 < starts.length && starts[e + 1] <= index) e++;
    return e;
  };
  const joined = texts.join(',');
  return [...joined.matchAll(KSM_GROUP)].map((m) => {
    const closeAt = m.index! + m[0].length - 1;
    const close = entryAt(closeAt);
    return {
      entry: entryAt(m.index! + m[0].indexOf(m[1])),
      resource: m[1],
      // As Set reads them: `[]` holds none, and an empty one between commas is a label "" (so `[,*]` has "*" second).
      labels: m[2] === '' ? [] : m[2].split(',').map((l) => l.trim()),
      close: { entry: close, offset: closeAt - starts[close] },
    };
  });
}

/**
 * The group whose labels kube-state-metrics puts on node metrics: the last `*=` group, which takes precedence over
 * every other (internal/store/builder.go, allowList: "\"*\" takes precedence over other specifications"), else the
 * last `nodes=` group.
 */
export function ksmNodeGroup(groups: readonly KsmAllowlistGroup[]): KsmAllowlistGroup | undefined {
  const last = (resource: string) => groups.filter((g) => g.resource === resource).pop();
  return last('*') ?? last('nodes');
}

/**
 * Whether a group exports the label: named, or every label, which `*` means only as the group's first label
 * (internal/store/utils.go, createPrometheusLabelKeysValues: "only the first label can be the wildcard label").
 */
export function ksmGroupExports(group: KsmAllowlistGroup | undefined, label: string): boolean {
  return group !== undefined && (group.labels[0] === '*' || group.labels.includes(label));
}
