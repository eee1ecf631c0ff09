import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { planEgressSteering } from '../../src';
import { FAILOVER_AGENT_PATH } from '../../src/render/egress-steering-failover';
import { activeLabel } from '../../src/model/egress-steering-failover';
import { wireguardSteering, KEYS } from '../helpers/fixtures';
import { withSetting } from '../helpers/host-tools';

/**
 * The failover agent as systemd runs it (one long-running process per candidate), at unit speed: the real kubectl
 * against a stand-in of the API server (test/helpers/kube-api-stand-in.py: resourceVersions, 409 on a stale one),
 * and stand-ins of `ip` (the link's state, or a sequence of states, one per check) and `wg` (the latest handshake).
 * "Cilium" here is what pkg/egressgateway does with the labels: the first CiliumNode by name that carries the active
 * label, none = drop (see src/render/egress-steering-failover.ts).
 */
const NODES = ['gw-1', 'gw-2'];
const LABEL = activeLabel('vpn-egress');
const kubectl = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).stdout.trim();
const maybe = kubectl ? describe : describe.skip;

const IP = `#!/bin/sh
d=$(dirname "$0")
seq="$d/link-seq"
if [ -s "$seq" ]; then state=$(head -n 1 "$seq"); tail -n +2 "$seq" > "$seq.n"; mv "$seq.n" "$seq"; else state=$(cat "$d/link"); fi
[ "$state" = GONE ] && { echo "Device \\"$5\\" does not exist." >&2; exit 1; }
echo "7: tun0: <POINTOPOINT,NOARP,UP,LOWER_UP> mtu 1420 qdisc noqueue state $state mode DEFAULT"
`;
// wg show <if> latest-handshakes: "<public key>\\t<unix seconds>", 0 for never.
const WG = `#!/bin/sh
d=$(dirname "$0")
h=$(cat "$d/handshake"); [ "$h" = now ] && h=$(date +%s)
printf '%s\\t%s\\n' '${KEYS.b.publicKey}' "$h"
`;

// systemctl is-system-running: the state in <tools>/system-state, exit 0 only for "running" (as systemctl's own:
// src/systemctl/systemctl-is-system-running.c, non-zero unless running).
const SYSTEMCTL = `#!/bin/sh
d=$(dirname "$0")
[ "$1" = is-system-running ] || { echo "systemctl stand-in: unsupported: $*" >&2; exit 1; }
s=$(cat "$d/system-state"); echo "$s"; [ "$s" = running ]
`;

interface Lab {
  dir: string;
  api: ChildProcess;
  agents: Map<string, ChildProcess>;
  tools: (node: string) => string;
  start(node: string, script?: string, env?: Record<string, string>): void;
  /** Nodes whose CiliumNode (and Node) carry the active label. */
  labelled(kind?: 'nodes' | 'ciliumnodes'): string[];
  /** The gateway Cilium picks: the first labelled CiliumNode by name, or 'drop'. */
  cilium(): string;
  holder(): string | undefined;
  stop(): void;
}

function agentScript(node: string, overrides: Record<string, string> = {}): string {
  const p = wireguardSteering();
  const plan = planEgressSteering({
    ...p,
    failover: { standbys: [{ node: 'gw-2', tunnel: { ...(p.tunnel as { type: 'wireguard'; address: string; privateKeyFrom: { file: string }; peer: { publicKey: string; endpoint: string } }), address: '10.2.0.3/32', privateKeyFrom: { file: '/run/corium/vpn-2.key' } } }] },
    acknowledge: ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages'],
  });
  let text = plan.hosts.find((h) => h.node === node)!.files.find((f) => f.path === FAILOVER_AGENT_PATH)!.content;
  // Seconds here, not the defaults' 2 s checks and 15 s lease: the same rules, faster.
  for (const [k, v] of Object.entries({ INTERVAL: '0.3', LEASE_DURATION: '3', HEALTHY_CHECKS: '2', UNHEALTHY_CHECKS: '3', ...overrides })) text = withSetting(text, k, v);
  return text;
}

async function startLab(): Promise<Lab> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'esf-failover-'));
  const api = spawn('python3', [path.join(__dirname, '../helpers/kube-api-stand-in.py'), dir, 'kube-system/vpn-egress-gateway', ...NODES], { stdio: 'ignore' });
  for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, 'port')); i++) await sleep(100);
  const port = fs.readFileSync(path.join(dir, 'port'), 'utf8');
  fs.writeFileSync(path.join(dir, 'kubeconfig'), `apiVersion: v1\nkind: Config\nclusters: [{name: s, cluster: {server: "http://127.0.0.1:${port}"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: s, user: u}}]\ncurrent-context: c\n`);
  const agents = new Map<string, ChildProcess>();
  const tools = (node: string) => path.join(dir, node);
  for (const node of NODES) {
    fs.mkdirSync(tools(node));
    fs.writeFileSync(path.join(tools(node), 'ip'), IP, { mode: 0o755 });
    fs.writeFileSync(path.join(tools(node), 'wg'), WG, { mode: 0o755 });
    fs.writeFileSync(path.join(tools(node), 'link'), 'UNKNOWN');
    fs.writeFileSync(path.join(tools(node), 'handshake'), 'now');
    fs.writeFileSync(path.join(tools(node), 'systemctl'), SYSTEMCTL, { mode: 0o755 });
    // Shutting down unless a test says otherwise: a TERM then releases the role.
    fs.writeFileSync(path.join(tools(node), 'system-state'), 'stopping');
  }
  const objects = (): Record<string, { metadata: { labels?: Record<string, string> }; spec?: { holderIdentity?: string } }> => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, 'objects.json'), 'utf8'));
    } catch {
      return {};
    }
  };
  const labelled = (kind: 'nodes' | 'ciliumnodes' = 'ciliumnodes') => NODES.filter((n) => objects()[`${kind}//${n}`]?.metadata.labels?.[LABEL] === 'true');
  return {
    dir, api, agents, tools, labelled,
    start(node, script = agentScript(node), env = {}) {
      const file = path.join(dir, `agent-${node}.sh`);
      fs.writeFileSync(file, script, { mode: 0o755 });
      const log = fs.openSync(path.join(dir, `agent-${node}.log`), 'a');
      agents.set(node, spawn('sh', [file], {
        detached: true, stdio: ['ignore', 'ignore', log],
        env: { ...process.env, PATH: `${tools(node)}:${process.env.PATH}`, HOME: dir, KUBECONFIG: path.join(dir, 'kubeconfig'), KUBECTL: '', ...env },
      }));
    },
    cilium: () => [...labelled()].sort()[0] ?? 'drop',
    holder: () => objects()['leases/kube-system/vpn-egress-gateway']?.spec?.holderIdentity,
    stop() {
      for (const a of agents.values()) {
        try {
          process.kill(-a.pid!, 'SIGCONT');
          process.kill(-a.pid!, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      api.kill('SIGKILL');
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls every 0.1 s: the seconds until `pred` held, or NaN after `limit` s; `each` sees every sample on the way. */
async function until(pred: () => boolean, limit: number, each: () => void = () => undefined): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < limit * 1000) {
    each();
    if (pred()) return (Date.now() - t0) / 1000;
    await sleep(100);
  }
  return NaN;
}

maybe('the egress failover agent (real kubectl, API stand-in)', () => {
  jest.setTimeout(120_000);
  let lab: Lab;
  beforeEach(async () => {
    lab = await startLab();
  });
  afterEach(() => lab.stop());

  /** Both agents running, gw-1 started first and holding the role. */
  async function gw1Holds() {
    lab.start('gw-1');
    expect(await until(() => lab.cilium() === 'gw-1' && lab.labelled('nodes').join() === 'gw-1', 30)).not.toBeNaN();
    lab.start('gw-2');
  }

  it('takes the role on the first healthy candidate, labels its Node and CiliumNode, and keeps it while healthy', async () => {
    await gw1Holds();
    const seen = new Set<string>();
    await until(() => false, 4, () => seen.add(`${lab.labelled().join('+')}/${lab.labelled('nodes').join('+')}`));
    expect([...seen]).toEqual(['gw-1/gw-1']);
    expect(lab.holder()).toBe('gw-1');
  });

  it('moves the role when the holder\'s peer stops answering (interface up), never to two nodes, and does not fail back', async () => {
    await gw1Holds();
    await sleep(1500);
    const samples: string[][] = [];
    fs.writeFileSync(path.join(lab.tools('gw-1'), 'handshake'), '0');
    const switched = await until(() => lab.cilium() === 'gw-2', 30, () => samples.push(lab.labelled()));
    expect(switched).not.toBeNaN();
    expect(lab.holder()).toBe('gw-2');
    // The tunnel healthy again: the role stays where it is (no failback), and gw-1 never carries the label again.
    fs.writeFileSync(path.join(lab.tools('gw-1'), 'handshake'), 'now');
    await until(() => false, 4, () => samples.push(lab.labelled()));
    expect(lab.holder()).toBe('gw-2');
    expect(samples.filter((s) => s.length > 1)).toEqual([]);
    expect(lab.labelled()).toEqual(['gw-2']);
  });

  it.each([
    ['with the agent\'s clearing of the others\' labels', {}, 'gw-2', false],
    // Control: without it, the new holder labels itself beside the frozen one, and Cilium (first by name) stays on gw-1
    // until gw-1 is thawed and fences itself.
    ['control: OTHERS emptied (the new holder clears no label)', { OTHERS: '' }, 'gw-1', true],
  ])('a frozen holder: the standby takes the Lease after its duration; Cilium ends on the expected node %s', async (_what, overrides, expected, gw1LabelledAfterThaw) => {
    lab.start('gw-1');
    expect(await until(() => lab.cilium() === 'gw-1', 30)).not.toBeNaN();
    lab.start('gw-2', agentScript('gw-2', overrides));
    await sleep(1500);
    process.kill(-lab.agents.get('gw-1')!.pid!, 'SIGSTOP');
    expect(await until(() => lab.holder() === 'gw-2', 30)).not.toBeNaN();
    await sleep(1000);
    expect(lab.cilium()).toBe(expected);
    // Thawed, the old holder reads the Lease before anything else (a renewal in flight carries a stale
    // resourceVersion: 409), never labels itself again, and removes a label it still has.
    process.kill(-lab.agents.get('gw-1')!.pid!, 'SIGCONT');
    const samples: string[][] = [];
    await until(() => false, 4, () => samples.push(lab.labelled()));
    expect(samples.some((l) => l.includes('gw-1'))).toBe(gw1LabelledAfterThaw);
    expect(lab.labelled()).toEqual(['gw-2']);
    expect(lab.holder()).toBe('gw-2');
  });

  it.each([
    ['with hysteresis (3 failed checks to give the role up)', {}, 0],
    ['control: without hysteresis (1 check each way)', { HEALTHY_CHECKS: '1', UNHEALTHY_CHECKS: '1' }, 5],
  ])('five flaps of the holder\'s tunnel (two failed checks each) %s: the role moves that many times', async (_what, overrides, moves) => {
    lab.start('gw-1', agentScript('gw-1', overrides));
    expect(await until(() => lab.cilium() === 'gw-1', 30)).not.toBeNaN();
    lab.start('gw-2', agentScript('gw-2', overrides));
    await sleep(2000);
    let moved = 0;
    for (let flap = 0; flap < 5; flap++) {
      // A holder, labelled, before each flap (a loaded machine may let a 3 s Lease lapse between flaps; a flap needs
      // a holder to flap: the CI rehearsal once found none here and failed on path.join(undefined)).
      await until(() => !!lab.holder() && lab.cilium() === lab.holder(), 20);
      const before = lab.holder();
      if (!before) throw new Error(`no holder before flap ${flap + 1}`);
      const seq = path.join(lab.tools(before), 'link-seq');
      fs.writeFileSync(seq, 'DOWN\nDOWN\n');
      await until(() => fs.readFileSync(seq, 'utf8') === '', 20);
      // Long enough for a standby to take a role given up (2 checks and two kubectl writes).
      await until(() => lab.holder() !== before && lab.cilium() === lab.holder(), 3);
      if (lab.holder() !== before) moved++;
    }
    expect(moved).toBe(moves);
  });

  /**
   * A kubectl in front of the real one, in a candidate's tool directory: it refuses to label that node (as the API
   * server answers once RBAC's resourceNames no longer name it: a candidate removed from standbys), and while the file
   * `slow` exists it waits 1.5 s before every label write (an API server answering slowly).
   */
  function wrapKubectl(node: string): Record<string, string> {
    const file = path.join(lab.tools(node), 'kubectl-wrapped');
    fs.writeFileSync(file, `#!/bin/sh
d=$(dirname "$0")
case " $* " in
  *" label "*)
    [ -e "$d/slow" ] && sleep 1.5
    case " $* " in *" ${node} --overwrite "*) [ -e "$d/forbid" ] && { echo 'Error from server (Forbidden): nodes "${node}" is forbidden: User "system:serviceaccount:kube-system:vpn-egress-resteer" cannot patch resource "nodes" in API group "" at the cluster scope' >&2; exit 1; } ;; esac ;;
esac
exec ${kubectl} "$@"
`, { mode: 0o755 });
    return { KUBECTL: file };
  }

  it.each([
    ['a holder that may no longer label itself releases the Lease, and the healthy standby takes and labels', true],
    ['control: the same holder allowed to label keeps it', false],
  ])('%s', async (_what, forbid) => {
    const env = wrapKubectl('gw-1');
    if (forbid) fs.writeFileSync(path.join(lab.tools('gw-1'), 'forbid'), '');
    // gw-1 takes the Lease first (gw-2 starts 1 s later and needs its healthy checks).
    lab.start('gw-1', agentScript('gw-1'), env);
    expect(await until(() => lab.holder() === 'gw-1', 30)).not.toBeNaN();
    lab.start('gw-2');
    expect(await until(() => lab.cilium() !== 'drop' && lab.labelled().length === 1, 30)).not.toBeNaN();
    await sleep(3000);
    expect([lab.holder(), lab.cilium(), lab.labelled('nodes').join()]).toEqual(forbid ? ['gw-2', 'gw-2', 'gw-2'] : ['gw-1', 'gw-1', 'gw-1']);
  });

  it('a holder whose label writes are slow never lands one after the standby took the Lease: never two labelled CiliumNodes', async () => {
    const env = wrapKubectl('gw-1');
    lab.start('gw-1', agentScript('gw-1'), env);
    expect(await until(() => lab.cilium() === 'gw-1', 30)).not.toBeNaN();
    lab.start('gw-2');
    await sleep(2000);
    fs.writeFileSync(path.join(lab.tools('gw-1'), 'slow'), '');
    const samples: string[][] = [];
    await until(() => false, 15, () => samples.push(lab.labelled()));
    expect(samples.filter((s) => s.length > 1)).toEqual([]);
    expect(lab.labelled().length).toBeLessThanOrEqual(1);
  });

  it('an NTP step of an hour on both candidates moves nothing: the holder keeps the role, no Lease transition', async () => {
    // `date` stepped by the seconds in the file `step`; `wg` keeps reporting handshakes on the kernel's unstepped
    // clock (a handshake's time is stored when it happens: wireguard-linux noise.c, ktime_get_real_ts64).
    for (const node of NODES) {
      fs.writeFileSync(path.join(lab.tools(node), 'step'), '0');
      fs.writeFileSync(path.join(lab.tools(node), 'date'), `#!/bin/sh\nif [ "$1" = +%s ]; then echo $(($(/bin/date +%s) + $(cat "$(dirname "$0")/step"))); else exec /bin/date "$@"; fi\n`, { mode: 0o755 });
      fs.writeFileSync(path.join(lab.tools(node), 'wg'), WG.replace('h=$(date +%s)', 'h=$(/bin/date +%s)'), { mode: 0o755 });
    }
    await gw1Holds();
    await sleep(2000);
    const transitions = () => JSON.parse(fs.readFileSync(path.join(lab.dir, 'objects.json'), 'utf8'))['leases/kube-system/vpn-egress-gateway'].spec.leaseTransitions;
    const before = transitions();
    for (const node of NODES) fs.writeFileSync(path.join(lab.tools(node), 'step'), '3600');
    const samples: string[] = [];
    // One read of the stand-in's state per sample; a read while it rewrites the file parses as nothing: skipped.
    const sample = () => {
      try {
        const o = JSON.parse(fs.readFileSync(path.join(lab.dir, 'objects.json'), 'utf8'));
        samples.push(`${o['leases/kube-system/vpn-egress-gateway'].spec.holderIdentity}/${NODES.filter((n) => o[`ciliumnodes//${n}`]?.metadata.labels?.[LABEL] === 'true').join('+')}`);
      } catch {
        // mid-write
      }
    };
    await until(() => false, 5, sample);
    expect([...new Set(samples)]).toEqual(['gw-1/gw-1']);
    expect(transitions()).toBe(before);
  });

  it.each([
    ['TERM to the holder while the system shuts down (systemctl is-system-running: stopping): it removes its label and releases the Lease, and the standby takes the role within its checks', 'SIGTERM', 2.5],
    // Control: killed without a chance to clean up, the Lease stays the dead holder's until its duration runs out.
    ['control: KILL to the holder: the standby waits for the Lease to expire', 'SIGKILL', NaN],
  ] as const)('%s', async (_what, signal, within) => {
    // A 6 s lease: the control's expiry is well past the 2.5 s the released role may take.
    lab.start('gw-1', agentScript('gw-1', { LEASE_DURATION: '6' }));
    expect(await until(() => lab.cilium() === 'gw-1', 30)).not.toBeNaN();
    lab.start('gw-2', agentScript('gw-2', { LEASE_DURATION: '6' }));
    await sleep(2000);
    // systemd signals the unit's whole control group: the agent and a sleep or kubectl it runs.
    process.kill(-lab.agents.get('gw-1')!.pid!, signal);
    const released = await until(() => lab.holder() !== 'gw-1' && !lab.labelled('nodes').includes('gw-1') && lab.holder() !== undefined, 2.5);
    expect(Number.isNaN(released)).toBe(Number.isNaN(within));
    expect(await until(() => lab.holder() === 'gw-2' && lab.cilium() === 'gw-2', 15)).not.toBeNaN();
  });

  it.each([['running'], ['degraded']])('TERM to the holder while the system is %s (a restart of its unit): the role stays with it, and the restarted agent renews the Lease past its duration; control: the same TERM while shutting down releases it', async (state) => {
    const run = async (systemState: string) => {
      lab.start('gw-1', agentScript('gw-1', { LEASE_DURATION: '4' }));
      expect(await until(() => lab.cilium() === 'gw-1', 30)).not.toBeNaN();
      lab.start('gw-2', agentScript('gw-2', { LEASE_DURATION: '4' }));
      await sleep(1500);
      fs.writeFileSync(path.join(lab.tools('gw-1'), 'system-state'), systemState);
      process.kill(-lab.agents.get('gw-1')!.pid!, 'SIGTERM');
      // 1.5 s down (within the lease), then started again as systemd's Restart does; watched for 2 leases.
      const seen = new Set<string>();
      await until(() => false, 1.5, () => seen.add(`${lab.holder() ?? 'none'}/${lab.cilium()}`));
      lab.start('gw-1', agentScript('gw-1', { LEASE_DURATION: '4' }));
      await until(() => false, 8, () => seen.add(`${lab.holder() ?? 'none'}/${lab.cilium()}`));
      return [...seen];
    };
    expect(await run(state)).toEqual(['gw-1/gw-1']);
    lab.stop();
    lab = await startLab();
    expect(await run('stopping')).toContain('gw-2/gw-2');
  });

  it.each([
    // The tunnel's keepalive is 25 s: a healthy idle tunnel rekeys by ~125 s (REKEY_AFTER_TIME 120 s + one keepalive).
    ['a handshake 100 s old (healthy): gw-1 takes the role', 100, 'gw-1'],
    ['a handshake 150 s old (past REKEY_AFTER_TIME, one keepalive and two retries): no candidate takes it', 150, undefined],
  ])('with the default handshake age limit, %s', async (_what, age, holder) => {
    for (const node of NODES) fs.writeFileSync(path.join(lab.tools(node), 'handshake'), String(Math.floor(Date.now() / 1000) - age));
    lab.start('gw-1', agentScript('gw-1', {}));
    // Within 3 s gw-1 (2 checks of 0.3 s) holds the Lease, or never does.
    const held = await until(() => lab.holder() === 'gw-1', 3);
    expect(Number.isNaN(held) ? undefined : 'gw-1').toBe(holder);
  });
});
