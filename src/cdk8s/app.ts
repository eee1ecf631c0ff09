import * as fs from 'node:fs';
import * as path from 'node:path';
import { App as Cdk8sApp, AppProps } from 'cdk8s';
import { formatProblems, Problem, throwIfProblems } from '../errors';
import { HostArtefacts, renderedCloudConfig, renderHostArtefacts, wireguardConfigs, WireguardConfigFile } from '../host/artefacts';
import { renderCloudConfig } from '../host/cloud-init';
import { hostPlanHasSecret } from '../host/host-plan';
import { IgnitionVersion, renderIgnition } from '../host/ignition';
import { HostPlan } from '../types';
import { isTunnelwrightConstruct, ITunnelwrightConstruct, TUNNELWRIGHT_APP } from './base';
import { appChecks } from './checks';

/**
 * A cdk8s App that also writes host artefacts. `synth()` runs every cross-construct check first (nothing is written
 * when one fails), writes the manifests, then each node's merged `<outdir>/hosts/<node>/user-data` and
 * `<outdir>/hosts/<node>/ignition.json` (0600 when they embed a secret), and each WireGuard interface's config as
 * `<outdir>/hosts/<node>/<interface>.conf` (0600), the file to copy onto a running node after a change. It prints one
 * line per node on stderr (`host files: <outdir>/hosts/<node>/ (user-data, ignition.json, wg0.conf)`): the cdk8s CLI
 * keeps the app's stdout to itself and passes its stderr through, so `cdk8s synth` shows where the files went, also
 * after "No manifests synthesized" for an app of host files only. It writes no `<chart>.k8s.yaml` for a chart without
 * manifests.
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

  /**
   * Checks, then writes the manifests, then each node's artefacts in turn: rendered, written and let go before the
   * next node (peak memory: the model plus one node's artefacts, whatever the number of nodes; the model includes the
   * cloud-configs the user-data size warning rendered, with their plans as JSON, for nodes under 16 KiB: for the 999
   * spokes of a 1000-node hub mesh, 6.8 MB of text and about as much JSON; none for a full mesh, whose nodes are all
   * larger).
   */
  public synth(): void {
    const checks = appChecks(this);
    throwIfProblems(checks.problems, 'app');
    if (checks.warnings.length > 0) process.stderr.write(`warning: app:\n${formatProblems(checks.warnings).replace(/^/gm, '  ')}\n`);
    super.synth();
    // A chart with only host artefacts (a mesh, an overlay node) has no manifests: no empty `<chart>.k8s.yaml`.
    for (const file of fs.readdirSync(this.outdir)) {
      const target = path.join(this.outdir, file);
      if (file.endsWith('.k8s.yaml') && fs.statSync(target).isFile() && fs.readFileSync(target, 'utf8').trim() === '') fs.rmSync(target);
    }
    // Hosts no longer in the app: their old artefacts would be copied to the wrong machines.
    const hostsDir = path.join(this.outdir, 'hosts');
    const current = new Set(checks.hosts.map((h) => h.plan.node));
    if (fs.existsSync(hostsDir)) {
      for (const entry of fs.readdirSync(hostsDir)) if (!current.has(entry)) fs.rmSync(path.join(hostsDir, entry), { recursive: true, force: true });
    }
    for (const h of checks.hosts) {
      writeHost(this.outdir, h.plan, h.ignitionVersion);
      // `cdk8s synth` lists the manifests; this says where each node's files went. On stderr: the CLI runs the app
      // with stdout piped into a buffer it never prints (cdk8s-cli 2.207.60 lib/util.js shell(): stdio ['inherit',
      // 'pipe', 'inherit']), stderr inherited.
      process.stderr.write(`host files: ${path.join(this.outdir, 'hosts', h.plan.node)}/ (${hostFileNames(h.plan).join(', ')})\n`);
    }
  }
}

/** The files `writeHost` writes for one node, in order. */
export function hostFileNames(plan: HostPlan): string[] {
  // From the paths alone: a mesh node's interface config renders lazily, once, in writeHost.
  return ['user-data', 'ignition.json', ...plan.files.flatMap((f) => /^\/etc\/wireguard\/([^/]+\.conf)$/.exec(f.path)?.slice(1, 2) ?? [])];
}

/** Writes one node's user-data, ignition.json and interface configs (0600 where they embed a secret). */
export function writeHost(outdir: string, plan: HostPlan, ignitionVersion: IgnitionVersion): void {
  const dir = path.join(outdir, 'hosts', plan.node);
  fs.mkdirSync(dir, { recursive: true });
  const mode = hostPlanHasSecret(plan) ? 0o600 : 0o644;
  const write = (file: string, text: string, m: number) => {
    const target = path.join(dir, file);
    // With the encoding named, Node takes its one-call UTF-8 path (open, write, close in C++); an options object
    // without it falls back to a Buffer copy and a JS write loop.
    fs.writeFileSync(target, text, { mode: m, encoding: 'utf8' });
    fs.chmodSync(target, m);
  };
  // A lazy content (a mesh node's interface config) is computed once here, for the .conf file and (unless the size
  // warning's rendering of the unchanged plan is written) the user-data; Ignition takes the plan itself, whose files
  // remember their encodings.
  const rendered: HostPlan = { ...plan, files: plan.files.map((f) => ({ ...f })) };
  // A small plan's cloud-config was rendered for the user-data size warning: that text is written (issue 30).
  write('user-data', renderedCloudConfig(plan, rendered) ?? renderCloudConfig(rendered), mode);
  write('ignition.json', `${JSON.stringify(renderIgnition(plan, ignitionVersion), undefined, 2)}\n`, mode);
  // Each interface's config on its own, for the day-2 path: copy it to /etc/wireguard/, then reload the unit.
  for (const c of wireguardConfigs(rendered)) write(c.name, c.content, 0o600);
}

