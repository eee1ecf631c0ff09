/**
 * WireguardMesh's props parsed once (issue 42): `parseWireguardMesh` turns props into the spec the mesh's plan is made
 * from (each node's address, port and endpoint parsed, the hub found, MTU and keepalive defaulted, each node's overlay
 * spec built), or returns the problems.
 */
import * as fc from 'fast-check';
import { MeshPlan, planWireguardMesh, WireguardMeshProps } from '../../src';
import { parseWireguardMesh, WireguardMeshSpec } from '../../src/model/wireguard-mesh-spec';
import { renderWireguardMesh } from '../../src/render/wireguard-mesh';
import { kubeadmHaMesh, threeNodeMesh } from '../helpers/fixtures';

const spec = (p: WireguardMeshProps): WireguardMeshSpec => {
  const parsed = parseWireguardMesh(p);
  expect(parsed.problems).toEqual([]);
  return parsed.spec!;
};

describe('parseWireguardMesh: the spec, defaults applied and facts derived once', () => {
  it('the defaults, each node\'s address with the network\'s prefix, its port and where peers dial it', () => {
    const s = spec(threeNodeMesh());
    expect(s).toMatchObject({ cluster: 'default', interfaceName: 'wg0', network: { family: 4, cidr: '10.10.0.0/24' }, persistentKeepalive: 25, ignitionVersion: '3.4.0' });
    expect(s).not.toHaveProperty('hub');
    expect(s).not.toHaveProperty('mtu');
    expect(s.nodes.map((n) => [n.node, n.cidr, n.listenPort, n.endpoint, n.asPeer.allowedIPs, n.overlay.role, n.overlay.distribution, n.overlay.cni])).toEqual([
      ['site-a', '10.10.0.1/24', 51820, '198.51.100.1:51820', ['10.10.0.1/32'], 'controller+worker', 'k0s', 'kube-router'],
      ['site-b', '10.10.0.2/24', 51820, '198.51.100.2:51820', ['10.10.0.2/32'], 'worker', 'k0s', 'kube-router'],
      ['site-c', '10.10.0.3/24', 51820, undefined, ['10.10.0.3/32'], 'worker', 'k0s', 'kube-router'],
    ]);
  });

  it.each<[string, WireguardMeshProps, Partial<Record<keyof WireguardMeshSpec, unknown>>]>([
    ['a hub, found by name', { ...threeNodeMesh(), topology: { hub: 'site-b' } }, { hub: 1 }],
    ['the MTU from the underlay (IPv4 endpoints: 60 bytes)', { ...threeNodeMesh(), underlayMtu: 1500 }, { mtu: 1440 }],
    ['an MTU given wins over the underlay\'s', { ...threeNodeMesh(), underlayMtu: 1500, mtu: 1380 }, { mtu: 1380 }],
  ])('%s', (_name, props, expected) => {
    expect(spec(props)).toMatchObject(expected);
  });

  it('kubeadm: the first controller inits, the next joins its control plane', () => {
    expect(spec(kubeadmHaMesh()).nodes.map((n) => n.overlay.kubeadmControlPlane)).toEqual(['init', 'join', undefined]);
  });

  it('returns the problems and no spec for props that do not parse', () => {
    const parsed = parseWireguardMesh({ ...threeNodeMesh(), network: '10.10.0.1/24' });
    expect(parsed.spec).toBeUndefined();
    expect(parsed.problems.map((p) => p.path)).toEqual(['network']);
  });

  it.each<[string, WireguardMeshProps]>([
    ['full mesh, k0s', threeNodeMesh()],
    ['hub and spokes', { ...threeNodeMesh(), topology: { hub: 'site-a' } }],
  ])('property (%s): writing a default out changes no host file, interface or value', (_name, implicit) => {
    const defaults: Record<string, unknown> = {
      cluster: 'default', topology: implicit.topology ?? 'full', interfaceName: 'wg0', persistentKeepalive: 25, distribution: 'k0s', ignitionVersion: '3.4.0',
      kubernetesVersion: '1.31', installPackages: true, cni: 'kube-router',
      nodes: implicit.nodes.map((n) => ({ ...n, role: n.role ?? 'worker', listenPort: 51820 })),
    };
    const seen = (p: WireguardMeshProps) => {
      const plan = planWireguardMesh(p);
      return { hosts: plan.hosts, nodes: plan.nodes, warnings: plan.warnings };
    };
    const plain = seen(implicit);
    fc.assert(fc.property(fc.subarray(Object.keys(defaults), { minLength: 1 }), (keys) => {
      expect(seen({ ...implicit, ...Object.fromEntries(keys.map((k) => [k, defaults[k]])) } as WireguardMeshProps)).toEqual(plain);
    }));
  });
});

describe('the render function takes the spec, not props', () => {
  it('renderWireguardMesh is typed on WireguardMeshSpec', () => {
    const plan: (s: WireguardMeshSpec) => MeshPlan = renderWireguardMesh;
    // @ts-expect-error: props are parsed first (parseWireguardMesh); render takes no props.
    expect(() => renderWireguardMesh(threeNodeMesh())).toThrow();
    expect(plan(spec(threeNodeMesh())).hosts).toEqual(planWireguardMesh(threeNodeMesh()).hosts);
  });
});
