import { Problem } from './errors';

/** A Kubernetes object as plain data. The core sets `metadata.name` (and `namespace` for namespaced kinds). */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly [field: string]: unknown;
}

/** A file written on a host. */
export interface HostFile {
  /** Absolute path. */
  readonly path: string;
  /** Permission bits, e.g. `0o600`. */
  readonly mode: number;
  /** `user:group`. */
  readonly owner: string;
  readonly content: string;
  /** True when the content embeds a secret value (an inline key): the rendered artefact is then secret too. */
  readonly secret?: boolean;
}

/** A systemd unit: written when `content` is given; enabled (and started at first boot) when `enabled`. */
export interface HostUnit {
  /** Unit name, e.g. `wg-quick@wg0.service`. */
  readonly name: string;
  /** Unit file contents; omitted for units the OS ships (such as `wg-quick@.service`). */
  readonly content?: string;
  readonly enabled?: boolean;
}

/** A systemd drop-in: `/etc/systemd/system/<unit>.d/<name>`. */
export interface HostDropin {
  readonly unit: string;
  /** File name ending in `.conf`. */
  readonly name: string;
  readonly content: string;
}

/** What one node needs on its disk and at first boot. Plans for the same node merge (see `mergeHostPlans`). */
export interface HostPlan {
  /** The node's hostname. */
  readonly node: string;
  readonly files: HostFile[];
  readonly units: HostUnit[];
  readonly dropins: HostDropin[];
  /** Commands run once at first boot, after the files are written and units enabled. */
  readonly commands: string[];
  /** Distribution packages the host needs (cloud-init `packages`; Ignition hosts ship them). */
  readonly packages: string[];
}

/** What a construct plans: Kubernetes objects, host plans, values for other tools and warnings. */
export interface Plan {
  readonly objects: KubeObject[];
  readonly hosts: HostPlan[];
  /** Data meant for other tools (Helm values for Cilium or kube-state-metrics, install flags). */
  readonly values: Record<string, unknown>;
  /** Problems that do not stop synth. */
  readonly warnings: Problem[];
}

/** Kinds that are cluster-scoped: they never carry a namespace. */
export const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'CiliumEgressGatewayPolicy',
  'CiliumClusterwideNetworkPolicy',
  'ClusterPolicy',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'PriorityClass',
]);

export function emptyHostPlan(node: string): HostPlan {
  return { node, files: [], units: [], dropins: [], commands: [], packages: [] };
}
