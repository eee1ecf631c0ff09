/**
 * gluetun's port-forwarding up and down commands, run as gluetun runs them (the {{PORT}} placeholder replaced, the
 * command split into words and executed: internal/portforward/service/command.go:20-28 at v3.41.1; sh's word
 * splitting of this command is the same, as it has single quotes only) against a stand-in `iptables` on PATH that
 * records its arguments and answers `-C` (check) with 1, as iptables does for a rule not there.
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

/** Runs `command` with {{PORT}} = `port`: its exit status, stderr, and the iptables calls it made. */
function runAsGluetun(command: string, port: number): { status: number | null; stderr: string; calls: string[] } {
  const dir = tmpdir('tw-pf-up-');
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.writeFileSync(path.join(dir, 'bin', 'iptables'), `#!/bin/sh\necho "$*" >> ${dir}/calls\ncase " $* " in *" -C "*) exit 1 ;; esac\nexit 0\n`, { mode: 0o755 });
  const r = run('busybox', ['sh', '-c', command.replace(/\{\{PORT\}\}/g, String(port))], { env: { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin` } });
  const calls = fs.existsSync(path.join(dir, 'calls')) ? fs.readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n') : [];
  return { status: r.status, stderr: r.stderr, calls };
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
