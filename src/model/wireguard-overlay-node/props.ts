import type { OverlayCni } from '../cni';
import type { Cidr, SecretSource } from '../common';

/** Kubernetes distributions whose units and node-IP settings tunnelwright knows. */
export type Distribution = 'k0s' | 'k3s' | 'kubeadm';
/** A node's role in the cluster. */
export type NodeRole = 'controller' | 'worker' | 'controller+worker';

/** A WireGuard peer, as in a `[Peer]` section of wg-quick's config. */
export interface WireguardPeer {
  /** The peer's public key (base64 of 32 bytes). */
  readonly publicKey: string;
  /** `host:port` the interface dials; an IP is preferred (a hostname may need the overlay to resolve). @default - the peer dials us */
  readonly endpoint?: string;
  /** Addresses routed to this peer; must not overlap another peer's on the same interface. */
  readonly allowedIPs: Cidr[];
  /** Seconds between keepalive packets, 1–65535 (for peers behind NAT). @default - none */
  readonly persistentKeepalive?: number;
  /** An inline preshared key: for labs only (a warning); prefer `presharedKeyFrom`. */
  readonly presharedKey?: string;
  /** Where the host reads the preshared key at boot. */
  readonly presharedKeyFrom?: SecretSource;
}

/** One WireGuard interface of a node, rendered to `/etc/wireguard/<name>.conf` and `wg-quick@<name>.service`. */
export interface WireguardInterface {
  /** Interface name: `^[a-z0-9][-a-z0-9]*$`, at most 15 characters, unique on the node. */
  readonly name: string;
  /**
   * The interface address with its prefix, e.g. `10.10.0.1/24` (a host address, not a network); for a dual-stack
   * overlay a list of one IPv4 and one IPv6 address, e.g. `['10.10.0.1/24', 'fd10::1/64']`.
   */
  readonly address: Cidr | Cidr[];
  /** UDP port to listen on; required when any peer dials this node. @default - a random port (the node only dials) */
  readonly listenPort?: number;
  /** Register this interface's address as the Kubernetes node IP (at most one interface per node). @default false */
  readonly nodeAddress?: boolean;
  /** Interface MTU, 576–65535 (at least 1280 with an IPv6 address). @default - derived from `underlayMtu`; without it, wg-quick's (the route's MTU − 80) */
  readonly mtu?: number;
  /**
   * MTU of the network the tunnel packets cross (1500 Ethernet, 1450 many private clouds, 1460 GCP, 1492 PPPoE): the
   * interface MTU becomes this minus WireGuard's overhead, 60 over IPv4 and 80 when any peer is dialled over IPv6 or
   * by hostname. Ignored when `mtu` is set. @default - not known
   */
  readonly underlayMtu?: number;
  /** An inline private key: for labs only (a warning); exactly one of `privateKey` / `privateKeyFrom`. */
  readonly privateKey?: string;
  /** Where the host reads its private key at boot; exactly one of `privateKey` / `privateKeyFrom`. */
  readonly privateKeyFrom?: SecretSource;
  /**
   * This interface's own public key (of the key at `privateKeyFrom`), recorded as a comment in its config: when you
   * rotate the key, the node's own config changes with it, so a deploy that copies and reloads the nodes whose files
   * changed reloads this one too (the reload resolves the new key from its source). A WireguardMesh records each
   * node's. @default - not recorded: a rotated key changes only the peers' configs
   */
  readonly publicKey?: string;
  readonly peers: WireguardPeer[];
}

export interface WireguardOverlayNodeProps {
  /** The cluster this node belongs to. @default 'default' */
  readonly cluster?: string;
  /** The node's hostname: a Kubernetes node name (a DNS subdomain, at most 253 characters). */
  readonly node: string;
  /** @default 'worker' */
  readonly role?: NodeRole;
  /** @default 'k0s' */
  readonly distribution?: Distribution;
  /** The Kubernetes API endpoint the node joins (`10.10.0.1:6443` or `https://10.10.0.1:6443`), to check it crosses the overlay. @default - not checked */
  readonly clusterEndpoint?: string;
  /** Ignition spec version of `ignition`. @default '3.4.0' */
  readonly ignitionVersion?: '3.3.0' | '3.4.0' | '3.5.0';
  /**
   * Kubernetes minor version (`'1.31'` or `'v1.31.2'`): kubeadm reads `kubeadm.k8s.io/v1beta4` from 1.31 and
   * `v1beta3` (removed in 1.37) before it. @default '1.31' (v1beta4)
   */
  readonly kubernetesVersion?: string;
  /**
   * k0s only: install k0s at first boot, after the overlay is up, with the kubelet's `--node-ip` on the overlay
   * (k0s takes it only at `k0s install`). Without it the library cannot set the node IP of a k0s worker and warns.
   * @default - k0s is installed by you (k0sctl: `installFlags` from `plan.values.k0s.installFlags`)
   */
  readonly installK0s?: K0sInstall;
  /**
   * Install `wireguard-tools` from the distribution's packages (cloud-init `packages`), and `nftables` on a node whose
   * pods kube-router carries (wg-quick's PreUp runs `nft` to load the SNAT table into kube-router's tunnels); off for
   * images that ship them (a warning names nftables then: without `nft` the interface does not come up). Ignition
   * hosts install no packages either way: their image must ship both.
   * @default true
   */
  readonly installPackages?: boolean;
  /**
   * The cluster's CNI, configured so pod traffic between nodes rides the overlay interface (the one with
   * `nodeAddress`): k0s `kube-router` (IPIP between node addresses, `overlay-type: full`) or `calico` (VXLAN on the
   * overlay interface) in k0s.yaml's `spec.network`; k3s `flannel` (`flannel-iface`); any other pair gets its
   * settings in `plan.values.cni` with a warning; k0s with `flannel` is refused.
   * @default - k0s: 'kube-router', k3s: 'flannel', kubeadm: 'other' (settings to hand over, with a warning)
   */
  readonly cni?: OverlayCni;
  /**
   * k0s only: your own k0s.yaml `spec` (a controller's `/etc/k0s/k0s.yaml`), merged under the library's: your keys are
   * kept (`api.externalAddress`, `network.podCIDR`, …), `api.sans` is the union of yours and the overlay's, and the
   * keys the library sets from the overlay (`K0S_OWNED_KEYS`: `api.address`, `storage.etcd.peerAddress`, the CNI's
   * overlay settings) are refused here. A worker writes no k0s.yaml, but on kube-router it reads two things from it:
   * its SNAT table follows kube-proxy's `network.kubeProxy.iptables.masqueradeBit`, and its fail-closed unit covers
   * `network.podCIDR` (and `network.dualStack.IPv6podCIDR`) with an unreachable route. Give a worker the
   * controller's k0sConfig, with its podCIDR even when that is k0s's default 10.244.0.0/16: without it the worker
   * fails closed for the overlay network only, and is warned. @default - none
   */
  readonly k0sConfig?: Record<string, unknown>;
  /**
   * kubeadm only: the cluster's pod CIDRs, one per family of the node address (`['10.244.0.0/16']`, dual-stack
   * `['10.244.0.0/16', 'fd00:10:244::/56']`), written as a controller's ClusterConfiguration `networking.podSubnet`
   * and handed to the CNI's install in `values.cni` (flannel's net-conf.json). Required on a controller with cni
   * `flannel` or `kube-router`: they take each node's pod CIDR, which kubeadm allocates only from a podSubnet.
   * An IPv4 CIDR from /8 to /24, an IPv6 one from /48 to /64 (kubeadm gives each node a /24 or a /64).
   * @default - none (kubeadm allocates no pod CIDRs)
   */
  readonly podCidrs?: Cidr[];
  /**
   * kubeadm only: the cluster's stable API address (ClusterConfiguration `controlPlaneEndpoint`), a DNS name or an IP
   * with an optional port (6443 when none), e.g. `'api.cluster.internal:6443'`: a name whose records are the
   * controllers' overlay addresses, or a load balancer. Needed for several controllers (kubeadm join --control-plane
   * refuses a cluster made without one, and it cannot be added later). With it a controller's config carries the
   * certificate key, and a joining one's the bootstrap token and CA hash, as placeholders that
   * `tunnelwright-kubeadm` (written on the node) fills from files you put under `/etc/kubernetes/tunnelwright/`
   * before it runs kubeadm: no secret is in user-data. An IP inside the overlay network must be a controller's.
   * @default - none (one controller, whose address the cluster's kubeconfigs name)
   */
  readonly controlPlaneEndpoint?: string;
  /**
   * kubeadm only, a controller: join an existing control plane (`kubeadm join --control-plane` with a
   * JoinConfiguration) instead of initialising the cluster. Needs `controlPlaneEndpoint`. A WireguardMesh sets it
   * on every controller but the first.
   * @default false (kubeadm init)
   */
  readonly kubeadmJoin?: boolean;
  readonly wireguard: WireguardInterface[];
}

/** How the library installs k0s at first boot. */
export interface K0sInstall {
  /** The join token (workers, and controllers joining an existing cluster); the first controller has none. @default - no token */
  readonly tokenFrom?: SecretSource;
  /** Where the k0s binary is (get.k0s.sh installs it there). @default '/usr/local/bin/k0s' */
  readonly binary?: string;
}

/** WireGuard's overhead on an IPv4 underlay (20 IP + 8 UDP + 32 WireGuard) and an IPv6 one (40 IP + 8 + 32). */
export const WIREGUARD_OVERHEAD = { 4: 60, 6: 80 } as const;
export const DEFAULT_K0S_BINARY = '/usr/local/bin/k0s';
export const DEFAULT_KUBERNETES_VERSION = '1.31';
const KUBERNETES_VERSION = /^v?1\.(\d{1,3})(?:\.\d{1,3})?$/;

/** The minor version of a Kubernetes version text, or undefined when it is not one. */
export function kubernetesMinor(text: string): number | undefined {
  const m = KUBERNETES_VERSION.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** An interface's addresses as a list (the prop takes one or a list). */
export function interfaceAddresses(address: string | readonly string[]): string[] {
  return typeof address === 'string' ? [address] : [...address];
}
export const INTERFACE_NAME = /^[a-z0-9][-a-z0-9]*$/;
