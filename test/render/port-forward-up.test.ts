/**
 * gluetun's port-forwarding up and down commands, run as gluetun runs them (the {{PORT}} placeholder replaced, the
 * command split into words and executed: internal/portforward/service/command.go:20-28 at v3.41.1; sh's word
 * splitting of this command is the same, as it has single quotes only) against a stand-in `iptables` on PATH that
 * records its arguments and keeps the chains and rules as iptables does, refusals included (as iptables 1.8.9 answers
 * in a network namespace): `-N` on a chain there ("Chain already exists", 1), `-F`/`-A`/`-I` on a chain not there
 * ("No chain/target/match by that name", 1), a jump to a chain not there (2), `-C` 0 for a rule there and 1 otherwise.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import { planVpnGateway, validateVpnGateway, VpnGatewayProps } from '../../src';
import { gatewayFor } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from '../system/tools';

const props = (pf: Record<string, unknown>): VpnGatewayProps => ({
  ...gatewayFor('protonvpn'),
  portForwarding: { workload: 'seeder', workloadNamespace: 'media', ...pf },
} as VpnGatewayProps);

function gluetunEnv(p: VpnGatewayProps): Record<string, string> {
  const d = planVpnGateway(p).objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
  return Object.fromEntries(d.spec!.template.spec!.containers.find((c) => c.name === 'gluetun')!.env!.map((e) => [e.name, e.value ?? '']));
}

const IPTABLES = `#!/bin/bash
d=$(dirname "$0")/..
echo "$*" >> "$d/calls"
table=filter; [ "$1" = -t ] && { table=$2; shift 2; }
op=$1 chain=$2; shift 2
chains="$d/chains"; rules="$d/rules"
[ -e "$chains" ] || printf '%s\\n' 'filter INPUT' 'filter FORWARD' 'filter OUTPUT' 'nat PREROUTING' 'nat INPUT' 'nat OUTPUT' 'nat POSTROUTING' > "$chains"
touch "$rules"
has() { grep -qxF "$table $1" "$chains"; }
nochain() { echo "iptables: No chain/target/match by that name." >&2; exit 1; }
[ "$op" = -I ] && [[ "\${1:-}" =~ ^[0-9]+$ ]] && shift
rule="$table $chain $*"
target=; prev=; for a in "$@"; do [ "$prev" = -j ] && target=$a; prev=$a; done
case $op in
  -N) has "$chain" && { echo "iptables: Chain already exists." >&2; exit 1; }; echo "$table $chain" >> "$chains" ;;
  -F) has "$chain" || nochain; grep -v "^$table $chain " "$rules" > "$rules.n"; mv "$rules.n" "$rules" ;;
  -C) has "$chain" || nochain; grep -qxF "$rule" "$rules" || { echo "iptables: Bad rule (does a matching rule exist in that chain?)." >&2; exit 1; } ;;
  -A|-I) has "$chain" || nochain
    case $target in DNAT|ACCEPT|REJECT|DROP|MASQUERADE|RETURN|'') ;; *) has "$target" || { echo "iptables v1.8.9 (nf_tables): Chain '$target' does not exist" >&2; exit 2; } ;; esac
    if [ "$op" = -A ]; then echo "$rule" >> "$rules"; else { echo "$rule"; cat "$rules"; } > "$rules.n"; mv "$rules.n" "$rules"; fi ;;
  *) echo "iptables stand-in: unsupported: $op" >&2; exit 2 ;;
esac
`;

/** Runs `command` with {{PORT}} = `port`: its exit status, stderr, the iptables calls it made and the rules left (`table chain spec`). */
function runAsGluetun(command: string, port: number, dir = tmpdir('tw-pf-up-')): { status: number | null; stderr: string; calls: string[]; rules: string[]; dir: string } {
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  fs.rmSync(path.join(dir, 'calls'), { force: true });
  fs.writeFileSync(path.join(dir, 'bin', 'iptables'), IPTABLES, { mode: 0o755 });
  const r = run('busybox', ['sh', '-c', command.replace(/\{\{PORT\}\}/g, String(port))], { env: { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin` } });
  const lines = (f: string) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean) : []);
  return { status: r.status, stderr: r.stderr, calls: lines('calls'), rules: lines('rules'), dir };
}

const dnats = (calls: string[]) => calls.filter((c) => c.includes('-j DNAT') || c.includes('-j ACCEPT'));

describeWithTools('the port-forwarding up command, run', ['busybox'], () => {
  it.each<[string, Record<string, unknown>, number, string[]]>([
    ['a fixed toPort (no app)', { toPort: 6881 }, 41234, [
      '-t nat -A TW-PF-DNAT -i tun0 -p tcp --dport 41234 -j DNAT --to-destination 172.16.0.5:6881', '-A TW-PF-FORWARD -i tun0 -d 172.16.0.5 -p tcp --dport 6881 -j ACCEPT',
      '-t nat -A TW-PF-DNAT -i tun0 -p udp --dport 41234 -j DNAT --to-destination 172.16.0.5:6881', '-A TW-PF-FORWARD -i tun0 -d 172.16.0.5 -p udp --dport 6881 -j ACCEPT',
    ]],
    ['qBittorrent (the same port on the workload)', { app: 'qbittorrent', controlApiKeySecret: { name: 'k' } }, 41234, [
      '-t nat -A TW-PF-DNAT -i tun0 -p tcp --dport 41234 -j DNAT --to-destination 172.16.0.5:41234', '-A TW-PF-FORWARD -i tun0 -d 172.16.0.5 -p tcp --dport 41234 -j ACCEPT',
      '-t nat -A TW-PF-DNAT -i tun0 -p udp --dport 41234 -j DNAT --to-destination 172.16.0.5:41234', '-A TW-PF-FORWARD -i tun0 -d 172.16.0.5 -p udp --dport 41234 -j ACCEPT',
    ]],
  ])('%s: DNATs the forwarded port into chains of its own, emptied first', (_n, pf, port, rules) => {
    const env = gluetunEnv(props(pf));
    const r = runAsGluetun(env.VPN_PORT_FORWARDING_UP_COMMAND, port);
    expect(r).toMatchObject({ status: 0, stderr: '' });
    expect(dnats(r.calls)).toEqual(rules);
    // Emptied before anything is added (what a gluetun that died without its down command left cannot stack), hooked
    // into PREROUTING and FORWARD once (-C first), and nothing appended to a built-in chain.
    expect(r.calls.slice(0, 2)).toEqual(['-t nat -N TW-PF-DNAT', '-t nat -F TW-PF-DNAT']);
    expect(r.calls).toContain('-F TW-PF-FORWARD');
    expect(r.calls.filter((c) => / -[AI] /.test(` ${c}`)).map((c) => /-[AI] (\S+)/.exec(c)![1])).toEqual(['PREROUTING', 'FORWARD', 'TW-PF-DNAT', 'TW-PF-FORWARD', 'TW-PF-DNAT', 'TW-PF-FORWARD']);
    // The down command empties the same chains.
    expect(runAsGluetun(env.VPN_PORT_FORWARDING_DOWN_COMMAND, port).calls).toEqual(['-t nat -F TW-PF-DNAT', '-F TW-PF-FORWARD']);
  });

  it.each([
    ['a reconnect (down, then up with the new port)', true],
    ['gluetun killed before its down command, then up with the new port', false],
  ])('%s: the new port\'s rules only, and one jump each from PREROUTING and FORWARD', (_n, down) => {
    const env = gluetunEnv(props({ toPort: 6881 }));
    const first = runAsGluetun(env.VPN_PORT_FORWARDING_UP_COMMAND, 41234);
    expect(first).toMatchObject({ status: 0, stderr: '' });
    const stopped = down ? runAsGluetun(env.VPN_PORT_FORWARDING_DOWN_COMMAND, 41234, first.dir) : { status: 0, stderr: '' };
    expect(stopped).toMatchObject({ status: 0, stderr: '' });
    const again = runAsGluetun(env.VPN_PORT_FORWARDING_UP_COMMAND, 42345, first.dir);
    expect(again).toMatchObject({ status: 0, stderr: '' });
    expect([...again.rules].sort()).toEqual([
      'nat PREROUTING -j TW-PF-DNAT',
      'filter FORWARD -j TW-PF-FORWARD',
      'nat TW-PF-DNAT -i tun0 -p tcp --dport 42345 -j DNAT --to-destination 172.16.0.5:6881',
      'filter TW-PF-FORWARD -i tun0 -d 172.16.0.5 -p tcp --dport 6881 -j ACCEPT',
      'nat TW-PF-DNAT -i tun0 -p udp --dport 42345 -j DNAT --to-destination 172.16.0.5:6881',
      'filter TW-PF-FORWARD -i tun0 -d 172.16.0.5 -p udp --dport 6881 -j ACCEPT',
    ].sort());
  });

  it.each<[string, Record<string, unknown>, number, string]>([
    ['qBittorrent\'s Web UI', { app: 'qbittorrent' }, 8080, '8080'],
    ['an appUrl\'s port', { app: 'qbittorrent', appUrl: 'http://127.0.0.1:9999' }, 9999, '9999'],
    ['Transmission\'s RPC', { app: 'transmission' }, 9091, '9091'],
    ['Deluge\'s Web UI', { app: 'deluge', appCredentialsSecret: { name: 'd' } }, 8112, '8112'],
    ['Deluge\'s daemon', { app: 'deluge', appCredentialsSecret: { name: 'd' } }, 58846, '58846'],
    ['port-sync\'s metrics', { app: 'command', command: 'true' }, 9808, '9808'],
    ['slskd\'s Web UI (HTTPS)', { app: 'slskd' }, 5031, '5031'],
  ])('a forwarded port the pod serves (%s) is never DNATed: exit 1, said, the chains left empty; control: the port after it is', (_n, pf, port, served) => {
    const env = gluetunEnv(props({ controlApiKeySecret: { name: 'k' }, ...pf }));
    const r = runAsGluetun(env.VPN_PORT_FORWARDING_UP_COMMAND, port);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`tunnelwright: the VPN forwards port ${port}, and the routed pod serves port ${served} itself (its Web UI, RPC or metrics): not forwarded, so that port never faces the internet; reconnect the VPN for another port (restart gluetun)\n`);
    expect(dnats(r.calls)).toEqual([]);
    expect(r.calls).toEqual(expect.arrayContaining(['-t nat -F TW-PF-DNAT', '-F TW-PF-FORWARD']));
    expect(dnats(runAsGluetun(env.VPN_PORT_FORWARDING_UP_COMMAND, port + 1).calls)).toHaveLength(4);
  });

  it('a fixed toPort the pod serves is refused at synth (app command: port-sync\'s metrics port)', () => {
    expect(validateVpnGateway(props({ app: 'command', command: 'true', controlApiKeySecret: { name: 'k' }, toPort: 9808 }))).toEqual([
      { path: 'portForwarding.toPort', code: 'served', message: '9808 is a port the workload\'s pod serves itself (port-sync\'s metrics: 9808): the forwarded port would put it on the internet; give the port the app listens on for peers' },
    ]);
    expect(validateVpnGateway(props({ app: 'command', command: 'true', controlApiKeySecret: { name: 'k' }, toPort: 32400 }))).toEqual([]);
  });
});
