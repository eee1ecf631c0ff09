/**
 * The homelab as one Pulumi program: the servers (with the overlay's cloud-config as user data) and the Kubernetes
 * objects. `pulumi up` runs it as it is; the tests run it under `pulumi.runtime.setMocks`.
 */
import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { EgressSteering, registerNamespaces, VpnGateway, WireguardMesh } from 'tunnelwright/pulumi';

/**
 * A stand-in for your cloud provider's server resource (`hcloud.Server`, `aws.ec2.Instance`, `proxmoxve.vm.VirtualMachine`):
 * replace it, passing `userData` where the provider takes user data. It is a component so this program runs anywhere.
 */
export class Server extends pulumi.ComponentResource {
  public readonly userData: pulumi.Output<string>;
  public constructor(name: string, args: { location: string; userData: pulumi.Input<string> }, opts?: pulumi.ComponentResourceOptions) {
    super('homelab:index:Server', name, {}, opts);
    this.userData = pulumi.output(args.userData);
    this.registerOutputs({ location: args.location, userData: this.userData });
  }
}

// 1. A three-node WireGuard overlay: each node reads its key at boot; the cloud-configs become the servers' user data.
const keyFrom = { file: '/run/corium/wg0.key', waitFor: '10m' } as const;
const mesh = new WireguardMesh('overlay', {
  network: '10.10.0.0/24',
  listenPort: 51820,
  distribution: 'k3s',
  nodes: [
    { node: 'home-cp1', role: 'controller+worker', address: '10.10.0.1', endpoint: '203.0.113.10', publicKey: 'WVh+LoVzlD0KWKks1ypkvhIIKheLiAjCzu4NXOSY9wU=', privateKeyFrom: keyFrom },
    { node: 'hetzner-w1', address: '10.10.0.2', endpoint: '198.51.100.20', publicKey: '9kYBihKI+R4VTZmOCcP8covzsMsrMZ4yzYVJvgmKjXw=', privateKeyFrom: keyFrom },
    { node: 'office-w2', address: '10.10.0.3', publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=', privateKeyFrom: keyFrom },
  ],
});
export const servers = [['home-cp1', 'home'], ['hetzner-w1', 'fsn1'], ['office-w2', 'office']].map(
  ([node, location]) => new Server(node, { location, userData: mesh.nodes[node].cloudConfig }),
);

// 2. A shared VPN gateway, and qBittorrent routed through it by a transform, with the forwarded port (fixed 6881).
const cluster = new k8s.Provider('homelab', { kubeconfig: process.env.KUBECONFIG ?? '~/.kube/config' });
const gateway = new VpnGateway('protonvpn', {
  clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
  nodeCidrs: ['10.10.0.0/24'],
  vpnProvider: 'protonvpn',
  wireguardPrivateKeySecret: { name: 'protonvpn-wireguard' },
  serverCountries: ['Switzerland'],
  portForwarding: { toPort: 6881, workload: 'qbittorrent', workloadNamespace: 'media' },
  acknowledge: ['protonvpn-wireguard-pmp'], // the key's config was generated with NAT-PMP on (synth cannot see it)
  cni: 'flannel',
}, { provider: cluster });

// qBittorrent's namespace, at the Pod Security level its routed pod needs (the client init container adds NET_ADMIN and
// NET_RAW): registerNamespaces() lets the gateway's check read it, and dependsOn applies it before the route's objects.
const media = new k8s.core.v1.Namespace('media', {
  metadata: { name: 'media', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } },
}, { provider: cluster, transformations: [registerNamespaces()] });

// A StatefulSet of one replica: the forwarded workload's pods take one fixed VXLAN address, and a Deployment is
// refused (its ReplicaSet starts a replacement while the old pod still holds the address).
export const qbittorrent = new k8s.apps.v1.StatefulSet('qbittorrent', {
  metadata: { name: 'qbittorrent', namespace: 'media' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { 'app.kubernetes.io/name': 'qbittorrent' } },
    template: {
      metadata: { labels: { 'app.kubernetes.io/name': 'qbittorrent' } },
      spec: { containers: [{ name: 'qbittorrent', image: 'lscr.io/linuxserver/qbittorrent:5.0.3', ports: [{ containerPort: 6881 }] }] },
    },
  },
}, { provider: cluster, dependsOn: [media], transformations: [gateway.routeTransform()] });

// 3. Egress steering for the vpn class on the overlay's worker, out of its own WireGuard split tunnel, with alerts.
const steering = new EgressSteering('egress', {
  gatewayNode: 'hetzner-w1',
  clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16'],
  lanCidrs: ['10.10.0.0/24'],
  namespaces: ['downloads'],
  monitoring: { ruleLabels: { release: 'kube-prometheus-stack' }, kubeStateMetricsValues: { metricLabelsAllowlist: ['nodes=[tunnelwright.dev/egress-uplink]'] } },
  kubeconfigFrom: { file: '/etc/tunnelwright/resteer.kubeconfig' },
  tunnel: { type: 'wireguard', address: '10.2.0.2/32', privateKeyFrom: { file: '/run/corium/vpn.key' }, peer: { publicKey: 'VfJ/Ma5/lA4ll8cNtQWJ0dz7HkFJWQRG4N8LcNoU41E=', endpoint: '185.159.157.1:51820' } },
}, { provider: cluster });
export const gatewayNodeUserData = steering.cloudConfig;
export const ciliumValues = steering.values.cilium;
