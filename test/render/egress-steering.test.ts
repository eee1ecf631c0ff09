import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { egressSteeringClaims, planEgressSteering, renderHostArtefacts } from '../../src';
import { mergedKsmAllowlist } from '../../src/render/egress-steering';
import { checkKubeObjects } from '../../src/testing';
import { prodSteering, wireguardSteering } from '../helpers/fixtures';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { runs } from '../helpers/runs';
import { hostTools, withSetting } from '../helpers/host-tools';

describe('planEgressSteering', () => {
  it('selects vpn-class pods and one gateway node by hostname, by interface, never egressGateways', () => {
    const [policy] = planEgressSteering(prodSteering()).objects;
    expect(policy).toEqual({
      apiVersion: 'cilium.io/v2',
      kind: 'CiliumEgressGatewayPolicy',
      metadata: { name: 'vpn-egress', labels: { 'app.kubernetes.io/managed-by': 'tunnelwright' } },
      spec: {
        selectors: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'media' } }, podSelector: { matchLabels: { 'tunnelwright.dev/egress-class': 'vpn' } } }],
        destinationCIDRs: ['0.0.0.0/0'],
        excludedCIDRs: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
        egressGateway: { nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'prod-gw' } }, interface: 'tun0' },
      },
    });
    expect(JSON.stringify(policy)).not.toContain('egressGateways');
  });

  it('uses egressIP instead of the interface when given, and excludes only what lies inside the destinations', () => {
    const [policy] = planEgressSteering({ ...wireguardSteering(), egressIp: '10.2.0.2', destinationCidrs: ['100.64.0.0/10', '203.0.113.0/24'], lanCidrs: ['100.64.5.0/24'] }).objects;
    expect((policy.spec as Record<string, unknown>).egressGateway).toEqual({ nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'gw-1' } }, egressIP: '10.2.0.2' });
    expect((policy.spec as Record<string, unknown>).excludedCIDRs).toEqual(['100.64.5.0/24']);
  });

  it.each<[string, string[], string[] | undefined, string[] | undefined]>([
    ['everything: the private blocks (which hold the cluster) and the LAN', ['0.0.0.0/0'], ['192.168.20.0/24'], ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']],
    ['a private block that is itself the destination: steered, but for the cluster inside it', ['10.0.0.0/8'], undefined, ['10.42.0.0/16', '10.43.0.0/16']],
    ['a LAN starting where the destination starts', ['192.168.20.0/23'], ['192.168.20.0/24'], ['192.168.20.0/24']],
    ['a destination outside every private block (no excludedCIDRs)', ['203.0.113.0/24'], ['192.168.20.0/24'], undefined],
  ])('excludes by default, for %s', (_name, destinationCidrs, lanCidrs, excluded) => {
    const [policy] = planEgressSteering({ ...wireguardSteering(), destinationCidrs, ...(lanCidrs ? { lanCidrs } : {}) }).objects;
    expect((policy.spec as Record<string, unknown>).excludedCIDRs).toEqual(excluded);
  });

  it.each<[string, string[], string[], string[], string[]]>([
    ['the cluster inside a private block that is the destination, one of them ending where it ends', ['10.0.0.0/8'], ['10.42.0.0/16', '10.255.0.0/16'], [], ['10.42.0.0/16', '10.255.0.0/16']],
    ['a private block ending where the destination ends', ['172.0.0.0/11'], ['10.42.0.0/16'], [], ['172.16.0.0/12']],
    ['a private block starting where the destination starts', ['10.0.0.0/7'], ['10.42.0.0/16'], [], ['10.0.0.0/8']],
    ['a cluster CIDR that is the destination (never steered)', ['10.42.0.0/16'], ['10.42.0.0/16'], [], ['10.42.0.0/16']],
    ['a LAN given twice that covers a cluster CIDR listed before it: once, alone', ['10.42.0.0/16'], ['10.42.1.0/24'], ['10.42.0.0/16', '10.42.0.0/16'], ['10.42.0.0/16']],
  ])('excludes by default, for %s', (_name, destinationCidrs, clusterCidrs, lanCidrs, excluded) => {
    const [policy] = planEgressSteering({ ...wireguardSteering(), destinationCidrs, clusterCidrs, lanCidrs }).objects;
    expect((policy.spec as Record<string, unknown>).excludedCIDRs).toEqual(excluded);
  });

  it('emits the objects in order: policy, Kyverno, PrometheusRule, then the hook\'s RBAC and its admission policy', () => {
    expect(planEgressSteering(prodSteering()).objects.map((o) => `${o.kind} ${o.metadata.namespace ?? '-'}/${o.metadata.name}`)).toEqual([
      'CiliumEgressGatewayPolicy -/vpn-egress',
      'ClusterPolicy -/vpn-egress-require-egress-class',
      'PrometheusRule monitoring/vpn-egress-egress',
      'ServiceAccount kube-system/vpn-egress-resteer',
      'Secret kube-system/vpn-egress-resteer-token',
      'ClusterRole -/vpn-egress-resteer',
      'ClusterRoleBinding -/vpn-egress-resteer',
      'ValidatingAdmissionPolicy -/vpn-egress-resteer-scope',
      'ValidatingAdmissionPolicyBinding -/vpn-egress-resteer-scope',
    ]);
  });

  it('lets the hook patch only the gateway node and its CiliumNode', () => {
    const role = planEgressSteering(prodSteering()).objects.find((o) => o.kind === 'ClusterRole')!;
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['nodes'], resourceNames: ['prod-gw'], verbs: ['get', 'patch'] },
      { apiGroups: ['cilium.io'], resources: ['ciliumnodes'], resourceNames: ['prod-gw'], verbs: ['get', 'patch'] },
    ]);
  });

  it('puts the PrometheusRule in the monitoring namespace given, with only the managed-by label when no rule labels are', () => {
    const rule = planEgressSteering({ ...prodSteering(), monitoring: { namespace: 'observability', kubeStateMetricsValues: prodSteering().monitoring!.kubeStateMetricsValues } }).objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.metadata).toEqual({ name: 'vpn-egress-egress', namespace: 'observability', labels: { 'app.kubernetes.io/managed-by': 'tunnelwright' } });
  });

  it('puts the rule labels the Prometheus ruleSelector needs on the PrometheusRule', () => {
    const rule = planEgressSteering(prodSteering()).objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.metadata.labels).toEqual({ 'app.kubernetes.io/managed-by': 'tunnelwright', release: 'kube-prometheus-stack' });
    const alerts = (rule.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups[0].rules;
    expect(alerts.map((r) => r.alert)).toEqual(['VPNTunnelDown', 'VPNEgressSteeringStale', 'VPNTunnelReconnectLoop', 'VPNEgressUplinkLabelMissing']);
    // Each gated on the gateway node existing (Stale and ReconnectLoop over a kube-state-metrics restart too).
    expect(alerts.every((r) => /and on\(\) \(count\((last_over_time\()?kube_node_info\{node="prod-gw"\}(\[4m\]\))?\) > 0\)$/.test(r.expr))).toBe(true);
  });

  it('gives the Helm values Cilium and kube-state-metrics need', () => {
    expect(planEgressSteering(prodSteering()).values).toEqual({
      cilium: { egressGateway: { enabled: true }, bpf: { masquerade: true }, kubeProxyReplacement: true, devices: ['eth0', 'tun0'] },
      kubeStateMetrics: { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink]'] },
    });
  });

  // Helm replaces a list: the values carry the user's allowlist whole, with the uplink label in its nodes= entry.
  it.each<[string, unknown[] | undefined, string[]]>([
    ['none given: ours alone', undefined, ['nodes=[tunnelwright.dev/egress-uplink]']],
    ['other resources only: ours appended', ['pods=[app]'], ['pods=[app]', 'nodes=[tunnelwright.dev/egress-uplink]']],
    ['other node labels: ours added to their entry', ['pods=[app]', 'nodes=[kubernetes.io/arch]'], ['pods=[app]', 'nodes=[kubernetes.io/arch,tunnelwright.dev/egress-uplink]']],
    ['ours already there: unchanged', ['nodes=[kubernetes.io/arch, tunnelwright.dev/egress-uplink]'], ['nodes=[kubernetes.io/arch, tunnelwright.dev/egress-uplink]']],
    ['every node label: unchanged', ['nodes=[*]', 'pods=[app]'], ['nodes=[*]', 'pods=[app]']],
    // The chart joins the list with "," into one flag, so an entry may hold several groups.
    ['nodes= second in an entry of two groups: ours added to that group, not appended (a second nodes= drops the first)', ['pods=[app],nodes=[kubernetes.io/arch]'], ['pods=[app],nodes=[kubernetes.io/arch,tunnelwright.dev/egress-uplink]']],
    ['nodes= first in an entry of two groups: ours added to nodes, not to pods', ['nodes=[kubernetes.io/arch],pods=[app]'], ['nodes=[kubernetes.io/arch,tunnelwright.dev/egress-uplink],pods=[app]']],
    ['every node label, in an entry of two groups: unchanged', ['pods=[app],nodes=[*]'], ['pods=[app],nodes=[*]']],
    // kube-state-metrics reads "*" as every label only first in its group, and a *= group takes precedence over nodes=.
    ['a "*" that is not first in its group: ours added', ['nodes=[kubernetes.io/arch,*]'], ['nodes=[kubernetes.io/arch,*,tunnelwright.dev/egress-uplink]']],
    ['a *= group: ours added to it, not in a nodes= group it would override', ['*=[app]', 'nodes=[kubernetes.io/arch]'], ['*=[app,tunnelwright.dev/egress-uplink]', 'nodes=[kubernetes.io/arch]']],
    ['a group helm --set split at its comma: ours added before its "]", not appended', ['nodes=[topology.kubernetes.io/zone', 'kubernetes.io/arch]'], ['nodes=[topology.kubernetes.io/zone', 'kubernetes.io/arch,tunnelwright.dev/egress-uplink]']],
    ['an empty nodes= group: ours its only label', ['nodes=[]'], ['nodes=[tunnelwright.dev/egress-uplink]']],
    ['an empty entry (what "".split(",") gives): dropped, not joined into a leading ","', [''], ['nodes=[tunnelwright.dev/egress-uplink]']],
    ['"*" after an empty label, which kube-state-metrics reads second: ours added', ['nodes=[,*]'], ['nodes=[,*,tunnelwright.dev/egress-uplink]']],
  ])('merges kube-state-metrics\' allowlist with yours: %s', (_name, yours, expected) => {
    const props = { ...prodSteering(), monitoring: { ...prodSteering().monitoring, kubeStateMetricsValues: yours ? { metricLabelsAllowlist: yours } : {} }, acknowledge: ['kube-state-metrics' as const] };
    expect(planEgressSteering(props).values.kubeStateMetrics).toEqual({ metricLabelsAllowlist: expected });
  });

  /**
   * kube-state-metrics' own reading of the flag, written from LabelsAllowList.Set (pkg/options/types.go): groups
   * `resource=[a,b]` joined by ",", each "=" starting the resource's labels afresh. Undefined where Set returns an error.
   */
  const ksmSet = (value: string): Record<string, string[]> | undefined => {
    const m: Record<string, string[]> = {};
    let [name, from] = ['', 0];
    const at = (i: number) => (i >= 0 && i < value.length ? value[i] : i < 0 ? value[0] : undefined);
    for (let i = 0; i < value.length; i++) {
      const [v, previous, next] = [value[i], at(i - 1), at(i + 1)];
      if (v === '=') {
        if (previous === ',' || next !== '[') return undefined;
        name = value.slice(from, i).trim();
        m[name] = [];
        from = i + 1;
      } else if (v === '[') {
        if (previous !== '=') return undefined;
        from = i + 1;
      } else if (v === ']') {
        if (next !== undefined && next !== ',') return undefined;
        if (previous !== '[') m[name].push(value.slice(from, i).trim());
        from = i + 1;
      } else if (v === ',') {
        if (previous === v || next === undefined || next === ']') return undefined;
        if (previous !== ']') m[name].push(value.slice(from, i).trim());
        from = i + 1;
      }
    }
    return m;
  };

  /**
   * The labels kube-state-metrics puts on node metrics, from the map Set gives: a `*` resource takes precedence
   * (internal/store/builder.go, allowList), and `*` means every label only as the first (internal/store/utils.go,
   * createPrometheusLabelKeysValues).
   */
  const nodeLabelExported = (m: Record<string, string[]>, label: string) => {
    const labels = m['*'] ?? m.nodes ?? [];
    return labels[0] === '*' || labels.includes(label);
  };

  it('the merged allowlist, read as kube-state-metrics reads its flag: the uplink label on node metrics, every label you listed kept, your text kept (fast-check)', () => {
    const uplink = 'tunnelwright.dev/egress-uplink';
    const group = fc.tuple(fc.constantFrom('pods', 'nodes', 'namespaces', '*'), fc.uniqueArray(fc.constantFrom('app', 'kubernetes.io/arch', 'topology.kubernetes.io/zone', '*', uplink), { maxLength: 3 }))
      .map(([r, labels]) => `${r}=[${labels.join(',')}]`);
    // Entries of one or two groups, each of which `helm --set` may have split at its commas (the chart joins them back).
    const entry = fc.tuple(fc.array(group, { minLength: 1, maxLength: 2 }).map((g) => g.join(',')), fc.boolean())
      .map(([text, split]) => (split ? text.split(',') : [text]));
    const list = fc.array(entry, { maxLength: 4 }).map((es) => es.flat());
    fc.assert(fc.property(list, (yours) => {
      const before = ksmSet(yours.join(','))!;
      const merged = mergedKsmAllowlist(yours, uplink);
      const after = ksmSet(merged.join(','))!;
      expect(after).toBeDefined();
      expect(nodeLabelExported(after, uplink)).toBe(true);
      for (const [resource, labels] of Object.entries(before)) expect(after[resource]).toEqual(expect.arrayContaining(labels));
      const added = before['*'] === undefined && before.nodes === undefined ? ['nodes'] : [];
      expect(Object.keys(after).sort()).toEqual([...Object.keys(before), ...added].sort());
      // Your entries as you wrote them, but for the label put into one of them (or one entry appended).
      const changed = merged.filter((e, k) => e !== yours[k]);
      expect(changed.length).toBeLessThanOrEqual(1);
      expect(changed.length === 0 && merged.length === yours.length).toBe(nodeLabelExported(before, uplink));
    }), { seed: 35, numRuns: runs(300) });
  });

  it('two steerings with different uplink labels: the second, given the first\'s values, exports both labels in one nodes= group (as docs/egress-steering.md says)', () => {
    const first = planEgressSteering({ ...prodSteering(), uplinkLabel: 'example.com/uplink-a', acknowledge: ['kube-state-metrics'] } as never);
    const second = planEgressSteering({ ...prodSteering(), gatewayNode: 'gw-2', uplinkLabel: 'example.com/uplink-b', monitoring: { ...prodSteering().monitoring, kubeStateMetricsValues: first.values.kubeStateMetrics } } as never);
    const list = (second.values.kubeStateMetrics as { metricLabelsAllowlist: string[] }).metricLabelsAllowlist;
    // The fixture's own list holds the default label: the first adds its label to it, the second to that.
    expect(ksmSet(list.join(','))).toEqual({ nodes: ['tunnelwright.dev/egress-uplink', 'example.com/uplink-a', 'example.com/uplink-b'] });
  });

  it('control: kube-state-metrics\' reading of an appended nodes= entry drops the nodes= group before it', () => {
    expect(ksmSet('pods=[app],nodes=[kubernetes.io/arch],nodes=[tunnelwright.dev/egress-uplink]')).toEqual({ pods: ['app'], nodes: ['tunnelwright.dev/egress-uplink'] });
    expect(ksmSet('nodes=[a],')).toBeUndefined();
    // And its reading of the two wildcards the merge must see as they are.
    expect(nodeLabelExported(ksmSet('nodes=[kubernetes.io/arch,*]')!, 'tunnelwright.dev/egress-uplink')).toBe(false);
    expect(nodeLabelExported(ksmSet('*=[app],nodes=[tunnelwright.dev/egress-uplink]')!, 'tunnelwright.dev/egress-uplink')).toBe(false);
  });

  it('renders a WireGuard split tunnel: no routes of wg-quick\'s, policy routing for its own address, the hook on connect', () => {
    const host = planEgressSteering(wireguardSteering()).hosts[0];
    const conf = host.files.find((f) => f.path === '/etc/wireguard/tun0.conf')!.content;
    expect(conf).toContain('\nTable = off\n');
    expect(conf).toContain('\nPostUp = ip -4 rule add from 10.2.0.2 lookup 51821 priority 5210\nPostUp = ip -4 route replace default dev %i table 51821\nPostUp = /opt/tunnelwright/bin/egress-resteer || true\n');
    expect(conf).not.toMatch(/PrivateKey/);
    expect(host.files.find((f) => f.path === '/etc/tunnelwright/killswitch.nft')!.content).toContain('elements = { 10.2.0.2/32 }');
    // wg-quick@.service and wg come from wireguard-tools: a stock Debian or Fedora host has neither.
    expect(host.packages).toEqual(['wireguard-tools', 'nftables']);
  });

  it('renders an OpenVPN split tunnel with route-noexec, pinned to its remote', () => {
    const host = planEgressSteering(prodSteering()).hosts[0];
    const unit = host.units.find((u) => u.name === 'tunnelwright-openvpn.service')!.content!;
    expect(unit).toContain(' --route-noexec ');
    expect(unit).toContain(' --remote nl-amsterdam.privacy.network 1198\n');
    // An IPv6 remote is written in brackets in the props, and without them on OpenVPN's command line.
    const v6 = planEgressSteering({ ...prodSteering(), tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/pia.ovpn' }, remote: '[2001:db8::7]:1198' } }).hosts[0];
    expect(v6.units.find((u) => u.name === 'tunnelwright-openvpn.service')!.content).toContain(' --remote 2001:db8::7 1198\n');
    expect(host.files.find((f) => f.path === '/opt/tunnelwright/bin/egress-openvpn-up')!.content).toContain("TABLE='tunnelwright_killswitch'\nSET='tunnel_v4'\n");
  });

  it('installs the hook and its convergence timer even without a tunnel', () => {
    const { tunnel: _t, ...noTunnel } = wireguardSteering();
    const host = planEgressSteering(noTunnel).hosts[0];
    expect(host.files.map((f) => f.path)).toEqual(['/opt/tunnelwright/bin/egress-resteer']);
    expect(host.units.map((u) => `${u.name} ${u.enabled ?? false}`)).toEqual(['tunnelwright-egress-resteer.service false', 'tunnelwright-egress-resteer.timer true']);
    expect(renderHostArtefacts(host).secret).toBe(false);
  });

  it.each([
    ['an OpenVPN tunnel', prodSteering(), true],
    ['a WireGuard tunnel', wireguardSteering(), true],
    ['no tunnel (control: no policy rules of ours to keep)', (() => { const { tunnel: _t, ...p } = wireguardSteering(); return p; })(), false],
  ] as const)('keeps systemd-networkd off the tunnel\'s policy rules with %s (ManageForeignRoutingPolicyRules=no)', (_what, props, expected) => {
    const file = planEgressSteering(props).hosts[0].files.find((f) => f.path === '/etc/systemd/networkd.conf.d/10-tunnelwright-egress.conf');
    expect(file?.content.split('\n').filter(Boolean)).toEqual(expected ? ['[Network]', 'ManageForeignRoutingPolicyRules=no'] : undefined);
  });

  it('resolves the hook\'s kubeconfig again from its source at each timer run, before the hook (a rotated token without a reboot); control: none without kubeconfigFrom', () => {
    const host = planEgressSteering(prodSteering()).hosts[0];
    const service = host.units.find((u) => u.name === 'tunnelwright-egress-resteer.service')!.content!.split('\n');
    const boot = host.units.find((u) => u.name === 'tunnelwright-secret-vpn-egress-kubeconfig.service')!.content!;
    const resolve = /^ExecStart=(.+) \d+$/m.exec(boot)![1];
    const pre = service.findIndex((l) => l === `ExecStartPre=-${resolve} 0`);
    expect(pre).toBeGreaterThanOrEqual(0);
    expect(pre).toBeLessThan(service.indexOf('ExecStart=/opt/tunnelwright/bin/egress-resteer'));
    const { kubeconfigFrom: _k, ...without } = prodSteering();
    const plain = planEgressSteering({ ...without, acknowledge: ['default-kubeconfig'] }).hosts[0].units.find((u) => u.name === 'tunnelwright-egress-resteer.service')!.content!;
    expect(plain).not.toContain('ExecStartPre');
  });

  it('claims its pods per namespace or for the whole cluster, and a pinned server with its credential', () => {
    expect(egressSteeringClaims(prodSteering())).toEqual([
      { key: 'cluster/prod/egress-class/tunnelwright.dev/egress-class=vpn/ns/media', path: 'namespaces[0]', what: 'pods with tunnelwright.dev/egress-class=vpn in namespace media of cluster "prod"' },
      { key: 'vpn-server/openvpn/nl-amsterdam.privacy.network:1198//etc/openvpn/pia/credentials', path: 'tunnel.remote', what: "VPN server nl-amsterdam.privacy.network:1198 with the credential /etc/openvpn/pia/credentials (two gateways on one server and account steal each other's session)" },
    ]);
  });
});

describeWithSchemas('EgressSteering objects against their schemas', () => {
  it.each([['prod', prodSteering()], ['wireguard', wireguardSteering()]])('%s', (_n, props) => {
    expect(checkKubeObjects(planEgressSteering(props).objects, SCHEMA_DIR)).toEqual([]);
  });
});

describe('EgressSteering over its lifetime (unit level)', () => {
  const host = (props = prodSteering()) => planEgressSteering(props).hosts[0];
  const file = (props: ReturnType<typeof prodSteering>, path: string) => host(props).files.find((f) => f.path === path)!.content;
  const unit = (props: ReturnType<typeof prodSteering>, name: string) => host(props).units.find((u) => u.name === name)!.content!;

  it('gives Cilium the whole devices list: yours with the tunnel added (Helm replaces lists)', () => {
    const values = (devices: unknown) => planEgressSteering({ ...prodSteering(), ciliumValues: { ...prodSteering().ciliumValues, devices } }).values.cilium as Record<string, unknown>;
    expect(values(['eth0', 'eth1', 'tun0']).devices).toEqual(['eth0', 'eth1', 'tun0']);
    expect(values('eth0 tun+').devices).toEqual(['eth0', 'tun+', 'tun0']);
    expect(values(' eth0, tun0 ').devices).toEqual(['eth0', 'tun0']);
  });

  it('resolves the config and credentials again at each start, before the pin; reads relative paths from the config file\'s folder (none for a URL)', () => {
    const u = unit(prodSteering(), 'tunnelwright-openvpn.service');
    const pre = u.split('\n').filter((l) => l.startsWith('ExecStartPre=') || l.startsWith('WorkingDirectory='));
    expect(pre).toEqual([
      'WorkingDirectory=-/etc/openvpn/pia',
      'ExecStartPre=-/opt/tunnelwright/bin/resolve-secret file /etc/openvpn/pia/nl_amsterdam.ovpn /run/tunnelwright/secrets/vpn-egress-openvpn-config 0',
      'ExecStartPre=-/opt/tunnelwright/bin/resolve-secret file /etc/openvpn/pia/credentials /run/tunnelwright/secrets/vpn-egress-openvpn-credentials 0',
      'ExecStartPre=/opt/tunnelwright/bin/egress-openvpn-pin /run/tunnelwright/secrets/vpn-egress-openvpn-config /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned pin',
    ]);
    const { credentialsFrom: _c, ...noCreds } = prodSteering().tunnel as { type: 'openvpn'; credentialsFrom: unknown };
    const fromUrl = unit({ ...prodSteering(), tunnel: { ...noCreds, configFrom: { url: 'https://vault.example/v1/ovpn' } } as never }, 'tunnelwright-openvpn.service');
    expect(fromUrl).not.toContain('WorkingDirectory=');
    expect(fromUrl).toContain('\nExecStartPre=-/opt/tunnelwright/bin/resolve-secret url /etc/tunnelwright/secret-urls/vpn-egress-openvpn-config.curl /run/tunnelwright/secrets/vpn-egress-openvpn-config 0\n');
  });

  it('pins the remote: the config is filtered of its own remotes (and persist-tun) before OpenVPN starts, and only the pinned one is given', () => {
    const u = unit(prodSteering(), 'tunnelwright-openvpn.service');
    expect(u).toContain('\nExecStartPre=/opt/tunnelwright/bin/egress-openvpn-pin /run/tunnelwright/secrets/vpn-egress-openvpn-config /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned pin\n');
    expect(u).toContain(' --config /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned ');
    expect(u).toContain(' --remote nl-amsterdam.privacy.network 1198\n');
    const { remote: _r, ...noRemote } = prodSteering().tunnel as { type: 'openvpn'; remote: string };
    const plain = unit({ ...prodSteering(), tunnel: noRemote as never }, 'tunnelwright-openvpn.service');
    // Without a pinned remote the config is still rewritten (never persist-tun), its remotes kept.
    expect(plain).toContain('\nExecStartPre=/opt/tunnelwright/bin/egress-openvpn-pin /run/tunnelwright/secrets/vpn-egress-openvpn-config /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned\n');
    expect(plain).toContain(' --config /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned ');
    // The pull-filters before --config, so that they are matched before the config's (first match wins); the timers
    // after it, so that they win over the config's. A pushed persist-tun is ignored, and so are a pushed ping-restart
    // that is not a positive number (0 in any spelling) and any pushed ping-exit (either would leave tun0 up on a
    // silent server, or the unit stopped).
    expect(plain).toContain('/usr/sbin/openvpn --suppress-timestamps --pull-filter ignore \'"\' --pull-filter ignore "\'" --pull-filter ignore redirect-gateway --pull-filter ignore persist-tun --pull-filter accept "ping-restart 1" --pull-filter accept "ping-restart 2" --pull-filter accept "ping-restart 3" --pull-filter accept "ping-restart 4" --pull-filter accept "ping-restart 5" --pull-filter accept "ping-restart 6" --pull-filter accept "ping-restart 7" --pull-filter accept "ping-restart 8" --pull-filter accept "ping-restart 9" --pull-filter ignore ping-restart --pull-filter ignore ping-exit --config /run/tunnelwright/secrets/vpn-egress-openvpn-config.pinned ');
    expect(plain).toContain(' --route-noexec --auth-retry none --ping 10 --ping-restart 60 ');
  });

  it('requires the kill switch and starts after it: neither tunnel runs without the table, nor before it is loaded', () => {
    // Requires= alone starts both at once (the tunnel may come up before the table); After= alone starts the tunnel
    // when the table failed to load. Both lines, in the [Unit] section systemd reads them from.
    const lines = (text: string, key: string) => text.split('\n[')[0].split('\n').filter((l) => l.startsWith(`${key}=`)).flatMap((l) => l.slice(key.length + 1).split(' '));
    const openvpn = unit(prodSteering(), 'tunnelwright-openvpn.service');
    const wireguard = host(wireguardSteering()).dropins.find((d) => d.name === '10-tunnelwright-egress.conf')!.content;
    for (const text of [openvpn, wireguard]) {
      expect(text.startsWith('[Unit]\n')).toBe(true);
      expect({ after: lines(text, 'After'), requires: lines(text, 'Requires') }).toEqual({ after: expect.arrayContaining(['tunnelwright-killswitch.service']), requires: expect.arrayContaining(['tunnelwright-killswitch.service']) });
    }
    // OpenVPN's secret units are wanted, not required: a source out of reach at boot must not leave the tunnel never
    // started (its ExecStartPre resolves them again at each start, and Restart=always retries).
    const secrets = ['tunnelwright-secret-vpn-egress-openvpn-config.service', 'tunnelwright-secret-vpn-egress-openvpn-credentials.service'];
    expect({ wants: lines(openvpn, 'Wants'), after: lines(openvpn, 'After'), requires: lines(openvpn, 'Requires') }).toEqual({
      wants: ['network-online.target', ...secrets], after: expect.arrayContaining(secrets), requires: ['tunnelwright-killswitch.service'],
    });
  });

  it('keeps the egress table closed when the tunnel goes: a blackhole default, and the rule from the tunnel address stays', () => {
    const conf = file(wireguardSteering(), '/etc/wireguard/tun0.conf');
    expect(conf).toContain('PostUp = ip -4 route replace blackhole default table 51821 metric 4294967295\n');
    expect(conf).not.toMatch(/PostDown = .*rule del/);
    const t = openvpnHooks();
    t.up('10.8.0.2');
    t.down('10.8.0.2');
    expect(t.tools.routes()).toContain('route replace blackhole default table 51821 metric 4294967295');
    expect(t.tools.rules()).toEqual(['5209:\tfrom 10.8.0.2 blackhole', '5210:\tfrom 10.8.0.2 lookup 51821']);
  });

  // OpenVPN's hooks run against an `ip` stand-in that keeps the rule list as the kernel does (test/helpers/host-tools).
  const openvpnHooks = () => {
    const tools = hostTools();
    const up = withSetting(withSetting(file(prodSteering(), '/opt/tunnelwright/bin/egress-openvpn-up'), 'RESTEER', 'true'), 'LEARNT_DIR', `${tools.dir}/learnt`);
    const down = withSetting(file(prodSteering(), '/opt/tunnelwright/bin/egress-openvpn-down'), 'RESTEER', 'true');
    return {
      tools,
      up: (addr: string) => expect(tools.run(up, { dev: 'tun0', ifconfig_local: addr })).toMatchObject({ status: 0, stderr: '' }),
      down: (addr: string) => expect(tools.run(down, { dev: 'tun0', ifconfig_local: addr })).toMatchObject({ status: 0, stderr: '' }),
    };
  };
  /** Where the kernel sends traffic from `addr` by these rules: the first rule from it, in priority order. */
  const fate = (rules: string[], addr: string) => {
    const r = rules.find((l) => l.split('\t')[1].startsWith(`from ${addr} `));
    return r === undefined ? 'main table (the WAN)' : r.split(`from ${addr} `)[1];
  };

  it.each<[string, string[], Record<string, string>]>([
    ['a reconnect given a new address: the old one held (blackhole) until the label names the new one', ['up 10.8.0.2', 'down 10.8.0.2', 'up 10.8.0.6'], { '10.8.0.2': 'blackhole', '10.8.0.6': 'lookup 51821' }],
    ['a reconnect given the same address: its own hold goes, one rule', ['up 10.8.0.2', 'down 10.8.0.2', 'up 10.8.0.2'], { '10.8.0.2': 'lookup 51821' }],
    ['three addresses in turn: each earlier one held', ['up 10.8.0.2', 'down 10.8.0.2', 'up 10.8.0.6', 'down 10.8.0.6', 'up 10.8.0.10'], { '10.8.0.2': 'blackhole', '10.8.0.6': 'blackhole', '10.8.0.10': 'lookup 51821' }],
    ['an unclean exit (no down hook), then a new address: the old one keeps its rule to the egress table, never the main table', ['up 10.8.0.2', 'up 10.8.0.6'], { '10.8.0.2': 'lookup 51821', '10.8.0.6': 'lookup 51821' }],
    ['an up run twice for one address (a retried hook): one rule', ['up 10.8.0.2', 'up 10.8.0.2'], { '10.8.0.2': 'lookup 51821' }],
  ])('OpenVPN\'s hooks touch only their own address\'s rules: %s', (_name, steps, expected) => {
    const t = openvpnHooks();
    for (const step of steps) {
      const [verb, addr] = step.split(' ');
      if (verb === 'up') t.up(addr);
      else t.down(addr);
    }
    const rules = t.tools.rules();
    expect(Object.fromEntries(Object.keys(expected).map((a) => [a, fate(rules, a)]))).toEqual(expected);
    expect(rules).toHaveLength(new Set(rules).size);
  });

  it('OpenVPN\'s up hook after `nft flush ruleset` loads the kill switch table again, then adds the address to it; a missing table file fails the connect', () => {
    const tools = hostTools('', []);
    const table = path.join(tools.dir, 'killswitch.nft');
    fs.writeFileSync(table, planEgressSteering(prodSteering()).hosts[0].files.find((f) => f.path === '/etc/tunnelwright/killswitch.nft')!.content);
    const up = withSetting(withSetting(withSetting(file(prodSteering(), '/opt/tunnelwright/bin/egress-openvpn-up'), 'RESTEER', 'true'), 'LEARNT_DIR', `${tools.dir}/learnt`), 'NFT_PATH', table);
    expect(tools.run(up, { dev: 'tun0', ifconfig_local: '10.8.0.2' })).toMatchObject({ status: 0, stderr: '' });
    expect(tools.nftTables()).toEqual(['inet tunnelwright_killswitch']);
    expect(tools.nftElements()).toEqual(['inet tunnelwright_killswitch tunnel_v4 { 10.8.0.2 }']);
     // Loaded once: a second up finds the table there.
    expect(tools.calls().filter((c) => c.startsWith('nft -f'))).toHaveLength(1);
    expect(tools.run(up, { dev: 'tun0', ifconfig_local: '10.8.0.2' }).status).toBe(0);
    expect(tools.calls().filter((c) => c.startsWith('nft -f'))).toHaveLength(1);
    // Nothing to load: the connect ends (non-zero) rather than run with the address outside the kill switch.
    fs.rmSync(table);
    expect(tools.run('nft flush ruleset').status).toBe(0);
    expect(tools.run(up, { dev: 'tun0', ifconfig_local: '10.8.0.6' }).status).not.toBe(0);
    expect(tools.nftElements()).toHaveLength(2);
  });

  it('makes WireGuard\'s PostUp idempotent: any rule left at its priority is deleted before the add', () => {
    const conf = file(wireguardSteering(), '/etc/wireguard/tun0.conf');
    expect(conf).toContain('PostUp = while ip -4 rule del priority 5210 2>/dev/null; do :; done\nPostUp = ip -4 rule add from 10.2.0.2 lookup 51821 priority 5210\n');
  });

  it('keeps the learnt OpenVPN address across a reload of the table: written where the table includes it', () => {
    expect(file(prodSteering(), '/opt/tunnelwright/bin/egress-openvpn-up')).toContain("LEARNT_DIR='/var/lib/tunnelwright/killswitch.d'\n");
    expect(file(prodSteering(), '/etc/tunnelwright/killswitch.nft')).toMatch(/\ninclude "\/var\/lib\/tunnelwright\/killswitch\.d\/\*\.nft"\n$/);
  });

  it('loads the kill switch after the distribution\'s nftables.service, and again when it restarts or reloads', () => {
    const u = unit(prodSteering(), 'tunnelwright-killswitch.service');
    expect(u).toContain('\nAfter=nftables.service\nPartOf=nftables.service\nReloadPropagatedFrom=nftables.service\n');
    expect(u).toContain('\nExecReload=/usr/sbin/nft -f /etc/tunnelwright/killswitch.nft\n');
  });

  it('uses kube-state-metrics\' name for a custom uplink label (sanitized, then snake case)', () => {
    const props = { ...prodSteering(), uplinkLabel: 'example.com/egressUplink' };
    const rule = planEgressSteering(props).objects.find((o) => o.kind === 'PrometheusRule')!;
    const exprs = (rule.spec as { groups: { rules: { expr: string }[] }[] }).groups[0].rules.map((r) => r.expr).join('\n');
    expect(exprs).toContain('label_example_com_egress_uplink!=""');
    expect(exprs).not.toContain('egressUplink');
  });

  it('ships each runbook in its alert, and links one only where told', () => {
    const alerts = (props: ReturnType<typeof prodSteering>) => (planEgressSteering(props).objects.find((o) => o.kind === 'PrometheusRule')!.spec as { groups: { rules: { alert: string; annotations: Record<string, string> }[] }[] }).groups[0].rules;
    expect(alerts(prodSteering()).every((r) => r.annotations.runbook_url === undefined && r.annotations.runbook.startsWith('1. '))).toBe(true);
    expect(alerts(prodSteering()).find((r) => r.alert === 'VPNEgressSteeringStale')!.annotations.runbook).toContain('cilium-dbg bpf egress list');
    const linked = alerts({ ...prodSteering(), monitoring: { ...prodSteering().monitoring, runbookUrl: 'https://wiki.example.test/runbooks' } });
    expect(linked.map((r) => r.annotations.runbook_url)).toEqual(['https://wiki.example.test/runbooks#vpntunneldown', 'https://wiki.example.test/runbooks#vpnegresssteeringstale', 'https://wiki.example.test/runbooks#vpntunnelreconnectloop', 'https://wiki.example.test/runbooks#vpnegressuplinklabelmissing']);
  });

  it('denies vpn-class IPv6 egress outside the cluster on request', () => {
    const plan = planEgressSteering({ ...prodSteering(), clusterCidrs: ['10.42.0.0/16', 'fd00:42::/56'], denyIpv6: true });
    expect(plan.objects.find((o) => o.kind === 'CiliumClusterwideNetworkPolicy')!.spec).toEqual({
      description: 'pods of egress class vpn: no IPv6 egress outside the cluster (it would not leave by the VPN)',
      endpointSelector: { matchLabels: { 'tunnelwright.dev/egress-class': 'vpn' }, matchExpressions: [{ key: 'k8s:io.kubernetes.pod.namespace', operator: 'In', values: ['media'] }] },
      enableDefaultDeny: { egress: false, ingress: false },
      egressDeny: [{ toCIDRSet: [{ cidr: '::/0', except: ['fd00:42::/56'] }] }],
    });
  });
});

describe('one gateway per OpenVPN config when no remote is pinned', () => {
  it('claims the server by the config it comes from (a URL or a file), with the config\'s own credential when there is no other', () => {
    const props = { ...prodSteering(), namespaces: undefined, tunnel: { type: 'openvpn' as const, configFrom: { url: 'https://vault.example.test/v1/kv/pia.ovpn' } } };
    expect(egressSteeringClaims(props)[1]).toEqual({
      key: 'vpn-server/openvpn/config https://vault.example.test/v1/kv/pia.ovpn/the config\'s own credential',
      path: 'tunnel.configFrom',
      what: 'VPN server config https://vault.example.test/v1/kv/pia.ovpn with the config\'s own credential (two gateways on one server and account steal each other\'s session)',
    });
  });
});

describe('one gateway per WireGuard server and key', () => {
  it('claims the class in the cluster and the server with its key', () => {
    expect(egressSteeringClaims(wireguardSteering())).toEqual([
      { key: 'cluster/default/egress-class/tunnelwright.dev/egress-class=vpn', path: 'vpnClass', what: 'pods with tunnelwright.dev/egress-class=vpn in cluster "default"', covers: true },
      { key: 'vpn-server/wireguard/198.51.100.7:51820//run/corium/vpn.key', path: 'tunnel.peer.endpoint', what: 'VPN server 198.51.100.7:51820 with the key /run/corium/vpn.key' },
    ]);
  });
});

describe('one gateway per VPN server and session', () => {
  const openvpn = (remote?: string) => ({ ...prodSteering(), tunnel: { type: 'openvpn' as const, configFrom: { file: '/etc/openvpn/pia.ovpn' }, credentialsFrom: { file: '/etc/openvpn/pia.creds' }, ...(remote ? { remote } : {}) } });
  it.each([
    ['the same config and credential, no remote', openvpn(), openvpn(), true],
    ['the same pinned remote and credential', openvpn('nl.example.net:1198'), openvpn('nl.example.net:1198'), true],
    ['two different pinned remotes', openvpn('nl.example.net:1198'), openvpn('de.example.net:1198'), false],
  ])('%s: claimed twice = %s', (_name, a, b, clash) => {
    const keys = (p: ReturnType<typeof openvpn>) => egressSteeringClaims(p).filter((c) => c.key.startsWith('vpn-server/')).map((c) => c.key);
    expect(keys(a)).toHaveLength(1);
    expect(keys(a)[0] === keys(b)[0]).toBe(clash);
  });
});

describe('the re-steer hook never hangs on the API server', () => {
  it('labels the Node and the CiliumNode with each kubectl call bounded (--request-timeout), and its unit has a start timeout', () => {
    const tools = hostTools('1: lo    inet 10.2.0.2/32 scope global lo\n');
    // IFACE: an interface this host has (its ifindex is read from /sys); the address comes from the ip stand-in.
    const files = planEgressSteering(prodSteering()).hosts[0].files;
    const hook = withSetting(files.find((f) => f.path === '/opt/tunnelwright/bin/egress-resteer')!.content, 'IFACE', 'lo');
    const r = tools.run(hook);
    expect(r.status).toBe(0);
    const labels = tools.calls().filter((c) => c.startsWith('kubectl label'));
    expect(labels.map((c) => c.split(' ')[2])).toEqual(['node', 'ciliumnode']);
    // kubectl's default (--request-timeout 0) waits for ever on an API server that accepts and never answers.
    expect(labels.every((c) => c.split(' ').includes('--request-timeout=10s'))).toBe(true);
    expect(tools.labels('node', 'prod-gw')).toEqual([expect.stringMatching(/^tunnelwright\.dev\/egress-uplink=10\.2\.0\.2-\d+$/)]);
    // A reconnect to a new address relabels both objects: kubectl refuses to change a label without --overwrite (the
    // stand-in refuses as kubectl does), so a hook without it would leave Cilium on the old address.
    fs.writeFileSync(path.join(tools.dir, 'addr'), '1: lo    inet 10.2.0.3/32 scope global lo\n');
    expect(tools.run(hook).status).toBe(0);
    expect([...tools.labels('node', 'prod-gw'), ...tools.labels('ciliumnode', 'prod-gw')]).toEqual([expect.stringMatching(/=10\.2\.0\.3-\d+$/), expect.stringMatching(/=10\.2\.0\.3-\d+$/)]);
    // A oneshot has no start timeout by default: a hung run would also keep its timer from firing again.
    const unit = planEgressSteering(prodSteering()).hosts[0].units.find((u) => u.name === 'tunnelwright-egress-resteer.service')!;
    expect(unit.content).toContain('\nType=oneshot\n');
    expect(unit.content).toContain('\nTimeoutStartSec=60\n');
  });
});
