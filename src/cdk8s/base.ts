import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { Construct } from 'constructs';
import { formatProblems, Problem, ValidationError } from '../errors';
export { isTunnelwrightConstruct, type ITunnelwrightConstruct, TUNNELWRIGHT_APP } from './identity';
import { renderHostArtefacts, wireguardConfigs } from '../host/artefacts';
import { DEFAULT_IGNITION_VERSION, IgnitionConfig, IgnitionVersion } from '../host/ignition';
import { Claim, Fence } from '../invariants';
import { PodSecurityNeed, podSecurityNeeds } from '../model/pod-security';
import type { VxlanEndpoints } from './checks';
import { appChecks } from './checks';
import { ITunnelwrightConstruct, MARK, TUNNELWRIGHT_APP } from './identity';
import { CLUSTER_SCOPED_KINDS, HostPlan, KubeObject, Plan } from '../types';

/** Host artefacts of one node, as a construct exposes them. */
export interface NodeArtefacts {
  /** `#cloud-config` user-data of this construct's part. */
  readonly cloudConfig: string;
  /** Ignition config of this construct's part. */
  readonly ignition: IgnitionConfig;
  /** Each WireGuard interface's config by file name (`wg0.conf`): copy it to `/etc/wireguard/` and reload after a change. */
  readonly wireguardConfigs: Readonly<Record<string, string>>;
}

/** Base of the cdk8s constructs: emits a core Plan into the Chart and registers it for the App's checks. */
export abstract class TunnelwrightConstruct extends Construct implements ITunnelwrightConstruct {
  public readonly warnings: readonly Problem[];
  /** @internal */
  public readonly _claims: readonly Claim[];
  /** @internal */
  public readonly _hosts: readonly { plan: HostPlan; ignitionVersion: IgnitionVersion }[];
  /** @internal */
  public readonly _podSecurity: PodSecurityNeed[];
  /** @internal */
  public _vxlan?: VxlanEndpoints;
  /** @internal */
  public readonly _fences: Fence[] = [];
  /** The ApiObjects emitted, in plan order. */
  public readonly apiObjects: readonly ApiObject[];

  protected constructor(scope: Construct, id: string, plan: Plan, claims: readonly Claim[], ignitionVersion: IgnitionVersion = DEFAULT_IGNITION_VERSION) {
    super(scope, id);
    Object.defineProperty(this, MARK, { value: true });
    this.warnings = plan.warnings;
    this._claims = claims;
    this._hosts = plan.hosts.map((p) => ({ plan: p, ignitionVersion }));
    this._podSecurity = podSecurityNeeds(plan.objects, this.node.path);
    // Under any App (cdk8s's own, Testing.app()), the cross-construct invariants run at synth; under tunnelwright's
    // App, synth() runs them itself before writing anything.
    this.node.addValidation({ validate: () => this.validateInApp() });
    this.apiObjects = plan.objects.map((o) => emitObject(this, o));
    for (const w of plan.warnings) this.node.addMetadata('tunnelwright:warning', `${w.path}: ${w.message}`);
    if (plan.warnings.length > 0) process.stderr.write(`warning: ${this.node.path}:\n${formatProblems(plan.warnings).replace(/^/gm, '  ')}\n`);
  }

  private validateInApp(): string[] {
    const root = this.node.root as unknown as Record<symbol, unknown>;
    if (root[TUNNELWRIGHT_APP] === true) return [];
    if (this._hosts.length > 0) {
      process.stderr.write(`warning: ${this.node.path}: its host artefacts (user-data, ignition.json) are not written under cdk8s's App: use App from tunnelwright/cdk8s, or write this construct's cloudConfig / ignition yourself\n`);
    }
    // Each problem is reported by the construct it names, once.
    return appChecks(this.node.root).problems.filter((p) => p.path.startsWith(`${this.node.path}:`)).map((p) => `${p.path}: ${p.message}`);
  }

  /** Artefacts of one host plan of this construct. */
  protected artefactsOf(plan: HostPlan, ignitionVersion: IgnitionVersion): NodeArtefacts {
    // Rendered when read, and once: a 1000-node mesh renders nothing at construction (the App streams its own).
    const a = renderHostArtefacts(plan, ignitionVersion);
    return {
      get cloudConfig() {
        return a.cloudConfig;
      },
      get ignition() {
        return a.ignition;
      },
      get wireguardConfigs() {
        return Object.fromEntries(wireguardConfigs(plan).map((c) => [c.name, c.content]));
      },
    };
  }
}

/**
 * Runs a construct's planning and names the construct in a ValidationError: `invalid KillSwitch props at
 * media/qbittorrent`, so that an app with many constructs says which one.
 */
export function planAt<T>(scope: Construct, id: string, kind: string, plan: () => T): T {
  try {
    return plan();
  } catch (e) {
    if (e instanceof ValidationError) throw e.withSubject(`${kind} props at ${scope.node.path ? `${scope.node.path}/${id}` : id}`);
    throw e;
  }
}

/** The construct id of an object: unique per kind, namespace and name. */
export function objectId(o: KubeObject): string {
  return [o.kind, o.metadata.namespace, o.metadata.name].filter(Boolean).join('-');
}

/** Adds one planned object to the chart as an ApiObject. Cluster-scoped kinds never get the chart's namespace. */
export function emitObject(scope: Construct, o: KubeObject): ApiObject {
  const obj = new ApiObject(scope, objectId(o), o);
  if (CLUSTER_SCOPED_KINDS.has(o.kind) && Chart.of(scope).namespace !== undefined) {
    obj.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  }
  return obj;
}
