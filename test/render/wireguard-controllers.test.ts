/**
 * Several controllers (issue 46): on k0s each worker must reach every controller, not only the one that issued its
 * token, so a mesh with several k0s controllers turns on k0s's node-local load balancing (k0s pkg/apis/k0s/v1beta1
 * NodeLocalLoadBalancing: `enabled`, `type` EnvoyProxy) unless the user gives a stable API address.
 */
import { parse } from 'yaml';
import { planWireguardMesh, WireguardMeshProps } from '../../src';
import { threeNodeMesh } from '../helpers/fixtures';

const nllbOf = (mesh: WireguardMeshProps, node: string) => {
  const file = planWireguardMesh(mesh).nodes[node].host.files.find((f) => f.path === '/etc/k0s/k0s.yaml');
  return file ? (parse(file.content) as { spec: { network: Record<string, unknown> } }).spec.network.nodeLocalLoadBalancing : 'no k0s.yaml';
};
const twoControllers = (extra: Partial<WireguardMeshProps> = {}): WireguardMeshProps => {
  const mesh = threeNodeMesh();
  return { ...mesh, ...extra, nodes: mesh.nodes.map((n, i) => (i === 1 ? { ...n, role: 'controller' as const } : n)) };
};

describe('k0s with several controllers: a stable API address for every worker', () => {
  it('two controllers: each one\'s k0s.yaml turns on node-local load balancing (Envoy), the worker writes no k0s.yaml', () => {
    expect(nllbOf(twoControllers(), 'site-a')).toEqual({ enabled: true, type: 'EnvoyProxy' });
    expect(nllbOf(twoControllers(), 'site-b')).toEqual({ enabled: true, type: 'EnvoyProxy' });
    expect(nllbOf(twoControllers(), 'site-c')).toBe('no k0s.yaml');
  });
  it.each<[string, WireguardMeshProps]>([
    ['control: one controller', threeNodeMesh()],
    ['control: the user\'s api.externalAddress (a load balancer of their own)', twoControllers({ k0sConfig: { api: { externalAddress: 'api.example.test' } } })],
  ])('%s: none', (_n, mesh) => {
    expect(nllbOf(mesh, 'site-a')).toBeUndefined();
  });
  it('control: the user\'s own nodeLocalLoadBalancing is kept as written', () => {
    expect(nllbOf(twoControllers({ k0sConfig: { network: { nodeLocalLoadBalancing: { enabled: true, type: 'EnvoyProxy', envoyProxy: { apiServerBindPort: 7443 } } } } }), 'site-b')).toEqual({ enabled: true, type: 'EnvoyProxy', envoyProxy: { apiServerBindPort: 7443 } });
  });
});
