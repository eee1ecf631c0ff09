import * as fs from 'node:fs';
import * as path from 'node:path';
import { App as Cdk8sApp, AppProps } from 'cdk8s';
import { ApiObject } from 'cdk8s';
import { IConstruct } from 'constructs';
import { formatProblems, Problem, throwIfProblems } from '../errors';
import { checkPodSecurity } from '../model/pod-security';
import { HostArtefacts, renderHostArtefacts, wireguardConfigs, WireguardConfigFile } from '../host/artefacts';
import { mergeContributions } from '../host/host-plan';
import { checkClaims } from '../invariants';
import { isTunnelwrightConstruct, ITunnelwrightConstruct } from './base';

/**
 * A cdk8s App that also writes host artefacts. `synth()` runs every cross-construct check first (nothing is written
 * when one fails), writes the manifests, then each node's merged `<outdir>/hosts/<node>/user-data` and
 * `<outdir>/hosts/<node>/ignition.json` (0600 when they embed a secret), and each WireGuard interface's config as
 * `<outdir>/hosts/<node>/<interface>.conf` (0600), the file to copy onto a running node after a change.
 */
export class App extends Cdk8sApp {
  public constructor(props: AppProps = {}) {
    super(props);
  }

  /** Every tunnelwright construct in the app, in construct-tree order. */
  public get tunnelwrightConstructs(): ITunnelwrightConstruct[] {
    return this.node.findAll().filter(isTunnelwrightConstruct);
  }

  /**
   * The cross-construct problems and warnings (claims made twice, conflicting host files, namespaces whose Pod
   * Security level rejects the pods the constructs make or route) and each node's merged artefacts.
   */
  public checkHosts(): { problems: Problem[]; warnings: Problem[]; hosts: (HostArtefacts & { wireguard: WireguardConfigFile[] })[] } {
    const constructs = this.tunnelwrightConstructs;
    const problems = checkClaims(constructs.map((c) => ({ construct: c.node.path, claims: c._claims })));
    const pods = checkPodSecurity(constructs.flatMap((c) => c._podSecurity), namespacesOf(this));
    problems.push(...pods.problems);
    const merged = mergeContributions(constructs.flatMap((c) => c._hosts.map((h) => ({ construct: c.node.path, ...h }))));
    problems.push(...merged.problems);
    const hosts = merged.plans.map((h) => Object.assign(renderHostArtefacts(h.plan, h.ignitionVersion), { wireguard: wireguardConfigs(h.plan) }));
    return { problems, warnings: pods.warnings, hosts };
  }

  public synth(): void {
    const { problems, warnings, hosts } = this.checkHosts();
    throwIfProblems(problems, 'app');
    if (warnings.length > 0) process.stderr.write(`warning: app:\n${formatProblems(warnings).replace(/^/gm, '  ')}\n`);
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
      // Each interface's config on its own, for the day-2 path: copy it to /etc/wireguard/, then reload the unit.
      for (const c of h.wireguard) {
        const target = path.join(dir, c.name);
        fs.writeFileSync(target, c.content, { mode: 0o600 });
        fs.chmodSync(target, 0o600);
      }
    }
  }
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
