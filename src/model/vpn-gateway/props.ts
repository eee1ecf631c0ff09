import type { Cidr, SecretKeyRef } from '../common';
import { PORT_FORWARDING_APPS, PORT_SYNC_METRICS_PORT } from '../values';
import type { VpnGatewayStandbyProps } from '../vpn-gateway-failover';
export type { VpnGatewayStandbyProps } from '../vpn-gateway-failover';

/** OpenVPN credentials in a Secret: user and password keys. */
export interface CredentialsSecretRef {
  readonly name: string;
  /** @default 'username' */
  readonly userKey?: string;
  /** @default 'password' */
  readonly passwordKey?: string;
}

export { PORT_FORWARDING_APPS } from '../values';
export type PortForwardingApp = typeof PORT_FORWARDING_APPS[number];

/**
 * The first slskd release with the `SLSKD_VPN_*` gluetun integration the library configures for `app: 'slskd'`:
 * slskd/slskd src/slskd/Integrations/VPN/VPNService.cs was added in eb53ab89 and first tagged in 0.24.4 (0.23.x and
 * 0.24.0-0.24.3 have no Integrations/VPN and never read `SLSKD_VPN_*`); the options are Options.cs:2420-2519 at 0.26.0.
 */
export const MIN_SLSKD = '0.24.4';

/** Each app's WebUI / RPC port, where port-sync reaches its API inside the pod. */
export const APP_API_PORTS: Readonly<Record<Exclude<PortForwardingApp, 'command' | 'slskd'>, number>> = { qbittorrent: 8080, transmission: 9091, deluge: 8112 };

/**
 * The ports the forwarded workload's pod serves itself, which the internet must never reach through the forwarded
 * port: the app's Web UI or RPC port (`appUrl`'s, or the app's default), Deluge's daemon port (58846, deluged's
 * default, which its Web UI connects to), slskd's Web UI (5030 HTTP, 5031 HTTPS: slskd's defaults), and port-sync's
 * metrics port. Synth refuses a `toPort` among them; the up command refuses to DNAT a forwarded port among them (the
 * provider picks that port at run time), and port-sync never sets an app's listen port to one.
 */
export function servedPorts(pf: PortForwardingProps): number[] {
  const app = pf.app;
  if (app === undefined) return [];
  if (app === 'slskd') return [5030, 5031];
  const ports: number[] = [PORT_SYNC_METRICS_PORT];
  if (app === 'command') return ports;
  let ui: number = APP_API_PORTS[app];
  if (typeof pf.appUrl === 'string') {
    try {
      const u = new URL(pf.appUrl);
      ui = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    } catch {
      // an appUrl that is no URL is the schema's to report
    }
  }
  return [ui, ...(app === 'deluge' ? [58846] : []), ...ports];
}

export interface PortForwardingProps {
  /** gluetun's `VPN_PORT_FORWARDING_PROVIDER`: required with `custom` (one of perfect privacy, private internet access, privatevpn, protonvpn). @default - the VPN provider (where it forwards natively) */
  readonly provider?: string;
  /** Credentials of the port-forwarding API (private internet access over custom WireGuard). */
  readonly credentialsSecret?: CredentialsSecretRef;
  /**
   * The app that receives the forwarded port. The port reaches the SAME port on the workload (no translation: a
   * torrent client announces its own listen port), and a port-sync sidecar beside the app sets the app's listen port
   * to it and keeps it so: `qbittorrent` (WebUI API), `transmission` (RPC `peer-port`),
   * `deluge` (Web UI JSON-RPC `listen_ports`, through the daemon the Web UI is attached to), or `command` (your
   * `command`, run with `$PORT` whenever the port changes; the app's own port is not read, so an app restart that
   * forgets it is not repaired). `slskd` needs no sidecar: slskd polls gluetun's control
   * server itself (its `SLSKD_VPN_*` integration, slskd ≥ 0.24.4: older slskd ignores it silently) and the library sets that integration's environment
   * on the app container (`appContainer`), the API key from `controlApiKeySecret`. @default - none: only `toPort`
   */
  readonly app?: PortForwardingApp;
  /** The app's API URL as the sidecar reaches it in the pod. @default - http://127.0.0.1:8080 (qbittorrent), http://127.0.0.1:9091 (transmission), http://127.0.0.1:8112 (deluge) */
  readonly appUrl?: string;
  /** The app's login, mounted as files into the sidecar (qBittorrent WebUI user, Transmission RPC user; Deluge reads only the password, its Web UI password, and requires it). @default - no login (the app's local-host auth is off) */
  readonly appCredentialsSecret?: CredentialsSecretRef;
  /** qBittorrent ≥ 5.2 only: a Secret key holding a WebUI API key (used instead of the login). */
  readonly appApiKeySecret?: SecretKeyRef;
  /**
   * With `app: 'slskd'`: the routed workload's container that runs slskd and gets `SLSKD_VPN`,
   * `SLSKD_VPN_PORT_FORWARDING`, `SLSKD_VPN_GLUETUN_URL` and `SLSKD_VPN_GLUETUN_API_KEY` (from `controlApiKeySecret`).
   * @default - the workload's first container
   */
  readonly appContainer?: string;
  /**
   * With `app: 'command'`: a POSIX sh command run in the sidecar with `$PORT` set, once for each new forwarded port
   * (again next period while it exits non-zero, and when the sidecar restarts). The sidecar cannot read the app's port,
   * so an app restart that forgets it is not repaired. A run is stopped after 60 s as a whole process group (it runs
   * in a session of its own under busybox `setsid`: TERM to the group, KILL 5 s later; a fixed bound: four default
   * periods, ample for an API call, and a hung command would otherwise stop the loop and freeze the metrics) and
   * counts as failed. `portForwardAlertGroups` raises `VPNForwardedPortCommandFailing` while it keeps
   * failing with the forwarded port.
   */
  readonly command?: string;
  /**
   * A Secret key (in the gateway's namespace AND a copy in the workload's) holding the API key of gluetun's control
   * server role that grants only `GET /v1/portforward` (with `slskd`: and `GET /v1/publicip/ip`, which slskd reads
   * first). Required with `app`. @default - key `api-key`
   */
  readonly controlApiKeySecret?: SecretKeyRef;
  /** Seconds between two checks of the port (also the longest a lost port stays wrong); with `slskd`, its `SLSKD_VPN_POLLING_INTERVAL`. @default 15 (slskd: its own 2.5 s) */
  readonly syncPeriodSeconds?: number;
  /**
   * Private internet access only (the one provider gluetun keeps port-forwarding state for: its port, 60 days, in
   * `/gluetun/piaportforward.json`; refused for any other): an existing PersistentVolumeClaim, or the size and storage
   * class of the one the library creates (`<name>-gluetun-state`, 64Mi, ReadWriteOnce). Without `storageClassName` the
   * claim binds only on a cluster with a default StorageClass (k0s and kubeadm install none: it stays Pending and the
   * gateway never schedules), and synth warns. @default - with PIA, a claim of the cluster's default class; else none
   */
  readonly stateClaim?: { readonly existingClaim?: string; readonly storageClassName?: string; readonly size?: string };
  /** The routed workload's port the forwarded port is DNATed to, for an app that needs a fixed port (Plex's 32400). Refused with a torrent client. @default - the forwarded port itself */
  readonly toPort?: number;
  /**
   * Name of the routed workload that receives it: a StatefulSet of one replica, whose pod gets a fixed VXLAN address.
   * Routing a Deployment, DaemonSet or more than one replica of this name is refused, since each can run two pods on
   * that address (a Deployment's ReplicaSet starts a replacement while the old pod is still terminating). A force
   * delete of its pod (as of a pod on a partitioned node) can still run two: force-delete it only once its node is
   * known to be down. Required with `toPort` or `app`.
   */
  readonly workload?: string;
  /** The routed workload's namespace (a workload of the same name elsewhere gets no fixed address). Required with `workload`. */
  readonly workloadNamespace?: string;
}

/** The warning codes VpnGateway's checks give, each of which `acknowledge` takes. */
/** The codes of the warnings a VpnGateway may give, each one `acknowledge` can silence. */
export type VpnGatewayWarning = 'ipv6-cidr' | 'default-storage-class' | 'unknown-server-filter' | 'protonvpn-openvpn-pmp' | 'protonvpn-wireguard-pmp' | 'standby-same-server';
/** @internal Every VpnGatewayWarning, for the props' schema. */
export const VPN_GATEWAY_WARNINGS = ['ipv6-cidr', 'default-storage-class', 'unknown-server-filter', 'protonvpn-openvpn-pmp', 'protonvpn-wireguard-pmp', 'standby-same-server'] as const satisfies readonly VpnGatewayWarning[];

/**
 * Which VPN server gluetun connects to: its server filters (`SERVER_COUNTRIES`, `SERVER_REGIONS`, `SERVER_CITIES`,
 * `SERVER_HOSTNAMES`, `SERVER_NAMES`), or with `custom` the one server's endpoint. gluetun keeps the servers of its list
 * that match every filter given (one of each filter's values, case-insensitively), and at each connect and reconnect
 * picks one of their addresses at random (internal/storage/filter.go:50-139, internal/provider/utils/pick.go:45-56
 * at v3.41.1). The gateway's props, and with `standby` the standby's own (`standby.servers`).
 */
export interface VpnServerSelection {
  /** `SERVER_COUNTRIES`: servers in one of these countries. @default - any */
  readonly serverCountries?: string[];
  /** `SERVER_REGIONS`: servers in one of these regions. @default - any */
  readonly serverRegions?: string[];
  /** `SERVER_CITIES`: servers in one of these cities. @default - any */
  readonly serverCities?: string[];
  /** `SERVER_HOSTNAMES`: these servers, by hostname (one hostname is one server). @default - any */
  readonly serverHostnames?: string[];
  /** `SERVER_NAMES`: these servers, by the provider's server name (with `custom`: the one server's name, for PIA port forwarding). @default - any */
  readonly serverNames?: string[];
  /** `custom`: the server's IP (never a hostname). */
  readonly vpnEndpointIp?: string;
  /** `custom`: the server's public key. */
  readonly wireguardPublicKey?: string;
}

export interface VpnGatewayProps extends VpnServerSelection {
  /** The cluster this gateway belongs to. @default 'default' */
  readonly cluster?: string;
  /** Name of the gateway (Deployment, Service, ConfigMaps). @default 'vpn-gateway' */
  readonly name?: string;
  /** Namespace of the gateway pod; its pods opt out of Istio ambient. @default 'vpn-gateway' */
  readonly namespace?: string;
  /** Pod and service CIDRs, `[podCidr, serviceCidr, …]`: never routed through the VPN. */
  readonly clusterCidrs: Cidr[];
  /** Node / LAN CIDRs kept local (kubelet probes reach routed pods from the node). */
  readonly nodeCidrs: Cidr[];
  /** kube-dns ClusterIP. @default - the service CIDR (`clusterCidrs[1]`) + 10, e.g. 10.43.0.10 */
  readonly clusterDnsIp?: string;
  /** The cluster's DNS domain (kubelet's `clusterDomain`): its names are resolved by kube-dns, never through the tunnel. @default 'cluster.local' */
  readonly clusterDomain?: string;
  /** gluetun's provider name (`nordvpn`, `protonvpn`, `mullvad`, …), `pia` for private internet access, or `custom`. */
  readonly vpnProvider: string;
  /** @default 'wireguard' */
  readonly vpnType?: 'wireguard' | 'openvpn';
  /** The WireGuard private key: a Secret in the gateway namespace (key default `private-key`), mounted as a file. */
  readonly wireguardPrivateKeySecret?: SecretKeyRef;
  /** The WireGuard preshared key (key default `preshared-key`). */
  readonly wireguardPresharedKeySecret?: SecretKeyRef;
  /** `WIREGUARD_ADDRESSES`: the tunnel addresses the provider assigned. */
  readonly wireguardAddresses?: Cidr[];
  /** OpenVPN credentials: a Secret with user and password keys. Required for OpenVPN. */
  readonly openvpnCredentialsSecret?: CredentialsSecretRef;
  /** No default: required for `custom`; forbidden or restricted to a list for some providers. With `standby`, both pods use it (pod-gateway's firewall lets one VPN port out: `VPN_TRAFFIC_PORT`). */
  readonly vpnEndpointPort?: number;
  /** Port forwarding where the provider supports it (ProtonVPN natively; PIA via custom). @default - off */
  readonly portForwarding?: PortForwardingProps;
  /** VXLAN id between the gateway and its clients, 1–16777215, unique per cluster. @default 42 */
  readonly vxlanId?: number;
  /** The VXLAN network, a /24 (the gateway is .1). @default '172.16.0.0/24' */
  readonly vxlanNetwork?: Cidr;
  /**
   * DNS over TLS by gluetun's DNS server. Refused with pod-gateway: gluetun's DNS server binds :53 on every
   * interface and collides with pod-gateway's dnsmasq, which routed pods need for cluster names (research §4 #5).
   * Routed pods resolve through the gateway's dnsmasq: the cluster domain by kube-dns, the rest through the tunnel.
   * @default false
   */
  readonly dnsOverTls?: boolean;
  /** The plaintext resolver gluetun uses through the tunnel (`DNS_ADDRESS`). @default '1.1.1.1' */
  readonly dnsAddress?: string;
  /**
   * DNSSEC validation by the gateway's dnsmasq (pod-gateway's `GATEWAY_ENABLE_DNSSEC`). Turn it off when `dnsAddress`
   * is a resolver that returns no DNSSEC records (most VPN providers' in-tunnel resolvers, such as ProtonVPN's
   * 10.2.0.1): dnsmasq then finds every outside answer bogus and routed pods resolve nothing outside the cluster.
   * @default true
   */
  readonly dnssec?: boolean;
  /**
   * The cluster's CNI: Cilium and flannel own UDP 8472, so the VXLAN uses 4789 (Calico's VXLAN owns 4789: 8472). Under
   * `cilium`, `route()` writes each routed workload's kill switch as a CiliumNetworkPolicy (the cluster as the
   * `cluster` entity, kube-dns and the gateway by endpoint): Cilium never matches CIDR rules against the endpoints it
   * manages, so a plain NetworkPolicy's `ipBlock` would cut the workload off from every pod but kube-dns and the gateway.
   * @default 'other'
   */
  readonly cni?: 'cilium' | 'flannel' | 'calico' | 'kube-router' | 'other';
  /** The pod network's MTU; the VXLAN MTU is derived from it (−50). @default 1450 */
  readonly podMtu?: number;
  /** `istio-ambient`: ztunnel's 169.254.7.127/32 is kept local. @default 'none' */
  readonly mesh?: 'none' | 'istio-ambient';
  /**
   * Emit the gateway's Namespace, labelled for the Pod Security level its pod needs (privileged: pod-gateway's init
   * container is privileged). `false` leaves the namespace to you: the App checks its labels if it is in the app, and
   * warns with the label to set if not. @default true
   */
  readonly createNamespace?: boolean;
  /**
   * How gluetun gets `/dev/net/tun`. `'runtime'`: gluetun creates the node itself, and the container runtime's default
   * device rules must allow it (runc has allowed 10:200 since its first release, except 1.2.0–1.2.3, which dropped it:
   * containerd 1.7.24 and 2.0.0–2.0.1 ship those); `'privileged'`: gluetun runs privileged (the gluetun wiki's
   * Kubernetes fix), which every runtime honours; `{ resource }`: a device plugin's resource that hands the
   * container the device (for example squat/generic-device-plugin's `squat.ai/tun`). A `hostPath` of the device is no
   * remedy: a mount does not change the device rules. @default 'runtime'
   */
  readonly tunDevice?: 'runtime' | 'privileged' | { readonly resource: string };
  /** Images. @default - pinned: qmcgaw/gluetun:v3.41.1, ghcr.io/angelnu/pod-gateway:v1.13.0, curlimages/curl:8.11.1 (port-sync: sh, curl, busybox nc) */
  /**
   * A warm standby (issue 43): two gateway pods (StatefulSets `<name>-a`, `<name>-b`, on different nodes), each with a
   * tunnel of its own key (WireGuard) or login (OpenVPN); one holds the role by a Lease while its tunnel is healthy, and only it is behind the
   * gateway's name. See docs/vpn-gateway.md, "Failover". @default - one gateway pod (a Deployment)
   */
  readonly standby?: VpnGatewayStandbyProps;
  readonly images?: { readonly gluetun?: string; readonly podGateway?: string; readonly portSync?: string };
  /**
   * Warning codes you have read and accept, not reported again: `ipv6-cidr`, `default-storage-class`,
   * `unknown-server-filter` (with your own `images.gluetun`), `protonvpn-openvpn-pmp` (ProtonVPN port forwarding over
   * OpenVPN: the username must end in `+pmp`), `protonvpn-wireguard-pmp` (over WireGuard: the key must come from a
   * configuration made with NAT-PMP on), `standby-same-server` (the gateway's and the standby's server filters may
   * pick one server: see `standby.servers`). See docs/vpn-gateway.md. @default []
   */
  readonly acknowledge?: VpnGatewayWarning[];
}

export const DEFAULT_IMAGES = { gluetun: 'qmcgaw/gluetun:v3.41.1', podGateway: 'ghcr.io/angelnu/pod-gateway:v1.13.0', portSync: 'curlimages/curl:8.11.1' } as const;
