import { parse } from 'yaml';
import { planWireguardMesh, planWireguardOverlayNode, ValidationError, WireguardOverlayNodeProps } from '../../src';
import { siteA, threeNodeMesh } from '../helpers/fixtures';
import { thrown } from '../helpers/thrown';
import { kubeRouterSnat, mergeK0sSpec } from '../../src/render/cni';

type Props = Partial<WireguardOverlayNodeProps> & Record<string, unknown>;
const node = (extra: Props) => planWireguardOverlayNode({ ...siteA(), ...extra } as WireguardOverlayNodeProps);
const fileOf = (plan: ReturnType<typeof node>, path: string) => plan.hosts[0].files.find((f) => f.path === path)?.content;
const k0sSpec = (plan: ReturnType<typeof node>) => (parse(fileOf(plan, '/etc/k0s/k0s.yaml')!) as { spec: Record<string, unknown> }).spec;
const codes = (plan: { warnings: { path: string; code: string }[] }) => plan.warnings.filter((w) => w.path === 'cni').map((w) => w.code);

describe('the CNI beside the overlay (wg0, MTU 1420)', () => {
  it('k0s with kube-router (its default): IPIP between node addresses for every node (overlay-type full), the MTU 20 below wg0', () => {
    const plan = node({});
    expect(k0sSpec(plan).network).toEqual({ provider: 'kuberouter', kuberouter: { autoMTU: false, mtu: 1400, extraArgs: { 'enable-overlay': 'true', 'overlay-type': 'full' } } });
    expect(codes(plan)).toEqual([]);
    expect(plan.values.cni).toBeUndefined();
  });

  it('k0s with kube-router and no known MTU leaves kube-router\'s auto-mtu on', () => {
    const { mtu: _m, ...iface } = siteA().wireguard[0];
    expect(k0sSpec(node({ wireguard: [iface] })).network).toEqual({ provider: 'kuberouter', kuberouter: { extraArgs: { 'enable-overlay': 'true', 'overlay-type': 'full' } } });
  });

  const KR_MTU = "the overlay's MTU is not known (set mtu, or underlayMtu), so tunnelwright writes no MTU for kube-router: kube-router then sets the pod MTU itself, equal to the overlay's in the kube-router versions that do not subtract IPIP's 20 bytes; pod packets above the overlay's MTU are then fragmented or dropped where path-MTU discovery is blocked";
  const CALICO_MTU = "the overlay's MTU is not known (set mtu, or underlayMtu), so tunnelwright writes no MTU for calico: Calico then takes k0s's default MTU, 1450 in several k0s versions, above the 1420 wg-quick gives the overlay on a 1500 link; pod packets above the overlay's MTU are then fragmented or dropped where path-MTU discovery is blocked";
  it.each<[string, () => { warnings: { path: string; code: string; message: string }[] }, { path: string; code: string; message: string }[]]>([
    ['a k0s node, kube-router, no mtu', () => node({ wireguard: [(({ mtu: _m, ...i }) => i)(siteA().wireguard[0])] }), [{ path: 'wireguard[0].mtu', code: 'cni-mtu', message: KR_MTU }]],
    ['a k0s node, Calico, no mtu', () => node({ cni: 'calico', wireguard: [(({ mtu: _m, ...i }) => i)(siteA().wireguard[0])] }), [{ path: 'wireguard[0].mtu', code: 'cni-mtu', message: CALICO_MTU }]],
    ['a k0s node with mtu', () => node({}), []],
    ['a k0s node with underlayMtu', () => node({ wireguard: [{ ...(({ mtu: _m, ...i }) => i)(siteA().wireguard[0]), underlayMtu: 1500 }] }), []],
    ['a k3s node, no mtu (flannel follows the interface)', () => node({ distribution: 'k3s', wireguard: [(({ mtu: _m, ...i }) => i)(siteA().wireguard[0])] }), []],
    ['a k0s mesh, kube-router, no mtu', () => planWireguardMesh(threeNodeMesh()), [{ path: 'mtu', code: 'cni-mtu', message: KR_MTU }]],
    ['a k0s mesh, Calico, no mtu', () => planWireguardMesh({ ...threeNodeMesh(), cni: 'calico' }), [{ path: 'mtu', code: 'cni-mtu', message: CALICO_MTU }]],
    ['a k0s mesh with underlayMtu', () => planWireguardMesh({ ...threeNodeMesh(), underlayMtu: 1500 }), []],
    ['a k0s mesh with mtu', () => planWireguardMesh({ ...threeNodeMesh(), mtu: 1420 }), []],
  ])('%s: a cni-mtu warning where no CNI MTU is written', (_n, plan, expected) => {
    expect(plan().warnings.filter((w) => w.code === 'cni-mtu')).toEqual(expected);
  });

  it('k0s with Calico: VXLAN between the addresses Calico finds on wg0, the MTU 50 below it', () => {
    expect(k0sSpec(node({ cni: 'calico' })).network).toEqual({ provider: 'calico', calico: { mode: 'vxlan', ipAutodetectionMethod: 'interface=wg0', mtu: 1370 } });
  });

  it('k0s with a CNI of your own: provider custom, and a warning that nothing is configured', () => {
    const plan = node({ cni: 'other' });
    expect(k0sSpec(plan).network).toEqual({ provider: 'custom' });
    expect(plan.warnings.find((w) => w.path === 'cni')!.message).toBe("tunnelwright does not know this CNI and configures none: make it encapsulate pod traffic between the nodes' overlay addresses on the overlay interface, with an MTU inside the overlay's (the peers' AllowedIPs hold only their /32s: a plain route to a pod CIDR via a peer is dropped)");
  });

  it.each(['controller', 'worker', 'controller+worker'] as const)('k3s %s: flannel\'s VXLAN on wg0 (flannel-iface), no warning', (role) => {
    const plan = node({ distribution: 'k3s', role });
    expect(parse(fileOf(plan, '/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml')!)['flannel-iface']).toBe('wg0');
    expect(codes(plan)).toEqual([]);
  });

  it.each<[string, Props, Record<string, unknown>, string]>([
    ['kubeadm with flannel', { distribution: 'kubeadm', cni: 'flannel', podCidrs: ['10.244.0.0/16'] }, { flannel: { interface: 'wg0', args: ['--iface=wg0'], mtu: 1370, netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan' } } } }, 'kubeadm does not install flannel itself, so tunnelwright cannot write its settings: pass plan.values.cni.flannel (the overlay interface, the encapsulation and the MTU) to its install, or pod traffic between nodes leaves by the default-route interface'],
    ['kubeadm with Calico', { distribution: 'kubeadm', cni: 'calico' }, { calico: { interface: 'wg0', calicoNetwork: { nodeAddressAutodetectionV4: { interface: 'wg0' }, mtu: 1370, ipPools: [{ encapsulation: 'VXLAN' }] } } }, 'kubeadm does not install calico itself, so tunnelwright cannot write its settings: pass plan.values.cni.calico (the overlay interface, the encapsulation and the MTU) to its install, or pod traffic between nodes leaves by the default-route interface'],
    ['kubeadm with kube-router', { distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['10.244.0.0/16'] }, { kubeRouter: { interface: 'wg0', args: ['--enable-overlay=true', '--overlay-type=full', '--auto-mtu=false'], mtu: 1400 } }, 'kubeadm does not install kube-router itself, so tunnelwright cannot write its settings: pass plan.values.cni.kubeRouter (the overlay interface, the encapsulation and the MTU) to its install, or pod traffic between nodes leaves by the default-route interface'],
    ['k3s with Calico (flannel-backend none)', { distribution: 'k3s', cni: 'calico' }, { calico: { interface: 'wg0', calicoNetwork: { nodeAddressAutodetectionV4: { interface: 'wg0' }, mtu: 1370, ipPools: [{ encapsulation: 'VXLAN' }] } } }, 'k3s does not install calico itself, so tunnelwright cannot write its settings: pass plan.values.cni.calico (the overlay interface, the encapsulation and the MTU) to its install, or pod traffic between nodes leaves by the default-route interface'],
  ])('%s: the CNI\'s settings in values.cni, with a warning', (_n, extra, values, message) => {
    const plan = node(extra);
    expect(plan.values.cni).toEqual(values);
    expect(plan.warnings.filter((w) => w.path === 'cni')).toEqual([{ path: 'cni', code: 'cni-values', message }]);
  });

  it('kubeadm with kube-router and no known MTU leaves kube-router\'s auto-mtu on (no --auto-mtu=false)', () => {
    const plan = node({ distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['10.244.0.0/16'], wireguard: [(({ mtu: _m, ...i }) => i)(siteA().wireguard[0])] });
    expect(plan.values.cni).toEqual({ kubeRouter: { interface: 'wg0', args: ['--enable-overlay=true', '--overlay-type=full'] } });
  });

  it('k3s with Calico writes no flannel-iface (flannel is off)', () => {
    expect(fileOf(node({ distribution: 'k3s', cni: 'calico' }), '/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml')).not.toContain('flannel-iface');
  });
});

describe('the CNI MTU by the family of the node addresses it encapsulates between (overlay MTU 1420)', () => {
  const v6 = { ...siteA().wireguard[0], address: 'fd10::1/64', peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: ['fd10::2/128'] }] };
  const dual = { ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'], peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: ['10.10.0.2/32', 'fd10::2/128'] }] };
  const k0sMtu = (plan: ReturnType<typeof node>) => {
    const network = k0sSpec(plan).network as { kuberouter?: { mtu: number }; calico?: { mtu: number } };
    return network.kuberouter?.mtu ?? network.calico?.mtu;
  };
  const handedMtu = (plan: ReturnType<typeof node>) => Object.values(plan.values.cni as Record<string, { mtu?: number; calicoNetwork?: { mtu: number } }>).map((c) => c.mtu ?? c.calicoNetwork?.mtu)[0];
  it('kubeadm Calico, dual-stack nodes: IPv6 autodetection on wg0 too (the operator defaults it to firstFound)', () => {
    expect((node({ distribution: 'kubeadm', cni: 'calico', wireguard: [dual] }).values.cni as { calico: { calicoNetwork: Record<string, unknown> } }).calico.calicoNetwork).toEqual({ nodeAddressAutodetectionV4: { interface: 'wg0' }, nodeAddressAutodetectionV6: { interface: 'wg0' }, mtu: 1350, ipPools: [{ encapsulation: 'VXLAN' }] });
  });
  it.each<[string, Props, (plan: ReturnType<typeof node>) => number | undefined, number]>([
    ['k0s kube-router, IPv4 nodes: IPIP, outer IPv4 (20)', {}, k0sMtu, 1400],
    ['k0s kube-router, IPv6 nodes: ip6ip6, outer IPv6 40 + the encapsulation-limit option 8 (48)', { wireguard: [v6], k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } }, k0sMtu, 1372],
    ['k0s kube-router, dual-stack nodes: the IPv6 tunnel must fit (48)', { wireguard: [dual] }, k0sMtu, 1372],
    ['k0s Calico, IPv4 nodes: VXLAN over IPv4 (50)', { cni: 'calico' }, k0sMtu, 1370],
    ['k0s Calico, IPv6 nodes: VXLAN over IPv6 (70)', { cni: 'calico', wireguard: [v6] }, k0sMtu, 1350],
    ['k0s Calico, dual-stack nodes (70)', { cni: 'calico', wireguard: [dual] }, k0sMtu, 1350],
    ['kubeadm flannel, IPv4 nodes (50)', { distribution: 'kubeadm', cni: 'flannel', podCidrs: ['10.244.0.0/16'] }, handedMtu, 1370],
    ['kubeadm flannel, IPv6 nodes (70)', { distribution: 'kubeadm', cni: 'flannel', podCidrs: ['fd00:10:244::/56'], wireguard: [v6] }, handedMtu, 1350],
    ['kubeadm Calico, IPv6 nodes (70)', { distribution: 'kubeadm', cni: 'calico', wireguard: [v6] }, handedMtu, 1350],
    ['kubeadm kube-router, IPv6 nodes (48)', { distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['fd00:10:244::/56'], wireguard: [v6] }, handedMtu, 1372],
    ['values.network.podMtu, kube-router IPv4 nodes: IPIP, as its own MTU (20)', {}, (p) => (p.values.network as { podMtu: number }).podMtu, 1400],
    ['values.network.podMtu, kube-router IPv6 nodes: ip6ip6 (48)', { wireguard: [v6], k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } }, (p) => (p.values.network as { podMtu: number }).podMtu, 1372],
    ['values.network.podMtu, Calico IPv4 nodes: VXLAN (50)', { cni: 'calico' }, (p) => (p.values.network as { podMtu: number }).podMtu, 1370],
    ['values.network.podMtu, IPv6 nodes (70)', { wireguard: [v6], cni: 'calico' }, (p) => (p.values.network as { podMtu: number }).podMtu, 1350],
  ])('%s', (_n, extra, mtuOf, expected) => {
    expect(mtuOf(node(extra))).toBe(expected);
  });
});

describe("k3s's flannel on an IPv6 node address: a cni-mtu warning (flannel's IPv6 VXLAN device takes the interface MTU - 50)", () => {
  const v6 = { ...siteA().wireguard[0], address: 'fd10::1/64', peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: ['fd10::2/128'] }] };
  const dual = { ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'], peers: [{ ...siteA().wireguard[0].peers[0], allowedIPs: ['10.10.0.2/32', 'fd10::2/128'] }] };
  const FLANNEL_V6 = 'k3s\'s flannel sets its IPv6 VXLAN device to its vxlan backend\'s mtu minus 50, and that mtu defaults to the overlay interface\'s, but VXLAN over IPv6 needs 70: full-size IPv6 pod packets between nodes are dropped where path-MTU discovery is blocked. Lowering the overlay interface\'s mtu does not help (flannel follows it). Give flannel\'s vxlan backend an mtu 20 below the overlay interface\'s: write a flannel net-conf.json with "Backend": {"Type": "vxlan", "mtu": <overlay MTU - 20>} beside your "Network", "EnableIPv6" and "IPv6Network" (k3s then writes none of it) and name it in k3s\'s flannel-conf; or register an IPv4 overlay address as the node address';
  it.each<[string, Props, { path: string; code: string; message: string }[]]>([
    ['k3s flannel, IPv6 node address', { distribution: 'k3s', wireguard: [v6] }, [{ path: 'wireguard[0].address', code: 'cni-mtu', message: FLANNEL_V6 }]],
    ['k3s flannel, dual-stack node address', { distribution: 'k3s', wireguard: [dual] }, [{ path: 'wireguard[0].address', code: 'cni-mtu', message: FLANNEL_V6 }]],
    ['k3s flannel, IPv4 node address (control)', { distribution: 'k3s' }, []],
    ['k3s with another CNI, IPv6 node address (tunnelwright hands its MTU, with 70)', { distribution: 'k3s', cni: 'other', wireguard: [v6] }, []],
    ['k0s Calico, IPv6 node address (k0s.yaml carries the MTU with 70)', { cni: 'calico', wireguard: [v6] }, []],
  ])('%s', (_n, extra, expected) => {
    expect(node(extra).warnings.filter((w) => w.code === 'cni-mtu')).toEqual(expected);
  });
});

describe('refused CNI and k0s.yaml settings', () => {
  it.each<[string, Props, { path: string; code: string; message: string }[]]>([
    ['k0s with flannel', { cni: 'flannel' }, [{ path: 'cni', code: 'cni', message: "k0s runs kube-router or Calico (spec.network.provider kuberouter, calico or custom), not flannel: choose cni 'kube-router' or 'calico', or 'other' for a CNI you install yourself (provider custom)" }]],
    ['an unknown CNI', { cni: 'weave' as never }, [{ path: 'cni', code: 'enum', message: 'expected one of "kube-router"|"calico"|"flannel"|"other", received "weave"' }]],
    ['k0sConfig beside k3s', { distribution: 'k3s', k0sConfig: { api: { externalAddress: 'k8s.example.test' } } }, [{ path: 'k0sConfig', code: 'distribution', message: 'k0sConfig is k0s.yaml\'s spec; the distribution is "k3s"' }]],
    ['k0sConfig setting the keys the overlay sets', { k0sConfig: { api: { address: '192.0.2.1' }, storage: { etcd: { peerAddress: '192.0.2.1' } }, network: { kuberouter: { mtu: 1500, extraArgs: { 'overlay-type': 'subnet' } } } } }, [
      { path: 'k0sConfig.api.address', code: 'k0s-owned', message: "tunnelwright sets api.address to the node's overlay address: leave it out of k0sConfig" },
      { path: 'k0sConfig.network.kuberouter.extraArgs.overlay-type', code: 'k0s-owned', message: 'tunnelwright sets network.kuberouter.extraArgs.overlay-type for cni "kube-router" from the overlay: leave it out of k0sConfig' },
      { path: 'k0sConfig.network.kuberouter.mtu', code: 'k0s-owned', message: 'tunnelwright sets network.kuberouter.mtu for cni "kube-router" from the overlay: leave it out of k0sConfig' },
      { path: 'k0sConfig.storage.etcd.peerAddress', code: 'k0s-owned', message: "tunnelwright sets storage.etcd.peerAddress to the node's overlay address: leave it out of k0sConfig" },
    ]],
    ['k0sConfig setting Calico\'s keys under cni calico', { cni: 'calico', k0sConfig: { network: { calico: { mtu: 1450, ipAutodetectionMethod: 'first-found' } } } }, [
      { path: 'k0sConfig.network.calico.ipAutodetectionMethod', code: 'k0s-owned', message: 'tunnelwright sets network.calico.ipAutodetectionMethod for cni "calico" from the overlay: leave it out of k0sConfig' },
      { path: 'k0sConfig.network.calico.mtu', code: 'k0s-owned', message: 'tunnelwright sets network.calico.mtu for cni "calico" from the overlay: leave it out of k0sConfig' },
    ]],
    ['k0sConfig setting Calico\'s keys under cni kube-router (the default)', { k0sConfig: { network: { calico: { mode: 'vxlan' } } } }, [
      { path: 'k0sConfig.network.calico.mode', code: 'k0s-owned', message: "network.calico.mode configures calico, but cni is \"kube-router\" (k0s provider kuberouter, which does not read it): set cni 'calico' if the cluster runs calico, else leave it out of k0sConfig" },
    ]],
    ['k0sConfig setting kube-router\'s keys under cni calico', { cni: 'calico', k0sConfig: { network: { kuberouter: { autoMTU: true } } } }, [
      { path: 'k0sConfig.network.kuberouter.autoMTU', code: 'k0s-owned', message: "network.kuberouter.autoMTU configures kube-router, but cni is \"calico\" (k0s provider calico, which does not read it): set cni 'kube-router' if the cluster runs kube-router, else leave it out of k0sConfig" },
    ]],
    ['k0sConfig setting kube-router\'s keys under cni other', { cni: 'other', k0sConfig: { network: { kuberouter: { mtu: 1400 } } } }, [
      { path: 'k0sConfig.network.kuberouter.mtu', code: 'k0s-owned', message: "network.kuberouter.mtu configures kube-router, but cni is \"other\" (k0s provider custom, which does not read it): set cni 'kube-router' if the cluster runs kube-router, else leave it out of k0sConfig" },
    ]],
    ['k0sConfig setting kube-router\'s overlay-encap to fou', { k0sConfig: { network: { kuberouter: { extraArgs: { 'overlay-encap': 'fou' } } } } }, [
      { path: 'k0sConfig.network.kuberouter.extraArgs.overlay-encap', code: 'cni', message: 'expected "ipip" (the encapsulation the kube-router MTU tunnelwright writes is computed for), received "fou": fou adds UDP and GUE headers (32 bytes over IPv4, not IPIP\'s 20), so pods would send packets larger than the tunnel; leave overlay-encap out of k0sConfig' },
    ]],
    ['k0sConfig naming another provider than cni', { cni: 'calico', k0sConfig: { network: { provider: 'kuberouter' } } }, [{ path: 'k0sConfig.network.provider', code: 'cni', message: 'expected "calico" (cni "calico"), received "kuberouter": name the CNI with cni instead' }]],
  ])('refuses %s', (_n, extra, problems) => {
    const error = thrown(() => node(extra)) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.problems).toEqual(problems);
  });
});

describe('your k0s.yaml settings beside the library\'s', () => {
  it('accepts kube-router\'s overlay-encap ipip (what the MTU is computed for)', () => {
    expect((k0sSpec(node({ k0sConfig: { network: { kuberouter: { extraArgs: { 'overlay-encap': 'ipip' } } } } })).network as { kuberouter: { mtu: number } }).kuberouter.mtu).toBe(1400);
  });

  it('keeps your keys, takes the union of the SANs, and sets the overlay\'s', () => {
    const spec = k0sSpec(node({ k0sConfig: { api: { externalAddress: 'k8s.example.test', sans: ['k8s.example.test', '10.10.0.1'] }, network: { podCIDR: '10.244.0.0/16', provider: 'kuberouter', kuberouter: { metricsPort: 9090 } }, telemetry: { enabled: false } } }));
    expect(spec).toEqual({
      api: { externalAddress: 'k8s.example.test', sans: ['k8s.example.test', '10.10.0.1'], address: '10.10.0.1' },
      storage: { type: 'etcd', etcd: { peerAddress: '10.10.0.1' } },
      network: { podCIDR: '10.244.0.0/16', provider: 'kuberouter', kuberouter: { metricsPort: 9090, autoMTU: false, mtu: 1400, extraArgs: { 'enable-overlay': 'true', 'overlay-type': 'full' } } },
      telemetry: { enabled: false },
    });
  });
});

describe('WireguardMesh and the CNI', () => {
  it('writes the CNI into every controller\'s k0s.yaml (Calico on the mesh\'s interface) and hands nothing to workers', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), underlayMtu: 1500, cni: 'calico', k0sConfig: { api: { externalAddress: 'k8s.example.test' } } });
    const k0s = plan.nodes['site-a'].host.files.find((f) => f.path === '/etc/k0s/k0s.yaml')!.content;
    expect((parse(k0s) as { spec: Record<string, unknown> }).spec).toMatchObject({ api: { externalAddress: 'k8s.example.test' }, network: { provider: 'calico', calico: { mode: 'vxlan', ipAutodetectionMethod: 'interface=wg0', mtu: 1390 } } });
    expect(plan.nodes['site-b'].host.files.some((f) => f.path === '/etc/k0s/k0s.yaml')).toBe(false);
  });

  it('k3s mesh: every node\'s flannel on the mesh interface; k0s with flannel refused at the mesh\'s cni', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), distribution: 'k3s', interfaceName: 'wg-mesh' });
    for (const n of ['site-a', 'site-b', 'site-c']) expect(plan.nodes[n].host.files.find((f) => f.path === '/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml')!.content).toContain('flannel-iface: wg-mesh\n');
    expect((thrown(() => planWireguardMesh({ ...threeNodeMesh(), cni: 'flannel' })) as ValidationError).problems.map((p) => `${p.path} ${p.code}`)).toEqual(['cni cni']);
  });

  it('kubeadm mesh: a warning naming where each node\'s CNI settings are', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), distribution: 'kubeadm', cni: 'flannel', podCidrs: ['10.244.0.0/16'], mtu: 1420 });
    expect(plan.warnings.filter((w) => w.path === 'cni').map((w) => w.message)).toEqual(['kubeadm does not install flannel itself, so tunnelwright cannot write its settings: pass plan.nodes[<node>].values.cni.flannel (the overlay interface, the encapsulation and the MTU) to its install, or pod traffic between nodes leaves by the default-route interface']);
    expect(plan.nodes['site-b'].values.cni).toEqual({ flannel: { interface: 'wg0', args: ['--iface=wg0'], mtu: 1370, netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan' } } } });
  });
});

describe('kube-proxy\'s masquerade into kube-router\'s tunnels takes the overlay address (an nft SNAT loaded by wg0)', () => {
  const SNAT_PATH = '/etc/tunnelwright/wg0-kube-router-snat.nft';
  const conf = (plan: ReturnType<typeof node>) => fileOf(plan, '/etc/wireguard/wg0.conf')!;
  /**
   * The expected table for one family, written from nft's grammar, not from kubeRouterSnat (the oracle stays
   * independent): declare it, delete it (an nft -f run replaces it whole), then the postrouting chain that SNATs what
   * kube-proxy marked (bit 14) into the tunnels, clearing the mark.
   */
  const snatTable = (nf: 'ip' | 'ip6', address: string) => [
    `table ${nf} tunnelwright-wg0-kube-router`,
    `delete table ${nf} tunnelwright-wg0-kube-router`,
    `table ${nf} tunnelwright-wg0-kube-router {`,
    '\tchain postrouting {',
    '\t\ttype nat hook postrouting priority srcnat - 10; policy accept;',
    `\t\toifname "tun-*" meta mark & 0x00004000 == 0x00004000 meta mark set meta mark & 0xffffbfff snat ${nf} to ${address}`,
    '\t}',
    '}',
  ];
  /** The whole SNAT file: its header, then each family's table. */
  const snatFile = (...tables: string[][]) => [
    "# written by tunnelwright: traffic kube-proxy masquerades into kube-router's tunnels leaves with wg0's address",
    "# (the tunnels have none, so MASQUERADE would take the underlay's and the reply would come back in clear).",
    ...tables.flat(),
    '',
  ].join('\n');

  it('a k0s worker node (kube-router, its default): the table, loaded in PreUp (before the addresses and routes) and never deleted by wg-quick, and nftables installed', () => {
    const plan = node({});
    expect(fileOf(plan, SNAT_PATH)).toBe(snatFile(snatTable('ip', '10.10.0.1')));
    // PreUp runs before wg-quick's add_addr/add_route, so no flow is NATed to the underlay in that gap; no PostDown
    // deletes the table, so none is across a restart.
    expect(conf(plan)).toContain(`\nPreUp = nft -f ${SNAT_PATH}\nPostUp = wg set %i private-key`);
    expect(conf(plan)).not.toMatch(/^PostUp = nft|^PostDown = /m);
    expect(plan.hosts[0].packages).toContain('nftables');
  });

  it('the table is loaded again by a unit bound to nftables.service (whose start, reload and stop run flush ruleset), as the kill switch\'s', () => {
    const unit = node({}).hosts[0].units.find((u) => u.name === 'tunnelwright-wg0-kube-router-snat.service')!;
    expect(unit.enabled).toBe(true);
    expect(unit.content).toBe([
      '[Unit]',
      "Description=tunnelwright: kube-proxy's masquerade into kube-router's tunnels takes wg0's address (again after nftables.service)",
      'After=nftables.service',
      'PartOf=nftables.service',
      'ReloadPropagatedFrom=nftables.service',
      'Before=wg-quick@wg0.service',
      '',
      '[Service]',
      'Type=oneshot',
      'RemainAfterExit=yes',
      `ExecStart=/usr/sbin/nft -f ${SNAT_PATH}`,
      `ExecReload=/usr/sbin/nft -f ${SNAT_PATH}`,
      '',
      '[Install]',
      'WantedBy=multi-user.target',
      '',
    ].join('\n'));
  });

  const failClosed = (plan: ReturnType<typeof node>) => plan.hosts[0].units.find((u) => u.name === 'tunnelwright-wg0-kube-router-fail-closed.service');
  it('pod traffic with no tunnel route fails closed: a unit of its own (not wg0\'s hooks) installs unreachable routes for the pod CIDR and the overlay network', () => {
    const unit = failClosed(node({}))!;
    expect(unit.enabled).toBe(true);
    expect(unit.content).toBe([
      '[Unit]',
      'Description=tunnelwright: pod traffic with no kube-router tunnel route fails closed instead of taking the default route',
      'After=network-pre.target',
      'Before=wg-quick@wg0.service',
      '',
      '[Service]',
      'Type=oneshot',
      'RemainAfterExit=yes',
      'ExecStart=/usr/sbin/ip route replace unreachable 10.244.0.0/16 metric 4096',
      'ExecStart=/usr/sbin/ip route replace unreachable 10.10.0.0/24 metric 4096',
      'ExecStop=-/usr/sbin/ip route del unreachable 10.244.0.0/16 metric 4096',
      'ExecStop=-/usr/sbin/ip route del unreachable 10.10.0.0/24 metric 4096',
      '',
      '[Install]',
      'WantedBy=multi-user.target',
      '',
    ].join('\n'));
  });

  it.each<[string, Props, string[]]>([
    ['k0s, a podCIDR of your own', { k0sConfig: { network: { podCIDR: '10.32.0.0/12' } } }, ['10.32.0.0/12', '10.10.0.0/24']],
    ['k0s dual-stack', { k0sConfig: { network: { dualStack: { enabled: true, IPv6podCIDR: 'fd00::/108' } } }, wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'] }] }, ['10.244.0.0/16', '-6 fd00::/108', '10.10.0.0/24', '-6 fd10::/64']],
    ['kubeadm with kube-router: its podCidrs and the overlay network', { distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['10.32.0.0/16'] }, ['10.32.0.0/16', '10.10.0.0/24']],
    ['kubeadm dual-stack with kube-router: both pod CIDRs', { distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['10.32.0.0/16', 'fd00:10:32::/56'], wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'] }] }, ['10.32.0.0/16', '-6 fd00:10:32::/56', '10.10.0.0/24', '-6 fd10::/64']],
  ])('fail-closed routes: %s', (_n, props, routes) => {
    expect([...failClosed(node(props))!.content!.matchAll(/^ExecStart=\/usr\/sbin\/ip (-6 )?route replace unreachable (\S+) metric 4096$/gm)].map((m) => `${m[1] ?? ''}${m[2]}`)).toEqual(routes);
  });

  const POD_CIDR_WARNING = {
    path: 'k0sConfig.network.podCIDR', code: 'pod-cidr',
    message: 'this k0s worker\'s pod CIDR is not known (a worker writes no k0s.yaml, and k0s\'s default 10.244.0.0/16 need not be the controller\'s), so its fail-closed unit gets unreachable routes for the overlay network only: pod traffic whose kube-router tunnel route is gone (a peer\'s BGP session dropped) leaves by the default route in clear. Pass the controller\'s k0sConfig, with its network.podCIDR (and network.dualStack), to fail closed for pod traffic',
  };
  const routesOf = (content: string) => [...content.matchAll(/^ExecStart=\/usr\/sbin\/ip (-6 )?route replace unreachable (\S+) metric 4096$/gm)].map((m) => `${m[1] ?? ''}${m[2]}`);
  it.each<[string, () => { warnings: { path: string; code: string; message: string }[]; units: { name: string; content?: string }[] }, string[], boolean]>([
    ['a k0s worker without k0sConfig: the overlay network only (k0s\'s default need not be the controller\'s), warned', () => { const p = node({ role: 'worker' }); return { warnings: p.warnings, units: p.hosts[0].units }; }, ['10.10.0.0/24'], true],
    ['a k0s worker whose k0sConfig has no podCIDR (only a masqueradeBit): the overlay network only, warned', () => { const p = node({ role: 'worker', k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: 15 } } } } }); return { warnings: p.warnings, units: p.hosts[0].units }; }, ['10.10.0.0/24'], true],
    ['control: a k0s worker given the controller\'s podCIDR: that CIDR, no warning', () => { const p = node({ role: 'worker', k0sConfig: { network: { podCIDR: '10.42.0.0/16' } } }); return { warnings: p.warnings, units: p.hosts[0].units }; }, ['10.42.0.0/16', '10.10.0.0/24'], false],
    ['control: a k0s controller+worker without k0sConfig (its own k0s.yaml: k0s\'s default): 10.244.0.0/16, no warning', () => { const p = node({}); return { warnings: p.warnings, units: p.hosts[0].units }; }, ['10.244.0.0/16', '10.10.0.0/24'], false],
    ['control: a k0s mesh without k0sConfig (its controller writes k0s\'s default): 10.244.0.0/16 on every node, no warning', () => { const p = planWireguardMesh({ ...threeNodeMesh(), mtu: 1420 }); return { warnings: p.warnings, units: p.nodes['site-b'].host.units }; }, ['10.244.0.0/16', '10.10.0.0/24'], false],
  ])('%s (the pod CIDR of the fail-closed unit)', (_n, plan, routes, warned) => {
    const { warnings, units } = plan();
    const unit = units.find((u) => /^tunnelwright-wg\d+-kube-router-fail-closed\.service$/.test(u.name))!;
    expect(routesOf(unit.content!)).toEqual(routes);
    expect(warnings.filter((w) => w.code === 'pod-cidr')).toEqual(warned ? [POD_CIDR_WARNING] : []);
  });

  it.each<[string, Props]>([
    ['k0s', {}],
    ['k0s dual-stack', { k0sConfig: { network: { dualStack: { enabled: true, IPv6podCIDR: 'fd00::/108' } } }, wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'] }] }],
    ['kubeadm with kube-router', { distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['10.244.0.0/16'] }],
  ])('the fail-closed unit removes each of its routes when stopped (ExecStop twins of ExecStart, so disable --now undoes it): %s', (_n, props) => {
    const lines = failClosed(node(props))!.content!.split('\n');
    const starts = lines.filter((l) => l.startsWith('ExecStart='));
    expect(starts.length).toBeGreaterThan(0);
    expect(lines.filter((l) => l.startsWith('ExecStop='))).toEqual(starts.map((l) => l.replace('ExecStart=/usr/sbin/ip ', 'ExecStop=-/usr/sbin/ip ').replace(' route replace ', ' route del ')));
  });

  // The last column: the fail-closed unit (unreachable routes for the pod CIDRs) is written.
  it.each<[string, Props, boolean, boolean]>([
    ['k0s controller+worker, kube-router: written', {}, true, true],
    ['k0s worker, kube-router: written', { role: 'worker' }, true, true],
    ['k0s controller (no kubelet, no kube-router): none', { role: 'controller' }, false, false],
    ['k0s, Calico (its VXLAN device has an address): none', { cni: 'calico' }, false, false],
    ['k3s, flannel (flannel.1 has an address): none', { distribution: 'k3s' }, false, false],
    ['k3s with kube-router: written', { distribution: 'k3s', cni: 'kube-router' }, true, true],
    ['kubeadm with kube-router: written', { distribution: 'kubeadm', cni: 'kube-router', podCidrs: ['10.244.0.0/16'] }, true, true],
    ['kubeadm with Calico: none', { distribution: 'kubeadm', cni: 'calico' }, false, false],
    ['kubeadm with a CNI of your own: none', { distribution: 'kubeadm', cni: 'other' }, false, false],
    ['k0s, IPv6-only node address (IPv6 source selection can take a ULA underlay): written, ip6', { wireguard: [{ ...siteA().wireguard[0], address: 'fd10::1/64' }], k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } }, true, true],
    ['k0s, kube-proxy disabled (nothing sets its mark; kube-router\'s own proxy SNATs to the node IP): no table, the fail-closed unit stays', { k0sConfig: { network: { kubeProxy: { disabled: true } } } }, false, true],
    ['control: k0s, kube-proxy disabled: false', { k0sConfig: { network: { kubeProxy: { disabled: false } } } }, true, true],
  ])('%s (the SNAT table and its hooks)', (_n, props, expected, failClosedUnit) => {
    const plan = node(props);
    expect(fileOf(plan, SNAT_PATH) !== undefined).toBe(expected);
    expect(conf(plan).includes(`PreUp = nft -f ${SNAT_PATH}`)).toBe(expected);
    expect(plan.hosts[0].units.some((u) => u.name === 'tunnelwright-wg0-kube-router-snat.service')).toBe(expected);
    expect(plan.hosts[0].packages.includes('nftables')).toBe(expected);
    expect(failClosed(plan) !== undefined).toBe(failClosedUnit);
  });

  const NFT_PACKAGES = {
    path: 'installPackages', code: 'packages',
    message: 'installPackages is false, and on a kube-router node wg-quick\'s PreUp runs `nft -f /etc/tunnelwright/<interface>-kube-router-snat.nft`: the image must ship nftables (the nft binary, a version that knows the `srcnat` priority name) beside wireguard-tools, or wg-quick up fails, the interface is taken down again and the distribution\'s unit (which requires it) does not start',
  };
  // The last column: nftables is among the packages installed.
  it.each<[string, () => { warnings: { path: string; code: string; message: string }[]; packages: string[] }, boolean, boolean]>([
    ['a k0s node, kube-router, installPackages false: warned, nothing installed', () => { const p = node({ installPackages: false }); return { warnings: p.warnings, packages: p.hosts[0].packages }; }, true, false],
    ['control: the same node, installPackages true: nftables installed, no warning', () => { const p = node({ installPackages: true }); return { warnings: p.warnings, packages: p.hosts[0].packages }; }, false, true],
    ['a k0s controller (no table), installPackages false: no warning', () => { const p = node({ role: 'controller', installPackages: false }); return { warnings: p.warnings, packages: p.hosts[0].packages }; }, false, false],
    ['k3s with flannel (no table), installPackages false: no warning', () => { const p = node({ distribution: 'k3s', installPackages: false }); return { warnings: p.warnings, packages: p.hosts[0].packages }; }, false, false],
    ['a k0s mesh, kube-router, installPackages false: warned', () => { const p = planWireguardMesh({ ...threeNodeMesh(), mtu: 1420, installPackages: false }); return { warnings: p.warnings, packages: p.nodes['site-a'].host.packages }; }, true, false],
    ['a k0s node, kube-router, kube-proxy disabled (no table), installPackages false: no warning', () => { const p = node({ installPackages: false, k0sConfig: { network: { kubeProxy: { disabled: true } } } }); return { warnings: p.warnings, packages: p.hosts[0].packages }; }, false, false],
    ['control: the same mesh, installPackages default: no warning', () => { const p = planWireguardMesh({ ...threeNodeMesh(), mtu: 1420 }); return { warnings: p.warnings, packages: p.nodes['site-a'].host.packages }; }, false, true],
  ])('%s (the nft the table needs)', (_n, plan, warned, nftables) => {
    const { warnings, packages } = plan();
    expect(warnings.filter((w) => w.code === 'packages')).toEqual(warned ? [NFT_PACKAGES] : []);
    expect(packages.includes('nftables')).toBe(nftables);
  });

  const ruleOf = (content: string | undefined) => content!.split('\n').find((l) => l.includes('snat'))!.trim();
  it.each<[string, Props, string]>([
    ['the default bit 14', {}, 'oifname "tun-*" meta mark & 0x00004000 == 0x00004000 meta mark set meta mark & 0xffffbfff snat ip to 10.10.0.1'],
    ['k0sConfig iptables.masqueradeBit 15 (iptables mode)', { k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: 15 } } } } }, 'oifname "tun-*" meta mark & 0x00008000 == 0x00008000 meta mark set meta mark & 0xffff7fff snat ip to 10.10.0.1'],
    ['k0sConfig iptables.masqueradeBit 15, mode ipvs (IPVS takes the same bit)', { k0sConfig: { network: { kubeProxy: { mode: 'ipvs', iptables: { masqueradeBit: 15 } } } } }, 'oifname "tun-*" meta mark & 0x00008000 == 0x00008000 meta mark set meta mark & 0xffff7fff snat ip to 10.10.0.1'],
    ['k0sConfig masqueradeBit 0', { k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: 0 } } } } }, 'oifname "tun-*" meta mark & 0x00000001 == 0x00000001 meta mark set meta mark & 0xfffffffe snat ip to 10.10.0.1'],
    ['k0sConfig masqueradeBit 31', { k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: 31 } } } } }, 'oifname "tun-*" meta mark & 0x80000000 == 0x80000000 meta mark set meta mark & 0x7fffffff snat ip to 10.10.0.1'],
    ['a worker given the controller\'s k0sConfig', { role: 'worker', k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: 15 } } } } }, 'oifname "tun-*" meta mark & 0x00008000 == 0x00008000 meta mark set meta mark & 0xffff7fff snat ip to 10.10.0.1'],
  ])('kube-proxy\'s masquerade bit: %s', (_n, props, rule) => {
    expect(ruleOf(fileOf(node(props), SNAT_PATH))).toBe(rule);
  });

  it('a mesh\'s masqueradeBit reaches every node\'s table, the workers\' too (they have no k0s.yaml)', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), mtu: 1420, k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: 15 } } } } });
    const rules = Object.values(plan.nodes).map((n) => n.host.files.find((f) => f.path === SNAT_PATH)?.content).filter((c) => c !== undefined).map(ruleOf);
    expect(rules.length).toBeGreaterThan(1);
    for (const r of rules) expect(r).toContain('meta mark & 0x00008000 == 0x00008000 meta mark set meta mark & 0xffff7fff ');
  });

  const BIT = "expected kube-proxy's masquerade bit, an integer from 0 to 31 (default 14), received";
  it.each<[string, unknown, string]>([
    ['32', 32, `${BIT} 32`], ['-1', -1, `${BIT} -1`], ['14.5', 14.5, `${BIT} 14.5`], ['"14"', '14', `${BIT} "14"`],
  ])('kube-proxy\'s masquerade bit %s is refused (kube-proxy takes 0 to 31)', (_n, bit, message) => {
    const e = thrown(() => node({ k0sConfig: { network: { kubeProxy: { iptables: { masqueradeBit: bit } } } } })) as ValidationError;
    expect(e.problems.filter((p) => p.path.startsWith('k0sConfig'))).toEqual([{ path: 'k0sConfig.network.kubeProxy.iptables.masqueradeBit', code: 'cni', message }]);
  });

  const MODE = 'expected "iptables" (kube-proxy\'s default) or "ipvs", received';
  it.each<[string, Record<string, unknown>, { path: string; code: string; message: string }[]]>([
    ['nftables (k0s v1.30 refuses it)', { mode: 'nftables', nftables: { masqueradeBit: 3 } }, [{ path: 'k0sConfig.network.kubeProxy.mode', code: 'cni', message: `${MODE} "nftables": k0s v1.30 refuses it ("unsupported mode nftables for kubeProxy config": its kube-proxy modes are iptables, ipvs and userspace), so the controller does not start; leave mode out or choose one of those` }]],
    ['userspace (k0s passes it, kube-proxy has no such proxier)', { mode: 'userspace' }, [{ path: 'k0sConfig.network.kubeProxy.mode', code: 'cni', message: `${MODE} "userspace": kube-proxy has had no userspace proxier since Kubernetes 1.26 (its validation takes iptables, ipvs or, behind a feature gate, nftables), so it does not start; leave mode out or choose one of those` }]],
    ['a typo', { mode: 'ipvs ' }, [{ path: 'k0sConfig.network.kubeProxy.mode', code: 'cni', message: `${MODE} "ipvs ": k0s v1.30 takes iptables, ipvs or userspace ("unsupported mode … for kubeProxy config"), so the controller does not start; leave mode out or choose one of those` }]],
    ['control: iptables', { mode: 'iptables' }, []],
    ['control: ipvs', { mode: 'ipvs' }, []],
    ['control: nftables with kube-proxy disabled (k0s skips its Validate then)', { disabled: true, mode: 'nftables' }, []],
  ])('kube-proxy mode %s', (_n, kubeProxy, problems) => {
    let got: unknown[] = [];
    try { node({ k0sConfig: { network: { kubeProxy } } }); } catch (e) { got = (e as ValidationError).problems.filter((p) => p.path.startsWith('k0sConfig')); }
    expect(got).toEqual(problems);
  });

  it('a dual-stack node SNATs to its IPv4 overlay address in an ip table and to its IPv6 one in an ip6 table', () => {
    expect(fileOf(node({ wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'] }] }), SNAT_PATH)).toBe(snatFile(snatTable('ip', '10.10.0.1'), snatTable('ip6', 'fd10::1')));
  });

  it('an IPv6-only node SNATs to its IPv6 overlay address in an ip6 table only', () => {
    const nft = fileOf(node({ wireguard: [{ ...siteA().wireguard[0], address: 'fd10::1/64' }], k0sConfig: { network: { podCIDR: 'fd00:10:244::/108' } } }), SNAT_PATH)!;
    expect(nft).toContain('\t\toifname "tun-*" meta mark & 0x00004000 == 0x00004000 meta mark set meta mark & 0xffffbfff snat ip6 to fd10::1\n');
    expect(nft).not.toMatch(/^table ip /m);
  });

  it('in a mesh every kube-router node SNATs to its own overlay address', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), mtu: 1420 });
    const withTable = Object.values(plan.nodes).filter((n) => n.host.files.some((f) => f.path === SNAT_PATH));
    expect(withTable.length).toBeGreaterThanOrEqual(2);
    for (const n of withTable) {
      expect(/snat ip to (\S+)\n/.exec(n.host.files.find((f) => f.path === SNAT_PATH)!.content)?.[1]).toBe(String(n.wireguard.address).split('/')[0]);
    }
  });
});

describe('the k0s helpers on their own (what the constructs never reach through valid props)', () => {
  it('kubeRouterSnat: an interface without an address gets no table (control: one IPv4 address gets an ip table)', () => {
    expect(kubeRouterSnat('wg0', [])).toBeUndefined();
    expect(kubeRouterSnat('wg0', ['10.10.0.1/24'])?.nft).toContain('table ip tunnelwright-wg0-kube-router {');
  });

  it('mergeK0sSpec: only api.sans lists are joined; any other list of ours replaces the user\'s', () => {
    const user = { api: { sans: ['a.example'] }, network: { kubeRouter: { args: ['--user'] } } };
    const ours = { api: { sans: ['10.10.0.1'] }, network: { kubeRouter: { args: ['--ours'] } } };
    expect(mergeK0sSpec(user, ours)).toEqual({ api: { sans: ['a.example', '10.10.0.1'] }, network: { kubeRouter: { args: ['--ours'] } } });
  });
});
