import { dataUrl } from '../../src/host/ignition';
import { DEFERRED_ENDPOINT_PREFIX } from '../../src/host/wireguard-reload';
import { planWireguardMesh, renderHostArtefacts } from '../../src';
import * as endpointsModel from '../../src/model/wireguard-overlay-node/endpoints';
import { KEYS, numberedKey, threeNodeMesh } from '../helpers/fixtures';

const confOf = (plan: ReturnType<typeof planWireguardMesh>, node: string) => plan.nodes[node].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;

describe('planWireguardMesh', () => {
  it('gives every node every other node as a peer, with keepalive on links to the node without an endpoint', () => {
    const plan = planWireguardMesh(threeNodeMesh());
    expect(Object.keys(plan.nodes)).toEqual(['site-a', 'site-b', 'site-c']);
    expect(confOf(plan, 'site-a')).toBe(
      [
        '# wg0 on site-a: written by tunnelwright',
        `# public key: ${KEYS.a.publicKey}`,
        '[Interface]',
        'Address = 10.10.0.1/24',
        'ListenPort = 51820',
        // k0s's kube-router: kube-proxy's masquerade into its tunnels takes the overlay address (src/render/cni.ts),
        // loaded before the addresses and routes, and kept across a restart.
        'PreUp = nft -f /etc/tunnelwright/wg0-kube-router-snat.nft',
        'PostUp = wg set %i private-key /run/tunnelwright/secrets/wg0-private-key',
        '',
        '[Peer]',
        '# site-b',
        `PublicKey = ${KEYS.b.publicKey}`,
        'Endpoint = 198.51.100.2:51820',
        'AllowedIPs = 10.10.0.2/32',
        '',
        '[Peer]',
        '# site-c',
        `PublicKey = ${KEYS.c.publicKey}`,
        'AllowedIPs = 10.10.0.3/32',
        'PersistentKeepalive = 25',
        '',
      ].join('\n'),
    );
    expect(confOf(plan, 'site-c')).toContain(`# site-a\nPublicKey = ${KEYS.a.publicKey}\nEndpoint = 198.51.100.1:51820\nAllowedIPs = 10.10.0.1/32\nPersistentKeepalive = 25\n`);
  });

  it('registers each node address and orders the distribution unit after the interface', () => {
    const plan = planWireguardMesh(threeNodeMesh());
    expect(plan.nodes['site-a'].values.node).toEqual({ name: 'site-a', nodeIp: '10.10.0.1', nodeIps: ['10.10.0.1'], apiSans: ['10.10.0.1'] });
    expect(plan.nodes['site-b'].host.dropins.map((d) => d.unit)).toEqual(['wg-quick@wg0.service', 'wg-quick@wg0.service', 'wg-quick@wg0.service', 'k0sworker.service']);
    // The ordering itself, as systemd reads it: each node's distribution unit starts after the interface and fails with
    // the interface (After= orders, Requires= binds: either alone lets k0s come up without the overlay); the interface
    // after its key.
    const unitLines = (node: string, unit: string, key: string) => plan.nodes[node].host.dropins.filter((d) => d.unit === unit)
      .flatMap((d) => d.content.split('\n')).filter((l) => l.startsWith(`${key}=`)).flatMap((l) => l.slice(key.length + 1).split(' '));
    for (const [node, k0s] of [['site-a', 'k0scontroller.service'], ['site-b', 'k0sworker.service'], ['site-c', 'k0sworker.service']]) {
      expect({ node, after: unitLines(node, k0s, 'After'), requires: unitLines(node, k0s, 'Requires') }).toEqual({ node, after: ['wg-quick@wg0.service'], requires: ['wg-quick@wg0.service'] });
      const key = 'tunnelwright-secret-wg0-private-key.service';
      expect({ node, after: unitLines(node, 'wg-quick@wg0.service', 'After'), requires: unitLines(node, 'wg-quick@wg0.service', 'Requires') }).toEqual({ node, after: [key], requires: [key] });
      expect(plan.nodes[node].host.dropins.find((d) => d.unit === k0s)!.content.startsWith('[Unit]\n')).toBe(true);
    }
    // k0s nodes that run a kubelet and are not installed by the library: the node IP cannot be set from the host.
    const message = 'k0s takes the kubelet\'s node IP only at `k0s install`: nothing on this host can set it, so the node registers its first interface\'s address unless you pass plan.nodes[<node>].values.k0s.installFlags to k0s install (k0sctl: the host\'s installFlags), or set installK0s';
    expect(plan.warnings.filter((w) => w.code !== 'cni-mtu')).toEqual([0, 1, 2].map((i) => ({ path: `nodes[${i}].installK0s`, code: 'k0s-node-ip', message })));
    // A controller runs no kubelet, so it has no node IP to warn about.
    const controller = planWireguardMesh({ ...threeNodeMesh(), nodes: threeNodeMesh().nodes.map((n, i) => (i === 0 ? { ...n, role: 'controller' as const } : n)) });
    expect(controller.warnings.filter((w) => w.code !== 'cni-mtu').map((w) => w.path)).toEqual(['nodes[1].installK0s', 'nodes[2].installK0s']);
    const installed = planWireguardMesh({ ...threeNodeMesh(), nodes: threeNodeMesh().nodes.map((n) => ({ ...n, installK0s: {} })) });
    expect(installed.warnings.filter((w) => w.code !== 'cni-mtu')).toEqual([]);
    expect(installed.nodes['site-b'].host.units.find((u) => u.name === 'tunnelwright-k0s-install.service')!.content).toContain('\nExecStart=/usr/local/bin/k0s install worker --kubelet-extra-args=--node-ip=10.10.0.2\n');
  });

  it('routes spokes through the hub, which forwards', () => {
    const props = threeNodeMesh();
    const plan = planWireguardMesh({ ...props, topology: { hub: 'site-a' } });
    expect(confOf(plan, 'site-b')).toContain(`[Peer]\n# site-a\nPublicKey = ${KEYS.a.publicKey}\nEndpoint = 198.51.100.1:51820\nAllowedIPs = 10.10.0.0/24\n\n`.trimEnd());
    expect(confOf(plan, 'site-b').match(/\[Peer\]/g)).toHaveLength(1);
    expect(confOf(plan, 'site-a')).toContain('PostUp = sysctl -q -w net.ipv4.ip_forward=1\n');
    expect(confOf(plan, 'site-a').match(/\[Peer\]/g)).toHaveLength(2);
  });

  it('uses a node listen port, an endpoint port and bracketed IPv6 endpoints', () => {
    const props = threeNodeMesh();
    const nodes = [{ ...props.nodes[0], endpoint: '[2001:db8::1]', listenPort: 51900 }, { ...props.nodes[1], endpoint: '198.51.100.2:443' }, props.nodes[2]];
    const plan = planWireguardMesh({ ...props, nodes });
    expect(confOf(plan, 'site-c')).toContain('Endpoint = [2001:db8::1]:51900\n');
    expect(confOf(plan, 'site-c')).toContain('Endpoint = 198.51.100.2:443\n');
    expect(confOf(plan, 'site-a')).toContain('ListenPort = 51900\n');
  });

  it('writes Ignition data URLs exactly as encoding each file whole would (the shared peer sections join exactly)', () => {
    const plan = planWireguardMesh({ ...threeNodeMesh(), topology: 'full' });
    for (const host of plan.hosts) {
      const files = renderHostArtefacts(host).ignition.storage!.files;
      expect(files.map((f) => f.contents.source)).toEqual(host.files.map((f) => dataUrl(f.content)));
    }
  });

  it('derives every node\'s MTU from the underlay: 60 bytes of overhead over IPv4, 80 once a node is dialled over IPv6', () => {
    const mtuOf = (props: ReturnType<typeof threeNodeMesh>) => Object.keys(planWireguardMesh(props).nodes).map((n) => /^MTU = (\d+)$/m.exec(confOf(planWireguardMesh(props), n))?.[1]);
    expect(mtuOf(threeNodeMesh())).toEqual([undefined, undefined, undefined]);
    expect(mtuOf({ ...threeNodeMesh(), underlayMtu: 1450 })).toEqual(['1390', '1390', '1390']);
    const v6 = threeNodeMesh();
    expect(mtuOf({ ...v6, underlayMtu: 1500, nodes: [{ ...v6.nodes[0], endpoint: '[2001:db8::1]' }, ...v6.nodes.slice(1)] })).toEqual(['1420', '1420', '1420']);
    expect(planWireguardMesh({ ...threeNodeMesh(), underlayMtu: 1450 }).nodes['site-b'].values.network).toEqual({ overlayMtu: 1390, podMtu: 1370 });
  });

  it('makes each interface reloadable: the key resolved again from its source in one attempt, then the config synced with it', () => {
    const reloads = planWireguardMesh(threeNodeMesh()).hosts.map((host) => host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content);
    expect(reloads).toEqual([
      '[Service]\nExecReload=\nExecReload=/opt/tunnelwright/bin/resolve-secret file /run/corium/wg0.key /run/tunnelwright/secrets/wg0-private-key 0\nExecReload=/opt/tunnelwright/bin/wg-reload %i\nExecReload=-/usr/bin/systemctl restart --no-block tunnelwright-wg0-endpoints.service\n',
      '[Service]\nExecReload=\nExecReload=/opt/tunnelwright/bin/resolve-secret file /run/corium/wg0.key /run/tunnelwright/secrets/wg0-private-key 0\nExecReload=/opt/tunnelwright/bin/wg-reload %i\nExecReload=-/usr/bin/systemctl restart --no-block tunnelwright-wg0-endpoints.service\n',
      '[Service]\nExecReload=\nExecReload=/opt/tunnelwright/bin/resolve-secret url /etc/tunnelwright/secret-urls/wg0-private-key.curl /run/tunnelwright/secrets/wg0-private-key 0\nExecReload=/opt/tunnelwright/bin/wg-reload %i\nExecReload=-/usr/bin/systemctl restart --no-block tunnelwright-wg0-endpoints.service\n',
    ]);
  });

  describe('a node dialled by hostname', () => {
    const named = () => { const m = threeNodeMesh(); return { ...m, nodes: [m.nodes[0], { ...m.nodes[1], endpoint: 'site-b.example.net' }, m.nodes[2]] }; };

    it('is written as a comment every dialling node sets after its interface is up, from a unit nothing waits for', () => {
      const plan = planWireguardMesh(named());
      for (const node of ['site-a', 'site-c']) {
        const host = plan.nodes[node].host;
        const conf = host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;
        expect(conf).toContain(`\nPublicKey = ${KEYS.b.publicKey}\n# tunnelwright: Endpoint = site-b.example.net:51820\nAllowedIPs = 10.10.0.2/32\n`);
        expect(conf).not.toMatch(/^Endpoint = site-b/m);
        // An IP endpoint stays in the config.
        expect(conf.includes('\nEndpoint = 198.51.100.1:51820\n')).toBe(node === 'site-c');
        expect(host.units.find((u) => u.name === 'tunnelwright-wg0-endpoints.service')).toEqual({
          name: 'tunnelwright-wg0-endpoints.service',
          content: '[Unit]\nDescription=tunnelwright: set the hostname endpoints of wg0\'s peers once it is up\nAfter=wg-quick@wg0.service network-online.target nss-lookup.target\nBindsTo=wg-quick@wg0.service\nStartLimitIntervalSec=0\n\n[Service]\nType=simple\nExecStart=/opt/tunnelwright/bin/wg-endpoints wg0\nRestart=always\nRestartPreventExitStatus=0\nRestartSec=10\n',
        });
        expect(host.dropins.find((d) => d.name === '30-tunnelwright-endpoints.conf')).toEqual({ unit: 'wg-quick@wg0.service', name: '30-tunnelwright-endpoints.conf', content: '[Unit]\nWants=tunnelwright-wg0-endpoints.service\n' });
        // After the sync, the unit restarts and reads the new config: a peer whose key was rotated or that was just
        // added comes back from `wg syncconf` without an endpoint, and a name that does not resolve at that moment is
        // retried, not tried once and forgotten.
        // --no-block: the restart's start job is ordered After= this reload job, so a blocking call would wait on itself.
        expect(host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content).toMatch(/\nExecReload=\/opt\/tunnelwright\/bin\/wg-reload %i\nExecReload=-\/usr\/bin\/systemctl restart --no-block tunnelwright-wg0-endpoints\.service\n$/);
        expect(host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content).not.toContain('--once');
        // The distribution waits for the interface only, never for a name to resolve.
        const distro = host.dropins.filter((d) => !d.unit.startsWith('wg-quick@') && !d.unit.startsWith('tunnelwright-'));
        expect(distro.map((d) => d.content).join('')).not.toContain('endpoints');
        expect(host.files.find((f) => f.path === '/opt/tunnelwright/bin/wg-endpoints')!.mode).toBe(0o755);
      }
      // The named node itself dials no name today, and has the unit too: a node added later by name is dialled once
      // its wg0.conf is copied and the interface reloaded (cloud-init ran once).
      expect(plan.nodes['site-b'].host.units.map((u) => u.name)).toContain('tunnelwright-wg0-endpoints.service');
      expect(plan.nodes['site-b'].host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content).not.toContain('# tunnelwright: Endpoint');
    });

    it('warns on the named node and on every node that dials it', () => {
      const dialling = 'this node dials a peer by hostname ("site-b" at "site-b.example.net"): tunnelwright-wg0-endpoints.service sets its endpoint once wg0 is up and retries until each name resolves; until then that link is down, while wg0, its other peers and the distribution start without waiting';
      expect(planWireguardMesh(named()).warnings.filter((w) => w.code !== 'k0s-node-ip' && w.code !== 'cni-mtu')).toEqual([
        { path: 'nodes[1].endpoint', code: 'hostname-endpoint', message: 'endpoint "site-b.example.net" is a hostname: every node that dials it sets it only once its interface is up and the name resolves (DNS may need the overlay itself), and reaches this node only then; prefer an IP' },
        { path: 'nodes[0]', code: 'dials-hostname', message: dialling },
        { path: 'nodes[2]', code: 'dials-hostname', message: dialling },
      ]);
    });

    it('in a hub topology warns on the hub, which dials the named spoke, and not on the other spokes', () => {
      const warned = planWireguardMesh({ ...named(), topology: { hub: 'site-a' } }).warnings.filter((w) => w.code === 'dials-hostname').map((w) => w.path);
      expect(warned).toEqual(['nodes[0]']);
      const hubNamed = threeNodeMesh();
      const viaHub = planWireguardMesh({ ...hubNamed, topology: { hub: 'site-a' }, nodes: [{ ...hubNamed.nodes[0], endpoint: 'hub.example.net' }, ...hubNamed.nodes.slice(1)] });
      expect(viaHub.warnings.filter((w) => w.code === 'dials-hostname').map((w) => w.path)).toEqual(['nodes[1]', 'nodes[2]']);
    });

    it('names at most three dialled peers in one warning per node', () => {
      const m = threeNodeMesh();
      const nodes = Array.from({ length: 6 }, (_, i) => ({ ...m.nodes[1], node: `n${i}`, address: `10.10.0.${i + 1}`, publicKey: Buffer.alloc(32, i + 1).toString('base64'), endpoint: `n${i}.example.net` }));
      const w = planWireguardMesh({ ...m, nodes }).warnings.filter((x) => x.code === 'dials-hostname');
      expect(w.map((x) => x.path)).toEqual(['nodes[0]', 'nodes[1]', 'nodes[2]', 'nodes[3]', 'nodes[4]', 'nodes[5]']);
      expect(w[0].message).toMatch(/^this node dials 5 peers by hostname \("n1" at "n1\.example\.net", "n2" at "n2\.example\.net", "n3" at "n3\.example\.net" and 2 more\): /);
    });
  });
});

describe('a full mesh too big for one user-data', () => {
  it('warns for each node by its place in nodes, exactly when its cloud-config is over 16 KiB', () => {
    const nodes = Array.from({ length: 120 }, (_, i) => ({ node: `n${i}`, address: `10.10.0.${i + 1}`, publicKey: numberedKey(i), privateKeyFrom: { file: '/run/wg.key' }, endpoint: `198.51.100.${i + 1}` }));
    const plan = planWireguardMesh({ network: '10.10.0.0/24', listenPort: 51820, nodes, installPackages: false });
    const over = nodes.map((n, i) => ({ i, bytes: Buffer.byteLength(renderHostArtefacts(plan.nodes[n.node].host).cloudConfig) })).filter((x) => x.bytes > 16384);
    expect(over.length).toBe(120);
    expect(plan.warnings.filter((w) => w.code === 'user-data-size').map((w) => w.path)).toEqual(over.map((x) => `nodes[${x.i}]`));
  });
});

describe('a full mesh parses each endpoint once per node, not once per pair (issue 30)', () => {
  // Every node's interface holds the same n - 1 peer objects. Asking each node's peers whether one is dialled by name
  // parsed n² endpoints, a seventh of a 500-node synth; now each peer's section, the only place that asks, is written
  // once per mesh. The answer is the same; the parses are counted.
  const parses = (n: number) => {
    const nodes = Array.from({ length: n }, (_, i) => ({ node: `n${i}`, address: `10.10.0.${i + 1}`, publicKey: numberedKey(i), privateKeyFrom: { file: '/run/wg.key' }, endpoint: i === n - 1 ? `n${i}.example.net` : `198.51.100.${i + 1}` }));
    const spy = jest.spyOn(endpointsModel, 'parseEndpoint');
    try {
      const plan = planWireguardMesh({ network: '10.10.0.0/24', listenPort: 51820, nodes, installPackages: false });
      return { calls: spy.mock.calls.length, plan };
    } finally {
      spy.mockRestore();
    }
  };

  it('parses endpoints in proportion to the nodes: 60 nodes cost six times what 10 do, not 36 times', () => {
    const [small, large] = [parses(10), parses(60)];
    expect(large.calls / small.calls).toBeLessThanOrEqual(6);
    // The answer each node's interface was given: the peer dialled by name (the last node) is deferred to
    // wg-endpoints, the others keep their IP endpoints.
    const conf = large.plan.nodes.n1.host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;
    expect(conf).toContain('\nEndpoint = 198.51.100.4:51820\n');
    expect(conf).toContain(`\n${DEFERRED_ENDPOINT_PREFIX}n59.example.net:51820\n`);
    expect(large.plan.nodes.n1.host.units.map((u) => u.name)).toContain('tunnelwright-wg0-endpoints.service');
  });
});

describe('a peer dialled by name that a node gains later (issue 30\'s outsider read)', () => {
  // cloud-init and Ignition run once: a node first booted with IP peers only must still dial a name it gains later, by
  // the day-2 path (its wg0.conf copied, the interface reloaded) or by a peer pushed onto the plan before synth. A name
  // written as `Endpoint =` would hold wg-quick up and wg syncconf until it resolved (wireguard-tools config.c), and a
  // comment without the unit would never be dialled: every node has the unit, and every name is a comment.
  const late = { comment: 'site-d', publicKey: Buffer.alloc(32, 7).toString('base64'), endpoint: 'd.example.net:51820', allowedIPs: ['10.10.0.4/32'] };

  it('is deferred on a node that dialled no name when planned, whose unit is there to set it', () => {
    const plan = planWireguardMesh(threeNodeMesh());
    expect(confOf(plan, 'site-a')).not.toContain(DEFERRED_ENDPOINT_PREFIX);
    plan.nodes['site-a'].wireguard.peers.push({ ...late });
    const host = plan.nodes['site-a'].host;
    expect(host.units.map((u) => u.name)).toContain('tunnelwright-wg0-endpoints.service');
    expect(host.dropins.find((d) => d.name === '30-tunnelwright-endpoints.conf')!.content).toBe('[Unit]\nWants=tunnelwright-wg0-endpoints.service\n');
    expect(host.dropins.find((d) => d.name === '20-tunnelwright-reload.conf')!.content).toContain('\nExecReload=-/usr/bin/systemctl restart --no-block tunnelwright-wg0-endpoints.service\n');
    expect(confOf(plan, 'site-a')).toContain(`\n${DEFERRED_ENDPOINT_PREFIX}d.example.net:51820\n`);
    expect(confOf(plan, 'site-a')).not.toMatch(/^Endpoint = d\.example\.net/m);
    expect(renderHostArtefacts(host).cloudConfig).toContain(`${DEFERRED_ENDPOINT_PREFIX}d.example.net:51820`);
  });

  // One new peer object pushed onto every node, as a loop adding a site would: its [Peer] section is written once and
  // shared, the same on every node.
  it('pushed onto every node as one object, is written once and the same on each', () => {
    const props = threeNodeMesh();
    const plan = planWireguardMesh({ ...props, nodes: props.nodes.map((n) => (n.node === 'site-c' ? { ...n, endpoint: 'c.example.net' } : n)) });
    let written = 0;
    const shared = { ...late, get publicKey() { written++; return late.publicKey; } };
    for (const node of ['site-c', 'site-b', 'site-a']) plan.nodes[node].wireguard.peers.push(shared);
    for (const node of ['site-c', 'site-b', 'site-a']) expect(confOf(plan, node)).toContain(`\n${DEFERRED_ENDPOINT_PREFIX}d.example.net:51820\n`);
    expect(written).toBe(1);
  });
});
