/**
 * The cluster's pod CIDRs beside the overlay, per distribution and CNI (issue 46): kubeadm's ClusterConfiguration
 * `networking.podSubnet` for the CNIs that need each node's pod CIDR, the CNI configured for the node addresses'
 * families, and the combinations that cannot start refused with a remedy.
 */
import { parseAllDocuments } from 'yaml';
import { planWireguardMesh, planWireguardOverlayNode, Problem, validateWireguardMesh, validateWireguardOverlayNode, WireguardOverlayNodeProps } from '../../src';
import { siteA, threeNodeMesh } from '../helpers/fixtures';

type Props = Partial<WireguardOverlayNodeProps> & Record<string, unknown>;
const v6 = { ...siteA().wireguard[0], address: 'fd10::1/64', peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: ['fd10::2/128'] }] };
const dual = { ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'], peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: ['10.10.0.2/32', 'fd10::2/128'] }] };
const props = (extra: Props) => ({ ...siteA(), ...extra }) as WireguardOverlayNodeProps;
const problems = (extra: Props) => validateWireguardOverlayNode(props(extra)).filter((p) => ['pod-subnet', 'pod-subnet-family', 'cni-family', 'distribution'].includes(p.code));
const codesAt = (list: Problem[]) => list.map((p) => `${p.path} ${p.code}`);

describe('WireguardOverlayNode: pod CIDRs by distribution, CNI and family', () => {
  const kubeadm = { distribution: 'kubeadm', role: 'controller' } as const;
  it.each<[string, Props, string[]]>([
    ['kubeadm controller with flannel and no podCidrs: refused (no node gets a pod CIDR, flannel does not start)', { ...kubeadm, cni: 'flannel' }, ['podCidrs pod-subnet']],
    ['kubeadm controller with kube-router and no podCidrs: refused', { ...kubeadm, cni: 'kube-router' }, ['podCidrs pod-subnet']],
    ['control: the same with podCidrs', { ...kubeadm, cni: 'flannel', podCidrs: ['10.244.0.0/16'] }, []],
    ['control: kubeadm with Calico (its own IPAM) needs none', { ...kubeadm, cni: 'calico' }, []],
    ['control: a kubeadm worker writes no ClusterConfiguration, so needs none', { distribution: 'kubeadm', role: 'worker', cni: 'flannel' }, []],
    ['two IPv4 pod CIDRs: kubeadm takes one per family', { ...kubeadm, cni: 'flannel', podCidrs: ['10.244.0.0/16', '10.245.0.0/16'] }, ['podCidrs[1] pod-subnet']],
    ['an IPv4 pod CIDR smaller than a node\'s /24', { ...kubeadm, cni: 'flannel', podCidrs: ['10.244.0.0/25'] }, ['podCidrs[0] pod-subnet']],
    ['an IPv4 pod CIDR more than 16 bits above /24', { ...kubeadm, cni: 'flannel', podCidrs: ['10.0.0.0/7'] }, ['podCidrs[0] pod-subnet']],
    ['control: IPv4 /8 and /24, the limits', { ...kubeadm, cni: 'flannel', podCidrs: ['10.0.0.0/8'] }, []],
    ['an IPv6 pod CIDR of /47 (17 bits above /64)', { ...kubeadm, cni: 'flannel', wireguard: [v6], podCidrs: ['fd00:10::/47'] }, ['podCidrs[0] pod-subnet']],
    ['an IPv6 pod CIDR of /65 (smaller than a node\'s /64)', { ...kubeadm, cni: 'flannel', wireguard: [v6], podCidrs: ['fd00:10:244::/65'] }, ['podCidrs[0] pod-subnet']],
    ['control: IPv6 /48 and /64, the limits', { ...kubeadm, cni: 'flannel', wireguard: [v6], podCidrs: ['fd00:10::/48'] }, []],
    ['an IPv4 pod CIDR on IPv6-only node addresses: the wrong family, and none of the right one', { ...kubeadm, cni: 'flannel', wireguard: [v6], podCidrs: ['10.244.0.0/16'] }, ['podCidrs pod-subnet-family', 'podCidrs[0] pod-subnet-family']],
    ['dual-stack node addresses with an IPv4 pod CIDR only', { ...kubeadm, cni: 'kube-router', wireguard: [dual], podCidrs: ['10.244.0.0/16'] }, ['podCidrs pod-subnet-family']],
    ['control: dual-stack with one of each', { ...kubeadm, cni: 'kube-router', wireguard: [dual], podCidrs: ['10.244.0.0/16', 'fd00:10:244::/56'] }, []],
    ['podCidrs on k0s: refused, naming k0sConfig network.podCIDR', { podCidrs: ['10.244.0.0/16'] }, ['podCidrs distribution']],
    ['k0s with kube-router on IPv6-only node addresses and k0s\'s IPv4 default pod CIDR: refused (kube-router exits)', { wireguard: [v6] }, ['wireguard[0].address cni-family']],
    ['control: the same with an IPv6 network.podCIDR (k0s\'s IPv6 single-stack)', { wireguard: [v6], k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } }, []],
    ['control: the same with Calico', { wireguard: [v6], cni: 'calico' }, []],
    ['control: a k0s controller without a worker runs no kube-router', { wireguard: [v6], role: 'controller' }, []],
    ['control: dual-stack node addresses on k0s kube-router', { wireguard: [dual] }, []],
  ])('%s', (_n, extra, expected) => {
    expect(codesAt(problems(extra))).toEqual(expected);
  });

  it('says what to do: the refusal names podCidrs with an example of the node addresses\' families', () => {
    expect(problems({ ...kubeadm, cni: 'kube-router', wireguard: [dual] })[0].message).toContain("Set podCidrs, one per node-address family, e.g. ['10.244.0.0/16', 'fd00:10:244::/56']");
    expect(problems({ wireguard: [v6] })[0].message).toContain('IPv6SingleStack');
  });
});

describe('kubeadm ClusterConfiguration networking.podSubnet (kubeadm v1beta3/v1beta4 Networking.PodSubnet: a string, comma-joined for dual-stack)', () => {
  /**
   * The json names of kubeadm's ClusterConfiguration and Networking fields, the same in v1beta3 and v1beta4
   * (kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go `ClusterConfiguration`, `Networking`): what the written
   * document may hold (kubeadm's strict decoding refuses unknown fields).
   */
  const CLUSTER_CONFIGURATION = ['apiVersion', 'kind', 'etcd', 'networking', 'kubernetesVersion', 'controlPlaneEndpoint', 'apiServer', 'controllerManager', 'scheduler', 'dns', 'certificatesDir', 'imageRepository', 'featureGates', 'clusterName'];
  const NETWORKING = ['serviceSubnet', 'podSubnet', 'dnsDomain'];
  const clusterConfiguration = (plan: ReturnType<typeof planWireguardOverlayNode>) => {
    const file = plan.hosts[0].files.find((f) => f.path === '/etc/kubernetes/tunnelwright-kubeadm.yaml')!.content;
    return parseAllDocuments(file).map((d) => d.toJS() as Record<string, unknown>).find((d) => d.kind === 'ClusterConfiguration')!;
  };
  it.each<[string, string | undefined, Props, string]>([
    ['v1beta4, IPv4', '1.31', { cni: 'flannel', podCidrs: ['10.244.0.0/16'] }, '10.244.0.0/16'],
    ['v1beta3, IPv4', '1.30', { cni: 'kube-router', podCidrs: ['10.32.0.0/12'] }, '10.32.0.0/12'],
    ['v1beta4, dual-stack', '1.31', { cni: 'kube-router', wireguard: [dual], podCidrs: ['10.244.0.0/16', 'fd00:10:244::/56'] }, '10.244.0.0/16,fd00:10:244::/56'],
    ['v1beta4, IPv6 only', '1.31', { cni: 'flannel', wireguard: [v6], podCidrs: ['fd00:10:244::/56'] }, 'fd00:10:244::/56'],
  ])('%s: the file kubeadm init reads has the pod subnet, in fields kubeadm knows', (_n, kubernetesVersion, extra, podSubnet) => {
    const doc = clusterConfiguration(planWireguardOverlayNode(props({ distribution: 'kubeadm', role: 'controller', kubernetesVersion, ...extra })));
    expect(doc.networking).toEqual({ podSubnet });
    expect(Object.keys(doc).filter((k) => !CLUSTER_CONFIGURATION.includes(k))).toEqual([]);
    expect(Object.keys(doc.networking as object).filter((k) => !NETWORKING.includes(k))).toEqual([]);
  });
  it('control: without podCidrs (Calico) no networking is written', () => {
    expect(clusterConfiguration(planWireguardOverlayNode(props({ distribution: 'kubeadm', role: 'controller', cni: 'calico' }))).networking).toBeUndefined();
  });
  it('a kubeadm mesh: the controller\'s ClusterConfiguration has it, every node\'s flannel net-conf the same network', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), distribution: 'kubeadm', cni: 'flannel', podCidrs: ['10.244.0.0/16'] });
    expect((plan.nodes['site-a'].values.kubeadm as { clusterConfiguration: { networking: unknown } }).clusterConfiguration.networking).toEqual({ podSubnet: '10.244.0.0/16' });
    for (const n of ['site-a', 'site-b', 'site-c']) expect((plan.nodes[n].values.cni as { flannel: { netConf: unknown } }).flannel.netConf).toEqual({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan' } });
  });
  it('a kubeadm mesh with flannel and no podCidrs is refused at the mesh', () => {
    expect(validateWireguardMesh({ ...threeNodeMesh(), distribution: 'kubeadm', cni: 'flannel' }).map((p) => `${p.path} ${p.code}`)).toEqual(['podCidrs pod-subnet']);
  });
  it('an IPv6 k0s mesh on kube-router is refused at the network, and accepted with an IPv6 podCIDR', () => {
    const mesh = { ...threeNodeMesh(), network: 'fd10::/64', nodes: threeNodeMesh().nodes.map((n, i) => ({ ...n, address: `fd10::${i + 1}` })) };
    expect(validateWireguardMesh(mesh).map((p) => `${p.path} ${p.code}`)).toEqual(['network cni-family']);
    expect(validateWireguardMesh({ ...mesh, k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } })).toEqual([]);
  });
});

describe('the CNI configured for the node addresses\' families (values.cni, kubeadm)', () => {
  const cni = (extra: Props) => planWireguardOverlayNode(props({ distribution: 'kubeadm', role: 'controller', ...extra })).values.cni as Record<string, Record<string, unknown>>;
  it.each<[string, Props, string[]]>([
    ['IPv4: kube-router\'s defaults (IPv4 on, IPv6 off)', { podCidrs: ['10.244.0.0/16'] }, []],
    ['IPv6 only: IPv4 off (else "IPv4 was enabled, but no IPv4 address was found on the node"), IPv6 on', { wireguard: [v6], podCidrs: ['fd00:10:244::/56'] }, ['--enable-ipv4=false', '--enable-ipv6=true']],
    ['dual-stack with both pod CIDRs: IPv6 on too', { wireguard: [dual], podCidrs: ['10.244.0.0/16', 'fd00:10:244::/56'] }, ['--enable-ipv6=true']],
  ])('kube-router, %s', (_n, extra, flags) => {
    const args = cni({ cni: 'kube-router', ...extra }).kubeRouter.args as string[];
    expect(args.filter((a) => a.startsWith('--enable-ipv'))).toEqual(flags);
  });
  it.each<[string, Props, Record<string, unknown>]>([
    ['IPv4', { podCidrs: ['10.244.0.0/16'] }, { Network: '10.244.0.0/16', Backend: { Type: 'vxlan' } }],
    ['IPv6 only: EnableIPv4 false (flannel\'s default is true), EnableIPv6 with its network', { wireguard: [v6], podCidrs: ['fd00:10:244::/56'] }, { EnableIPv4: false, EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'vxlan' } }],
    ['dual-stack', { wireguard: [dual], podCidrs: ['10.244.0.0/16', 'fd00:10:244::/56'] }, { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'vxlan' } }],
  ])('flannel net-conf.json, %s', (_n, extra, netConf) => {
    expect(cni({ cni: 'flannel', ...extra }).flannel.netConf).toEqual(netConf);
  });
});
