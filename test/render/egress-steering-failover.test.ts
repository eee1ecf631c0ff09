import { EgressSteeringProps, planEgressSteering } from '../../src';
import { KILL_SWITCH_NFT_PATH, KILL_SWITCH_TABLE } from '../../src/render/kill-switch';
import { firing, perMinute } from '../helpers/promtool';
import { describeWithTools, run } from '../system/tools';
import { FAILOVER_AGENT_PATH, FAILOVER_AGENT_SERVICE } from '../../src/render/egress-steering-failover';
import { failoverSteering, prodSteering, wireguardSteering } from '../helpers/fixtures';

const ack = ['dns-wan', 'policy-delay', 'cilium-devices', 'ignition-packages'];
const plan = (extra: object = {}) => planEgressSteering({ ...failoverSteering(), acknowledge: ack, ...extra });
const find = (kind: string) => plan().objects.filter((o) => o.kind === kind);

describe('planEgressSteering with failover', () => {
  it('selects the node that carries the active label, never a hostname', () => {
    const [policy] = plan().objects;
    expect((policy.spec as { egressGateway: unknown }).egressGateway).toEqual({ nodeSelector: { matchLabels: { 'egress-active.tunnelwright.dev/vpn-egress': 'true' } }, interface: 'tun0' });
    // Without failover: the hostname, as before.
    const [single] = planEgressSteering({ ...wireguardSteering(), acknowledge: ack }).objects;
    expect((single.spec as { egressGateway: { nodeSelector: unknown } }).egressGateway.nodeSelector).toEqual({ matchLabels: { 'kubernetes.io/hostname': 'gw-1' } });
  });

  it('emits the Lease, and lets the agents get and patch that Lease alone and label only the candidates', () => {
    expect(find('Lease')).toEqual([expect.objectContaining({ apiVersion: 'coordination.k8s.io/v1', metadata: expect.objectContaining({ name: 'vpn-egress-gateway', namespace: 'kube-system' }), spec: { leaseDurationSeconds: 15 } })]);
    expect(find('Role').map((r) => r.rules)).toEqual([[{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['vpn-egress-gateway'], verbs: ['get', 'patch'] }]]);
    expect(find('RoleBinding').map((b) => b.subjects)).toEqual([[{ kind: 'ServiceAccount', name: 'vpn-egress-resteer', namespace: 'kube-system' }]]);
    expect(find('ClusterRole').flatMap((r) => (r.rules as { resourceNames: string[]; verbs: string[] }[]).map((x) => [x.resourceNames, x.verbs]))).toEqual([[['gw-1', 'gw-2'], ['get', 'patch']], [['gw-1', 'gw-2'], ['get', 'patch']]]);
  });

  it('gives each candidate its own host plan: its tunnel with its own key and address, the kill switch, and the agent naming the others', () => {
    const hosts = plan().hosts;
    expect(hosts.map((h) => h.node)).toEqual(['gw-1', 'gw-2']);
    for (const h of hosts) {
      expect(h.units.map((u) => u.name)).toEqual(expect.arrayContaining(['wg-quick@tun0.service', 'tunnelwright-killswitch.service', FAILOVER_AGENT_SERVICE]));
      const agent = h.files.find((f) => f.path === FAILOVER_AGENT_PATH)!.content;
      expect(agent).toContain(`NODE='${h.node}'`);
      expect(agent).toContain(`OTHERS='${h.node === 'gw-1' ? 'gw-2' : 'gw-1'}'`);
      const unit = h.units.find((u) => u.name === FAILOVER_AGENT_SERVICE)!.content ?? '';
      expect(unit).toMatch(/Restart=always/);
      // Ordered after its tunnel: systemd stops it (TERM: it releases the role) before the tunnel goes down.
      expect(unit.split('\n').filter((l) => /^(After|Wants)=/.test(l) && l.includes('wg-quick@tun0.service'))).toEqual(['After=network-online.target wg-quick@tun0.service', 'Wants=wg-quick@tun0.service']);
    }
    const conf = (i: number) => hosts[i].files.find((f) => f.path === '/etc/wireguard/tun0.conf')!.content;
    expect(conf(0)).toContain('10.2.0.2/32');
    expect(conf(1)).toContain('10.2.0.3/32');
  });

  it('adds the failover alerts and exports the active label through kube-state-metrics', () => {
    const p = plan({ monitoring: {} });
    const rule = p.objects.find((o) => o.kind === 'PrometheusRule')!;
    const groups = (rule.spec as { groups: { name: string; rules: { alert: string; annotations: { runbook: string } }[] }[] }).groups;
    expect(groups.map((g) => g.name)).toEqual(['tunnelwright-vpn-egress', 'tunnelwright-vpn-egress-failover']);
    expect(groups[1].rules.map((r) => r.alert)).toEqual(['VPNEgressRoleMoved', 'VPNEgressTwoHolders', 'VPNEgressNoActiveLabel', 'VPNEgressNoHealthyStandby', 'VPNEgressLeaseNotRenewed']);
    for (const r of groups[1].rules) expect(r.annotations.runbook).toMatch(/^1\. /);
    expect((p.values.kubeStateMetrics as { metricLabelsAllowlist: string[] }).metricLabelsAllowlist).toEqual(['nodes=[tunnelwright.dev/egress-uplink,egress-active.tunnelwright.dev/vpn-egress]']);
    expect(p.hosts[1].files.find((f) => f.path === FAILOVER_AGENT_PATH)!.content).toContain("TEXTFILE='/var/lib/node_exporter/textfile_collector/tunnelwright_egress_failover.prom'");
  });
});

describeWithTools('the failover alerts under promtool', ['promtool'], () => {
  const groups = (plan({ monitoring: {} }).objects.find((o) => o.kind === 'PrometheusRule')!.spec as { groups: unknown[] }).groups;
  // kube-state-metrics' series, labels as its metricLabelsAllowlist exports them; gw-2 is the control node.
  const labels = (node: string, active?: string) => ({ series: `kube_node_labels{job="kube-state-metrics", node="${node}"${active ? `, label_egress_active_tunnelwright_dev_vpn_egress="${active}"` : ''}}`, values: perMinute(Array(10).fill(1)) });
  it.each([
    ['no node carries the active label (both nodes reported)', [labels('gw-1'), labels('gw-2')], [[2, 9]]],
    ['control: gw-2 carries it', [labels('gw-1'), labels('gw-2', 'true')], []],
    ['control: kube-state-metrics reports no node at all (its own alerts cover that)', [{ series: 'up{job="prometheus"}', values: perMinute(Array(10).fill(1)) }], []],
  ])('VPNEgressNoActiveLabel: %s', (_what, series, expected) => {
    expect(firing(groups, series, ['VPNEgressNoActiveLabel'], 10).VPNEgressNoActiveLabel).toEqual(expected);
  });
});

/**
 * Audit finding 3: a new holder whose own Cilium agent has not yet made it the gateway hands a steered pod's packet to
 * the kernel unmasqueraded; the kill switch of every candidate drops pod traffic to the steered destinations that would
 * leave by anything but the tunnel or Cilium's interfaces. Each candidate's table as nft loads it (in a network
 * namespace of its own); the packets are counted in test/system/egress-steering-failover-netns.test.ts.
 */
describeWithTools('each candidate\'s kill switch as nft loads it: the pod fence', ['nft', 'unshare'], () => {
  type Json = { nftables: Array<{ set?: { name: string; elem?: unknown[] }; rule?: { chain: string; expr: Record<string, unknown>[] } }> };
  const table = (host: { files: { path: string; content: string }[] }) => host.files.find((f) => f.path === KILL_SWITCH_NFT_PATH)!.content;
  const loaded = (text: string): Json => {
    const check = run('unshare', ['-n', 'nft', '-c', '-f', '-'], { input: text });
    expect([check.status, check.stderr]).toEqual([0, '']);
    const r = run('unshare', ['-n', 'sh', '-c', `nft -f - && nft -j list table inet ${KILL_SWITCH_TABLE}`], { input: text });
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as Json;
  };
  /** The forward chain's rules, each as its verdict and the sets and interfaces it matches. */
  const forward = (j: Json) => j.nftables.filter((x) => x.rule?.chain === 'forward').map((x) => {
    const text = JSON.stringify(x.rule!.expr);
    return { verdict: /"(accept|drop)":null/.exec(text)?.[1], sets: [...text.matchAll(/"right":"@([a-z_0-9]+)"/g)].map((m) => m[1]), notVia: [...text.matchAll(/"op":"!=","left":\{"meta":\{"key":"oifname"\}\},"right":"([^"]+)"/g)].map((m) => m[1]) };
  });
  const elements = (j: Json, name: string) => JSON.stringify(j.nftables.find((x) => x.set?.name === name)?.set?.elem ?? []);
  const openvpn = (): EgressSteeringProps => {
    const p = prodSteering();
    return { ...p, failover: { standbys: [{ node: 'prod-gw-2', tunnel: { ...p.tunnel!, credentialsFrom: { file: '/etc/openvpn/pia/credentials-2' } } as NonNullable<EgressSteeringProps['tunnel']> }], probeUrl: 'http://10.2.0.1/' } };
  };
  const fenceRules = [
    { verdict: 'drop', sets: ['fence_pods_v4', 'fence_dst_v4', 'fence_exempt_v4'], notVia: ['tun0', 'cilium_*'] },
    { verdict: 'drop', sets: ['fence_pods_v6', 'fence_dst_v6', 'fence_exempt_v6'], notVia: ['tun0', 'cilium_*'] },
  ];

  it.each<[string, () => EgressSteeringProps, string[], number]>([
    ['WireGuard failover (the default): on both candidates', () => failoverSteering(), ['gw-1', 'gw-2'], 2],
    ['OpenVPN failover: on both candidates', openvpn, ['prod-gw', 'prod-gw-2'], 2],
    ['dropPodTrafficOffTunnel: false: none', () => ({ ...failoverSteering(), failover: { ...failoverSteering().failover!, dropPodTrafficOffTunnel: false } }), ['gw-1', 'gw-2'], 0],
    ['no failover: none (one gateway node, as before)', () => wireguardSteering(), ['gw-1'], 0],
  ])('%s', (_what, props, nodes, rules) => {
    const hosts = planEgressSteering({ ...props(), acknowledge: ack }).hosts;
    expect(hosts.map((h) => h.node)).toEqual(nodes);
    for (const h of hosts) expect(forward(loaded(table(h)))).toEqual(fenceRules.slice(0, rules));
  });

  it('drops pods (clusterCidrs) to the steered destinations, never to the cluster, the LAN or the excluded CIDRs', () => {
    const j = loaded(table(planEgressSteering({ ...failoverSteering(), lanCidrs: ['192.168.1.0/24'], destinationCidrs: ['0.0.0.0/0', '2000::/3'], acknowledge: ack }).hosts[1]));
    // 10.42.0.0/16 and 10.43.0.0/16, merged by nft.
    expect(elements(j, 'fence_pods_v4')).toBe(JSON.stringify([{ prefix: { addr: '10.42.0.0', len: 15 } }]));
    expect(elements(j, 'fence_dst_v4')).toBe(JSON.stringify([{ prefix: { addr: '0.0.0.0', len: 0 } }]));
    expect(elements(j, 'fence_dst_v6')).toBe(JSON.stringify([{ prefix: { addr: '2000::', len: 3 } }]));
    // RFC 1918 (which holds the cluster and the LAN, merged into it by nft) is excluded from 0.0.0.0/0.
    expect(elements(j, 'fence_exempt_v4')).toBe(JSON.stringify([{ prefix: { addr: '10.0.0.0', len: 8 } }, { prefix: { addr: '172.16.0.0', len: 12 } }, { prefix: { addr: '192.168.0.0', len: 16 } }]));
  });
});
