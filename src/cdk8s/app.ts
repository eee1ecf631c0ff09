import * as fs from 'node:fs';
import * as path from 'node:path';
import { App as Cdk8sApp, AppProps } from 'cdk8s';
import { formatProblems, Problem, throwIfProblems } from '../errors';
import { HostArtefacts, renderHostArtefacts, wireguardConfigs, WireguardConfigFile } from '../host/artefacts';
import { isTunnelwrightConstruct, ITunnelwrightConstruct, TUNNELWRIGHT_APP } from './base';
import { appChecks } from './checks';

/**
 * A cdk8s App that also writes host artefacts. `synth()` runs every cross-construct check first (nothing is written
 * when one fails), writes the manifests, then each node's merged `<outdir>/hosts/<node>/user-data` and
 * `<outdir>/hosts/<node>/ignition.json` (0600 when they embed a secret), and each WireGuard interface's config as
 * `<outdir>/hosts/<node>/<interface>.conf` (0600), the file to copy onto a running node after a change.
 */
export class App extends Cdk8sApp {
  public constructor(props: AppProps = {}) {
    super(props);
    // Marks the root for the constructs' validations: under this App they leave the checks to synth().
    Object.defineProperty(this, TUNNELWRIGHT_APP, { value: true });
  }

  /** Every tunnelwright construct in the app, in construct-tree order. */
  public get tunnelwrightConstructs(): ITunnelwrightConstruct[] {
    return this.node.findAll().filter(isTunnelwrightConstruct);
  }

  /**
   * The cross-construct problems and warnings (claims made twice, conflicting host files, namespaces whose Pod
   * Security level rejects the pods the constructs make or route, VXLAN ports that disagree) and each node's merged
   * artefacts.
   */
  public checkHosts(): { problems: Problem[]; warnings: Problem[]; hosts: (HostArtefacts & { wireguard: WireguardConfigFile[] })[] } {
    const checks = appChecks(this);
    const hosts = checks.hosts.map((h) => Object.assign(renderHostArtefacts(h.plan, h.ignitionVersion), { wireguard: wireguardConfigs(h.plan) }));
    return { problems: checks.problems, warnings: checks.warnings, hosts };
  }

  public synth(): void {
    const { problems, warnings, hosts } = this.checkHosts();
    throwIfProblems(problems, 'app');
    if (warnings.length > 0) process.stderr.write(`warning: app:\n${formatProblems(warnings).replace(/^/gm, '  ')}\n`);
    super.synth();
    // Hosts no longer in the app: their old artefacts would be copied to the wrong machines.
    const hostsDir = path.join(this.outdir, 'hosts');
    const current = new Set(hosts.map((h) => h.node));
    if (fs.existsSync(hostsDir)) {
      for (const entry of fs.readdirSync(hostsDir)) if (!current.has(entry)) fs.rmSync(path.join(hostsDir, entry), { recursive: true, force: true });
    }
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

