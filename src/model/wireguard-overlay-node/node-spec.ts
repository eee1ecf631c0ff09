import { defaultCni, OverlayCni } from '../cni';
import { normalizeControlPlaneEndpoint } from './kubeadm';
import { DEFAULT_KUBERNETES_VERSION, Distribution, K0sInstall, kubernetesMinor, NodeRole, WireguardInterface, WireguardOverlayNodeProps, WireguardPeer } from './props';

/** A peer as rendered; `comment` names it in the config (the mesh's node names). */
export interface RenderPeer extends WireguardPeer {
  readonly comment?: string;
}
export interface RenderInterface extends WireguardInterface {
  readonly peers: RenderPeer[];
  /** `PreUp` commands: wg-quick runs them before it adds the addresses and routes (wg-quick cmd_up). */
  readonly preUp?: string[];
  /** Extra `PostUp` commands (a hub forwards between spokes). */
  readonly postUp?: string[];
  /** `PostDown` commands. */
  readonly postDown?: string[];
  /** wg-quick's `Table`: `off` installs no routes (a split tunnel does its own policy routing). */
  readonly table?: 'off';
  /**
   * `'after-up'`: a peer's hostname endpoint is written as a comment that `wg-endpoints` sets once the interface is
   * up (see WG_ENDPOINTS_SCRIPT), so a name that does not resolve cannot keep the interface down. @default - in the
   * config, resolved by `wg-quick up`
   */
  readonly hostnameEndpoints?: 'after-up';
}


/**
 * One node's overlay as render takes it: parsed once, defaults applied (role, distribution, the CNI, the packages),
 * the Kubernetes minor version read. A WireguardOverlayNode's comes from its props (checkWireguardOverlayNode); a
 * WireguardMesh builds one per node from the interface it generates (overlayNodeSpec), with the cluster's facts.
 */
export interface OverlayNodeSpec {
  readonly node: string;
  readonly role: NodeRole;
  readonly distribution: Distribution;
  readonly wireguard: RenderInterface[];
  /** The Kubernetes minor version (kubeadm's config API: v1beta4 from 31). */
  readonly kubernetesMinor: number;
  readonly installK0s?: K0sInstall;
  /** Install wireguard-tools (and nftables where the kube-router SNAT table loads). */
  readonly installPackages: boolean;
  readonly cni: OverlayCni;
  readonly k0sConfig?: Record<string, unknown>;
  /**
   * k0sConfig is the cluster's own k0s.yaml spec (a mesh's, which its controllers write), so an absent
   * `network.podCIDR` means k0s's default. A standalone worker's k0sConfig is only what the user copied from the
   * controller: without podCIDR the pod CIDR is not known there.
   */
  readonly clusterK0sConfig: boolean;
  /**
   * k0s with several controllers and no stable API address of the user's: k0s's node-local load balancing, so each
   * worker's kubelet and konnectivity agent reach every controller, not only the one that issued its token.
   */
  readonly k0sNodeLocalLoadBalancing: boolean;
  /** kubeadm: the cluster's pod CIDRs (ClusterConfiguration networking.podSubnet, the CNI's network). */
  readonly podCidrs?: readonly string[];
  /** kubeadm: the cluster's controlPlaneEndpoint, `host:port`. */
  readonly controlPlaneEndpoint?: string;
  /** kubeadm, a controller: `init` the cluster (the first controller) or `join` its control plane. */
  readonly kubeadmControlPlane?: 'init' | 'join';
}

/** What a node's spec is made of before its defaults: the props' names, with the interfaces as rendered. */
export interface OverlayNodeSpecInput extends Omit<WireguardOverlayNodeProps, 'wireguard' | 'cluster' | 'clusterEndpoint' | 'ignitionVersion'> {
  readonly wireguard: RenderInterface[];
  readonly clusterK0sConfig?: boolean;
  readonly k0sNodeLocalLoadBalancing?: boolean;
}

/** The spec of checked props (or of a mesh node): defaults applied once. */
export function overlayNodeSpec(props: OverlayNodeSpecInput): OverlayNodeSpec {
  const distribution = props.distribution ?? 'k0s';
  return {
    node: props.node,
    role: props.role ?? 'worker',
    distribution,
    wireguard: props.wireguard,
    kubernetesMinor: kubernetesMinor(props.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION)!,
    installK0s: props.installK0s,
    installPackages: props.installPackages !== false,
    cni: props.cni ?? defaultCni(distribution),
    k0sConfig: props.k0sConfig,
    clusterK0sConfig: props.clusterK0sConfig === true,
    k0sNodeLocalLoadBalancing: props.k0sNodeLocalLoadBalancing === true,
    podCidrs: props.podCidrs,
    ...(props.controlPlaneEndpoint !== undefined ? { controlPlaneEndpoint: normalizeControlPlaneEndpoint(props.controlPlaneEndpoint)! } : {}),
    ...(distribution === 'kubeadm' && (props.role === 'controller' || props.role === 'controller+worker') ? { kubeadmControlPlane: props.kubeadmJoin === true ? 'join' as const : 'init' as const } : {}),
  };
}
