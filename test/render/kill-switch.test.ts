import { createHash } from 'node:crypto';
import { killSwitchName, planKillSwitch, renderHostArtefacts, renderKillSwitchTable } from '../../src';
import { checkKubeObjects } from '../../src/testing';
import { qbittorrentKillSwitch } from '../helpers/fixtures';
import { expectGolden } from '../helpers/golden';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { describeWithTools, run } from '../system/tools';

const labels = { 'app.kubernetes.io/managed-by': 'tunnelwright', 'tunnelwright.dev/component': 'kill-switch' };

describe('planKillSwitch', () => {
  it('denies all egress but the cluster, cluster DNS and VXLAN to the gateway', () => {
    expect(planKillSwitch(qbittorrentKillSwitch()).objects).toEqual([
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'qbittorrent-kill-switch', namespace: 'media', labels },
        spec: {
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'qbittorrent' } },
          policyTypes: ['Egress'],
          egress: [
            { to: [{ ipBlock: { cidr: '10.42.0.0/16' } }, { ipBlock: { cidr: '10.43.0.0/16' } }] },
            { to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }] },
            { to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'vpn-gateway' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'vpn-gateway' } } }], ports: [{ protocol: 'UDP', port: 4789 }] },
          ],
        },
      },
    ]);
  });

  it('leaves DNS out with allowDns: false and names the policy as asked', () => {
    const [policy] = planKillSwitch({ ...qbittorrentKillSwitch(), allowDns: false, name: 'qb-egress', gatewayPodLabels: undefined, gatewayNamespace: undefined }).objects;
    expect(policy.metadata.name).toBe('qb-egress');
    expect((policy.spec as { egress: unknown[] }).egress).toEqual([{ to: [{ ipBlock: { cidr: '10.42.0.0/16' } }, { ipBlock: { cidr: '10.43.0.0/16' } }] }]);
  });

  it('renders a CiliumNetworkPolicy with default-deny egress and the cluster as an entity', () => {
    expect(planKillSwitch({ ...qbittorrentKillSwitch(), flavor: 'cilium', vxlanPort: 8472 }).objects).toEqual([
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'qbittorrent-kill-switch', namespace: 'media', labels },
        spec: {
          endpointSelector: { matchLabels: { 'app.kubernetes.io/name': 'qbittorrent' } },
          enableDefaultDeny: { egress: true, ingress: false },
          egress: [
            { toEntities: ['cluster'] },
            { toCIDRSet: [{ cidr: '10.42.0.0/16' }, { cidr: '10.43.0.0/16' }] },
            { toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'kube-system', 'k8s-app': 'kube-dns' } }], toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }, { port: '53', protocol: 'TCP' }] }] },
            { toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'vpn-gateway', 'app.kubernetes.io/name': 'vpn-gateway' } }], toPorts: [{ ports: [{ port: '8472', protocol: 'UDP' }] }] },
          ],
        },
      },
    ]);
  });

  it('loads the host table before the network comes up, and keeps it loaded (fails closed)', () => {
    const host = planKillSwitch(qbittorrentKillSwitch()).hosts[0];
    expect(host.files.map((f) => [f.path, f.mode])).toEqual([['/etc/tunnelwright/killswitch.nft', 0o644]]);
    expect(host.units[0].content).toBe([
      '[Unit]',
      'Description=tunnelwright kill switch: tunnel-sourced traffic leaves by tun0 or not at all',
      'DefaultDependencies=no',
      'Wants=network-pre.target',
      'After=nftables.service',
      'PartOf=nftables.service',
      'ReloadPropagatedFrom=nftables.service',
      'Before=network-pre.target shutdown.target',
      'Conflicts=shutdown.target',
      '',
      '[Service]',
      'Type=oneshot',
      'RemainAfterExit=yes',
      'ExecStart=/usr/sbin/nft -f /etc/tunnelwright/killswitch.nft',
      'ExecReload=/usr/sbin/nft -f /etc/tunnelwright/killswitch.nft',
      '',
      '[Install]',
      'WantedBy=sysinit.target',
      '',
    ].join('\n'));
    expect(host.units[0].content).not.toContain('ExecStop');
  });

  it('never names its table wg-quick-*, and counts every rule', () => {
    const table = renderKillSwitchTable(qbittorrentKillSwitch().host!);
    expect(table).not.toMatch(/table \S+ wg-quick-/);
    const rules = table.split('\n').filter((l) => /^\t\t(ip6?|meta) /.test(l));
    expect(rules.length).toBe(10);
    expect(rules.every((r) => / counter name "[a-z_]+" (accept|drop)$/.test(r))).toBe(true);
  });

  it('without a WAN interface, drops tunnel-sourced traffic on every interface but the tunnel and loopback', () => {
    const { wanInterface: _w, ...host } = qbittorrentKillSwitch().host!;
    expect(renderKillSwitchTable(host)).toContain('\t\tip saddr @tunnel_v4 oifname != { "tun0", "lo" } counter name "tunnel_via_wan_dropped" drop\n');
  });

  it('renders the golden host table', () => {
    expectGolden('gw-1.killswitch.nft', renderKillSwitchTable({ ...qbittorrentKillSwitch().host!, tunnelCidrs: ['10.2.0.2/32', 'fd00:2::2/128'] }));
  });

  it('has no host artefacts without host, and plain ones with it', () => {
    const { host: _h, ...podOnly } = qbittorrentKillSwitch();
    expect(planKillSwitch(podOnly).hosts).toEqual([]);
    expect(renderHostArtefacts(planKillSwitch(qbittorrentKillSwitch()).hosts[0]).secret).toBe(false);
  });
});

describeWithSchemas('KillSwitch objects against their schemas', () => {
  it.each(['kubernetes', 'cilium'] as const)('%s flavor passes', (flavor) => {
    expect(checkKubeObjects(planKillSwitch({ ...qbittorrentKillSwitch(), flavor }).objects, SCHEMA_DIR)).toEqual([]);
  });
});

describe('the policy name from the selector (a DNS label)', () => {
  const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);
  it.each([
    [{ app: 'my-app' }, 'my-app-kill-switch'],
    [{ tier: 'Web_UI', 'app.kubernetes.io/name': '-x-' }, 'x--web-ui-kill-switch'],
    [{ app: '--' }, 'pods-kill-switch'],
    // Past 63 characters: the start of the values, 8 hex digits of their SHA-256 (`printf %s … | sha256sum`), the suffix.
    [{ app: 'x'.repeat(63) }, `${'x'.repeat(42)}-75220b47-kill-switch`],
    [{ app: `${'a'.repeat(41)}-${'b'.repeat(21)}` }, `${'a'.repeat(41)}-${hashOf(`${'a'.repeat(41)}-${'b'.repeat(21)}`)}-kill-switch`],
    [{ app: 'c'.repeat(51) }, `${'c'.repeat(51)}-kill-switch`],
    [{ app: 'c'.repeat(52) }, `${'c'.repeat(42)}-${hashOf('c'.repeat(52))}-kill-switch`],
    [{ app: `${'a'.repeat(40)}--${'b'.repeat(30)}` }, `${'a'.repeat(40)}-${hashOf(`${'a'.repeat(40)}--${'b'.repeat(30)}`)}-kill-switch`],
    [{ app: `${'a'.repeat(51)}-one` }, `${'a'.repeat(42)}-152efc9b-kill-switch`],
    [{ app: `${'a'.repeat(51)}-two` }, `${'a'.repeat(42)}-38fc1f0c-kill-switch`],
    [{ app: 'qb..torrent' }, 'qb-torrent-kill-switch'],
    [{ app: '--x' }, 'x-kill-switch'],
    [{ app: 'web--' }, 'web-kill-switch'],
  ])('%j is %s', (selector, name) => {
    expect(killSwitchName({ selector })).toBe(name);
    expect(name.length).toBeLessThanOrEqual(63);
  });
});

describe('the Cilium kill switch without a gateway', () => {
  it('allows the cluster, its CIDRs and DNS only: no rule to a gateway that is not there', () => {
    const [policy] = planKillSwitch({ ...qbittorrentKillSwitch(), flavor: 'cilium', gatewayPodLabels: undefined, gatewayNamespace: undefined, host: undefined }).objects;
    expect((policy.spec as { egress: unknown[] }).egress).toEqual([
      { toEntities: ['cluster'] },
      { toCIDRSet: [{ cidr: '10.42.0.0/16' }, { cidr: '10.43.0.0/16' }] },
      { toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'kube-system', 'k8s-app': 'kube-dns' } }], toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }, { port: '53', protocol: 'TCP' }] }] },
    ]);
  });
});

/**
 * The host table as the kernel holds it: loaded by nft into a private network namespace (`unshare -n`: no name, so
 * nothing shared with another run) and listed back as JSON, at unit speed. The verdicts on real traffic are the
 * system lab's (test/system/kill-switch-netns.test.ts).
 */
describeWithTools('the host kill switch as nft loads it', ['nft', 'unshare'], () => {
  type Json = { nftables: Array<{ chain?: { name: string; hook: string; prio: number }; rule?: { chain: string; expr: unknown[] } }> };
  const loaded = (host: Parameters<typeof renderKillSwitchTable>[0]): Json => {
    // The learnt-address include names a glob: no file there is fine for nft.
    const r = run('unshare', ['-n', 'sh', '-c', 'nft -f - && nft -j list table inet tunnelwright_killswitch'], { input: renderKillSwitchTable(host) });
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as Json;
  };
  const chains = (j: Json) => Object.fromEntries(j.nftables.filter((x) => x.chain).map((x) => [x.chain!.name, { hook: x.chain!.hook, prio: x.chain!.prio }]));

  it('hooks each chain where its traffic is: input and output at filter (0), postrouting after source NAT (srcnat is 100), so a packet NATed to the tunnel address is seen with it', () => {
    const c = chains(loaded(qbittorrentKillSwitch().host!));
    expect(c).toEqual({ input: { hook: 'input', prio: 0 }, output: { hook: 'output', prio: 0 }, forward: { hook: 'forward', prio: 0 }, postrouting: { hook: 'postrouting', prio: expect.any(Number) } });
    expect(c.postrouting.prio).toBeGreaterThan(100);
  });

  it.each<[string, number[] | undefined, string[]]>([
    ['no forwarded port: replies pass, everything else from the tunnel is dropped', undefined, ['accept established,related', 'drop']],
    ['a forwarded port: replies pass, the port is let in, everything else is dropped', [51413, 6881, 51413], ['accept established,related', 'accept ports 6881,51413', 'drop']],
  ])('the input chain, for what comes in by the tunnel only: %s', (_name, ports, verdicts) => {
    const j = loaded({ ...qbittorrentKillSwitch().host!, tunnelInboundPorts: ports });
    const rules = j.nftables.filter((x) => x.rule?.chain === 'input').map((x) => JSON.stringify(x.rule!.expr));
    // Every rule matches the tunnel interface first (another interface's traffic is not this chain's business).
    expect(rules.every((r) => r.startsWith('[{"match":{"op":"==","left":{"meta":{"key":"iifname"}},"right":"tun0"}}'))).toBe(true);
    expect(rules.map((r) => {
      const verdict = /"(accept|drop)":null/.exec(r)![1];
      if (r.includes('"ct":{"key":"state"}')) return `${verdict} ${(/"right":\["?([a-z",]+)\]?/.exec(r.slice(r.indexOf('"ct"')))![1]).replace(/"/g, '')}`;
      const set = /"payload":\{"protocol":"th","field":"dport"\}\},"right":\{"set":\[([0-9,]+)\]/.exec(r);
      return set ? `${verdict} ports ${set[1]}` : verdict;
    })).toEqual(verdicts);
  });
});
