import * as z from '../zod';
import { Problem } from '../errors';
import { isWireguardKey } from '../keys';
import {
  Cidr, locatedCidrs, cidrSchema, networkCidrSchema, clusterSchema, intInRange, ipSchema, isRecord, parseWith, redactProblems, portSchema, received, SecretKeyRef, secretKeyRefSchema, sortProblems,
} from './common';
import { KEY_FIELD_MESSAGE } from './common';
import { isDnsLabel } from './labels';
import { cidrContainsIp, findOverlaps, parseCidr, parseIp } from './net';
import { CUSTOM_PORT_FORWARDING_PROVIDERS, LOCATION_FILTERS, LocationFilter, nearestProvider, PROVIDER_ALIASES, providerName, PROVIDERS, ProviderRow } from './vpn-providers';

/** OpenVPN credentials in a Secret: user and password keys. */
export interface CredentialsSecretRef {
  readonly name: string;
  /** @default 'username' */
  readonly userKey?: string;
  /** @default 'password' */
  readonly passwordKey?: string;
}

import { serverFilterFindings } from './server-filters';
import { PORT_FORWARDING_APPS, PORT_SYNC_METRICS_PORT } from './values';
export { PORT_FORWARDING_APPS } from './values';
export type PortForwardingApp = typeof PORT_FORWARDING_APPS[number];

/** Each app's WebUI / RPC port, where port-sync reaches its API inside the pod. */
/**
 * The first slskd release with the `SLSKD_VPN_*` gluetun integration the library configures for `app: 'slskd'`:
 * slskd/slskd src/slskd/Integrations/VPN/VPNService.cs was added in eb53ab89 and first tagged in 0.24.4 (0.23.x and
 * 0.24.0-0.24.3 have no Integrations/VPN and never read `SLSKD_VPN_*`); the options are Options.cs:2420-2519 at 0.26.0.
 */
export const MIN_SLSKD = '0.24.4';

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

export interface VpnGatewayProps {
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
  readonly serverCountries?: string[];
  readonly serverRegions?: string[];
  readonly serverCities?: string[];
  readonly serverHostnames?: string[];
  readonly serverNames?: string[];
  /** `custom`: the server's IP (never a hostname). */
  readonly vpnEndpointIp?: string;
  /** No default: required for `custom`; forbidden or restricted to a list for some providers. */
  readonly vpnEndpointPort?: number;
  /** `custom`: the server's public key. */
  readonly wireguardPublicKey?: string;
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
  readonly images?: { readonly gluetun?: string; readonly podGateway?: string; readonly portSync?: string };
}

export const DEFAULT_IMAGES = { gluetun: 'qmcgaw/gluetun:v3.41.1', podGateway: 'ghcr.io/angelnu/pod-gateway:v1.13.0', portSync: 'curlimages/curl:8.11.1' } as const;

const credentials = z.strictObject({
  name: secretKeyRefSchema.shape.name,
  userKey: secretKeyRefSchema.shape.key,
  passwordKey: secretKeyRefSchema.shape.key,
});
const names = z.array(z.string().check(z.minLength(1)));

/** @internal */
export const vpnGatewaySchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  name: z.optional(z.string()),
  namespace: z.optional(z.string()),
  clusterCidrs: z.array(networkCidrSchema),
  nodeCidrs: z.array(networkCidrSchema),
  clusterDnsIp: z.optional(ipSchema),
  clusterDomain: z.optional(z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, { message: 'expected a DNS domain such as cluster.local' })).check(z.maxLength(253))),
  vpnProvider: z.string(),
  vpnType: z.optional(z.enum(['wireguard', 'openvpn'])),
  wireguardPrivateKeySecret: z.optional(secretKeyRefSchema),
  wireguardPresharedKeySecret: z.optional(secretKeyRefSchema),
  wireguardAddresses: z.optional(z.array(cidrSchema)),
  openvpnCredentialsSecret: z.optional(credentials),
  serverCountries: z.optional(names),
  serverRegions: z.optional(names),
  serverCities: z.optional(names),
  serverHostnames: z.optional(names),
  serverNames: z.optional(names),
  vpnEndpointIp: z.optional(z.string()),
  vpnEndpointPort: z.optional(portSchema),
  wireguardPublicKey: z.optional(z.string()),
  portForwarding: z.optional(z.strictObject({
    provider: z.optional(z.string()),
    credentialsSecret: z.optional(credentials),
    app: z.optional(z.enum(PORT_FORWARDING_APPS)),
    appUrl: z.optional(z.string().check(z.regex(/^https?:\/\/[^\s"'\\]+$/, { message: 'expected an http(s) URL such as http://127.0.0.1:8080' }))),
    appCredentialsSecret: z.optional(credentials),
    appApiKeySecret: z.optional(secretKeyRefSchema),
    appContainer: z.optional(z.string()),
    command: z.optional(z.string().check(z.minLength(1))),
    controlApiKeySecret: z.optional(secretKeyRefSchema),
    syncPeriodSeconds: z.optional(intInRange(1, 3600, 'a period in seconds')),
    stateClaim: z.optional(z.strictObject({ existingClaim: z.optional(z.string()), storageClassName: z.optional(z.string()), size: z.optional(z.string().check(z.regex(/^[0-9]+(Ki|Mi|Gi|Ti)$/, { message: 'expected a size such as 64Mi' }))) })),
    toPort: z.optional(portSchema),
    workload: z.optional(z.string()),
    workloadNamespace: z.optional(z.string()),
  })),
  vxlanId: z.optional(intInRange(1, 16777215, 'a VXLAN id')),
  vxlanNetwork: z.optional(cidrSchema),
  dnsOverTls: z.optional(z.boolean()),
  dnsAddress: z.optional(ipSchema),
  dnssec: z.optional(z.boolean()),
  cni: z.optional(z.enum(['cilium', 'flannel', 'calico', 'kube-router', 'other'])),
  podMtu: z.optional(intInRange(1280, 9000, 'a pod MTU')),
  mesh: z.optional(z.enum(['none', 'istio-ambient'])),
  images: z.optional(z.strictObject({ gluetun: z.optional(z.string()), podGateway: z.optional(z.string()), portSync: z.optional(z.string()) })),
  createNamespace: z.optional(z.boolean()),
  tunDevice: z.optional(z.union([
    z.enum(['runtime', 'privileged']),
    z.strictObject({ resource: z.string().check(z.regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$/, { message: 'expected an extended resource name such as squat.ai/tun' })) }),
  ], { error: 'expected \'runtime\', \'privileged\' or { resource: <an extended resource name such as squat.ai/tun> }' })),
});

/** The provider's row (aliases resolved), or undefined. */
export function providerRow(name: string): ProviderRow | undefined {
  return PROVIDERS[providerName(name)];
}

/** The kube-dns IP: given, or the service CIDR (clusterCidrs[1]) + 10. */
export function clusterDnsIpOf(props: Pick<VpnGatewayProps, 'clusterDnsIp' | 'clusterCidrs'>): string | undefined {
  if (props.clusterDnsIp) return props.clusterDnsIp;
  const svc = props.clusterCidrs[1] ? parseCidr(props.clusterCidrs[1]) : undefined;
  if (!svc || svc.family !== 4) return undefined;
  const v = svc.start + 10n;
  return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');
}

/** Semantic checks: the provider matrix and the network. */
function checkGateway(input: Record<string, unknown>, problems: Problem[]): void {
  const push = (path: string, code: string, message: string) => problems.push({ path, code, message });
  const vpnType = input.vpnType ?? 'wireguard';
  const providerText = typeof input.vpnProvider === 'string' ? input.vpnProvider : undefined;
  const row = providerText !== undefined ? providerRow(providerText) : undefined;
  if (providerText !== undefined && !row) {
    const near = nearestProvider(providerText);
    push('vpnProvider', 'provider', `expected one of ${Object.keys(PROVIDERS).map((p) => JSON.stringify(p)).join(', ')} (or ${Object.keys(PROVIDER_ALIASES).map((a) => JSON.stringify(a)).join(', ')}), ${received(providerText)}${near ? `: did you mean ${JSON.stringify(near)}?` : ''}`);
  }
  for (const key of ['name', 'namespace'] as const) {
    if (typeof input[key] === 'string' && !isDnsLabel(input[key] as string)) push(key, key, `expected a DNS label (lowercase letters, digits and "-", ≤ 63 characters), ${received(input[key])}`);
  }
  if (row && vpnType === 'wireguard') {
    if (!row.wireguard) {
      push('vpnProvider', 'no-wireguard', row.noWireguard!);
    } else {
      const wg = row.wireguard;
      if (input.wireguardPrivateKeySecret === undefined) push('wireguardPrivateKeySecret', 'required', 'required for WireGuard: the Secret holding the private key (it is mounted as a file, never put in the environment)');
      if (wg.addresses === 'required' && (!Array.isArray(input.wireguardAddresses) || input.wireguardAddresses.length === 0)) {
        push('wireguardAddresses', 'required', `required by ${row.gluetunName} over WireGuard: the tunnel addresses the provider assigned to your key`);
      }
      if (wg.presharedKey === 'required' && input.wireguardPresharedKeySecret === undefined) push('wireguardPresharedKeySecret', 'required', `required by ${row.gluetunName} over WireGuard (gluetun checks it)`);
      const port = input.vpnEndpointPort;
      if (typeof port === 'number') {
        if (wg.endpointPort === 'forbidden') push('vpnEndpointPort', 'forbidden', `must not be set for ${row.gluetunName} over WireGuard (gluetun takes the port from its server data), ${received(port)}`);
        else if (Array.isArray(wg.endpointPort) && !wg.endpointPort.includes(port)) push('vpnEndpointPort', 'port', `expected one of ${wg.endpointPort.join(', ')} for ${row.gluetunName}, ${received(port)}`);
      } else if (wg.endpointPort === 'required') {
        push('vpnEndpointPort', 'required', 'required for custom: the server\'s WireGuard port (there is no default)');
      }
      if (row.gluetunName === 'custom') {
        if (input.vpnEndpointIp === undefined) push('vpnEndpointIp', 'required', 'required for custom: the server\'s IP address');
        if (input.wireguardPublicKey === undefined) push('wireguardPublicKey', 'required', 'required for custom: the server\'s public key');
      }
    }
  }
  if (row && vpnType === 'openvpn') {
    if (!row.openvpn) {
      push('vpnType', 'no-openvpn', row.noOpenvpn ?? `tunnelwright offers OpenVPN for ${Object.keys(PROVIDERS).filter((p) => PROVIDERS[p].openvpn !== undefined).join(', ')} (received ${JSON.stringify(providerText)})`);
    } else if (typeof input.vpnEndpointPort === 'number') {
      const port = input.vpnEndpointPort;
      const allowed = row.openvpn.endpointPort;
      if (allowed === 'forbidden') push('vpnEndpointPort', 'forbidden', `must not be set for ${row.gluetunName} over OpenVPN (gluetun refuses a custom OpenVPN port for it), ${received(port)}`);
      else if (!allowed.includes(port)) push('vpnEndpointPort', 'port', `expected one of ${allowed.join(', ')} for ${row.gluetunName} over OpenVPN (UDP), ${received(port)}`);
    }
    if (input.openvpnCredentialsSecret === undefined) push('openvpnCredentialsSecret', 'required', 'required for OpenVPN: the Secret with the username and password');
    for (const key of ['wireguardPrivateKeySecret', 'wireguardPresharedKeySecret', 'wireguardAddresses', 'wireguardPublicKey'] as const) {
      if (input[key] !== undefined) push(key, 'forbidden', 'a WireGuard setting, but vpnType is openvpn');
    }
  }
  if (row && vpnType === 'wireguard' && input.openvpnCredentialsSecret !== undefined) push('openvpnCredentialsSecret', 'forbidden', 'an OpenVPN setting, but vpnType is wireguard');
  if (row && row.gluetunName !== 'custom') {
    for (const key of ['vpnEndpointIp', 'wireguardPublicKey'] as const) if (input[key] !== undefined) push(key, 'forbidden', `only for vpnProvider custom (gluetun takes ${row.gluetunName}'s from its server data)`);
  }
  if (typeof input.vpnEndpointIp === 'string' && !parseIp(input.vpnEndpointIp)) push('vpnEndpointIp', 'ip', `expected an IP address, never a hostname (gluetun takes an IP), ${received(input.vpnEndpointIp)}`);
  if (typeof input.wireguardPublicKey === 'string' && !isWireguardKey(input.wireguardPublicKey)) push('wireguardPublicKey', 'key', KEY_FIELD_MESSAGE);
  if (row) {
    for (const filter of Object.keys(LOCATION_FILTERS) as LocationFilter[]) {
      if (input[filter] === undefined) continue;
      if (!row.filters.includes(filter)) {
        const hint = row.gluetunName === 'windscribe' && filter === 'serverCountries' ? ': windscribe has no country data (use serverRegions)' : '';
        push(filter, 'filter', `${row.gluetunName} has no ${LOCATION_FILTERS[filter]} filter; it has ${row.filters.join(', ')}${hint}`);
      }
    }
    if (row.gluetunName === 'custom' && Array.isArray(input.serverNames) && input.serverNames.length > 1) push('serverNames', 'filter', `custom takes at most one server name, received ${input.serverNames.length}`);
  }
  if (input.dnsOverTls === true) push('dnsOverTls', 'dns-collision', "gluetun's DNS server (which DNS over TLS needs) binds :53 on every interface and collides with pod-gateway's dnsmasq, which routed pods need for cluster names; leave dnsOverTls off: DNS still leaves through the tunnel");
  checkPortForwarding(input, row, vpnType as string, push);
  checkNetwork(input, row && vpnType === 'wireguard' ? row : undefined, push);
}

/**
 * pod-gateway is IPv4-only: its scripts feed every CIDR of VPN_LOCAL_CIDRS and NOT_ROUTED_TO_GATEWAY_CIDRS to
 * iptables and `ip route` (an IPv6 entry fails `gateway_init.sh` under `set -e`: the init container crash-loops), and
 * `client_init.sh` deletes the client's IPv6 default route. IPv6 CIDRs are kept out of every gateway list, with a warning.
 */
function ipv6Warnings(input: Record<string, unknown>): Problem[] {
  return [...locatedCidrs(input, 'clusterCidrs'), ...locatedCidrs(input, 'nodeCidrs')].filter((c) => c.value.family === 6).map((c) => ({
    path: c.at,
    code: 'ipv6-cidr',
    message: 'an IPv6 CIDR is kept out of the gateway (pod-gateway routes IPv4 only and removes routed pods\' IPv6 default route): routed pods have no IPv6 egress, which their kill switch denies',
  }));
}

function checkPortForwarding(input: Record<string, unknown>, row: ProviderRow | undefined, vpnType: string, push: (path: string, code: string, message: string) => void): void {
  const pf = input.portForwarding;
  if (!isRecord(pf) || !row) return;
  const provider = providerName(pf.provider);
  if (row.gluetunName === 'custom') {
    if (pf.provider === undefined) push('portForwarding.provider', 'required', `required with custom: one of ${CUSTOM_PORT_FORWARDING_PROVIDERS.join(', ')}`);
    else if (typeof provider === 'string' && !(CUSTOM_PORT_FORWARDING_PROVIDERS as readonly string[]).includes(provider)) push('portForwarding.provider', 'provider', `expected one of ${CUSTOM_PORT_FORWARDING_PROVIDERS.join(', ')}, ${received(pf.provider)}`);
    if (provider === 'private internet access') {
      if (pf.credentialsSecret === undefined) push('portForwarding.credentialsSecret', 'required', 'required for private internet access port forwarding: your PIA username and password');
      if (!Array.isArray(input.serverNames) || input.serverNames.length !== 1) push('serverNames', 'required', 'private internet access port forwarding over custom needs exactly one server name (the server of your WireGuard config)');
    }
  } else {
    // An unknown vpnType is the schema's to report: this check names only the two it knows.
    if ((vpnType === 'wireguard' || vpnType === 'openvpn') && !row.nativePortForwarding.includes(vpnType)) push('portForwarding', 'no-port-forwarding', `${row.gluetunName} has no port forwarding over ${vpnType} in gluetun${row.gluetunName === 'private internet access' ? '' : ' (ProtonVPN does; PIA via custom WireGuard or OpenVPN)'}`);
    if (provider !== undefined && provider !== row.gluetunName) push('portForwarding.provider', 'provider', `only with custom: ${row.gluetunName} forwards ports itself, ${received(pf.provider)}`);
    if (pf.credentialsSecret !== undefined) push('portForwarding.credentialsSecret', 'forbidden', 'only for private internet access port forwarding over custom');
  }
  if ((pf.toPort !== undefined || pf.app !== undefined) && pf.workload === undefined) push('portForwarding.workload', 'required', `required with ${pf.app !== undefined ? 'app' : 'toPort'}: the name of the routed workload that receives the forwarded port`);
  if (pf.workload !== undefined && pf.workloadNamespace === undefined) push('portForwarding.workloadNamespace', 'required', 'required with workload: the routed workload\'s namespace (a workload of the same name in another namespace must not get its fixed address)');
  if (typeof pf.workloadNamespace === 'string' && !isDnsLabel(pf.workloadNamespace)) push('portForwarding.workloadNamespace', 'namespace', `expected a namespace (a DNS label), ${received(pf.workloadNamespace)}`);
  const app = pf.app;
  if (pf.toPort !== undefined && app === 'slskd') {
    push('portForwarding.toPort', 'translation', 'refused with slskd: slskd tells the Soulseek server its own listen port, so a port translated to toPort is a port nobody forwards; leave toPort out (the forwarded port reaches the same port on the workload, and slskd takes it as its listen port)');
  }
  if (app === 'slskd') {
    for (const key of ['appUrl', 'appCredentialsSecret'] as const) if (pf[key] !== undefined) push(`portForwarding.${key}`, 'forbidden', 'not with app "slskd": slskd reads gluetun\'s control server itself (SLSKD_VPN_*), so nothing logs in to slskd; only controlApiKeySecret is needed');
  }
  if (pf.appContainer !== undefined && app !== 'slskd') push('portForwarding.appContainer', 'forbidden', 'only with app "slskd": the container that gets slskd\'s SLSKD_VPN_* environment');
  if (typeof pf.appContainer === 'string' && !isDnsLabel(pf.appContainer)) push('portForwarding.appContainer', 'name', `expected a container name (a DNS label), ${received(pf.appContainer)}`);
  if (pf.toPort !== undefined && (app === 'qbittorrent' || app === 'transmission' || app === 'deluge')) {
    push('portForwarding.toPort', 'translation', `refused with ${app}: a torrent client announces its own listen port to trackers and peers, so a port translated to toPort is a port nobody forwards; leave toPort out (the forwarded port reaches the same port on the workload, and port-sync sets ${app}'s listen port to it)`);
  }
  const served = isRecord(pf) ? servedPorts(pf as PortForwardingProps) : [];
  if (typeof pf.toPort === 'number' && served.includes(pf.toPort)) {
    push('portForwarding.toPort', 'served', `${pf.toPort} is a port the workload's pod serves itself (${app === 'command' ? 'port-sync\'s metrics' : 'its Web UI, RPC or metrics'}: ${served.join(', ')}): the forwarded port would put it on the internet; give the port the app listens on for peers`);
  }
  if (app !== undefined && pf.controlApiKeySecret === undefined) push('portForwarding.controlApiKeySecret', 'required', 'required with app: a Secret key holding the API key of the gluetun control-server role that grants only GET /v1/portforward (the same Secret in the gateway\'s and the workload\'s namespace)');
  if (app === 'deluge' && pf.appCredentialsSecret === undefined) push('portForwarding.appCredentialsSecret', 'required', 'required with app "deluge": a Secret whose password key holds the Deluge Web UI password (its JSON-RPC always needs a login)');
  if (app === 'command' && pf.command === undefined) push('portForwarding.command', 'required', 'required with app "command": the POSIX sh command that gives the app its port ($PORT)');
  if (app !== 'command' && pf.command !== undefined) push('portForwarding.command', 'forbidden', 'only with app "command"');
  if (app === undefined) {
    for (const key of ['appUrl', 'appCredentialsSecret', 'appApiKeySecret', 'controlApiKeySecret', 'syncPeriodSeconds'] as const) {
      if (pf[key] !== undefined) push(`portForwarding.${key}`, 'forbidden', 'only with app: it configures the port-sync sidecar');
    }
  }
  if (app === 'command' && (pf.appCredentialsSecret !== undefined || pf.appApiKeySecret !== undefined || pf.appUrl !== undefined)) {
    for (const key of ['appUrl', 'appCredentialsSecret', 'appApiKeySecret'] as const) if (pf[key] !== undefined) push(`portForwarding.${key}`, 'forbidden', 'not with app "command": your command reaches the app itself');
  }
  if (pf.appApiKeySecret !== undefined && app !== 'qbittorrent') push('portForwarding.appApiKeySecret', 'forbidden', 'only with app "qbittorrent" (WebUI API keys, qBittorrent 5.2.0 and later)');
  if (pf.appApiKeySecret !== undefined && pf.appCredentialsSecret !== undefined) push('portForwarding.appApiKeySecret', 'conflict', 'give either appApiKeySecret or appCredentialsSecret, not both');
  if (pf.stateClaim !== undefined && !keepsPortForwardState(input.vpnProvider, pf)) {
    push('portForwarding.stateClaim', 'forbidden', `gluetun keeps no port-forwarding state for ${typeof provider === 'string' && row.gluetunName === 'custom' ? provider : row.gluetunName} (only private internet access keeps its port, in /gluetun/piaportforward.json): remove stateClaim; no claim is made`);
  }
  if (isRecord(pf.stateClaim) && pf.stateClaim.existingClaim !== undefined && (pf.stateClaim.size !== undefined || pf.stateClaim.storageClassName !== undefined)) {
    push('portForwarding.stateClaim', 'conflict', 'existingClaim names a claim you made: size and storageClassName are only for the claim the library creates');
  }
  if (typeof pf.workload === 'string' && !isDnsLabel(pf.workload)) push('portForwarding.workload', 'name', `expected a workload name (a DNS label), ${received(pf.workload)}`);
}

function checkNetwork(input: Record<string, unknown>, wireguardRow: ProviderRow | undefined, push: (path: string, code: string, message: string) => void): void {
  const cluster = locatedCidrs(input, 'clusterCidrs');
  const nodes = locatedCidrs(input, 'nodeCidrs');
  if (Array.isArray(input.clusterCidrs) && input.clusterCidrs.length === 0) push('clusterCidrs', 'required', 'expected the pod and service CIDRs: they are never routed through the VPN');
  if (Array.isArray(input.nodeCidrs) && input.nodeCidrs.length === 0) push('nodeCidrs', 'required', 'expected the node (LAN) CIDRs: kubelet probes to routed pods come from there');
  for (const c of [...cluster, ...nodes]) {
    if (c.value.prefix === 0) push(c.at, 'default-route', `expected a local network, received a default route: it would keep everything off the VPN`);
  }
  const vx = parseCidr(input.vxlanNetwork);
  if (vx && (vx.family !== 4 || vx.prefix !== 24 || vx.address !== vx.start)) push('vxlanNetwork', 'vxlan-network', `expected an IPv4 /24 network such as 172.16.0.0/24 (pod-gateway numbers the gateway .1 and clients from .20), ${received(input.vxlanNetwork)}`);
  const vxLocated = vx ? [{ value: vx, at: 'vxlanNetwork' }] : [{ value: parseCidr('172.16.0.0/24')!, at: 'vxlanNetwork (default 172.16.0.0/24)' }];
  // The tunnel addresses gluetun uses: the given ones, or the provider's default (nordvpn 10.5.0.2/32, protonvpn 10.2.0.2/32).
  const defaults = wireguardRow?.wireguard?.defaultAddresses;
  const tunnel = input.wireguardAddresses === undefined && defaults
    ? defaults.map((a) => ({ value: parseCidr(a)!, at: `wireguardAddresses (${wireguardRow!.gluetunName}'s default ${a})` }))
    : locatedCidrs(input, 'wireguardAddresses');
  // A default route is reported as such, not as an overlap with everything.
  for (const o of findOverlaps([...cluster, ...nodes, ...vxLocated, ...tunnel].filter((c) => c.value.prefix > 0))) {
    const [a, b] = [o.a.at, o.b.at].sort();
    // A node network that contains the cluster's (a broad LAN) is harmless: both are kept local alike.
    if (!/^(vxlanNetwork|wireguardAddresses)/.test(a) && !/^(vxlanNetwork|wireguardAddresses)/.test(b) && !(a.startsWith('clusterCidrs') && b.startsWith('clusterCidrs'))) continue;
    if (a.startsWith('clusterCidrs') && b.startsWith('clusterCidrs')) {
      push(o.b.at, 'overlap', `overlaps ${o.a.at}: the cluster CIDRs must be distinct`);
    } else {
      // A default (not written by the user) is reported at the user's prop it collides with.
      const [at, other] = / \(/.test(o.b.at) ? [o.a.at, o.b.at] : [o.b.at, o.a.at];
      const tunnelPair = o.b.at.startsWith('wireguardAddresses') || o.a.at.startsWith('wireguardAddresses');
      push(at, 'overlap', `overlaps ${other}: ${tunnelPair ? 'FIREWALL_OUTBOUND_SUBNETS must not overlap the tunnel (traffic to the tunnel gateway, such as NAT-PMP port forwarding, would leave by eth0)' : 'the VXLAN, cluster and node networks must be distinct'}`);
    }
  }
  if (typeof input.clusterDnsIp === 'string') {
    const ip = parseIp(input.clusterDnsIp);
    if (ip && !cluster.some((c) => cidrContainsIp(c.value, ip))) push('clusterDnsIp', 'outside', `expected the kube-dns ClusterIP inside the cluster CIDRs, ${received(input.clusterDnsIp)}`);
  } else if (input.clusterDnsIp === undefined && Array.isArray(input.clusterCidrs)) {
    // The same default the render takes (parseCidr reads any value; a malformed one is the schema's to report).
    // Reported at the prop the user wrote (issue 47): clusterDnsIp is a default they may never have heard of.
    const cidrs = input.clusterCidrs as unknown[];
    if (cidrs.length > 0 && clusterDnsIpOf({ clusterCidrs: cidrs as string[] }) === undefined) {
      if (cidrs.length < 2) push('clusterCidrs', 'service-cidr', `has no service CIDR to take the kube-dns address from: add the cluster's service CIDR as clusterCidrs[1] (k3s: 10.43.0.0/16, kubeadm: 10.96.0.0/12; kube-dns is its .10), or set clusterDnsIp to the kube-dns ClusterIP (kubectl -n kube-system get service kube-dns)`);
      else push('clusterCidrs[1]', 'service-cidr', 'is not an IPv4 service CIDR, and kube-dns\'s default address (the service CIDR\'s .10) is taken from an IPv4 one: set clusterDnsIp to the kube-dns ClusterIP (kubectl -n kube-system get service kube-dns), or put the IPv4 service CIDR at clusterCidrs[1]');
    }
  }
}

/**
 * Whether gluetun keeps port-forwarding state under `/gluetun` for the provider that forwards the port (the custom
 * provider's `portForwarding.provider`, else the VPN provider): only private internet access, whose port is kept for
 * 60 days in `/gluetun/piaportforward.json` (internal/provider/privateinternetaccess/provider.go:25 at v3.41.1).
 * ProtonVPN, Perfect Privacy and PrivateVPN ask for a port at every connection and write nothing there; the port
 * itself goes to `/tmp/gluetun/forwarded_port` (settings/portforward.go:117).
 */
export function keepsPortForwardState(vpnProvider: unknown, pf: { provider?: unknown } | undefined): boolean {
  if (!pf) return false;
  const row = typeof vpnProvider === 'string' ? providerRow(vpnProvider) : undefined;
  const provider = row?.gluetunName === 'custom' ? providerName(pf.provider) : row?.gluetunName;
  return provider === 'private internet access';
}

function stateClaimWarnings(input: Record<string, unknown>): Problem[] {
  const pf = input.portForwarding;
  if (!isRecord(pf) || !keepsPortForwardState(input.vpnProvider, pf)) return [];
  const claim = isRecord(pf.stateClaim) ? pf.stateClaim : {};
  if (claim.existingClaim !== undefined || claim.storageClassName !== undefined) return [];
  return [{
    path: 'portForwarding.stateClaim.storageClassName',
    code: 'default-storage-class',
    message: 'the claim for gluetun\'s /gluetun (PIA keeps its forwarded port there) names no storage class: it binds only where the cluster has a default StorageClass; k0s and kubeadm install none, and there the claim stays Pending and the gateway never starts. Set storageClassName (kubectl get storageclass) or existingClaim',
  }];
}

/** Validates VpnGateway props: the schema, the provider matrix and the network, all problems at once. */
export function checkVpnGateway(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: VpnGatewayProps } {
  const parsed = parseWith<VpnGatewayProps>(vpnGatewaySchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  if (isRecord(input)) checkGateway(input, problems);
  const filters = isRecord(input) ? serverFilterFindings(input, !isRecord(input.images) || input.images.gluetun === undefined || input.images.gluetun === DEFAULT_IMAGES.gluetun) : { problems: [], warnings: [] };
  problems.push(...filters.problems);
  const warnings = isRecord(input) ? [...ipv6Warnings(input), ...(problems.length === 0 ? stateClaimWarnings(input) : []), ...filters.warnings] : [];
  return { problems: redactProblems(sortProblems(problems)), warnings: redactProblems(warnings), value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}
