import { Problem } from '../../errors';
import { isWireguardKey } from '../../keys';
import { locatedCidrs, isRecord, parseWith, redactProblems, received, sortProblems, KEY_FIELD_MESSAGE } from '../common';
import { isDnsLabel } from '../labels';
import { cidrContainsIp, findOverlaps, parseCidr, parseIp } from '../net';
import { serverFilterFindings } from '../server-filters';
import { CUSTOM_PORT_FORWARDING_PROVIDERS, LOCATION_FILTERS, LocationFilter, nearestProvider, PROVIDER_ALIASES, providerName, PROVIDERS, ProviderRow } from '../vpn-providers';
import { DEFAULT_IMAGES, PortForwardingProps, servedPorts, VpnGatewayProps } from './props';
import { vpnGatewaySchema } from './schema';
import { checkStandby, standbyServerFindings } from '../vpn-gateway-failover';

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
    for (const key of ['wireguardPrivateKeySecret', 'wireguardPresharedKeySecret', 'wireguardAddresses'] as const) {
      if (input[key] !== undefined) push(key, 'forbidden', 'a WireGuard setting, but vpnType is openvpn');
    }
  }
  if (row && vpnType === 'wireguard' && input.openvpnCredentialsSecret !== undefined) push('openvpnCredentialsSecret', 'forbidden', 'an OpenVPN setting, but vpnType is wireguard');
  checkServerSelection(input, '', row, vpnType as string, push);
  // The standby's own servers, checked as the gateway's (they replace them as a whole in the standby's pod).
  if (isRecord(input.standby) && isRecord(input.standby.servers)) checkServerSelection(input.standby.servers, 'standby.servers.', row, vpnType as string, push);
  if (input.dnsOverTls === true) push('dnsOverTls', 'dns-collision', "gluetun's DNS server (which DNS over TLS needs) binds :53 on every interface and collides with pod-gateway's dnsmasq, which routed pods need for cluster names; leave dnsOverTls off: DNS still leaves through the tunnel");
  checkPortForwarding(input, row, vpnType as string, push);
  problems.push(...checkStandby(input, isRecord(input.portForwarding) && keepsPortForwardState(input.vpnProvider, input.portForwarding), row?.wireguard?.addresses === 'required'));
  checkNetwork(input, row && vpnType === 'wireguard' ? row : undefined, push);
}

/**
 * A server selection (`VpnServerSelection`: the gateway's props, or `standby.servers`, at `at`): the provider's filters,
 * and custom's endpoint (required with custom over WireGuard, forbidden for any other provider).
 */
function checkServerSelection(sel: Record<string, unknown>, at: string, row: ProviderRow | undefined, vpnType: string, push: (path: string, code: string, message: string) => void): void {
  if (row && row.gluetunName === 'custom' && vpnType === 'wireguard' && row.wireguard) {
    if (sel.vpnEndpointIp === undefined) push(`${at}vpnEndpointIp`, 'required', 'required for custom: the server\'s IP address');
    if (sel.wireguardPublicKey === undefined) push(`${at}wireguardPublicKey`, 'required', 'required for custom: the server\'s public key');
  }
  if (row && vpnType === 'openvpn' && row.openvpn && sel.wireguardPublicKey !== undefined) push(`${at}wireguardPublicKey`, 'forbidden', 'a WireGuard setting, but vpnType is openvpn');
  if (row && row.gluetunName !== 'custom') {
    // Over OpenVPN a public key is reported once, as a WireGuard setting (above).
    for (const key of ['vpnEndpointIp', 'wireguardPublicKey'] as const) if (sel[key] !== undefined && !(key === 'wireguardPublicKey' && vpnType === 'openvpn' && row.openvpn)) push(`${at}${key}`, 'forbidden', `only for vpnProvider custom (gluetun takes ${row.gluetunName}'s from its server data)`);
  }
  if (typeof sel.vpnEndpointIp === 'string' && !parseIp(sel.vpnEndpointIp)) push(`${at}vpnEndpointIp`, 'ip', `expected an IP address, never a hostname (gluetun takes an IP), ${received(sel.vpnEndpointIp)}`);
  if (typeof sel.wireguardPublicKey === 'string' && !isWireguardKey(sel.wireguardPublicKey)) push(`${at}wireguardPublicKey`, 'key', KEY_FIELD_MESSAGE);
  if (row) {
    for (const filter of Object.keys(LOCATION_FILTERS) as LocationFilter[]) {
      if (sel[filter] === undefined) continue;
      if (!row.filters.includes(filter)) {
        const hint = row.gluetunName === 'windscribe' && filter === 'serverCountries' ? ': windscribe has no country data (use serverRegions)' : '';
        push(`${at}${filter}`, 'filter', `${row.gluetunName} has no ${LOCATION_FILTERS[filter]} filter; it has ${row.filters.join(', ')}${hint}`);
      }
    }
    if (row.gluetunName === 'custom' && Array.isArray(sel.serverNames) && sel.serverNames.length > 1) push(`${at}serverNames`, 'filter', `custom takes at most one server name, received ${sel.serverNames.length}`);
  }
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

/**
 * ProtonVPN forwards a port only to a client that asked for it when its credential was made, which synth cannot see
 * (the Secret's value is not read): over OpenVPN the username must end in `+pmp`, over WireGuard the key must come from
 * a configuration generated with NAT-PMP on. gluetun asks the server by NAT-PMP either way
 * (internal/provider/protonvpn/portforward.go at v3.41.1); without it no port comes, and VPNNoForwardedPort fires after
 * 15 minutes. With `custom`, the port-forwarding provider `protonvpn` is the same server and the same rule.
 */
function protonvpnWarnings(input: Record<string, unknown>): Problem[] {
  const pf = input.portForwarding;
  if (!isRecord(pf)) return [];
  const row = typeof input.vpnProvider === 'string' ? providerRow(input.vpnProvider) : undefined;
  const forwarder = row?.gluetunName === 'custom' ? providerName(pf.provider) : row?.gluetunName;
  if (forwarder !== 'protonvpn') return [];
  if ((input.vpnType ?? 'wireguard') === 'openvpn') {
    return [{
      path: 'openvpnCredentialsSecret',
      code: 'protonvpn-openvpn-pmp',
      message: `ProtonVPN forwards a port over OpenVPN only when the username ends in "+pmp" (your OpenVPN username with +pmp appended, e.g. "abc123+pmp"), on a P2P server; synth cannot read the Secret, so check its username key${isRecord(input.standby) ? ' (and the standby\'s, standby.openvpnCredentialsSecret: the standby gets a port only with +pmp too)' : ''}: without +pmp gluetun gets no port and VPNNoForwardedPort fires. Then acknowledge 'protonvpn-openvpn-pmp'`,
    }];
  }
  return [{
    path: 'wireguardPrivateKeySecret',
    code: 'protonvpn-wireguard-pmp',
    message: `ProtonVPN forwards a port over WireGuard only to a key from a configuration generated with "NAT-PMP (Port Forwarding)" turned on (ProtonVPN account > WireGuard), on a P2P server; synth cannot tell how the key${isRecord(input.standby) ? ' (or the standby\'s)' : ''} was made: one made without it never gets a port and VPNNoForwardedPort fires. Generate the configuration with NAT-PMP on if unsure, then acknowledge 'protonvpn-wireguard-pmp'`,
  }];
}

/** Validates VpnGateway props: the schema, the provider matrix and the network, all problems at once. */
export function checkVpnGateway(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: VpnGatewayProps } {
  const parsed = parseWith<VpnGatewayProps>(vpnGatewaySchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  if (isRecord(input)) checkGateway(input, problems);
  const pinnedImage = isRecord(input) && (!isRecord(input.images) || input.images.gluetun === undefined || input.images.gluetun === DEFAULT_IMAGES.gluetun);
  const filters = isRecord(input) ? serverFilterFindings(input, pinnedImage) : { problems: [], warnings: [] };
  // standby.servers against gluetun's server list as the gateway's filters, reported at their own path.
  const sbServers = isRecord(input) && isRecord(input.standby) && isRecord(input.standby.servers) ? input.standby.servers : undefined;
  const sbFilters = sbServers ? serverFilterFindings({ ...sbServers, vpnProvider: (input as Record<string, unknown>).vpnProvider, vpnType: (input as Record<string, unknown>).vpnType }, pinnedImage) : { problems: [], warnings: [] };
  const under = (ps: Problem[]) => ps.map((p) => ({ ...p, path: `standby.servers.${p.path}` }));
  const sameServer = isRecord(input) ? standbyServerFindings(input) : { problems: [], warnings: [] };
  problems.push(...filters.problems, ...under(sbFilters.problems), ...sameServer.problems);
  const all = isRecord(input) ? [...ipv6Warnings(input), ...(problems.length === 0 ? [...stateClaimWarnings(input), ...protonvpnWarnings(input), ...sameServer.warnings] : []), ...filters.warnings, ...under(sbFilters.warnings)] : [];
  // The codes the user read and accepted are not reported again (an unknown code is the schema's to refuse).
  const acknowledged = isRecord(input) && Array.isArray(input.acknowledge) ? input.acknowledge : [];
  const warnings = all.filter((w) => !acknowledged.includes(w.code));
  return { problems: redactProblems(sortProblems(problems)), warnings: redactProblems(warnings), value: problems.length === 0 && parsed.ok ? parsed.value : undefined };
}
