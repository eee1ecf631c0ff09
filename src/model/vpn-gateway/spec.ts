import { Problem } from '../../errors';
import { Claim } from '../../invariants';
import { parseCidr } from '../net';
import { LOCATION_FILTERS, LocationFilter, providerName } from '../vpn-providers';
import { DEFAULT_PROBE_URLS, pinnedServer } from '../vpn-gateway-failover';
import { checkVpnGateway, clusterDnsIpOf, keepsPortForwardState, providerRow } from './checks';
import { APP_API_PORTS, CredentialsSecretRef, DEFAULT_IMAGES, PortForwardingApp, PortForwardingProps, servedPorts, VpnGatewayProps, VpnServerSelection } from './props';

/** Istio ambient's ztunnel address, kept local with `mesh: 'istio-ambient'`. */
export const ZTUNNEL_CIDR = '169.254.7.127/32';
/** gluetun's WireGuard MTU, pinned (the default changes on master). */
export const WIREGUARD_MTU = 1320;
/** The VXLAN address a port-forwarding workload gets (pod-gateway's dynamic range starts at .20). */
export const FORWARDED_WORKLOAD_HOST = 5;

/** A Secret key with its default applied. */
export interface SecretKey {
  readonly name: string;
  readonly key: string;
}

/** A Secret's user and password keys with their defaults applied (`userKey` absent where the app reads no user). */
export interface SecretCredentials {
  readonly name: string;
  readonly userKey?: string;
  readonly passwordKey: string;
}

/** Port forwarding, parsed: the forwarding provider's gluetun name, the Secrets' keys and the app's URL defaulted. */
export interface PortForwardingSpec {
  /** gluetun's `VPN_PORT_FORWARDING_PROVIDER` (aliases resolved), if given. */
  readonly provider?: string;
  readonly credentials?: SecretCredentials;
  readonly app?: PortForwardingApp;
  /** The app's API URL in the pod (qBittorrent, Transmission, Deluge: `appUrl` or the app's default). */
  readonly appUrl?: string;
  /** The app's login (Deluge's: the password only). */
  readonly appCredentials?: SecretCredentials;
  readonly appApiKey?: SecretKey;
  readonly appContainer?: string;
  readonly command?: string;
  readonly controlApiKey?: SecretKey;
  /** port-sync's period (15 unless given). */
  readonly syncPeriodSeconds: number;
  /** `syncPeriodSeconds` as given (slskd's polling interval is its own unless given). */
  readonly syncPeriodGiven?: number;
  readonly toPort?: number;
  /** With `toPort` or `app`: the routed workload that receives the forwarded port, its namespace and fixed address. */
  readonly workload?: { readonly name: string; readonly namespace: string; readonly address: string };
  /** Ports the workload's pod serves itself (`servedPorts`). */
  readonly servedPorts: readonly number[];
  /** The claim for gluetun's /gluetun (private internet access only): its name, and how to create it unless it exists. */
  readonly stateClaim?: { readonly name: string; readonly create?: { readonly size: string; readonly storageClassName?: string } };
}

/**
 * VpnGateway's props parsed once (`parseVpnGateway`): defaults applied, addresses parsed and every fact the gateway,
 * its routes, its claims and its alerts derive from them computed here. The render functions take only this.
 */
export interface VpnGatewaySpec {
  readonly name: string;
  readonly namespace: string;
  readonly cluster: string;
  readonly vxlanId: number;
  readonly vxlanPort: number;
  /** First three octets of the VXLAN /24 (`172.16.0`). */
  readonly vxlanPrefix: string;
  readonly vxlanMtu: number;
  readonly clusterDnsIp: string;
  readonly clusterDomain: string;
  readonly dnssec: boolean;
  /** Cluster, node (and ztunnel) IPv4 CIDRs: never routed through the VPN (pod-gateway is IPv4-only). */
  readonly localCidrs: string[];
  readonly podLabels: Record<string, string>;
  readonly images: { gluetun: string; podGateway: string; portSync: string };
  /** The VPN server's port (`VPN_TRAFFIC_PORT`): given, or the provider's default for the VPN type. */
  readonly vpnTrafficPort: number;
  /** gluetun's provider name (aliases resolved). */
  readonly provider: string;
  readonly vpnType: 'wireguard' | 'openvpn';
  readonly wireguard?: {
    readonly privateKey: SecretKey;
    readonly presharedKey?: SecretKey;
    readonly addresses?: readonly string[];
    /** custom only. */
    readonly endpointIp?: string;
    readonly publicKey?: string;
    readonly endpointPort?: number;
  };
  readonly openvpn?: { readonly credentials: SecretCredentials; readonly endpointPort?: number };
  /** gluetun's server filters, as its variables: `[SERVER_COUNTRIES, 'Switzerland,Austria']`. */
  readonly serverFilters: readonly (readonly [string, string])[];
  readonly dnsAddress: string;
  /** The routed workloads' kill switch: a CiliumNetworkPolicy under Cilium, else a NetworkPolicy. */
  readonly killSwitchFlavor: 'cilium' | 'kubernetes';
  readonly createNamespace: boolean;
  readonly tunDevice: NonNullable<VpnGatewayProps['tunDevice']>;
  readonly portForwarding?: PortForwardingSpec;
  /** With `standby`: the standby pod's own key (and addresses, preshared key) and the agent's timing. */
  readonly standby?: StandbySpec;
  /** What the gateway claims across an App: its VXLAN id in its cluster, its key Secret, a pinned server with its credential. */
  readonly claims: Claim[];
}

/** The standby, parsed: its Secrets' keys defaulted, the agent's timing defaulted. */
export interface StandbySpec {
  /** WireGuard: the standby's own key. */
  readonly privateKey?: SecretKey;
  /** OpenVPN: the standby's own login (or, with `sharedOpenvpnLogin`, the active pod's). */
  readonly openvpnCredentials?: SecretCredentials;
  readonly presharedKey?: SecretKey;
  readonly addresses?: readonly string[];
  readonly leaseSeconds: number;
  readonly acquireAfter: number;
  readonly releaseAfter: number;
  /** The agent's probe targets through the tunnel (healthy when one answers), or undefined for none (`probeUrl: false`). */
  readonly probeUrls?: readonly string[];
  /** The standby's gluetun server filters, as its variables: `standby.servers`' own, or the gateway's (`serverFilters`). */
  readonly serverFilters: readonly (readonly [string, string])[];
  /** custom: the standby's server (`standby.servers`' endpoint, or the gateway's: refused by the checks). */
  readonly endpointIp?: string;
  readonly publicKey?: string;
}

/** The VXLAN UDP port: Cilium and flannel own 8472 and Calico's VXLAN owns 4789. */
export function vxlanPortFor(cni: VpnGatewayProps['cni']): number {
  return cni === 'calico' ? 8472 : 4789;
}

/** Parses VpnGateway props: the spec, or the problems (all at once); warnings either way. */
export function parseVpnGateway(input: unknown): { problems: Problem[]; warnings: Problem[]; spec?: VpnGatewaySpec } {
  const checked = checkVpnGateway(input);
  return { problems: checked.problems, warnings: checked.warnings, ...(checked.value ? { spec: specOf(checked.value) } : {}) };
}

/** The spec of props `checkVpnGateway` accepted. */
function specOf(props: VpnGatewayProps): VpnGatewaySpec {
  const name = props.name ?? 'vpn-gateway';
  const namespace = props.namespace ?? 'vpn-gateway';
  const cluster = props.cluster ?? 'default';
  const row = providerRow(props.vpnProvider)!;
  const vpnType = props.vpnType ?? 'wireguard';
  const vx = parseCidr(props.vxlanNetwork ?? '172.16.0.0/24')!;
  const vxlanPrefix = [24n, 16n, 8n].map((s) => String((vx.start >> s) & 255n)).join('.');
  const podMtu = props.podMtu ?? 1450;
  const vxlanId = props.vxlanId ?? 42;
  const secretKey = (ref: { name: string; key?: string }, key: string): SecretKey => ({ name: ref.name, key: ref.key ?? key });
  const wireguard = vpnType === 'wireguard' ? {
    privateKey: secretKey(props.wireguardPrivateKeySecret!, 'private-key'),
    ...(props.wireguardPresharedKeySecret ? { presharedKey: secretKey(props.wireguardPresharedKeySecret, 'preshared-key') } : {}),
    ...(props.wireguardAddresses ? { addresses: props.wireguardAddresses } : {}),
    ...(props.vpnEndpointIp !== undefined ? { endpointIp: props.vpnEndpointIp } : {}),
    ...(props.wireguardPublicKey !== undefined ? { publicKey: props.wireguardPublicKey } : {}),
    ...(props.vpnEndpointPort !== undefined ? { endpointPort: props.vpnEndpointPort } : {}),
  } : undefined;
  const o = props.openvpnCredentialsSecret;
  const credentialsOf = (c: CredentialsSecretRef): SecretCredentials => ({ name: c.name, userKey: c.userKey ?? 'username', passwordKey: c.passwordKey ?? 'password' });
  const openvpn = vpnType === 'openvpn' ? {
    credentials: credentialsOf(o!),
    ...(props.vpnEndpointPort !== undefined ? { endpointPort: props.vpnEndpointPort } : {}),
  } : undefined;
  const spec: Omit<VpnGatewaySpec, 'claims'> = {
    name,
    namespace,
    cluster,
    vxlanId,
    vxlanPort: vxlanPortFor(props.cni),
    vxlanPrefix,
    vxlanMtu: vpnType === 'wireguard' ? Math.min(WIREGUARD_MTU, podMtu - 50) : podMtu - 50,
    clusterDnsIp: clusterDnsIpOf(props)!,
    clusterDomain: props.clusterDomain ?? 'cluster.local',
    dnssec: props.dnssec ?? true,
    localCidrs: [...props.clusterCidrs, ...props.nodeCidrs, ...(props.mesh === 'istio-ambient' ? [ZTUNNEL_CIDR] : [])].filter((c) => parseCidr(c)!.family === 4),
    podLabels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'vpn-gateway', 'app.kubernetes.io/managed-by': 'tunnelwright' },
    images: { gluetun: props.images?.gluetun ?? DEFAULT_IMAGES.gluetun, podGateway: props.images?.podGateway ?? DEFAULT_IMAGES.podGateway, portSync: props.images?.portSync ?? DEFAULT_IMAGES.portSync },
    vpnTrafficPort: props.vpnEndpointPort ?? (vpnType === 'wireguard' ? row.wireguard!.defaultPort : row.openvpn!.defaultPort),
    provider: row.gluetunName,
    vpnType,
    ...(wireguard ? { wireguard } : {}),
    ...(openvpn ? { openvpn } : {}),
    serverFilters: filterVariables(props),
    dnsAddress: props.dnsAddress ?? '1.1.1.1',
    killSwitchFlavor: props.cni === 'cilium' ? 'cilium' : 'kubernetes',
    createNamespace: props.createNamespace !== false,
    tunDevice: props.tunDevice ?? 'runtime',
    ...(props.standby ? { standby: {
      // checkVpnGateway requires the standby's key with WireGuard and its login with OpenVPN.
      ...(wireguard ? { privateKey: secretKey(props.standby.wireguardPrivateKeySecret!, 'private-key') } : {}),
      ...(openvpn ? { openvpnCredentials: credentialsOf(props.standby.openvpnCredentialsSecret!) } : {}),
      ...(props.standby.wireguardPresharedKeySecret ? { presharedKey: secretKey(props.standby.wireguardPresharedKeySecret, 'preshared-key') } : {}),
      ...(props.standby.wireguardAddresses ? { addresses: props.standby.wireguardAddresses } : {}),
      leaseSeconds: props.standby.leaseSeconds ?? 15,
      acquireAfter: props.standby.acquireAfter ?? 3,
      releaseAfter: props.standby.releaseAfter ?? 3,
      ...(props.standby.probeUrl === false ? {} : { probeUrls: typeof props.standby.probeUrl === 'string' ? [props.standby.probeUrl] : props.standby.probeUrl ?? DEFAULT_PROBE_URLS }),
      // standby.servers replaces the gateway's selection as a whole; without it the standby takes the gateway's.
      serverFilters: filterVariables(props.standby.servers ?? props),
      ...(wireguard && (props.standby.servers ?? props).vpnEndpointIp !== undefined ? { endpointIp: (props.standby.servers ?? props).vpnEndpointIp } : {}),
      ...(wireguard && (props.standby.servers ?? props).wireguardPublicKey !== undefined ? { publicKey: (props.standby.servers ?? props).wireguardPublicKey } : {}),
    } } : {}),
    ...(props.portForwarding ? { portForwarding: portForwardingSpec(props, props.portForwarding, `${vxlanPrefix}.${FORWARDED_WORKLOAD_HOST}`, name) } : {}),
  };
  return { ...spec, claims: claimsOf(props, spec) };
}

/** gluetun's server filter variables of a selection (the gateway's props, or `standby.servers`): `[SERVER_CITIES, 'Zurich,Geneva']`. */
function filterVariables(sel: VpnServerSelection): (readonly [string, string])[] {
  return (Object.keys(LOCATION_FILTERS) as LocationFilter[]).flatMap((filter) => {
    const v = sel[filter];
    return v && v.length > 0 ? [[LOCATION_FILTERS[filter], v.join(',')] as const] : [];
  });
}

function portForwardingSpec(props: VpnGatewayProps, pf: PortForwardingProps, address: string, gateway: string): PortForwardingSpec {
  const app = pf.app;
  const credentials = (c: NonNullable<PortForwardingProps['appCredentialsSecret']>, user: boolean): SecretCredentials => ({ name: c.name, ...(user ? { userKey: c.userKey ?? 'username' } : {}), passwordKey: c.passwordKey ?? 'password' });
  const state = keepsPortForwardState(props.vpnProvider, pf) ? pf.stateClaim ?? {} : undefined;
  return {
    ...(pf.provider !== undefined ? { provider: providerName(pf.provider) } : {}),
    ...(pf.credentialsSecret ? { credentials: credentials(pf.credentialsSecret, true) } : {}),
    ...(app !== undefined ? { app } : {}),
    ...(app !== undefined && app !== 'command' && app !== 'slskd' ? { appUrl: pf.appUrl ?? `http://127.0.0.1:${APP_API_PORTS[app]}` } : {}),
    // Deluge's Web UI has a password only: a username key is not asked for (a missing key would stop the pod).
    ...(pf.appCredentialsSecret ? { appCredentials: credentials(pf.appCredentialsSecret, app !== 'deluge') } : {}),
    ...(pf.appApiKeySecret ? { appApiKey: { name: pf.appApiKeySecret.name, key: pf.appApiKeySecret.key ?? 'api-key' } } : {}),
    ...(pf.appContainer !== undefined ? { appContainer: pf.appContainer } : {}),
    ...(pf.command !== undefined ? { command: pf.command } : {}),
    ...(pf.controlApiKeySecret ? { controlApiKey: { name: pf.controlApiKeySecret.name, key: pf.controlApiKeySecret.key ?? 'api-key' } } : {}),
    syncPeriodSeconds: pf.syncPeriodSeconds ?? 15,
    ...(pf.syncPeriodSeconds !== undefined ? { syncPeriodGiven: pf.syncPeriodSeconds } : {}),
    ...(pf.toPort !== undefined ? { toPort: pf.toPort } : {}),
    // checkVpnGateway requires workload and workloadNamespace with toPort or app.
    ...((pf.toPort !== undefined || app !== undefined) && pf.workload !== undefined ? { workload: { name: pf.workload, namespace: pf.workloadNamespace!, address } } : {}),
    servedPorts: servedPorts(pf),
    ...(state ? { stateClaim: { name: state.existingClaim ?? `${gateway}-gluetun-state`, ...(state.existingClaim === undefined ? { create: { size: state.size ?? '64Mi', ...(state.storageClassName ? { storageClassName: state.storageClassName } : {}) } } : {}) } } : {}),
  };
}

/** The gateway's claims: its VXLAN id in its cluster, its key Secret, and the one server it is pinned to with its credential. */
function claimsOf(props: VpnGatewayProps, f: Omit<VpnGatewaySpec, 'claims'>): Claim[] {
  const claims: Claim[] = [{ key: `cluster/${f.cluster}/vxlan/${f.vxlanId}`, path: 'vxlanId',
    what: `VXLAN id ${f.vxlanId}${props.vxlanId === undefined ? ' (the default)' : ''} in cluster "${f.cluster}"`,
    remedy: 'set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' }];
  // Each member's key and pinned server with its credential: the gateway's, and with standby the standby's own (its
  // key or login, its servers: another gateway of the App on them steals the standby's session as it would the holder's).
  const members = [
    { at: '', key: f.wireguard?.privateKey, login: f.openvpn?.credentials, sel: props as VpnServerSelection },
    ...(f.standby ? [{ at: 'standby.', key: f.standby.privateKey, login: f.standby.openvpnCredentials, sel: props.standby?.servers ?? props }] : []),
  ];
  for (const m of members) {
    const key = m.key;
    if (key) claims.push({ key: `cluster/${f.cluster}/wireguard-key/${f.namespace}/${key.name}/${key.key}`, path: `${m.at}wireguardPrivateKeySecret`, what: `WireGuard key ${f.namespace}/${key.name} (a key used by two gateways steals the session)`,
      remedy: 'give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' });
    // The one server the member is pinned to, and the prop that pins it (where a clash is reported).
    const pin = pinnedServer(m.sel);
    const within = m.at && props.standby?.servers ? 'standby.servers.' : '';
    const pinned = pin?.field === 'vpnEndpointIp' ? { server: `${pin.value}:${props.vpnEndpointPort}`, path: `${within}vpnEndpointIp` } : pin ? { server: pin.value, path: `${within}${pin.field}[0]` } : undefined;
    const credential = key ? `${f.namespace}/${key.name}/${key.key}` : m.login ? `${f.namespace}/${m.login.name}` : undefined;
    if (pinned && credential) claims.push({ key: `vpn-server/${f.provider}/${pinned.server}/${credential}`, path: pinned.path, what: `VPN server ${pinned.server} with the credential ${credential} (two gateways on one server and account steal each other's session)` });
  }
  return claims;
}
