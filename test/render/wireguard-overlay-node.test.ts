import { planWireguardOverlayNode, renderHostArtefacts, WireguardOverlayNodeProps } from '../../src';
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

  it('writes the default MTU when none is given', () => {
    const props = siteA();
    const { mtu: _mtu, ...iface } = props.wireguard[0];
    expect(conf({ ...props, wireguard: [iface] }).content).toContain('\nMTU = 1420\n');
  });

  it('orders the key unit before the interface and the interface before k0s', () => {
    const host = planWireguardOverlayNode(siteA()).hosts[0];
    expect(host.units.map((u) => ({ name: u.name, enabled: u.enabled }))).toEqual([
      { name: 'tunnelwright-secret-wg0-private-key.service', enabled: true },
      { name: 'wg-quick@wg0.service', enabled: true },
    ]);
    expect(host.units[0].content).toContain('ExecStart=/opt/tunnelwright/bin/resolve-secret file /run/corium/wg0.key /run/tunnelwright/secrets/wg0-private-key 600\n');
    expect(host.units[0].content).toContain('Before=wg-quick@wg0.service\n');
    expect(host.dropins).toEqual([
      { unit: 'wg-quick@wg0.service', name: '10-tunnelwright-secrets.conf', content: '[Unit]\nAfter=tunnelwright-secret-wg0-private-key.service\nRequires=tunnelwright-secret-wg0-private-key.service\n' },
      { unit: 'k0scontroller.service', name: '10-tunnelwright-wg0.conf', content: '[Unit]\nAfter=wg-quick@wg0.service\nRequires=wg-quick@wg0.service\n' },
    ]);
  });

  it('fetches a URL source after the network is online, escaping % for systemd', () => {
    const props = siteA();
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], privateKeyFrom: { url: 'https://vault.example.test/v1/wg%2Fsite-a' } }] });
    const unit = plan.hosts[0].units[0].content!;
    expect(unit).toContain('Wants=network-online.target\nAfter=network-online.target\n');
    expect(unit).toContain('ExecStart=/opt/tunnelwright/bin/resolve-secret url https://vault.example.test/v1/wg%%2Fsite-a /run/tunnelwright/secrets/wg0-private-key 300\n');
  });

  it('applies preshared keys from their own resolved files', () => {
    const props = siteA();
    const peers = [{ ...props.wireguard[0].peers[0], presharedKeyFrom: { file: '/run/corium/psk-b' } }, props.wireguard[0].peers[1]];
    const plan = planWireguardOverlayNode({ ...props, wireguard: [{ ...props.wireguard[0], peers }] });
    expect(conf({ ...props, wireguard: [{ ...props.wireguard[0], peers }] }).content).toContain(`PostUp = wg set %i peer ${KEYS.b.publicKey} preshared-key /run/tunnelwright/secrets/wg0-peer0-preshared-key\n`);
    expect(plan.hosts[0].dropins[0].content).toBe('[Unit]\nAfter=tunnelwright-secret-wg0-private-key.service tunnelwright-secret-wg0-peer0-preshared-key.service\nRequires=tunnelwright-secret-wg0-private-key.service tunnelwright-secret-wg0-peer0-preshared-key.service\n');
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
    ['k0s', 'controller+worker', 'k0scontroller.service', ['/etc/k0s/k0s.yaml'], 'address: 10.10.0.1'],
    ['k0s', 'worker', 'k0sworker.service', [], ''],
    ['k3s', 'controller', 'k3s.service', ['/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml'], 'node-ip: 10.10.0.1\nadvertise-address: 10.10.0.1\ntls-san:\n  - 10.10.0.1\n'],
    ['k3s', 'worker', 'k3s-agent.service', ['/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml'], 'node-ip: 10.10.0.1\n'],
    ['kubeadm', 'worker', 'kubelet.service', ['/etc/default/kubelet'], 'KUBELET_EXTRA_ARGS=--node-ip=10.10.0.1\n'],
    ['kubeadm', 'controller', 'kubelet.service', ['/etc/default/kubelet', '/etc/kubernetes/tunnelwright-kubeadm.yaml'], 'certSANs:\n    - 10.10.0.1\n'],
  ] as const)('%s %s: orders %s after the interface and registers the node address', (distribution, role, unit, files, text) => {
    const plan = planWireguardOverlayNode({ ...siteA(), distribution, role });
    const host = plan.hosts[0];
    expect(host.dropins.find((d) => d.name === '10-tunnelwright-wg0.conf')!.unit).toBe(unit);
    const written = host.files.filter((f) => !f.path.startsWith('/etc/wireguard/') && !f.path.startsWith('/opt/tunnelwright/'));
    expect(written.map((f) => f.path)).toEqual(files);
    expect(written.map((f) => f.content).join('')).toContain(text);
    expect(plan.values.node).toEqual({ name: 'site-a', nodeIp: '10.10.0.1', apiSans: role === 'worker' ? [] : ['10.10.0.1'] });
  });

  it('gives k0s workers the kubelet flag to pass to k0s install', () => {
    expect(planWireguardOverlayNode({ ...siteA(), role: 'worker' }).values.k0s).toEqual({ installFlags: ['--kubelet-extra-args=--node-ip=10.10.0.1'] });
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
    expect(plan.warnings.map((w) => w.code)).toEqual(['user-data-size']);
    expect(plan.warnings[0].message).toMatch(/^the cloud-config of node "site-a" is over 16 KiB \(\d+ characters\)/);
  });
});
