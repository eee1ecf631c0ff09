/**
 * What gluetun v3.41 accepts, per provider: one data table (research/vpn-gateway.md §1, from gluetun's
 * settings/provider.go, wireguard.go, wireguardselection.go, serverselection.go and portforward.go).
 */

/** The location filters tunnelwright exposes, and gluetun's variable for each. */
export const LOCATION_FILTERS = {
  serverCountries: 'SERVER_COUNTRIES',
  serverRegions: 'SERVER_REGIONS',
  serverCities: 'SERVER_CITIES',
  serverHostnames: 'SERVER_HOSTNAMES',
  serverNames: 'SERVER_NAMES',
} as const;
export type LocationFilter = keyof typeof LOCATION_FILTERS;

export interface ProviderWireguard {
  /** `WIREGUARD_ADDRESSES`. */
  readonly addresses: 'required' | 'optional';
  /** gluetun's address when `WIREGUARD_ADDRESSES` is not set (settings/wireguard.go `setDefaults`). */
  readonly defaultAddresses?: readonly string[];
  /** `WIREGUARD_PRESHARED_KEY`: checked by gluetun (required) or optional (gluetun validates and uses one when given). */
  readonly presharedKey: 'required' | 'optional';
  /** `WIREGUARD_ENDPOINT_PORT`: must not be set, any port, required, or one of a list. */
  readonly endpointPort: 'forbidden' | 'any' | 'required' | readonly number[];
  /** The port the tunnel uses when none is set (gluetun's `provider/<p>/connection.go`; pod-gateway's VPN_TRAFFIC_PORT). */
  readonly defaultPort: number;
}

/** OpenVPN over UDP (the only protocol tunnelwright sets) in gluetun v3.41 (settings/openvpnselection.go). */
export interface ProviderOpenvpn {
  /** The UDP port when `OPENVPN_ENDPOINT_PORT` is not set (`provider/<p>/connection.go`). */
  readonly defaultPort: number;
  /** `OPENVPN_ENDPOINT_PORT`: refused by gluetun (forbidden), or one of a list. */
  readonly endpointPort: 'forbidden' | readonly number[];
}

export interface ProviderRow {
  /** `VPN_SERVICE_PROVIDER`. */
  readonly gluetunName: string;
  /** Absent: gluetun refuses this provider over WireGuard (`noWireguard` says what to do instead). */
  readonly wireguard?: ProviderWireguard;
  /** Why WireGuard is refused, and the way to do it. */
  readonly noWireguard?: string;
  /** OpenVPN, or absent when tunnelwright does not offer OpenVPN for it (`noOpenvpn` may say why). */
  readonly openvpn?: ProviderOpenvpn;
  /** Why OpenVPN is refused, and the way to do it. */
  readonly noOpenvpn?: string;
  readonly filters: readonly LocationFilter[];
  /** `VPN_PORT_FORWARDING=on` works natively (for these VPN types). */
  readonly nativePortForwarding: readonly ('wireguard' | 'openvpn')[];
}

const ALL_BUT_NAMES: readonly LocationFilter[] = ['serverCountries', 'serverRegions', 'serverCities', 'serverHostnames'];

export const PROVIDERS: Readonly<Record<string, ProviderRow>> = {
  nordvpn: { gluetunName: 'nordvpn', wireguard: { addresses: 'optional', defaultAddresses: ['10.5.0.2/32'], presharedKey: 'optional', endpointPort: 'forbidden', defaultPort: 51820 }, openvpn: { defaultPort: 1194, endpointPort: 'forbidden' }, filters: ALL_BUT_NAMES, nativePortForwarding: [] },
  protonvpn: { gluetunName: 'protonvpn', wireguard: { addresses: 'optional', defaultAddresses: ['10.2.0.2/32'], presharedKey: 'optional', endpointPort: 'forbidden', defaultPort: 51820 }, openvpn: { defaultPort: 1194, endpointPort: [80, 443, 1194, 4569, 5060, 51820] }, filters: [...ALL_BUT_NAMES, 'serverNames'], nativePortForwarding: ['wireguard', 'openvpn'] },
  mullvad: { gluetunName: 'mullvad', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: 'any', defaultPort: 51820 }, filters: ['serverCountries', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  surfshark: { gluetunName: 'surfshark', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: 'forbidden', defaultPort: 51820 }, openvpn: { defaultPort: 1194, endpointPort: 'forbidden' }, filters: ALL_BUT_NAMES, nativePortForwarding: [] },
  ivpn: { gluetunName: 'ivpn', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: [53, 2049, 2050, 30587, 41893, 48574, 58237], defaultPort: 58237 }, openvpn: { defaultPort: 1194, endpointPort: [53, 1194, 2049, 2050] }, filters: ['serverCountries', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  // The wiki says the preshared key "MUST be set"; gluetun's code does not check it: following the code.
  windscribe: { gluetunName: 'windscribe', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: [53, 80, 123, 443, 1194, 65142], defaultPort: 1194 }, openvpn: { defaultPort: 1194, endpointPort: [53, 80, 123, 443, 1194, 54783] }, filters: ['serverRegions', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  airvpn: {
    gluetunName: 'airvpn',
    wireguard: { addresses: 'required', presharedKey: 'required', endpointPort: [1637, 47107], defaultPort: 1637 },
    noOpenvpn: 'gluetun refuses airvpn over OpenVPN without a client certificate and key (settings/openvpn.go: validateOpenVPNClientCertificate/Key), which tunnelwright does not model: use vpnType "wireguard" (wireguardPrivateKeySecret, wireguardPresharedKeySecret, wireguardAddresses from your AirVPN WireGuard config)',
    filters: ['serverCountries', 'serverRegions', 'serverCities', 'serverNames', 'serverHostnames'],
    nativePortForwarding: [],
  },
  fastestvpn: { gluetunName: 'fastestvpn', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: 'forbidden', defaultPort: 51820 }, openvpn: { defaultPort: 4443, endpointPort: 'forbidden' }, filters: ['serverCountries', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  'private internet access': {
    gluetunName: 'private internet access',
    noWireguard: 'gluetun has no WireGuard support for private internet access ("native support cannot be added"): use vpnProvider "custom" with the WireGuard config from pia-wg-config (vpnEndpointIp, vpnEndpointPort, wireguardPublicKey, wireguardAddresses), one serverNames entry, and portForwarding { provider: "private internet access", credentialsSecret }',
    // 1197 with gluetun's default "strong" encryption preset (1198 with "normal", which tunnelwright does not set).
    openvpn: { defaultPort: 1197, endpointPort: [53, 1194, 1197, 1198, 8080, 9201] },
    filters: ['serverRegions', 'serverNames', 'serverHostnames'],
    nativePortForwarding: ['openvpn'],
  },
  custom: { gluetunName: 'custom', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: 'required', defaultPort: 51820 }, filters: ['serverNames'], nativePortForwarding: [] },
};

/** The alias users type for private internet access. */
export const PROVIDER_ALIASES: Readonly<Record<string, string>> = { pia: 'private internet access' };

/** gluetun's name for a provider as the user wrote it (its alias resolved); anything that is not text, as it is. */
export function providerName<T>(name: T): T | string {
  return typeof name === 'string' ? PROVIDER_ALIASES[name] ?? name : name;
}

/** Edit distance (insertions, deletions, substitutions) between two short strings; O(|a|·|b|). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The provider (or alias) a misspelt name most likely means: the nearest by edit distance over the provider table,
 * case and spaces ignored, within a third of its length; undefined when none is that near.
 */
export function nearestProvider(name: string): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, '');
  const given = norm(name).slice(0, 64);
  let best: { name: string; d: number } | undefined;
  for (const candidate of [...Object.keys(PROVIDERS), ...Object.keys(PROVIDER_ALIASES)]) {
    const d = editDistance(given, norm(candidate));
    if (d <= Math.max(1, Math.floor(norm(candidate).length / 3)) && (!best || d < best.d)) best = { name: candidate, d };
  }
  return best?.name;
}

/** Port forwarding providers gluetun accepts with the custom provider (`VPN_PORT_FORWARDING_PROVIDER`). */
export const CUSTOM_PORT_FORWARDING_PROVIDERS = ['perfect privacy', 'private internet access', 'privatevpn', 'protonvpn'] as const;

/** Every environment variable gluetun v3.41 reads that tunnelwright sets (a typo'd name is a test failure). */
export const GLUETUN_ENV = new Set([
  'VPN_SERVICE_PROVIDER', 'VPN_TYPE', 'VPN_INTERFACE',
  'WIREGUARD_PRIVATE_KEY_SECRETFILE', 'WIREGUARD_PRESHARED_KEY_SECRETFILE', 'WIREGUARD_ADDRESSES', 'WIREGUARD_PUBLIC_KEY',
  'WIREGUARD_ENDPOINT_IP', 'WIREGUARD_ENDPOINT_PORT', 'WIREGUARD_MTU',
  'OPENVPN_USER_SECRETFILE', 'OPENVPN_PASSWORD_SECRETFILE', 'OPENVPN_ENDPOINT_PORT',
  'SERVER_COUNTRIES', 'SERVER_REGIONS', 'SERVER_CITIES', 'SERVER_HOSTNAMES', 'SERVER_NAMES',
  'FIREWALL_OUTBOUND_SUBNETS', 'FIREWALL_INPUT_PORTS',
  'HEALTH_SERVER_ADDRESS', 'HEALTH_RESTART_VPN',
  'DNS_SERVER', 'DNS_UPSTREAM_RESOLVER_TYPE', 'DNS_ADDRESS',
  'HTTP_CONTROL_SERVER_ADDRESS', 'HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH', 'HTTP_CONTROL_SERVER_AUTH_DEFAULT_ROLE',
  'VPN_PORT_FORWARDING', 'VPN_PORT_FORWARDING_PROVIDER', 'VPN_PORT_FORWARDING_USERNAME_SECRETFILE', 'VPN_PORT_FORWARDING_PASSWORD_SECRETFILE',
  'VPN_PORT_FORWARDING_UP_COMMAND', 'VPN_PORT_FORWARDING_DOWN_COMMAND',
]);
