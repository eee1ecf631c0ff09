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
  /** `WIREGUARD_PRESHARED_KEY`: checked by gluetun (required), used (optional), or not a thing for the provider (unsupported). */
  readonly presharedKey: 'required' | 'optional' | 'unsupported';
  /** `WIREGUARD_ENDPOINT_PORT`: must not be set, any port, required, or one of a list. */
  readonly endpointPort: 'forbidden' | 'any' | 'required' | readonly number[];
  /** The port the tunnel uses when none is set (pod-gateway's VPN_TRAFFIC_PORT). */
  readonly defaultPort: number;
}

export interface ProviderRow {
  /** `VPN_SERVICE_PROVIDER`. */
  readonly gluetunName: string;
  /** Absent: gluetun refuses this provider over WireGuard (`why` says what to do instead). */
  readonly wireguard?: ProviderWireguard;
  /** Why WireGuard is refused, and the way to do it. */
  readonly noWireguard?: string;
  /** OpenVPN: the default transport port (UDP), or absent when tunnelwright does not offer OpenVPN for it. */
  readonly openvpnPort?: number;
  readonly filters: readonly LocationFilter[];
  /** `VPN_PORT_FORWARDING=on` works natively (for these VPN types). */
  readonly nativePortForwarding: readonly ('wireguard' | 'openvpn')[];
}

const ALL_BUT_NAMES: readonly LocationFilter[] = ['serverCountries', 'serverRegions', 'serverCities', 'serverHostnames'];

export const PROVIDERS: Readonly<Record<string, ProviderRow>> = {
  nordvpn: { gluetunName: 'nordvpn', wireguard: { addresses: 'optional', presharedKey: 'unsupported', endpointPort: 'forbidden', defaultPort: 51820 }, openvpnPort: 1194, filters: ALL_BUT_NAMES, nativePortForwarding: [] },
  protonvpn: { gluetunName: 'protonvpn', wireguard: { addresses: 'optional', presharedKey: 'unsupported', endpointPort: 'forbidden', defaultPort: 51820 }, openvpnPort: 1194, filters: ALL_BUT_NAMES, nativePortForwarding: ['wireguard', 'openvpn'] },
  mullvad: { gluetunName: 'mullvad', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: 'any', defaultPort: 51820 }, filters: ['serverCountries', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  surfshark: { gluetunName: 'surfshark', wireguard: { addresses: 'required', presharedKey: 'unsupported', endpointPort: 'forbidden', defaultPort: 51820 }, openvpnPort: 1194, filters: ALL_BUT_NAMES, nativePortForwarding: [] },
  ivpn: { gluetunName: 'ivpn', wireguard: { addresses: 'required', presharedKey: 'unsupported', endpointPort: [53, 2049, 2050, 30587, 41893, 48574, 58237], defaultPort: 2049 }, openvpnPort: 2049, filters: ['serverCountries', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  // The wiki says the preshared key "MUST be set"; gluetun's code does not check it: following the code.
  windscribe: { gluetunName: 'windscribe', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: [53, 80, 123, 443, 1194, 65142], defaultPort: 443 }, openvpnPort: 443, filters: ['serverRegions', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  airvpn: { gluetunName: 'airvpn', wireguard: { addresses: 'required', presharedKey: 'required', endpointPort: [1637, 47107], defaultPort: 1637 }, openvpnPort: 443, filters: ['serverCountries', 'serverRegions', 'serverCities', 'serverNames', 'serverHostnames'], nativePortForwarding: [] },
  fastestvpn: { gluetunName: 'fastestvpn', wireguard: { addresses: 'required', presharedKey: 'unsupported', endpointPort: 'forbidden', defaultPort: 51820 }, openvpnPort: 4443, filters: ['serverCountries', 'serverCities', 'serverHostnames'], nativePortForwarding: [] },
  'private internet access': {
    gluetunName: 'private internet access',
    noWireguard: 'gluetun has no WireGuard support for private internet access ("native support cannot be added"): use vpnProvider "custom" with the WireGuard config from pia-wg-config (vpnEndpointIp, vpnEndpointPort, wireguardPublicKey, wireguardAddresses), one serverNames entry, and portForwarding { provider: "private internet access", credentialsSecret }',
    openvpnPort: 1198,
    filters: ['serverRegions', 'serverNames', 'serverHostnames'],
    nativePortForwarding: ['openvpn'],
  },
  custom: { gluetunName: 'custom', wireguard: { addresses: 'required', presharedKey: 'optional', endpointPort: 'required', defaultPort: 51820 }, filters: ['serverNames'], nativePortForwarding: [] },
};

/** The alias users type for private internet access. */
export const PROVIDER_ALIASES: Readonly<Record<string, string>> = { pia: 'private internet access' };

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
  'HTTP_CONTROL_SERVER_ADDRESS', 'HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH',
  'VPN_PORT_FORWARDING', 'VPN_PORT_FORWARDING_PROVIDER', 'VPN_PORT_FORWARDING_USERNAME', 'VPN_PORT_FORWARDING_PASSWORD', 'VPN_PORT_FORWARDING_UP_COMMAND',
]);
