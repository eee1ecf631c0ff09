import * as fs from 'node:fs';
import * as path from 'node:path';
import { App as Cdk8sApp, AppProps } from 'cdk8s';
import { Problem, throwIfProblems } from '../errors';
import { HostArtefacts, renderHostArtefacts } from '../host/artefacts';
import { mergeHostPlans } from '../host/host-plan';
import { IgnitionVersion } from '../host/ignition';
import { checkClaims } from '../invariants';
import { HostPlan } from '../types';
import { isTunnelwrightConstruct, ITunnelwrightConstruct } from './base';

/**
 * A cdk8s App that also writes host artefacts. `synth()` runs every cross-construct check first (nothing is written
 * when one fails), writes the manifests, then each node's merged `<outdir>/hosts/<node>/user-data` and
 * `<outdir>/hosts/<node>/ignition.json` (0600 when they embed a secret).
 */
export class App extends Cdk8sApp {
  public constructor(props: AppProps = {}) {
    super(props);
  }

  /** Every tunnelwright construct in the app, in construct-tree order. */
  public get tunnelwrightConstructs(): ITunnelwrightConstruct[] {
    return this.node.findAll().filter(isTunnelwrightConstruct);
  }

  /** The cross-construct problems (claims made twice, conflicting host files) and each node's merged artefacts. */
  public checkHosts(): { problems: Problem[]; hosts: HostArtefacts[] } {
    const constructs = this.tunnelwrightConstructs;
    const problems = checkClaims(constructs.map((c) => ({ construct: c.node.path, claims: c._claims })));
    const plans: HostPlan[] = [];
    const sources: string[] = [];
    const versions = new Map<string, { version: IgnitionVersion; source: string }>();
    for (const c of constructs) {
      for (const h of c._hosts) {
        plans.push(h.plan);
        sources.push(c.node.path);
        const v = versions.get(h.plan.node);
        if (!v) versions.set(h.plan.node, { version: h.ignitionVersion, source: c.node.path });
        else if (v.version !== h.ignitionVersion) {
          problems.push({ path: `${c.node.path}:ignitionVersion`, code: 'ignition-version', message: `node "${h.plan.node}" gets Ignition ${h.ignitionVersion} here but ${v.version} from ${v.source}: one machine takes one config` });
        }
      }
    }
    const merged = mergeHostPlans(plans, sources);
    problems.push(...merged.problems);
    const hosts = merged.plans.map((p) => renderHostArtefacts(p, versions.get(p.node)!.version));
    return { problems, hosts };
  }

  public synth(): void {
    const { problems, hosts } = this.checkHosts();
    throwIfProblems(problems, 'app');
    super.synth();
    for (const h of hosts) {
      const dir = path.join(this.outdir, 'hosts', h.node);
      fs.mkdirSync(dir, { recursive: true });
      const mode = h.secret ? 0o600 : 0o644;
      for (const [file, text] of [['user-data', h.cloudConfig], ['ignition.json', `${JSON.stringify(h.ignition, undefined, 2)}\n`]] as const) {
        const target = path.join(dir, file);
        fs.writeFileSync(target, text, { mode });
        fs.chmodSync(target, mode);
      }
    }
  }
}
