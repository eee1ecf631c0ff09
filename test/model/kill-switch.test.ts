import { Mutable, mutated } from '../helpers/mutable';
import { KillSwitchProps, planHostKillSwitch, planKillSwitch, Problem, validateKillSwitch } from '../../src';
import { thrown } from '../helpers/thrown';
import { qbittorrentKillSwitch } from '../helpers/fixtures';

type Props = Mutable<KillSwitchProps>;

function mutate(fn: (p: Props) => void): Props {
  return mutated(qbittorrentKillSwitch(), fn);
}

/** An IPv4 address from its number. */
const ipv4 = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');

/** 0.0.0.0/1, then 128.0.0.0/32, 128.0.0.1/32, 128.0.0.2/31, 128.0.0.4/30 … 192.0.0.0/2: all of IPv4, each block adjacent to the last. */
function splitToTop(): string[] {
  return ['0.0.0.0/1', '128.0.0.0/32', ...Array.from({ length: 31 }, (_, i) => `${ipv4(2 ** 31 + 2 ** i)}/${32 - i}`)];
}

/** 0.0.0.0/1, 128.0.0.0/2 … 255.255.255.254/32: every IPv4 address but 255.255.255.255. */
function allButLast(): string[] {
  return Array.from({ length: 32 }, (_, i) => `${ipv4(2 ** 32 - 2 ** (32 - i))}/${i + 1}`);
}

describe('KillSwitch validation', () => {
  it('accepts a kill switch for qBittorrent', () => {
    expect(validateKillSwitch(qbittorrentKillSwitch())).toEqual([]);
  });

  const cases: [string, (p: Props) => void, Problem[]][] = [
    ['fails on an empty selector (it selects every pod)', (p) => { p.selector = {}; }, [{ path: 'selector', code: 'selector-empty', message: 'expected at least one label: an empty selector selects every pod' }]],
    ['fails on a selector value no pod can carry (it selects nothing)', (p) => { p.selector = { app: 'qbit torrent' }; }, [{ path: 'selector["app"]', code: 'label-value', message: 'expected a label value (≤ 63 characters of [-A-Za-z0-9_.], alphanumeric at both ends), received "qbit torrent": it would select nothing' }]],
    ['fails on a selector key that is not a label key', (p) => { p.selector = { 'app/name/x': 'a' }; }, [{ path: 'selector["app/name/x"]', code: 'label-key', message: 'expected a label key ([prefix/]name, name ≤ 63 characters), received "app/name/x"' }]],
    ['fails on a default route in allowCidrs', (p) => { p.allowCidrs.push('0.0.0.0/0'); }, [{ path: 'allowCidrs[2]', code: 'default-route', message: 'expected cluster CIDRs, received "0.0.0.0/0": a default route would let every packet bypass the VPN' }]],
    ['fails on a split default route in allowCidrs', (p) => { p.allowCidrs = ['0.0.0.0/1', '128.0.0.0/1']; }, [{ path: 'allowCidrs', code: 'default-route', message: 'expected cluster CIDRs, received CIDRs that together cover all of IPv4: a split default route lets every packet bypass the VPN' }]],
    ['fails on a split default route given highest first', (p) => { p.allowCidrs = ['192.0.0.0/2', '128.0.0.0/2', '0.0.0.0/1']; }, [{ path: 'allowCidrs', code: 'default-route', message: 'expected cluster CIDRs, received CIDRs that together cover all of IPv4: a split default route lets every packet bypass the VPN' }]],
    ['fails on a split IPv6 default route in allowCidrs', (p) => { p.ipv6 = true; p.allowCidrs = ['10.42.0.0/16', '8000::/1', '::/1']; }, [{ path: 'allowCidrs', code: 'default-route', message: 'expected cluster CIDRs, received CIDRs that together cover all of IPv6: a split default route lets every packet bypass the VPN' }]],
    ['fails on pod CIDRs that cover all of IPv6', (p) => { p.host!.podCidrs = ['10.42.0.0/16', '::/0']; }, [{ path: 'host.podCidrs', code: 'default-route', message: 'expected the pods\' own addresses, received CIDRs that cover all of IPv6: every packet would count as pod-sourced' }]],
    ['fails on a default route split into ever smaller adjacent blocks', (p) => { p.allowCidrs = splitToTop(); }, [{ path: 'allowCidrs', code: 'default-route', message: 'expected cluster CIDRs, received CIDRs that together cover all of IPv4: a split default route lets every packet bypass the VPN' }]],
    ['fails on a split default route with a block nested in the first', (p) => { p.allowCidrs = ['0.0.0.0/1', '10.0.0.0/8', '128.0.0.0/1']; }, [{ path: 'allowCidrs', code: 'default-route', message: 'expected cluster CIDRs, received CIDRs that together cover all of IPv4: a split default route lets every packet bypass the VPN' }]],
    ['accepts half of IPv4', (p) => { p.allowCidrs = ['0.0.0.0/1']; }, []],
    ['accepts CIDRs that reach the top of IPv4 with a gap', (p) => { p.allowCidrs = ['0.0.0.0/1', '192.0.0.0/2']; }, []],
    ['accepts all of IPv4 but its last address', (p) => { p.allowCidrs = allButLast(); }, []],
    ['accepts half of IPv6', (p) => { p.ipv6 = true; p.allowCidrs = ['10.42.0.0/16', '::/1']; }, []],
    ['fails on a gateway selector that is no label', (p) => { p.gatewayPodLabels = { 'app.kubernetes.io/name': 'vpn gateway' }; }, [{ path: 'gatewayPodLabels["app.kubernetes.io/name"]', code: 'label-value', message: 'expected a label value (≤ 63 characters of [-A-Za-z0-9_.], alphanumeric at both ends), received "vpn gateway": it would select nothing' }]],
    ['fails on a policy name that is no DNS label', (p) => { p.name = 'QB egress'; }, [{ path: 'name', code: 'name', message: 'expected an object name (a DNS label, ≤ 63 characters), received "QB egress"' }]],
    ['fails on a VXLAN port without gateway labels', (p) => { delete p.gatewayPodLabels; delete p.gatewayNamespace; p.vxlanPort = 8472; }, [{ path: 'vxlanPort', code: 'gateway', message: 'vxlanPort needs gatewayPodLabels' }]],
    ['fails on the interface names "." and ".." (the kernel refuses them)', (p) => { p.host!.wanInterface = '.'; p.host!.tunnelInterface = '..'; }, [
      { path: 'host.tunnelInterface', code: 'interface-name', message: 'expected a Linux interface name (1–15 characters of [A-Za-z0-9_.-]), received ".."' },
      { path: 'host.wanInterface', code: 'interface-name', message: 'expected a Linux interface name (1–15 characters of [A-Za-z0-9_.-]), received "."' },
    ]],
    ['fails on no allowCidrs', (p) => { p.allowCidrs = []; }, [{ path: 'allowCidrs', code: 'required', message: 'expected the cluster CIDRs (pods and services): without them the pods cannot reach the cluster' }]],
    ['fails on an IPv6 destination without ipv6', (p) => { p.allowCidrs.push('fd42::/48'); }, [{ path: 'allowCidrs[2]', code: 'ipv6-disabled', message: 'IPv6 egress is denied unless ipv6 is true, received "fd42::/48"' }]],
    ['fails on a namespace that is not a DNS label', (p) => { p.namespace = 'Media'; }, [{ path: 'namespace', code: 'namespace', message: 'expected a namespace name (a DNS label), received "Media"' }]],
    ['fails on a gateway namespace without gateway labels', (p) => { delete p.gatewayPodLabels; }, [{ path: 'gatewayNamespace', code: 'gateway', message: 'gatewayNamespace needs gatewayPodLabels' }]],
    ['fails on a WAN interface name that is not a Linux name', (p) => { p.host!.wanInterface = 'eth0 '; }, [{ path: 'host.wanInterface', code: 'interface-name', message: 'expected a Linux interface name (1–15 characters of [A-Za-z0-9_.-]), received "eth0 "' }]],
    ['fails on a tunnel interface name over 15 characters', (p) => { p.host!.tunnelInterface = 'wireguard-tunnel-0'; }, [{ path: 'host.tunnelInterface', code: 'interface-name', message: 'expected a Linux interface name (1–15 characters of [A-Za-z0-9_.-]), received "wireguard-tunnel-0"' }]],
    ['fails on the same interface for WAN and tunnel', (p) => { p.host!.tunnelInterface = 'eth0'; }, [{ path: 'host.tunnelInterface', code: 'same-interface', message: 'expected the tunnel and the WAN to be different interfaces, both are "eth0"' }]],
    ['fails on tunnel CIDRs that cover everything', (p) => { p.host!.tunnelCidrs = ['0.0.0.0/0']; }, [{ path: 'host.tunnelCidrs', code: 'default-route', message: "expected the tunnel's own addresses, received CIDRs that cover all of IPv4: every packet would count as tunnel-sourced" }]],
    ['fails on no tunnel CIDRs', (p) => { p.host!.tunnelCidrs = []; }, [{ path: 'host.tunnelCidrs', code: 'empty', message: "expected at least one CIDR: the tunnel's own addresses" }]],
    ['fails on an unknown flavor', (p) => { (p as Record<string, unknown>).flavor = 'calico'; }, [{ path: 'flavor', code: 'enum', message: 'expected one of "kubernetes"|"cilium", received "calico"' }]],
  ];

  it.each(cases)('%s', (_name, fn, expected) => {
    expect(validateKillSwitch(mutate(fn))).toEqual(expected);
  });

  it('accepts IPv6 destinations with ipv6: true', () => {
    expect(validateKillSwitch(mutate((p) => { p.allowCidrs.push('fd42::/48'); p.ipv6 = true; }))).toEqual([]);
  });

  it('reports every mistake at once', () => {
    expect(validateKillSwitch(mutate((p) => { p.selector = {}; p.allowCidrs = ['0.0.0.0/0']; p.host!.wanInterface = 'a/b'; })).map((p) => `${p.path} ${p.code}`)).toEqual([
      'allowCidrs[0] default-route',
      'host.wanInterface interface-name',
      'selector selector-empty',
    ]);
    expect(() => planKillSwitch({ ...qbittorrentKillSwitch(), selector: {} })).toThrow('invalid KillSwitch props:\nselector: expected at least one label: an empty selector selects every pod');
  });
});

describe('planHostKillSwitch on its own (as EgressSteering plans it)', () => {
  it.each<[string, unknown, Problem[]]>([
    ['no interfaces at all: the tunnel is required, the WAN not, and an empty tunnel list is fine (learnt at connect)', { node: 'gw-1', tunnelCidrs: [] }, [
      { path: 'tunnelInterface', code: 'required', message: 'required: expected string' },
    ]],
    ['the same interface twice, paths at the top (no leading ".")', { node: 'gw-1', wanInterface: 'eth0', tunnelInterface: 'eth0', tunnelCidrs: ['0.0.0.0/0'] }, [
      { path: 'tunnelCidrs', code: 'default-route', message: "expected the tunnel's own addresses, received CIDRs that cover all of IPv4: every packet would count as tunnel-sourced" },
      { path: 'tunnelInterface', code: 'same-interface', message: 'expected the tunnel and the WAN to be different interfaces, both are "eth0"' },
    ]],
  ])('%s', (_name, host, problems) => {
    const error = thrown(() => planHostKillSwitch(host as never)) as Error & { problems?: Problem[] };
    expect(error.message.split('\n')[0]).toBe('invalid host kill switch:');
    expect(error.problems).toEqual(problems);
  });
});
