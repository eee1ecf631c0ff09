import * as fs from 'node:fs';
import * as path from 'node:path';
import { planWireguardMesh, planWireguardOverlayNode } from '../../src';
import type { HostPlan } from '../../src/types';
import { siteA, threeNodeMesh } from '../helpers/fixtures';
import { describeWithTools, run, tmpdir } from '../system/tools';

/**
 * A node's WireGuard config, as written, fed to what reads it on the node: `wg-quick up` runs `wg addconf` on it, and
 * the reload drop-in runs the node's own wg-reload, which gives `wg syncconf` what `wg-quick strip` leaves of it.
 * Handed an `Endpoint = <name>`, wg resolves the name itself (wireguard-tools src/config.c, parse_endpoint:
 * getaddrinfo, retried WG_ENDPOINT_RESOLUTION_RETRIES times, 15 by default, for ever under upstream's wg-quick@.service
 * which sets `infinity`), and `wg-quick up` fails on a name that does not exist and deletes the interface. So a peer
 * dialled by name must reach wg only as an address (wg-endpoints sets it once the name resolves), never as a name.
 * The `wg` stand-in below records each endpoint it would resolve, with the retries it would allow.
 */
const WG_STAND_IN = `#!/bin/bash
# As wg parses a config (syncconf, addconf, setconf: its file argument) or "set … endpoint": each endpoint whose host
# is not an IP literal is a name wg resolves, with WG_ENDPOINT_RESOLUTION_RETRIES retries (15 unless set).
echo "$*" >> "$LAB/calls"
resolve() {
  local host=\${1%:*}
  host=\${host#[}; host=\${host%]}
  if ! [[ $host =~ ^[0-9.]+$ || $host == *:* ]]; then echo "$1 retries=\${WG_ENDPOINT_RESOLUTION_RETRIES:-15}" >> "$LAB/resolved"; fi
}
case $1 in
  syncconf|addconf|setconf)
    while IFS= read -r line; do
      line=\${line%%#*}
      if [[ $line =~ ^[[:space:]]*Endpoint[[:space:]]*=[[:space:]]*([^[:space:]]+) ]]; then resolve "\${BASH_REMATCH[1]}"; fi
    done < "$3" ;;
  set) for ((i = 1; i <= $#; i++)); do if [ "\${!i}" = endpoint ]; then j=$((i + 1)); resolve "\${!j}"; fi; done ;;
esac
`;

/** Runs the plan's own wg-reload on its wg0.conf (the key file present), as the reload drop-in does: the names wg resolved. */
function reload(host: HostPlan): { status: number | null; stderr: string; resolved: string[]; synced: boolean } {
  const dir = tmpdir('tw-wg-names-');
  try {
    const f = (n: string) => path.join(dir, n);
    fs.mkdirSync(f('bin'));
    const conf = host.files.find((x) => x.path === '/etc/wireguard/wg0.conf')!.content;
    // The key file PostUp names, present (wg-reload reads it); wg-quick strip drops wg-quick's own keys, as upstream.
    const keyFile = /^PostUp = wg set %i private-key (\S+)$/m.exec(conf)?.[1];
    const local = keyFile ? conf.replace(keyFile, f('wg0.key')) : conf;
    fs.writeFileSync(f('wg0.key'), 'yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n', { mode: 0o600 });
    fs.writeFileSync(f('wg0.conf'), local, { mode: 0o600 });
    fs.writeFileSync(f('bin/wg-quick'), '#!/bin/bash\n[ "$1" = strip ] && grep -Ev \'^(Address|DNS|MTU|Table|PreUp|PostUp|PreDown|PostDown|SaveConfig) *=\' "$2"\n', { mode: 0o755 });
    fs.writeFileSync(f('bin/wg'), WG_STAND_IN, { mode: 0o755 });
    const script = host.files.find((x) => x.path.endsWith('/wg-reload'))!.content;
    fs.writeFileSync(f('wg-reload'), script, { mode: 0o755 });
    const r = run('bash', [f('wg-reload'), 'wg0', f('wg0.conf')], { env: { PATH: `${f('bin')}:${process.env.PATH}`, WG_LOCK: f('lock'), LAB: dir } });
    const read = (n: string) => (fs.existsSync(f(n)) ? fs.readFileSync(f(n), 'utf8') : '');
    return { status: r.status, stderr: r.stderr, resolved: read('resolved').split('\n').filter(Boolean), synced: read('calls').split('\n').some((c) => c.startsWith('syncconf wg0 ')) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Every `Endpoint =` line wg-quick up hands `wg addconf` (comments are not read): the ones naming a host by name. */
const namedEndpoints = (conf: string) => conf.split('\n').map((l) => l.replace(/#.*/, '')).map((l) => /^\s*Endpoint\s*=\s*(\S+)/.exec(l)?.[1]).filter((e): e is string => e !== undefined && !/^(\d+\.){3}\d+:\d+$|^\[/.test(e));

const overlay = () => {
  const props = siteA();
  const iface = props.wireguard[0];
  return planWireguardOverlayNode({ ...props, wireguard: [{ ...iface, peers: [{ ...iface.peers[0], endpoint: 'site-b.example.net:51820' }, { ...iface.peers[1], endpoint: '198.51.100.3:51820' }] }] }).hosts[0];
};
const meshNode = () => {
  const mesh = threeNodeMesh();
  return planWireguardMesh({ ...mesh, mtu: 1420, nodes: [mesh.nodes[0], { ...mesh.nodes[1], endpoint: 'site-b.example.net' }, mesh.nodes[2]] }).nodes['site-a'].host;
};

describeWithTools('a peer dialled by name never reaches wg as a name (wg would resolve it, with its own retries)', ['bash', 'flock', 'grep'], () => {
  it.each<[string, () => HostPlan]>([
    ['WireguardOverlayNode, one peer by name and one by address', overlay],
    ['WireguardMesh, site-a with site-b dialled by name', meshNode],
  ])('%s: wg-quick up reads no endpoint name, and a reload syncs the interface without resolving one', (_what, host) => {
    const h = host();
    const conf = h.files.find((x) => x.path === '/etc/wireguard/wg0.conf')!.content;
    expect(conf).toContain('site-b.example.net');
    expect(namedEndpoints(conf)).toEqual([]);
    expect(reload(h)).toEqual({ status: 0, stderr: '', resolved: [], synced: true });
  });

  it('control: the same overlay config with the name written as an Endpoint line is resolved by wg, with its default 15 retries', () => {
    const h = overlay();
    const conf = h.files.find((x) => x.path === '/etc/wireguard/wg0.conf')!.content;
    const named = conf.replace(/^# tunnelwright: Endpoint = /m, 'Endpoint = ');
    expect(named).not.toBe(conf);
    const planted = { ...h, files: h.files.map((x) => (x.path === '/etc/wireguard/wg0.conf' ? { ...x, content: named } : x)) };
    expect(namedEndpoints(named)).toEqual(['site-b.example.net:51820']);
    expect(reload(planted)).toEqual({ status: 0, stderr: '', resolved: ['site-b.example.net:51820 retries=15'], synced: true });
  });
});
