import { planWireguardOverlayNode, renderHostArtefacts, validateWireguardOverlayNode, WireguardOverlayNodeProps } from '../../src';
import { renderWireguardConfig, renderWireguardConfigShared } from '../../src/render/wireguard-overlay-node';
import { KEYS, siteA } from '../helpers/fixtures';
import { expectGolden } from '../helpers/golden';

const conf = (props: WireguardOverlayNodeProps, name = 'wg0') => planWireguardOverlayNode(props).hosts[0].files.find((f) => f.path === `/etc/wireguard/${name}.conf`)!;

describe('planWireguardOverlayNode', () => {
  it('renders the interface without the key, applied from the resolved file by PostUp', () => {
    const file = conf(siteA());
    expect({ mode: file.mode, owner: file.owner, secret: file.secret }).toEqual({ mode: 0o600, owner: 'root:root', secret: undefined });
    expect(file.content).toBe(
      [
        '# wg0 on site-a: written by tunnelwright',
        '[Interface]',
        'Address = 10.10.0.1/24',
        'ListenPort = 51820',
        'MTU = 1420',
        // k0s's kube-router: kube-proxy's masquerade into its tunnels takes the overlay address (src/render/cni.ts),
        // loaded before the addresses and routes, and kept across a restart.
        'PreUp = nft -f /etc/tunnelwright/wg0-kube-router-snat.nft',
        'PostUp = wg set %i private-key /run/tunnelwright/secrets/wg0-private-key',
        '',
        '[Peer]',
        `PublicKey = ${KEYS.b.publicKey}`,
        'Endpoint = 198.51.100.2:51820',
        'AllowedIPs = 10.10.0.2/32',
        '',
        '[Peer]',
        `PublicKey = ${KEYS.c.publicKey}`,
        'AllowedIPs = 10.10.0.3/32',
        'PersistentKeepalive = 25',
        '',
      ].join('\n'),
    );
  });

  it.each([
    ['leaves the MTU to wg-quick when neither mtu nor underlayMtu is given', {}, undefined],
    ['derives the MTU from a 1450 underlay over IPv4 (60 bytes of overhead)', { underlayMtu: 1450 }, 1390],
    ['derives the MTU from a 1460 (GCP) underlay', { underlayMtu: 1460 }, 1400],
    ['derives the MTU from a 1492 (PPPoE) underlay', { underlayMtu: 1492 }, 1432],
    ['takes mtu over underlayMtu', { underlayMtu: 1492, mtu: 1300 }, 1300],
  ])('%s', (_name, extra, mtu) => {
    const props = siteA();
    const { mtu: _mtu, ...iface } = props.wireguard[0];
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...iface, ...extra }] });
    const line = /^MTU = (\d+)$/m.exec(plan.hosts[0].files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content);
    expect(line ? Number(line[1]) : undefined).toBe(mtu);
    // The pods' MTU (k0s's default kube-router: IPIP inside the overlay, 20 bytes less) is known exactly when the overlay's is.
    expect(plan.values.network).toEqual(mtu === undefined ? undefined : { overlayMtu: mtu, podMtu: mtu - 20 });
  });

  it('counts 80 bytes of overhead when a peer is dialled over IPv6', () => {
    const props = siteA();
    const { mtu: _mtu, ...iface } = props.wireguard[0];
    const peers = [{ ...iface.peers[0], endpoint: '[2001:db8::2]:51820' }, iface.peers[1]];
    expect(conf({ ...props, wireguard: [{ ...iface, underlayMtu: 1500, peers }] }).content).toContain('\nMTU = 1420\n');
  });

  it('writes a dual-stack interface\'s two addresses and registers both as the node IP, IPv4 first', () => {
    const props = siteA();
    const plan = planWireguardOverlayNode({ ...props, distribution: 'k3s', wireguard: [{ ...props.wireguard[0], address: ['fd10::1/64', '10.10.0.1/24'] }] });
    expect(plan.hosts[0].files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content).toContain('\nAddress = fd10::1/64, 10.10.0.1/24\n');
    expect(plan.values.node).toEqual({ name: 'site-a', nodeIp: '10.10.0.1', nodeIps: ['10.10.0.1', 'fd10::1'], apiSans: ['10.10.0.1', 'fd10::1'] });
    expect(plan.hosts[0].files.find((f) => f.path.startsWith('/etc/rancher/'))!.content).toContain('node-ip: 10.10.0.1,fd10::1\n');
  });

  it('makes reload apply a key rotated at its source: a drop-in resolves each secret again, then runs the reload script', () => {
    const host = planWireguardOverlayNode(siteA()).hosts[0];
    expect(host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')).toEqual({
      unit: 'wg-quick@wg0.service', name: '20-tunnelwright-reload.conf',
      content: '[Service]\nExecReload=\nExecReload=/opt/tunnelwright/bin/resolve-secret file /run/corium/wg0.key /run/tunnelwright/secrets/wg0-private-key 0\nExecReload=/opt/tunnelwright/bin/wg-reload %i\nExecReload=-/usr/bin/systemctl restart --no-block tunnelwright-wg0-endpoints.service\n',
    });
    expect(host.files.find((f) => f.path === '/opt/tunnelwright/bin/wg-reload')!.mode).toBe(0o755);
    // The refresh is the boot unit's own command with no wait: the same source, the same file.
    const boot = /^ExecStart=(.+) \d+$/m.exec(host.units[0].content!)![1];
    expect(host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content).toContain(`\nExecReload=${boot} 0\n`);
  });

  it('refreshes a preshared key from its source on reload too, after the private key', () => {
    const props = siteA();
    const peers = [{ ...props.wireguard[0].peers[0], presharedKeyFrom: { url: 'https://vault.example.test/psk' } }, props.wireguard[0].peers[1]];
    const reload = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], peers }] }).hosts[0].dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!;
    expect(reload.content.split('\n').filter((l) => l.startsWith('ExecReload=/'))).toEqual([
      'ExecReload=/opt/tunnelwright/bin/resolve-secret file /run/corium/wg0.key /run/tunnelwright/secrets/wg0-private-key 0',
      'ExecReload=/opt/tunnelwright/bin/resolve-secret url /etc/tunnelwright/secret-urls/wg0-peer-2a1c835b-preshared-key.curl /run/tunnelwright/secrets/wg0-peer-2a1c835b-preshared-key 0',
      'ExecReload=/opt/tunnelwright/bin/wg-reload %i',
    ]);
  });

  it('writes a hostname endpoint as a comment that the endpoints unit sets after up, and keeps IP endpoints in the config', () => {
    const props = siteA();
    const peers = [{ ...props.wireguard[0].peers[0], endpoint: 'site-b.example.net:51820' }, props.wireguard[0].peers[1]];
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], peers }] });
    const host = plan.hosts[0];
    expect(host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content).toContain(`\nPublicKey = ${KEYS.b.publicKey}\n# tunnelwright: Endpoint = site-b.example.net:51820\nAllowedIPs = 10.10.0.2/32\n`);
    expect(host.units.map((u) => u.name)).toEqual(['tunnelwright-secret-wg0-private-key.service', 'wg-quick@wg0.service', 'tunnelwright-wg0-kube-router-snat.service', 'tunnelwright-wg0-kube-router-fail-closed.service', 'tunnelwright-wg0-endpoints.service']);
    expect(plan.warnings.map((w) => w.code)).toEqual(['hostname-endpoint', 'k0s-node-ip']);
    // Without a hostname: the same unit, drop-in and script (a name can come later, by copy and reload), no comment,
    // and no warning.
    const plain = planWireguardOverlayNode(siteA());
    expect(plain.hosts[0].units.map((u) => u.name)).toEqual(host.units.map((u) => u.name));
    expect(plain.hosts[0].dropins.map((d) => d.name)).toEqual(host.dropins.map((d) => d.name));
    expect(plain.hosts[0].files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content).not.toContain('# tunnelwright: Endpoint');
    expect(plain.warnings.map((w) => w.code)).toEqual(['k0s-node-ip']);
  });

  it.each([
    ['worker', 'k0sworker.service', '/var/lib/k0s/kubelet.conf'],
    ['controller', 'k0scontroller.service', '/var/lib/k0s/etcd/member/snap/db'],
    ['controller+worker', 'k0scontroller.service', '/var/lib/k0s/etcd/member/snap/db'],
  ] as const)('k0s %s: the join token is resolved only until k0s has joined (%s, while %s is missing)', (role, k0sUnit, joined) => {
    const host = planWireguardOverlayNode({ ...siteA(), role, installK0s: { tokenFrom: { file: '/run/corium/k0s-token' } } }).hosts[0];
    const token = host.units.find((u) => u.name === 'tunnelwright-secret-k0s-token.service')!;
    expect(token.content).toContain(`\nBefore=tunnelwright-k0s-install.service\nConditionPathExists=!${joined}\n`);
    expect(host.dropins.find((d) => d.name === '10-tunnelwright-k0s-token.conf')).toEqual({ unit: k0sUnit, name: '10-tunnelwright-k0s-token.conf', content: '[Unit]\nAfter=tunnelwright-secret-k0s-token.service\nRequires=tunnelwright-secret-k0s-token.service\n' });
    // The overlay's own key has no such condition: it is needed on every boot.
    expect(host.units.find((u) => u.name === 'tunnelwright-secret-wg0-private-key.service')!.content).not.toContain('Condition');
  });

  it('installs wireguard-tools unless told the image ships it', () => {
    expect(planWireguardOverlayNode(siteA()).hosts[0].packages).toEqual(['wireguard-tools', 'nftables']);
    expect(planWireguardOverlayNode({ ...siteA(), cni: 'calico' }).hosts[0].packages).toEqual(['wireguard-tools']);
    expect(planWireguardOverlayNode({ ...siteA(), installPackages: false }).hosts[0].packages).toEqual([]);
  });

  it('gives a node with two interfaces an endpoints unit for each and the script once (Ignition refuses a path twice)', () => {
    const props = siteA();
    const wg1 = { ...props.wireguard[0], name: 'wg1', address: '10.20.0.1/24', listenPort: 51821, nodeAddress: undefined, privateKeyFrom: { file: '/run/corium/wg1.key' },
      peers: [{ publicKey: KEYS.b.publicKey, endpoint: 'site-b.example.net:51821', allowedIPs: ['10.20.0.2/32'] }] };
    const plan = planWireguardOverlayNode({ ...props, wireguard: [props.wireguard[0], wg1] });
    const host = plan.hosts[0];
    const paths = host.files.map((f) => f.path);
    expect(paths.filter((p) => p === '/opt/tunnelwright/bin/wg-endpoints')).toHaveLength(1);
    expect(new Set(paths).size).toBe(paths.length);
    expect(host.units.map((u) => u.name).filter((n) => n.endsWith('-endpoints.service'))).toEqual(['tunnelwright-wg0-endpoints.service', 'tunnelwright-wg1-endpoints.service']);
    expect(host.files.find((f) => f.path === '/etc/wireguard/wg1.conf')!.content).toContain('\n# tunnelwright: Endpoint = site-b.example.net:51821\n');
    expect(() => renderHostArtefacts(host).ignitionJson).not.toThrow();
    // The distribution requires the interface of its node address (wg0) and only wants the other (wg1): a wg1 whose
    // key never arrives must not keep it from starting. Control: wg0's drop-in requires it.
    const dropin = (name: string) => host.dropins.find((d) => d.unit === 'k0scontroller.service' && d.name === `10-tunnelwright-${name}.conf`)!.content;
    expect(dropin('wg0')).toBe('[Unit]\nAfter=wg-quick@wg0.service\nRequires=wg-quick@wg0.service\n');
    expect(dropin('wg1')).toBe('[Unit]\nAfter=wg-quick@wg1.service\nWants=wg-quick@wg1.service\n');
  });

  it('orders the key unit before the interface and the interface before k0s', () => {
    const host = planWireguardOverlayNode(siteA()).hosts[0];
    expect(host.units.map((u) => ({ name: u.name, enabled: u.enabled }))).toEqual([
      { name: 'tunnelwright-secret-wg0-private-key.service', enabled: true },
      { name: 'wg-quick@wg0.service', enabled: true },
      // k0s's kube-router: the SNAT table, loaded again after nftables.service flushes the ruleset (src/render/cni.ts).
      { name: 'tunnelwright-wg0-kube-router-snat.service', enabled: true },
      { name: 'tunnelwright-wg0-kube-router-fail-closed.service', enabled: true },
      // Pulled in by the interface (its drop-in's Wants=), never enabled on its own.
      { name: 'tunnelwright-wg0-endpoints.service', enabled: undefined },
    ]);
    expect(host.units[0].content).toContain('ExecStart=/opt/tunnelwright/bin/resolve-secret file /run/corium/wg0.key /run/tunnelwright/secrets/wg0-private-key 600\n');
    expect(host.units[0].content).toContain('Before=wg-quick@wg0.service\n');
    expect(host.dropins.filter((d) => d.name !== '20-tunnelwright-reload.conf')).toEqual([
      { unit: 'wg-quick@wg0.service', name: '10-tunnelwright-secrets.conf', content: '[Unit]\nAfter=tunnelwright-secret-wg0-private-key.service\nRequires=tunnelwright-secret-wg0-private-key.service\n' },
      { unit: 'wg-quick@wg0.service', name: '30-tunnelwright-endpoints.conf', content: '[Unit]\nWants=tunnelwright-wg0-endpoints.service\n' },
      { unit: 'k0scontroller.service', name: '10-tunnelwright-wg0.conf', content: '[Unit]\nAfter=wg-quick@wg0.service\nRequires=wg-quick@wg0.service\n' },
    ]);
  });

  it('escapes % in a file source for systemd, which would read %k as a specifier', () => {
    const props = siteA();
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], privateKeyFrom: { file: '/run/keys/wg0%key' } }] });
    expect(plan.hosts[0].units[0].content).toContain('\nExecStart=/opt/tunnelwright/bin/resolve-secret file /run/keys/wg0%%key /run/tunnelwright/secrets/wg0-private-key 0\n');
  });

  it('fetches a URL source after the network is online, the URL only in a root-only curl config', () => {
    const props = siteA();
    const url = 'https://vault.example.test/v1/wg%2Fsite-a?v=s3cr3t';
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], privateKeyFrom: { url } }] });
    const unit = plan.hosts[0].units[0].content!;
    expect(unit).toContain('Wants=network-online.target\nAfter=network-online.target\n');
    expect(unit).toContain('ExecStart=/opt/tunnelwright/bin/resolve-secret url /etc/tunnelwright/secret-urls/wg0-private-key.curl /run/tunnelwright/secrets/wg0-private-key 300\n');
    // The URL (and its token) is in no unit, and in no file but the 0600 one, which makes the artefacts secret.
    const holders = plan.hosts[0].files.filter((f) => f.content.includes('s3cr3t'));
    expect(holders.map((f) => ({ path: f.path, mode: f.mode, secret: f.secret, content: f.content }))).toEqual([
      { path: '/etc/tunnelwright/secret-urls/wg0-private-key.curl', mode: 0o600, secret: true, content: `url = "${url}"\n` },
    ]);
    expect(plan.hosts[0].units.some((u) => u.content?.includes('s3cr3t'))).toBe(false);
    expect(renderHostArtefacts(plan.hosts[0]).secret).toBe(true);
  });

  it('names a preshared key\'s file and unit by its peer\'s key: a peer added before it moves neither (control: by position it would be the new peer\'s)', () => {
    const props = siteA();
    const withPsk = { ...props.wireguard[0].peers[0], presharedKeyFrom: { file: '/run/corium/psk-b' } };
    const newcomer = { publicKey: KEYS.a.publicKey, allowedIPs: ['10.10.0.9/32'], presharedKeyFrom: { file: '/run/corium/psk-new' } };
    const secrets = (peers: typeof props.wireguard[0]['peers']) => {
      const host = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], peers }] }).hosts[0];
      // Which source each preshared-key unit resolves: its name, and the file it reads.
      return Object.fromEntries(host.units.filter((u) => u.name.includes('preshared-key')).map((u) => [u.name, /resolve-secret file (\S+)/.exec(u.content!)![1]]));
    };
    const before = secrets([withPsk, props.wireguard[0].peers[1]]);
    const after = secrets([newcomer, withPsk, props.wireguard[0].peers[1]]);
    expect(before).toEqual({ 'tunnelwright-secret-wg0-peer-2a1c835b-preshared-key.service': '/run/corium/psk-b' });
    expect(after).toMatchObject(before);
    expect(Object.keys(after)).toHaveLength(2);
  });

  it('applies preshared keys from their own resolved files', () => {
    const props = siteA();
    const peers = [{ ...props.wireguard[0].peers[0], presharedKeyFrom: { file: '/run/corium/psk-b' } }, props.wireguard[0].peers[1]];
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], peers }] });
    expect(conf({ ...props, wireguard: [{ ...props.wireguard[0], peers }] }).content).toContain(`PostUp = wg set %i peer ${KEYS.b.publicKey} preshared-key /run/tunnelwright/secrets/wg0-peer-2a1c835b-preshared-key\n`);
    expect(plan.hosts[0].dropins[0].content).toBe('[Unit]\nAfter=tunnelwright-secret-wg0-private-key.service tunnelwright-secret-wg0-peer-2a1c835b-preshared-key.service\nRequires=tunnelwright-secret-wg0-private-key.service tunnelwright-secret-wg0-peer-2a1c835b-preshared-key.service\n');
    // The two secrets share one resolve script: written once (cloud-init would write a path twice, Ignition refuses it).
    expect(plan.hosts[0].files.map((f) => f.path)).toEqual(['/opt/tunnelwright/bin/wg-reload', '/etc/tunnelwright/wg0-kube-router-snat.nft', '/opt/tunnelwright/bin/resolve-secret', '/etc/wireguard/wg0.conf', '/opt/tunnelwright/bin/wg-endpoints', '/etc/k0s/k0s.yaml']);
  });

  it('marks a file with an inline key secret, and the artefacts with it', () => {
    const props = siteA();
    const { privateKeyFrom: _from, ...iface } = props.wireguard[0];
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...iface, privateKey: KEYS.a.privateKey }] });
    const file = plan.hosts[0].files.find((f) => f.path === '/etc/wireguard/wg0.conf')!;
    expect(file.secret).toBe(true);
    expect(file.content).toContain(`PrivateKey = ${KEYS.a.privateKey}\n`);
    expect(renderHostArtefacts(plan.hosts[0]).secret).toBe(true);
    expect(renderHostArtefacts(planWireguardOverlayNode(siteA()).hosts[0]).secret).toBe(false);
  });

  it.each([
    ['k0s', 'controller+worker', 'k0scontroller.service', ['/etc/tunnelwright/wg0-kube-router-snat.nft', '/etc/k0s/k0s.yaml'], 'api:\n    address: 10.10.0.1\n    sans:\n      - 10.10.0.1\n  storage:\n    type: etcd\n    etcd:\n      peerAddress: 10.10.0.1\n'],
    ['k0s', 'worker', 'k0sworker.service', ['/etc/tunnelwright/wg0-kube-router-snat.nft'], ''],
    ['k3s', 'controller', 'k3s.service', ['/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml'], 'node-ip: 10.10.0.1\nflannel-iface: wg0\nadvertise-address: 10.10.0.1\ntls-san+:\n  - 10.10.0.1\n'],
    ['k3s', 'worker', 'k3s-agent.service', ['/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml'], 'node-ip: 10.10.0.1\nflannel-iface: wg0\n'],
    ['kubeadm', 'worker', 'kubelet.service', ['/etc/default/kubelet', '/etc/sysconfig/kubelet'], 'KUBELET_EXTRA_ARGS=--node-ip=10.10.0.1\n# written by tunnelwright: register the overlay address\nKUBELET_EXTRA_ARGS=--node-ip=10.10.0.1\n'],
    ['kubeadm', 'controller', 'kubelet.service', ['/etc/default/kubelet', '/etc/sysconfig/kubelet', '/etc/kubernetes/tunnelwright-kubeadm.yaml'], 'certSANs:\n    - 10.10.0.1\n'],
  ] as const)('%s %s: orders %s after the interface and registers the node address', (distribution, role, unit, files, text) => {
    const plan = planWireguardOverlayNode({ ...siteA(), distribution, role });
    const host = plan.hosts[0];
    expect(host.dropins.find((d) => d.name === '10-tunnelwright-wg0.conf')!.unit).toBe(unit);
    const written = host.files.filter((f) => !f.path.startsWith('/etc/wireguard/') && !f.path.startsWith('/opt/tunnelwright/'));
    expect(written.map((f) => f.path)).toEqual(files);
    expect(written.map((f) => f.content).join('')).toContain(text);
    expect(plan.values.node).toEqual({ name: 'site-a', nodeIp: '10.10.0.1', nodeIps: ['10.10.0.1'], apiSans: role === 'worker' ? [] : ['10.10.0.1'] });
  });

  it.each([
    [undefined, 'kubeadm.k8s.io/v1beta4', [{ name: 'node-ip', value: '10.10.0.1' }]],
    ['1.31', 'kubeadm.k8s.io/v1beta4', [{ name: 'node-ip', value: '10.10.0.1' }]],
    ['v1.36.1', 'kubeadm.k8s.io/v1beta4', [{ name: 'node-ip', value: '10.10.0.1' }]],
    ['1.30', 'kubeadm.k8s.io/v1beta3', { 'node-ip': '10.10.0.1' }],
    ['v1.28.4', 'kubeadm.k8s.io/v1beta3', { 'node-ip': '10.10.0.1' }],
  ])('kubeadm %s: writes the config API kubeadm of that version reads (%s)', (kubernetesVersion, apiVersion, kubeletExtraArgs) => {
    const plan = planWireguardOverlayNode({ ...siteA(), distribution: 'kubeadm', role: 'controller', ...(kubernetesVersion ? { kubernetesVersion } : {}) });
    const values = plan.values.kubeadm as { initConfiguration: Record<string, unknown>; clusterConfiguration: Record<string, unknown> };
    expect(values.initConfiguration).toEqual({ apiVersion, kind: 'InitConfiguration', localAPIEndpoint: { advertiseAddress: '10.10.0.1' }, nodeRegistration: { kubeletExtraArgs } });
    expect(values.clusterConfiguration.apiVersion).toBe(apiVersion);
    expect(plan.hosts[0].files.find((f) => f.path === '/etc/kubernetes/tunnelwright-kubeadm.yaml')!.content).toContain(`apiVersion: ${apiVersion}\n`);
  });

  it('gives k0s workers the kubelet flag to pass to k0s install, and warns that nothing on the host sets it', () => {
    const plan = planWireguardOverlayNode({ ...siteA(), role: 'worker' });
    expect(plan.values.k0s).toEqual({ installFlags: ['--kubelet-extra-args=--node-ip=10.10.0.1'] });
    expect(plan.warnings.filter((w) => w.code !== 'pod-cidr')).toEqual([{
      path: 'wireguard[0].nodeAddress', code: 'k0s-node-ip',
      message: 'k0s takes the kubelet\'s node IP only at `k0s install`: nothing on this host can set it, so the node registers its first interface\'s address unless you pass plan.values.k0s.installFlags to k0s install (k0sctl: the host\'s installFlags), or set installK0s',
    }]);
  });

  it.each([
    ['worker', { tokenFrom: { file: '/run/corium/k0s-token' } }, 'k0sworker.service', '/usr/local/bin/k0s install worker --token-file=/run/tunnelwright/secrets/k0s-token --kubelet-extra-args=--node-ip=10.10.0.1'],
    ['controller+worker', {}, 'k0scontroller.service', '/usr/local/bin/k0s install controller --enable-worker --config=/etc/k0s/k0s.yaml --kubelet-extra-args=--node-ip=10.10.0.1'],
    ['controller', { binary: '/opt/bin/k0s' }, 'k0scontroller.service', '/opt/bin/k0s install controller --config=/etc/k0s/k0s.yaml'],
  ] as const)('installK0s on a %s: installs k0s after the overlay with the node IP, once, then starts it', (role, installK0s, k0sUnit, execStart) => {
    const plan = planWireguardOverlayNode({ ...siteA(), role, installK0s });
    expect(plan.warnings.filter((w) => w.code !== 'pod-cidr')).toEqual([]);
    const unit = plan.hosts[0].units.find((u) => u.name === 'tunnelwright-k0s-install.service')!;
    expect(unit.enabled).toBe(true);
    expect(unit.content).toContain(`\nExecStart=${execStart}\nExecStart=/usr/bin/systemctl start --no-block ${k0sUnit}\n`);
    expect(unit.content).toContain(`\nConditionPathExists=!/etc/systemd/system/${k0sUnit}\n`);
    expect(unit.content).toMatch(/\nAfter=wg-quick@wg0\.service( tunnelwright-secret-k0s-token\.service)?\nRequires=wg-quick@wg0\.service/);
  });

  it('installs a dual-stack k0s worker with both node IPs, comma-separated as the kubelet reads --node-ip', () => {
    const props = { ...siteA(), role: 'worker' as const, installK0s: {}, wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'] }] };
    expect(planWireguardOverlayNode(props).values.k0s).toEqual({ installFlags: ['--kubelet-extra-args=--node-ip=10.10.0.1,fd10::1'], installUnit: 'tunnelwright-k0s-install.service' });
  });

  it('derives a dual-stack interface\'s MTU from its underlay: 1500 leaves enough for IPv6, 1300 does not', () => {
    const withUnderlay = (underlayMtu: number) => ({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], address: ['10.10.0.1/24', 'fd10::1/64'], mtu: undefined, underlayMtu }] });
    expect(validateWireguardOverlayNode(withUnderlay(1500))).toEqual([]);
    expect(validateWireguardOverlayNode(withUnderlay(1300))).toEqual([
      { path: 'wireguard[0].underlayMtu', code: 'mtu-ipv6', message: 'the interface MTU derived from underlayMtu 1300 is 1240, below the 1280 an IPv6 address needs; expected an underlay MTU of at least 1340' },
    ]);
  });

  it('refuses installK0s on another distribution, and a Kubernetes version it cannot read', () => {
    expect(validateWireguardOverlayNode({ ...siteA(), distribution: 'k3s', installK0s: {}, kubernetesVersion: '1.27' })).toEqual([
      { path: 'installK0s', code: 'distribution', message: 'installK0s installs k0s; this node\'s distribution is "k3s"' },
      { path: 'kubernetesVersion', code: 'kubernetes-version', message: 'expected a Kubernetes version from 1.28 such as \'1.31\' or \'v1.31.2\', received "1.27"' },
    ]);
  });

  it('renders the golden cloud-config and Ignition of the three-site controller', () => {
    const a = renderHostArtefacts(planWireguardOverlayNode(siteA()).hosts[0]);
    expectGolden('site-a.user-data', a.cloudConfig);
    // Ignition carries contents as percent-encoded data URLs: the golden file shows them decoded, for review.
    const decoded = JSON.stringify(a.ignition, (k, v) => (k === 'source' && typeof v === 'string' ? decodeURIComponent(v.replace(/^data:,/, '')) : v), 2);
    expectGolden('site-a.ignition.decoded.json', `${decoded}\n`);
  });

  it('renders each Ignition version asked for', () => {
    for (const v of ['3.3.0', '3.4.0', '3.5.0'] as const) {
      expect(renderHostArtefacts(planWireguardOverlayNode({ ...siteA(), ignitionVersion: v }).hosts[0], v).ignition.ignition).toEqual({ version: v });
    }
  });

  it('warns when the user-data is over 16 KiB', () => {
    const peers = Array.from({ length: 120 }, (_, i) => ({ publicKey: Buffer.alloc(32, i + 1).toString('base64'), endpoint: `198.51.100.${i + 1}:51820`, allowedIPs: [`10.10.${i + 1}.0/24`] }));
    const plan = planWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], address: '10.10.0.1/16', peers }] });
    expect(plan.warnings.map((w) => w.code)).toEqual(['k0s-node-ip', 'user-data-size']);
    expect(plan.warnings[1].message).toMatch(/^the cloud-config of node "site-a" is over 16 KiB \(\d+ bytes or more\)/);
  });
});

describe('the config text and the figures read from it', () => {
  const iface = { ...siteA().wireguard[0], peers: [{ publicKey: KEYS.b.publicKey, allowedIPs: ['10.10.0.2/32', '10.10.1.0/24'] }, { publicKey: KEYS.c.publicKey, allowedIPs: ['10.10.0.3/32'] }] };

  it('lists a peer\'s allowed IPs comma-separated, as wg-quick reads them, and gives the shared text\'s own length', () => {
    const shared = renderWireguardConfigShared('site-a', iface, undefined, new Map(), new WeakMap());
    expect(shared.text).toContain('\nAllowedIPs = 10.10.0.2/32, 10.10.1.0/24\n');
    expect(shared.text).toBe(renderWireguardConfig('site-a', iface));
    expect(shared.length).toBe(shared.text.length);
  });

  it('warns at the wireguard prop when the node\'s cloud-config outgrows 16 KiB of user-data', () => {
    const peers = Array.from({ length: 200 }, (_, i) => ({ publicKey: Buffer.alloc(32, i + 1).toString('base64'), endpoint: `198.51.100.${(i % 250) + 1}:51820`, allowedIPs: [`10.11.${i}.0/24`] }));
    const plan = planWireguardOverlayNode({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], peers }] });
    expect(plan.warnings.filter((w) => w.code === 'user-data-size').map((w) => w.path)).toEqual(['wireguard']);
  });
});
