import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { formatProblems, ValidationError } from '../errors';
import { renderHostArtefacts, wireguardConfigs } from '../host/artefacts';
import { DEFAULT_IGNITION_VERSION, IgnitionVersion } from '../host/ignition';
import { Claim, VxlanEndpoint } from '../invariants';
import { HostPlan, KubeObject, Plan } from '../types';
import * as configHashRender from '../render/config-hash';
import { declareNamespace, registerComponent } from './registry';

/** Host artefacts as Pulumi outputs, ready for a server's `userData`; secret exactly when they embed a secret. */
export interface NodeOutputs {
  /** `#cloud-config` user-data. */
  readonly cloudConfig: pulumi.Output<string>;
  /** Ignition config as JSON text. */
  readonly ignition: pulumi.Output<string>;
  /** Each WireGuard interface's config by file name (`wg0.conf`), secret when it embeds a key: copy it to `/etc/wireguard/` and reload after a change. */
  readonly wireguardConfigs: Readonly<Record<string, pulumi.Output<string>>>;
}

/** Runs a component's planning and names the component in a ValidationError: `invalid KillSwitch props at qbittorrent`. */
export function planAt<T>(name: string, kind: string, plan: () => T): T {
  try {
    return plan();
  } catch (e) {
    if (e instanceof ValidationError) throw e.withSubject(`${kind} props at ${name}`);
    throw e;
  }
}

/** The child resource name of a planned object: `<component>-<kind>-<namespace>-<name>`, lowercase. */
export function childName(component: string, o: KubeObject): string {
  return [component, o.kind.toLowerCase(), o.metadata.namespace, o.metadata.name].filter(Boolean).join('-');
}

/** Host outputs of one host plan. */
export function nodeOutputs(plan: HostPlan, version: IgnitionVersion): NodeOutputs {
  const a = renderHostArtefacts(plan, version);
  const wrap = (text: string) => (a.secret ? pulumi.secret(text) : pulumi.output(text));
  const configs = Object.fromEntries(wireguardConfigs(plan).map((c) => [c.name, c.secret ? pulumi.secret(c.content) : pulumi.output(c.content)]));
  return { cloudConfig: wrap(a.cloudConfig), ignition: wrap(a.ignitionJson), wireguardConfigs: configs };
}

/**
 * Checks a planned component against every earlier one of the program (claims, host files of shared nodes) and
 * records it. Call it before `super()`: a clash then registers nothing, not even the component.
 */
export function reserve(name: string, plan: Plan, claims: readonly Claim[], ignitionVersion: IgnitionVersion = DEFAULT_IGNITION_VERSION, vxlan?: { gateway?: VxlanEndpoint; killSwitch?: VxlanEndpoint }): void {
  registerComponent({ construct: name, claims, hosts: plan.hosts.map((p) => ({ plan: p, ignitionVersion })), vxlan });
}

/**
 * Registers a core Plan's objects under a component: logs warnings with `pulumi.log.warn`, then creates one
 * Kubernetes resource per object, parented to the component and with the component's `provider`.
 */
export function emitPlan(component: pulumi.ComponentResource, name: string, plan: Plan, opts: pulumi.ComponentResourceOptions | undefined, resolve: (value: unknown) => unknown = (v) => v): pulumi.CustomResource[] {
  if (plan.warnings.length > 0) void pulumi.log.warn(formatProblems(plan.warnings), component);
  const provider = opts?.provider;
  // The library's Namespaces count for the Pod Security checks of later components, as the program's own do.
  for (const o of plan.objects) if (o.kind === 'Namespace') declareNamespace(o.metadata.name, o.metadata.labels ?? {});
  // A workload after the ConfigMaps it mounts: the provider replaces a changed ConfigMap (delete, then create: its name
  // is fixed), and a pod of the new template must not read the old one, or none.
  const mounts = configHashRender.mountedConfigMaps(plan.objects);
  const created: pulumi.CustomResource[] = [];
  const create = (i: number) => {
    const o = plan.objects[i];
    const dependsOn = mounts[i].map((j) => created[j]);
    created[i] = new k8s.apiextensions.CustomResource(childName(name, o), resolve(o) as k8s.apiextensions.CustomResourceArgs, { parent: component, ...(provider ? { provider } : {}), ...(dependsOn.length > 0 ? { dependsOn } : {}) });
  };
  // The ConfigMaps first, wherever the plan lists them: a workload's dependsOn names resources that exist.
  plan.objects.forEach((o, i) => { if (o.kind === 'ConfigMap') create(i); });
  plan.objects.forEach((o, i) => { if (o.kind !== 'ConfigMap') create(i); });
  return created;
}
