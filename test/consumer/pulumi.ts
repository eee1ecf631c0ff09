// A user's Pulumi program under mocks (no engine, no provider), built against the packed tunnelwright.
import * as pulumi from '@pulumi/pulumi';
import * as settings from '@pulumi/pulumi/runtime/settings';

const registered: string[] = [];
pulumi.runtime.setMocks({
  newResource: (args: pulumi.runtime.MockResourceArgs) => {
    registered.push(`${args.type} ${args.name}`);
    return { id: `${args.name}-id`, state: args.inputs };
  },
  call: (args: pulumi.runtime.MockCallArgs) => args.inputs,
}, 'consumer', 'test', false);

async function main(): Promise<void> {
  // Loaded after the mocks, as Pulumi's own tests do.
  const tw = await import('tunnelwright/pulumi');
  const k8s = await import('@pulumi/kubernetes');
  const mesh = new tw.WireguardMesh('overlay', {
    network: '10.10.0.0/24',
    listenPort: 51820,
    nodes: [
      { node: 'a', address: '10.10.0.1', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: { file: '/run/keys/wg0.key' } },
      { node: 'b', address: '10.10.0.2', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: { file: '/run/keys/wg0.key' } },
    ],
  });
  const gateway = new tw.VpnGateway('protonvpn', {
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'], nodeCidrs: ['192.168.1.0/24'], vpnProvider: 'protonvpn', wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' },
  });
  new k8s.apps.v1.Deployment('qbittorrent', {
    metadata: { name: 'qbittorrent', namespace: 'media' },
    spec: { selector: { matchLabels: { app: 'qbittorrent' } }, template: { metadata: { labels: { app: 'qbittorrent' } }, spec: { containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3' }] } } },
  }, { transformations: [gateway.routeTransform()] });
  const userData = await new Promise<string>((resolve) => mesh.nodes.a.cloudConfig.apply((v) => resolve(v)));
  // Every registration in flight has reached the mocks: Pulumi's own drain of its RPC queue (runtime/settings.js
  // waitForRPCs, what disconnect() awaits), not a timer that a loaded machine can outlast.
  await (settings as unknown as { waitForRPCs(): Promise<void> }).waitForRPCs();
  if (!userData.startsWith('#cloud-config')) throw new Error('no cloud-config for node a');
  process.stdout.write(`${JSON.stringify({ resources: registered.length, deployment: registered.includes('kubernetes:apps/v1:Deployment qbittorrent') })}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
