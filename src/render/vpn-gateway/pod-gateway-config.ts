import { FORWARDED_WORKLOAD_HOST, VpnGatewaySpec } from '../../model/vpn-gateway';

/** A settings file pod-gateway's scripts source (`/config/settings.sh`), each value double-quoted. */
export function settingsSh(lines: [string, string | number][]): string {
  return `# pod-gateway settings, written by tunnelwright\n${lines.map(([k, v]) => `${k}=${JSON.stringify(String(v))}`).join('\n')}\n`;
}

/**
 * The name `client_init.sh` looks the forwarded workload's pods up by in nat.conf. In Kubernetes it takes
 * `hostname | cut -d'-' -f1` (pod-gateway v1.13.0 bin/client_init.sh:42-44), and the StatefulSet controller sets each
 * pod's hostname to its pod name `<name>-<ordinal>` whatever the template says (kubernetes v1.28.0
 * pkg/controller/statefulset/stateful_set_utils.go:383-387 `initIdentity`): the part of the name before its first dash.
 */
export function clientLookupName(workload: string): string {
  return workload.split('-')[0];
}

/**
 * pod-gateway's nat.conf. The gateway's copy lists a fixed `toPort` (gateway_init.sh DNATs it); the dynamic port of an
 * app is DNATed by gluetun's up command instead. A client's copy holds only its own entry, under the name
 * client_init.sh computes for its pods (`key`): no other workload, in this namespace or another, can match it.
 */
export function natConf(f: VpnGatewaySpec, key?: string | null): string {
  const pf = f.portForwarding;
  const lines = ['# name ip ports: a routed workload with a fixed VXLAN address (pod-gateway nat.conf)'];
  const ports = pf?.toPort !== undefined ? ` tcp:${pf.toPort},udp:${pf.toPort}` : '';
  if (typeof key === 'string') lines.push(`${key} ${FORWARDED_WORKLOAD_HOST}${ports}`);
  else if (key === undefined && pf?.workload && pf.toPort !== undefined) lines.push(`${clientLookupName(pf.workload.name)} ${FORWARDED_WORKLOAD_HOST}${ports}`);
  return `${lines.join('\n')}\n`;
}

/** Where the gateway sidecar's dnsmasq reads `dnsmasqReserved` (Alpine's dnsmasq.conf: `conf-dir=/etc/dnsmasq.d/,*.conf`). */
export const DNSMASQ_RESERVED_PATH = '/etc/dnsmasq.d/tunnelwright-reserved.conf';

/** The gateway's pod-gateway settings (gateway side). */
export function gatewaySettings(f: VpnGatewaySpec): string {
  return settingsSh([
    ['VXLAN_ID', f.vxlanId],
    ['VXLAN_PORT', f.vxlanPort],
    ['VXLAN_IP_NETWORK', f.vxlanPrefix],
    ['VXLAN_GATEWAY_FIRST_DYNAMIC_IP', 20],
    ['VPN_INTERFACE', 'tun0'],
    ['VPN_INTERFACE_MTU', f.vxlanMtu],
    ['VPN_BLOCK_OTHER_TRAFFIC', 'true'],
    ['VPN_TRAFFIC_PORT', f.vpnTrafficPort],
    ['VPN_LOCAL_CIDRS', f.localCidrs.join(' ')],
    ['K8S_DNS_IPS', f.clusterDnsIp],
    ['DNS_LOCAL_CIDRS', f.clusterDomain],
    // Never taken from resolv.conf: gluetun rewrites it at start, so a restarted sidecar would copy the tunnel resolver.
    ['DNS_LOCAL_SERVER', f.clusterDnsIp],
    ['GATEWAY_ENABLE_DNSSEC', f.dnssec ? 'true' : 'false'],
  ]);
}

/**
 * A dnsmasq file for the gateway's conf-dir (`/etc/dnsmasq.d`, which pod-gateway's own file sits in): pod-gateway's
 * `dhcp-range` ends at the VXLAN's broadcast address `.255` (gateway_sidecar.sh:28), and dnsmasq skips `.0` and
 * `.255` only in class C networks (src/dhcp.c, `address_allocate`), so in 172.16.0.0/24 a routed pod whose random
 * vxlan0 MAC hashes there leases `.255` and reaches nothing. An address a `dhcp-host` line holds is never handed out
 * dynamically (`config_find_by_address`): the line holds `.255` for a client id pod-gateway's clients never send
 * (busybox udhcpc sends `01` and the MAC).
 */
export function dnsmasqReserved(f: VpnGatewaySpec): string {
  return [
    '# Written by tunnelwright: no routed pod leases the VXLAN broadcast address (pod-gateway\'s dhcp-range ends at .255).',
    `dhcp-host=id:tunnelwright-vxlan-broadcast,${f.vxlanPrefix}.255`,
    '',
  ].join('\n');
}
