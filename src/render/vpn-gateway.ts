import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { Container as IContainer } from 'kubernetes-types/core/v1';
import type { EnvVar as IEnvVar } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import type { Service as IService } from 'kubernetes-types/core/v1';
import type { Volume as IVolume } from 'kubernetes-types/core/v1';
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import { Problem, throwIfProblems, ValidationError } from '../errors';
import { Claim, Fence, VxlanEndpoint } from '../invariants';
import type { KillSwitchProps } from '../model/kill-switch';
import { boundedName, isDnsLabel, isDnsSubdomain } from '../model/labels';
import { podSecurityLabels, requiredLevel } from '../model/pod-security';
import { parseCidr } from '../model/net';
import type { PortForwardingProps, VpnGatewayProps } from '../model/vpn-gateway';
import { PORT_SYNC_SCRIPT } from './port-sync';
import { LOCATION_FILTERS, LocationFilter, providerName } from '../model/vpn-providers';
import { KubeObject, Plan } from '../types';
import { configMapsHash, withConfigHashes } from './config-hash';
import { renderKillSwitch } from './kill-switch';
import * as commonModel from '../model/common';
import * as vpnGatewayModel from '../model/vpn-gateway';
import { asset, inlineScript } from '../assets';

/** gluetun's default control-server role for the loopback-only server: every route, no auth (fields of auth.Role, settings.go:111-126 at v3.41.1). */
const LOOPBACK_CONTROL_ROLE = '{"name":"loopback","auth":"none"}';

/** Returns the problems of VpnGateway props without throwing. */
export function validateVpnGateway(props: unknown): Problem[] {
  return vpnGatewayModel.checkVpnGateway(props).problems;
}

/** Istio ambient's ztunnel address, kept local with `mesh: 'istio-ambient'`. */
export const ZTUNNEL_CIDR = '169.254.7.127/32';
export const HEALTH_PORT = 9999;
/** gluetun's WireGuard MTU, pinned (the default changes on master). */
export const WIREGUARD_MTU = 1320;
/** The VXLAN address a port-forwarding workload gets (pod-gateway's dynamic range starts at .20). */
export const FORWARDED_WORKLOAD_HOST = 5;
/** The iptables chains that hold the forwarded port's DNAT and FORWARD accept rules in the gateway pod. */
const PF_NAT_CHAIN = 'TW-PF-DNAT';
const PF_FORWARD_CHAIN = 'TW-PF-FORWARD';

/** The route init container's variable that holds the hash of the ConfigMaps a routed pod reads at start. */
export const ROUTE_CONFIG_HASH_ENV = 'TUNNELWRIGHT_CONFIG_HASH';

/** Everything the gateway and its routes derive from the props, computed once. */
export interface GatewayFacts {
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
  readonly vpnTrafficPort: number;
}

/** The VXLAN UDP port: Cilium and flannel own 8472 and Calico's VXLAN owns 4789. */
export function vxlanPortFor(cni: VpnGatewayProps['cni']): number {
  return cni === 'calico' ? 8472 : 4789;
}

export function gatewayFacts(props: VpnGatewayProps): GatewayFacts {
  const name = props.name ?? 'vpn-gateway';
  const row = vpnGatewayModel.providerRow(props.vpnProvider)!;
  const vpnType = props.vpnType ?? 'wireguard';
  const vx = parseCidr(props.vxlanNetwork ?? '172.16.0.0/24')!;
  const podMtu = props.podMtu ?? 1450;
  return {
    name,
    namespace: props.namespace ?? 'vpn-gateway',
    cluster: props.cluster ?? 'default',
    vxlanId: props.vxlanId ?? 42,
    vxlanPort: vxlanPortFor(props.cni),
    vxlanPrefix: [24n, 16n, 8n].map((s) => String((vx.start >> s) & 255n)).join('.'),
    vxlanMtu: vpnType === 'wireguard' ? Math.min(WIREGUARD_MTU, podMtu - 50) : podMtu - 50,
    clusterDnsIp: vpnGatewayModel.clusterDnsIpOf(props)!,
    clusterDomain: props.clusterDomain ?? 'cluster.local',
    dnssec: props.dnssec ?? true,
    localCidrs: [...props.clusterCidrs, ...props.nodeCidrs, ...(props.mesh === 'istio-ambient' ? [ZTUNNEL_CIDR] : [])].filter((c) => parseCidr(c)!.family === 4),
    podLabels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'vpn-gateway', 'app.kubernetes.io/managed-by': 'tunnelwright' },
    images: { gluetun: props.images?.gluetun ?? vpnGatewayModel.DEFAULT_IMAGES.gluetun, podGateway: props.images?.podGateway ?? vpnGatewayModel.DEFAULT_IMAGES.podGateway, portSync: props.images?.portSync ?? vpnGatewayModel.DEFAULT_IMAGES.portSync },
    vpnTrafficPort: props.vpnEndpointPort ?? (vpnType === 'wireguard' ? row.wireguard!.defaultPort : row.openvpn!.defaultPort),
  };
}

const SECRETS_DIR = '/run/secrets';

/** gluetun's environment: only variables gluetun reads; secrets as files (`*_SECRETFILE`) or Secret references. */
export function gluetunEnv(props: VpnGatewayProps, f: GatewayFacts): IEnvVar[] {
  const row = vpnGatewayModel.providerRow(props.vpnProvider)!;
  const vpnType = props.vpnType ?? 'wireguard';
  const env: IEnvVar[] = [];
  const set = (name: string, value: string | number | undefined) => {
    if (value !== undefined) env.push({ name, value: String(value) });
  };
  set('VPN_SERVICE_PROVIDER', row.gluetunName);
  set('VPN_TYPE', vpnType);
  set('VPN_INTERFACE', 'tun0');
  if (vpnType === 'wireguard') {
    set('WIREGUARD_PRIVATE_KEY_SECRETFILE', `${SECRETS_DIR}/wireguard_private_key`);
    if (props.wireguardPresharedKeySecret) set('WIREGUARD_PRESHARED_KEY_SECRETFILE', `${SECRETS_DIR}/wireguard_preshared_key`);
    if (props.wireguardAddresses) set('WIREGUARD_ADDRESSES', props.wireguardAddresses.join(','));
    set('WIREGUARD_MTU', WIREGUARD_MTU);
    // Only custom has them (validation refuses both for any other provider).
    set('WIREGUARD_ENDPOINT_IP', props.vpnEndpointIp);
    set('WIREGUARD_PUBLIC_KEY', props.wireguardPublicKey);
    set('WIREGUARD_ENDPOINT_PORT', props.vpnEndpointPort);
  } else {
    set('OPENVPN_USER_SECRETFILE', `${SECRETS_DIR}/openvpn_user`);
    set('OPENVPN_PASSWORD_SECRETFILE', `${SECRETS_DIR}/openvpn_password`);
    set('OPENVPN_ENDPOINT_PORT', props.vpnEndpointPort);
  }
  for (const filter of Object.keys(LOCATION_FILTERS) as LocationFilter[]) {
    const v = props[filter];
    if (v && v.length > 0) set(LOCATION_FILTERS[filter], v.join(','));
  }
  set('FIREWALL_OUTBOUND_SUBNETS', f.localCidrs.join(','));
  set('FIREWALL_INPUT_PORTS', HEALTH_PORT);
  set('HEALTH_SERVER_ADDRESS', `:${HEALTH_PORT}`);
  set('HEALTH_RESTART_VPN', 'on');
  set('DNS_SERVER', 'off');
  set('DNS_ADDRESS', props.dnsAddress ?? '1.1.1.1');
  const pf = props.portForwarding;
  if (pf?.app !== undefined) {
    // Bound to the gateway's VXLAN address only (vxlan0 exists before gluetun starts: gateway-init creates it), so
    // only routed pods reach it; post-rules.txt drops every VXLAN client but the forwarded workload's address, and
    // the one role in the auth file grants only GET /v1/portforward (internal/server/middlewares/auth/settings.go:111-126).
    set('HTTP_CONTROL_SERVER_ADDRESS', `${f.vxlanPrefix}.1:${CONTROL_PORT}`);
    set('HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH', `${AUTH_DIR}/config.toml`);
    // gluetun logs every control-server request at INFO by default (HTTP_CONTROL_SERVER_LOG, default on:
    // internal/configuration/settings/server.go:92, :122; internal/server/middlewares/log/middleware.go:40-43): slskd's
    // two requests every 2.5 s alone would be ~69,000 lines a day in the log read for VPN reconnects.
    set('HTTP_CONTROL_SERVER_LOG', 'off');
  } else {
    // The control server stays on loopback: nothing outside the pod reaches it, so every route is given to a default
    // role with no auth (SetDefaultRole, internal/server/middlewares/auth/settings.go:25-64 at v3.41.1; called from
    // internal/server/server.go:59). v3.41.1 would add its built-in public role anyway (settings.go:66-88), but
    // gluetun after it requires auth on every route unless a default role is set (qdm12/gluetun 0c3e5d94, #2980).
    set('HTTP_CONTROL_SERVER_ADDRESS', '127.0.0.1:8000');
    set('HTTP_CONTROL_SERVER_AUTH_DEFAULT_ROLE', LOOPBACK_CONTROL_ROLE);
  }
  if (pf) {
    set('VPN_PORT_FORWARDING', 'on');
    set('VPN_PORT_FORWARDING_PROVIDER', providerName(pf.provider));
    if (pf.credentialsSecret) {
      // gluetun reads any setting from `<NAME>_SECRETFILE` (sources/secrets/reader.go): never the environment.
      set('VPN_PORT_FORWARDING_USERNAME_SECRETFILE', `${SECRETS_DIR}/vpn_port_forwarding_username`);
      set('VPN_PORT_FORWARDING_PASSWORD_SECRETFILE', `${SECRETS_DIR}/vpn_port_forwarding_password`);
    }
    if (pf.toPort !== undefined || pf.app !== undefined) {
      const to = `${f.vxlanPrefix}.${FORWARDED_WORKLOAD_HOST}`;
      // port-forward-up.sh, its values as arguments: gluetun replaces {{PORT}} (service/command.go:20-21). With an
      // app: the same port on the workload ("same": no translation). It refuses a forwarded port the pod serves.
      const served = vpnGatewayModel.servedPorts(pf);
      const args = ['port-forward-up', '{{PORT}}', to, String(pf.toPort ?? 'same'), served.length ? served.join(',') : 'none'];
      set('VPN_PORT_FORWARDING_UP_COMMAND', `/bin/sh -c '${PORT_FORWARD_UP}' ${args.join(' ')}`);
      set('VPN_PORT_FORWARDING_DOWN_COMMAND', `/bin/sh -c 'iptables -t nat -F ${PF_NAT_CHAIN} 2>/dev/null || true; iptables -F ${PF_FORWARD_CHAIN} 2>/dev/null || true'`);
    }
  }
  return env;
}

function settingsSh(lines: [string, string | number][]): string {
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
function natConf(props: VpnGatewayProps, key?: string | null): string {
  const pf = props.portForwarding;
  const lines = ['# name ip ports: a routed workload with a fixed VXLAN address (pod-gateway nat.conf)'];
  const ports = pf?.toPort !== undefined ? ` tcp:${pf.toPort},udp:${pf.toPort}` : '';
  if (typeof key === 'string') lines.push(`${key} ${FORWARDED_WORKLOAD_HOST}${ports}`);
  else if (key === undefined && pf?.workload && pf.toPort !== undefined) lines.push(`${clientLookupName(pf.workload)} ${FORWARDED_WORKLOAD_HOST}${ports}`);
  return `${lines.join('\n')}\n`;
}

/** gluetun's control server port (its default, `:8000`, settings/server.go:91). */
export const CONTROL_PORT = 8000;
/** Where the gateway's init container writes gluetun's auth file (a memory emptyDir: the key never reaches the state volume). */
const AUTH_DIR = '/run/gluetun-auth';
/** The port-sync sidecar's metrics port. */
export { PORT_SYNC_METRICS_PORT } from '../model/values';
import { PORT_SYNC_METRICS_PORT } from '../model/values';

/**
 * gluetun's up command (src/render/port-forward-up.sh): DNATs the forwarded port to the workload, never onto a port
 * the workload's pod serves. Held in single quotes in the command gluetun splits (internal/command/split.go).
 */
const PORT_FORWARD_UP = inlineScript(asset(__dirname, 'port-forward-up.sh'));

/** The forwarded workload's fixed VXLAN address. */
export function forwardedWorkloadAddress(props: VpnGatewayProps): string {
  return `${gatewayFacts(props).vxlanPrefix}.${FORWARDED_WORKLOAD_HOST}`;
}

/**
 * The control-server routes each app's reader calls, and nothing else: port-sync reads only the port; slskd reads the
 * public IP first (an empty one means "VPN down") and then the port (slskd/slskd src/slskd/Integrations/VPN/Clients/
 * Gluetun.cs:93, :105 at 5770c7e). Both are valid gluetun routes (internal/server/middlewares/auth/settings.go:156-157).
 */
export function controlRoutes(app: PortForwardingProps['app']): string[] {
  return app === 'slskd' ? ['GET /v1/publicip/ip', 'GET /v1/portforward'] : ['GET /v1/portforward'];
}

/**
 * Writes gluetun's auth file from the API key Secret (a TOML file cannot read a Secret itself): one role, the API key,
 * the routes its reader needs (`controlRoutes`). Refuses a key that would break out of the TOML string.
 */
export function gluetunAuthScript(app: PortForwardingProps['app']): string {
  const routes = controlRoutes(app).map((r) => `"${r}"`).join(', ');
  return [
    'set -eu',
    'key=$(cat /run/control-api-key/api-key)',
    'case "$key" in "" | *[!A-Za-z0-9._~+/=-]*) echo "the control API key must be 1 or more of A-Z a-z 0-9 . _ ~ + / = -" >&2; exit 1 ;; esac',
    `umask 077; printf '[[roles]]\nname = "${app === 'slskd' ? 'slskd' : 'port-sync'}"\nroutes = [${routes}]\nauth = "apikey"\napikey = "%s"\n' "$key" > ${AUTH_DIR}/config.toml`,
  ].join('\n');
}

/** The auth-file script for port-sync (the one route `GET /v1/portforward`). */
export const GLUETUN_AUTH_SCRIPT = gluetunAuthScript('qbittorrent');

/** Where the gateway sidecar's dnsmasq reads `dnsmasqReserved` (Alpine's dnsmasq.conf: `conf-dir=/etc/dnsmasq.d/,*.conf`). */
export const DNSMASQ_RESERVED_PATH = '/etc/dnsmasq.d/tunnelwright-reserved.conf';

/** The gateway's pod-gateway settings (gateway side). */
function gatewaySettings(f: GatewayFacts): string {
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
function dnsmasqReserved(f: GatewayFacts): string {
  return [
    '# Written by tunnelwright: no routed pod leases the VXLAN broadcast address (pod-gateway\'s dhcp-range ends at .255).',
    `dhcp-host=id:tunnelwright-vxlan-broadcast,${f.vxlanPrefix}.255`,
    '',
  ].join('\n');
}

/** gluetun's /iptables/post-rules.txt: VXLAN and ICMP from the cluster, through gluetun's INPUT DROP. */
function postRules(f: GatewayFacts, pf?: PortForwardingProps): string {
  // localCidrs are IPv4 only (gatewayFacts).
  const lines = f.localCidrs.flatMap((c) => [
    `iptables -A INPUT -i eth0 -s ${c} -p udp --dport ${f.vxlanPort} -j ACCEPT`,
    `iptables -A INPUT -i eth0 -s ${c} -p icmp -j ACCEPT`,
    `iptables -A OUTPUT -o eth0 -d ${c} -p icmp -j ACCEPT`,
  ]);
  if (pf?.workload !== undefined && (pf.toPort !== undefined || pf.app !== undefined)) {
    // gateway_init.sh adds `-A POSTROUTING -j MASQUERADE` with no -o when SNAT_IP is unset: every forwarded connection
    // would reach the workload from 172.16.0.1. Connections leaving by vxlan0 keep the peer's own address.
    lines.push('iptables -t nat -I POSTROUTING 1 -o vxlan0 -j RETURN');
  }
  if (pf?.app !== undefined) {
    // The control server: only the forwarded workload's address, over the VXLAN.
    lines.push(`iptables -I INPUT 1 -i vxlan0 -p tcp --dport ${CONTROL_PORT} ! -s ${f.vxlanPrefix}.${FORWARDED_WORKLOAD_HOST} -j DROP`);
  }
  return `${lines.join('\n')}\n`;
}

function secretVolume(props: VpnGatewayProps): IVolume {
  const sources: { secret: { name: string; items: { key: string; path: string }[] } }[] = [];
  if ((props.vpnType ?? 'wireguard') === 'wireguard') {
    sources.push({ secret: { name: props.wireguardPrivateKeySecret!.name, items: [{ key: props.wireguardPrivateKeySecret!.key ?? 'private-key', path: 'wireguard_private_key' }] } });
    if (props.wireguardPresharedKeySecret) sources.push({ secret: { name: props.wireguardPresharedKeySecret.name, items: [{ key: props.wireguardPresharedKeySecret.key ?? 'preshared-key', path: 'wireguard_preshared_key' }] } });
  } else {
    const c = props.openvpnCredentialsSecret!;
    sources.push({ secret: { name: c.name, items: [{ key: c.userKey ?? 'username', path: 'openvpn_user' }, { key: c.passwordKey ?? 'password', path: 'openvpn_password' }] } });
  }
  const pf = props.portForwarding?.credentialsSecret;
  if (pf) sources.push({ secret: { name: pf.name, items: [{ key: pf.userKey ?? 'username', path: 'vpn_port_forwarding_username' }, { key: pf.passwordKey ?? 'password', path: 'vpn_port_forwarding_password' }] } });
  return { name: 'gluetun-secrets', projected: { defaultMode: 0o400, sources } };
}

/** Plans the gateway: settings ConfigMap, headless Service (clients find the pod by DNS) and the Deployment. */
export function planVpnGateway(props: VpnGatewayProps): Plan {
  const checked = vpnGatewayModel.checkVpnGateway(props);
  throwIfProblems(checked.problems, 'VpnGateway props');
  const plan = renderVpnGateway(checked.value!);
  return { ...plan, warnings: checked.warnings };
}

/**
 * gluetun's WireGuard adds an `ip rule` for table 51820 and, after an unclean exit (an OOM kill), leaves it in the
 * pod's network namespace: the restarted container fails with "file exists" (internal/wireguard/rule.go). The gluetun
 * wiki's Kubernetes page deletes the stale rule from a postStart hook, which runs beside the entrypoint and may delete
 * the fresh rule instead; deleting it before exec'ing the entrypoint (`/gluetun-entrypoint`, the image's ENTRYPOINT)
 * cannot race.
 */
export const GLUETUN_WIREGUARD_COMMAND = ['/bin/sh', '-c', inlineScript(asset(__dirname, 'gluetun-start.sh'))];

/** gluetun's security context and resources for the way it gets /dev/net/tun (see `tunDevice`). */
function gluetunDevice(props: VpnGatewayProps): Pick<IContainer, 'securityContext' | 'resources'> {
  const tun = props.tunDevice;
  const resources = { requests: { cpu: '50m', memory: '256Mi' } as Record<string, string>, limits: { memory: '512Mi' } as Record<string, string> };
  if (typeof tun === 'object') {
    resources.requests[tun.resource] = '1';
    resources.limits[tun.resource] = '1';
  }
  return { securityContext: tun === 'privileged' ? { privileged: true } : { capabilities: { add: ['NET_ADMIN'] } }, resources };
}

export function renderVpnGateway(props: VpnGatewayProps): Plan {
  const f = gatewayFacts(props);
  const settingsName = `${f.name}-settings`;
  const configMap: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: settingsName, namespace: f.namespace, labels: f.podLabels },
    data: { 'settings.sh': gatewaySettings(f), 'nat.conf': natConf(props), 'post-rules.txt': postRules(f, props.portForwarding), 'dnsmasq-reserved.conf': dnsmasqReserved(f) },
  };
  const pf = props.portForwarding;
  // Only where gluetun keeps state (PIA's piaportforward.json): a claim for another provider would only wait for a
  // volume, and on a cluster without a default StorageClass keep the gateway from ever scheduling.
  const state = pf && vpnGatewayModel.keepsPortForwardState(props.vpnProvider, pf) ? pf.stateClaim ?? {} : undefined;
  const stateClaimName = state ? state.existingClaim ?? `${f.name}-gluetun-state` : undefined;
  const stateClaim: KubeObject | undefined = state && state.existingClaim === undefined ? {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: stateClaimName!, namespace: f.namespace, labels: f.podLabels },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: state.size ?? '64Mi' } }, ...(state.storageClassName ? { storageClassName: state.storageClassName } : {}) },
  } as KubeObject : undefined;
  const app = pf?.app !== undefined;
  const service: IService = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: f.name, namespace: f.namespace, labels: f.podLabels },
    spec: { clusterIP: 'None', selector: f.podLabels, ports: [{ name: 'vxlan', protocol: 'UDP', port: f.vxlanPort, targetPort: f.vxlanPort }] },
  };
  const configVolume = { name: 'pod-gateway-config', mountPath: '/config', readOnly: true };
  const podSpec: IPodSpec = {
    initContainers: [
      // Creates vxlan0 before gluetun starts: gluetun trusts every Ethernet link that exists when it starts.
      { name: 'gateway-init', image: f.images.podGateway, command: ['/bin/gateway_init.sh'], securityContext: { privileged: true }, volumeMounts: [configVolume] },
      ...(app ? [{
        name: 'gluetun-auth',
        image: f.images.gluetun,
        command: ['/bin/sh', '-c', gluetunAuthScript(pf?.app)],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        volumeMounts: [{ name: 'control-api-key', mountPath: '/run/control-api-key', readOnly: true }, { name: 'gluetun-auth', mountPath: AUTH_DIR }],
      }] : []),
    ],
    containers: [
      {
        name: 'gluetun',
        image: f.images.gluetun,
        ...((props.vpnType ?? 'wireguard') === 'wireguard' ? { command: GLUETUN_WIREGUARD_COMMAND } : {}),
        env: gluetunEnv(props, f),
        ports: [{ name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' }, { name: 'vxlan', containerPort: f.vxlanPort, protocol: 'UDP' }],
        ...gluetunDevice(props),
        // gluetun's health server: 500 while the tunnel is down (never /v1/publicip/ip, which is always 200).
        startupProbe: { httpGet: { path: '/', port: HEALTH_PORT }, periodSeconds: 5, failureThreshold: 60 },
        livenessProbe: { httpGet: { path: '/', port: HEALTH_PORT }, periodSeconds: 30, failureThreshold: 5 },
        readinessProbe: { httpGet: { path: '/', port: HEALTH_PORT }, periodSeconds: 10, failureThreshold: 3 },
        volumeMounts: [
          { name: 'gluetun-secrets', mountPath: SECRETS_DIR, readOnly: true },
          { name: 'pod-gateway-config', mountPath: '/iptables/post-rules.txt', subPath: 'post-rules.txt', readOnly: true },
          ...(stateClaimName ? [{ name: 'gluetun-state', mountPath: '/gluetun' }] : []),
          ...(app ? [{ name: 'gluetun-auth', mountPath: AUTH_DIR, readOnly: true }] : []),
        ],
      },
      {
        name: 'gateway-sidecar',
        image: f.images.podGateway,
        command: ['/bin/gateway_sidecar.sh'],
        ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { name: 'dhcp', containerPort: 67, protocol: 'UDP' }],
        securityContext: { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } },
        volumeMounts: [configVolume, { name: 'pod-gateway-config', mountPath: DNSMASQ_RESERVED_PATH, subPath: 'dnsmasq-reserved.conf', readOnly: true }],
      },
    ],
    volumes: [
      { name: 'pod-gateway-config', configMap: { name: settingsName } },
      secretVolume(props),
      ...(stateClaimName ? [{ name: 'gluetun-state', persistentVolumeClaim: { claimName: stateClaimName } }] : []),
      ...(app ? [
        { name: 'control-api-key', secret: { secretName: pf!.controlApiKeySecret!.name, defaultMode: 0o400, items: [{ key: pf!.controlApiKeySecret!.key ?? 'api-key', path: 'api-key' }] } },
        { name: 'gluetun-auth', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      ] : []),
    ],
  };
  const deployment: IDeployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: f.name, namespace: f.namespace, labels: f.podLabels },
    spec: {
      // Exactly one gateway pod: two would share one VPN session and steal it from each other.
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: f.podLabels },
      template: {
        // Never enrolled in Istio ambient: the gateway's traffic must not be redirected to ztunnel.
        metadata: { labels: { ...f.podLabels, 'istio.io/dataplane-mode': 'none' } },
        spec: podSpec,
      },
    },
  };
  const objects = [configMap, service, ...(stateClaim ? [stateClaim] : []), deployment] as KubeObject[];
  if (props.createNamespace !== false) {
    // Privileged: gateway-init is (pod-gateway's routes need it), and gluetun adds NET_ADMIN.
    const level = requiredLevel(podSpec).level;
    objects.unshift({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: f.namespace, labels: { ...podSecurityLabels(level), 'app.kubernetes.io/managed-by': 'tunnelwright' } } });
  }
  return { objects: withConfigHashes(objects), hosts: [], values: {}, warnings: [] };
}

/** The gateway's VXLAN endpoint, for the cross-construct check of kill switches that reach it. */
export function vpnGatewayVxlan(props: VpnGatewayProps, construct: string): VxlanEndpoint {
  const f = gatewayFacts(props);
  return { construct, cluster: f.cluster, namespace: f.namespace, podLabels: f.podLabels, port: f.vxlanPort };
}

/** What the gateway claims across an App: its VXLAN id in its cluster, its key Secret, a pinned server with its credential. */
export function vpnGatewayClaims(props: VpnGatewayProps): Claim[] {
  const f = gatewayFacts(props);
  const claims: Claim[] = [{ key: `cluster/${f.cluster}/vxlan/${f.vxlanId}`, path: 'vxlanId',
    what: `VXLAN id ${f.vxlanId}${props.vxlanId === undefined ? ' (the default)' : ''} in cluster "${f.cluster}"`,
    remedy: 'set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' }];
  const key = props.wireguardPrivateKeySecret;
  if (key) claims.push({ key: `cluster/${f.cluster}/wireguard-key/${f.namespace}/${key.name}/${key.key ?? 'private-key'}`, path: 'wireguardPrivateKeySecret', what: `WireGuard key ${f.namespace}/${key.name} (a key used by two gateways steals the session)`,
    remedy: 'give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' });
  // The one server the gateway is pinned to, and the prop that pins it (where a clash is reported).
  const pinned = props.vpnEndpointIp ? { server: `${props.vpnEndpointIp}:${props.vpnEndpointPort}`, path: 'vpnEndpointIp' }
    : props.serverHostnames?.length === 1 ? { server: props.serverHostnames[0], path: 'serverHostnames[0]' }
      : props.serverNames?.length === 1 ? { server: props.serverNames[0], path: 'serverNames[0]' } : undefined;
  const credential = key ? `${f.namespace}/${key.name}/${key.key ?? 'private-key'}` : props.openvpnCredentialsSecret ? `${f.namespace}/${props.openvpnCredentialsSecret.name}` : undefined;
  if (pinned && credential) claims.push({ key: `vpn-server/${vpnGatewayModel.providerRow(props.vpnProvider)!.gluetunName}/${pinned.server}/${credential}`, path: pinned.path, what: `VPN server ${pinned.server} with the credential ${credential} (two gateways on one server and account steal each other's session)` });
  return claims;
}

/** The workload a gateway routes: its namespace, pod labels and name. */
export interface RouteTarget {
  readonly namespace: string;
  readonly podLabels: Record<string, string>;
  /** The workload's name (a port-forwarding target is matched by it and its namespace). */
  readonly name: string;
  /**
   * The workload's kind. The port-forwarding workload (`portForwarding.workload`) must be a StatefulSet: it is the only
   * kind that never runs two pods of one replica at once (see `planRoute`). @default 'Deployment'
   */
  readonly kind?: typeof ROUTABLE_KINDS[number];
  /** The workload's `spec.replicas` (for the port-forwarding workload, a plain number: 0 or 1). @default 1 */
  readonly replicas?: number;
  /**
   * The StatefulSet's `spec.ordinals.start` (a plain whole number): the port-forwarding workload's one pod is
   * `<name>-<start>`, and its init container refuses to start in any other pod. @default 0
   */
  readonly ordinalsStart?: number;
}

/** The changes routing makes to a workload's pod spec, and the objects it needs. */
export interface RoutePlan {
  /**
   * The client settings ConfigMap `<name>-vpn-route` (in the workload's namespace) and the kill switch
   * `<name>-vpn-kill-switch` for the workload. Past 63 characters, each is the start of the name, 8 hex digits of the
   * SHA-256 of the whole name, then the suffix: two long workload names never share a kill switch.
   */
  readonly objects: KubeObject[];
  /**
   * Init container put first: the workload's own init containers already run behind the VPN. Its
   * `TUNNELWRIGHT_CONFIG_HASH` (`ROUTE_CONFIG_HASH_ENV`) is the hash of the route's ConfigMaps, which the pod reads at
   * start: when they change, the pod template changes and the workload's controller rolls its pods.
   */
  readonly initContainer: IContainer;
  /** Sidecar appended to the containers: re-creates the VXLAN when the gateway moves. */
  readonly sidecar: IContainer;
  readonly volume: IVolume;
  readonly dnsPolicy: 'None';
  readonly dnsConfig: NonNullable<IPodSpec['dnsConfig']>;
  /** Containers appended after the sidecar: the port-sync sidecar of the port-forwarding workload. */
  readonly extraContainers: IContainer[];
  /** Volumes the extra containers mount. */
  readonly extraVolumes: IVolume[];
  /**
   * With `app: 'slskd'`: environment for the slskd container (`container`, else the workload's first), which
   * `applyRoute` adds; a variable of the same name already there is refused.
   */
  readonly appEnv?: { readonly container?: string; readonly env: IEnvVar[] };
}

/**
 * Plans routing one workload through the gateway (pure: the same for the cdk8s route() and Pulumi's routeTransform()).
 *
 * The port-forwarding workload is refused unless it is a StatefulSet of at most one replica: its pods take the one
 * fixed VXLAN address, and two at once would split the forwarded port and the control server between them (whichever
 * answers ARP last). A Deployment cannot promise one pod, even with `Recreate` (which covers rollouts only): when its
 * pod is deleted, drained or evicted, the ReplicaSet controller counts only active pods, and a pod with a deletion
 * timestamp is not active (kubernetes v1.28.0 pkg/controller/controller_utils.go:981-985 `IsPodActive`,
 * replicaset/replica_set.go:708 `FilterActivePods`, :567-574), so it creates the replacement at once; pod-gateway's
 * client_sidecar.sh (PID 1 of its container, no `trap`) ignores SIGTERM, so the old pod keeps the address for its
 * whole grace period. The StatefulSet controller puts an existing pod, terminating or not, in its ordinal's slot
 * (statefulset/stateful_set_control.go:566-570) and creates `<name>-0` only for an empty slot (:578-587, :397-406);
 * the API server holds one object per name (stateful_pod_control.go:115-125 sinks AlreadyExists), so the new pod
 * comes only once the old object is gone. A force delete (`--grace-period=0 --force`, or of a pod on a partitioned
 * node) removes the object before the old pod stops: that is the one way two pods still meet.
 */
export function planRoute(gatewayProps: VpnGatewayProps, target: RouteTarget): RoutePlan {
  const checked = vpnGatewayModel.checkVpnGateway(gatewayProps);
  const problems = [...checked.problems, ...checkRouteTarget(target)];
  // Read from the props as given, so that a refusal is reported beside the gateway's own problems (all at once).
  const isForwarded = isForwardedTarget(gatewayProps, target);
  if (isForwarded) problems.push(...checkForwardedTarget(target as RouteTarget));
  throwIfProblems(problems, 'VpnGateway route');
  const props = checked.value!;
  const f = gatewayFacts(props);
  // One ConfigMap per routed workload: two routes in one namespace (or a probe beside them) never clash.
  const configName = boundedName(target.name, '-vpn-route');
  const settings = settingsSh([
    ['GATEWAY_NAME', `${f.name}.${f.namespace}.svc.${f.clusterDomain}`],
    ['K8S_DNS_IPS', f.clusterDnsIp],
    ['NOT_ROUTED_TO_GATEWAY_CIDRS', f.localCidrs.join(' ')],
    ['VXLAN_ID', f.vxlanId],
    ['VXLAN_PORT', f.vxlanPort],
    ['VXLAN_IP_NETWORK', f.vxlanPrefix],
    ['VPN_INTERFACE', 'tun0'],
    ['VPN_INTERFACE_MTU', f.vxlanMtu],
  ]);
  const configMap: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: configName, namespace: target.namespace, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'vpn-gateway-client' } },
    // The forwarded workload is a StatefulSet (checkForwardedTarget): its pods are hostnamed <name>-<ordinal>, and the
    // key is what client_init.sh cuts from that.
    data: { 'settings.sh': settings, 'nat.conf': natConf(props, isForwarded ? clientLookupName(target.name) : null) },
  };
  const killSwitch: KillSwitchProps = {
    cluster: f.cluster,
    name: boundedName(target.name, '-vpn-kill-switch'),
    selector: target.podLabels,
    namespace: target.namespace,
    allowCidrs: f.localCidrs,
    gatewayPodLabels: f.podLabels,
    gatewayNamespace: f.namespace,
    vxlanPort: f.vxlanPort,
    // Cilium never matches CIDR rules against endpoints it manages or node IPs ("CIDR rules do not apply to traffic
    // where both sides of the connection are either managed by Cilium or use an IP belonging to a node in the
    // cluster": cilium/cilium Documentation/security/policy/language.rst, "IP/CIDR based"): under Cilium the cluster
    // is allowed as the `cluster` entity, kube-dns and the gateway by endpoint (the KillSwitch's cilium flavour).
    flavor: props.cni === 'cilium' ? 'cilium' : 'kubernetes',
  };
  const mount = { name: 'vpn-gateway-client', mountPath: '/config', readOnly: true };
  const caps = { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] }, runAsUser: 0, runAsNonRoot: false };
  const app = isForwarded ? props.portForwarding!.app : undefined;
  const sync = app !== undefined && app !== 'slskd' ? portSync(props, f, target) : undefined;
  // What the routed pod reads once, at start (client_init.sh and port-sync): its hash on the route's own init container.
  // The pod template's metadata is the user's, and a changed container is a changed template as well: the workload's
  // controller rolls its pods when an apply changes these ConfigMaps (see CONFIG_HASH_ANNOTATION).
  const configHash = configMapsHash([configMap, ...(sync ? [sync.configMap as unknown as IConfigMap] : [])]);
  return {
    objects: [configMap as KubeObject, ...(sync ? [sync.configMap] : []), ...renderKillSwitch(killSwitch).objects],
    initContainer: { name: 'vpn-route-init', image: f.images.podGateway, command: isForwarded ? forwardedInitCommand(target) : ['/bin/client_init.sh'], env: [{ name: ROUTE_CONFIG_HASH_ENV, value: configHash }], securityContext: caps, volumeMounts: [mount] },
    sidecar: { name: 'vpn-route-sidecar', image: f.images.podGateway, command: ['/bin/client_sidecar.sh'], securityContext: caps, volumeMounts: [mount] },
    volume: { name: 'vpn-gateway-client', configMap: { name: configName } },
    dnsPolicy: 'None',
    dnsConfig: {
      nameservers: [`${f.vxlanPrefix}.1`],
      searches: [`${target.namespace}.svc.${f.clusterDomain}`, `svc.${f.clusterDomain}`, f.clusterDomain],
      options: [{ name: 'ndots', value: '5' }],
    },
    extraContainers: sync ? [sync.container] : [],
    extraVolumes: sync ? sync.volumes : [],
    ...(app === 'slskd' ? { appEnv: slskdEnv(props, f) } : {}),
  };
}

/** Whether `target` is the gateway's port-forwarding workload (`portForwarding.workload` in `workloadNamespace`, with `toPort` or `app`). */
export function isForwardedTarget(gatewayProps: VpnGatewayProps, target: RouteTarget): boolean {
  const pf = commonModel.isRecord(gatewayProps) && commonModel.isRecord(gatewayProps.portForwarding) ? gatewayProps.portForwarding : undefined;
  return commonModel.isRecord(target) && pf !== undefined && (pf.toPort !== undefined || pf.app !== undefined)
    && pf.workload === target.name && pf.workloadNamespace === target.namespace;
}

/**
 * slskd's own gluetun integration, as environment on the slskd container (the `SLSKD_` prefix, slskd/slskd
 * src/slskd/Program.cs:131; the names at src/slskd/Core/Options.cs:2420 `VPN`, :2429 `VPN_PORT_FORWARDING`, :2437
 * `VPN_POLLING_INTERVAL` (ms, 500 or more, :2439), :2485 `VPN_GLUETUN_URL`, :2519 `VPN_GLUETUN_API_KEY`, at 5770c7e).
 * With `VPN_PORT_FORWARDING` slskd stays disconnected from Soulseek until gluetun reports a port other than 0
 * (Integrations/VPN/Clients/Gluetun.cs:103-111, VPNService.cs:203-208, :267-270) and sets its listen port to each new
 * one (VPNService.cs:209-222): the start-up port 0 is never written. slskd reads options from environment variables,
 * its YAML file or the command line only (no `_FILE` form), so the API key comes from the Secret by `secretKeyRef`.
 */
function slskdEnv(props: VpnGatewayProps, f: GatewayFacts): { container?: string; env: IEnvVar[] } {
  const pf = props.portForwarding!;
  return {
    ...(pf.appContainer !== undefined ? { container: pf.appContainer } : {}),
    env: [
      { name: 'SLSKD_VPN', value: 'true' },
      { name: 'SLSKD_VPN_PORT_FORWARDING', value: 'true' },
      { name: 'SLSKD_VPN_GLUETUN_URL', value: `http://${f.vxlanPrefix}.1:${CONTROL_PORT}` },
      { name: 'SLSKD_VPN_GLUETUN_API_KEY', valueFrom: { secretKeyRef: { name: pf.controlApiKeySecret!.name, key: pf.controlApiKeySecret!.key ?? 'api-key' } } },
      ...(pf.syncPeriodSeconds !== undefined ? [{ name: 'SLSKD_VPN_POLLING_INTERVAL', value: String(pf.syncPeriodSeconds * 1000) }] : []),
    ],
  };
}

/** The port-sync sidecar of the port-forwarding workload: its script ConfigMap, container and volumes. */
function portSync(props: VpnGatewayProps, f: GatewayFacts, target: RouteTarget): { configMap: KubeObject; container: IContainer; volumes: IVolume[] } {
  const pf = props.portForwarding!;
  const app = pf.app!;
  const name = boundedName(target.name, '-vpn-port-sync');
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: target.namespace, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'vpn-port-sync' } },
    data: { 'port-sync.sh': PORT_SYNC_SCRIPT },
  } as KubeObject;
  const sources: { secret: { name: string; items: { key: string; path: string }[] } }[] = [
    { secret: { name: pf.controlApiKeySecret!.name, items: [{ key: pf.controlApiKeySecret!.key ?? 'api-key', path: 'gluetun-api-key' }] } },
  ];
  // Deluge's Web UI has a password only: a username key is not asked for (a missing key would stop the pod).
  const userItem = pf.appCredentialsSecret && app !== 'deluge' ? [{ key: pf.appCredentialsSecret.userKey ?? 'username', path: 'app-username' }] : [];
  if (pf.appCredentialsSecret) sources.push({ secret: { name: pf.appCredentialsSecret.name, items: [...userItem, { key: pf.appCredentialsSecret.passwordKey ?? 'password', path: 'app-password' }] } });
  if (pf.appApiKeySecret) sources.push({ secret: { name: pf.appApiKeySecret.name, items: [{ key: pf.appApiKeySecret.key ?? 'api-key', path: 'app-api-key' }] } });
  const env: IEnvVar[] = [
    { name: 'APP', value: app },
    { name: 'GLUETUN_URL', value: `http://${f.vxlanPrefix}.1:${CONTROL_PORT}` },
    { name: 'GLUETUN_API_KEY_FILE', value: '/run/port-sync-secrets/gluetun-api-key' },
    ...(app !== 'command' && app !== 'slskd' ? [{ name: 'APP_URL', value: pf.appUrl ?? `http://127.0.0.1:${vpnGatewayModel.APP_API_PORTS[app]}` }] : []),
    ...(userItem.length ? [{ name: 'APP_USERNAME_FILE', value: '/run/port-sync-secrets/app-username' }] : []),
    ...(pf.appCredentialsSecret ? [{ name: 'APP_PASSWORD_FILE', value: '/run/port-sync-secrets/app-password' }] : []),
    ...(pf.appApiKeySecret ? [{ name: 'APP_API_KEY_FILE', value: '/run/port-sync-secrets/app-api-key' }] : []),
    ...(pf.command !== undefined ? [{ name: 'COMMAND', value: pf.command }] : []),
    { name: 'PERIOD', value: String(pf.syncPeriodSeconds ?? 15) },
    { name: 'METRICS_PORT', value: String(PORT_SYNC_METRICS_PORT) },
    { name: 'SERVED_PORTS', value: vpnGatewayModel.servedPorts(pf).join(',') },
    { name: 'METRICS_FILE', value: '/tmp/port-sync/metrics' },
  ];
  const container: IContainer = {
    name: 'vpn-port-sync',
    image: f.images.portSync,
    command: ['/bin/sh', '/port-sync/port-sync.sh'],
    env,
    ports: [{ name: 'port-sync', containerPort: PORT_SYNC_METRICS_PORT, protocol: 'TCP' }],
    securityContext: { runAsNonRoot: true, runAsUser: 65534, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    resources: { requests: { cpu: '5m', memory: '16Mi' }, limits: { memory: '64Mi' } },
    volumeMounts: [
      { name: 'vpn-port-sync', mountPath: '/port-sync', readOnly: true },
      { name: 'vpn-port-sync-secrets', mountPath: '/run/port-sync-secrets', readOnly: true },
      { name: 'vpn-port-sync-tmp', mountPath: '/tmp' },
    ],
  };
  const volumes: IVolume[] = [
    { name: 'vpn-port-sync', configMap: { name, defaultMode: 0o555 } },
    // 0444: the sidecar runs as 65534 without an fsGroup; only this container mounts them.
    { name: 'vpn-port-sync-secrets', projected: { defaultMode: 0o444, sources } },
    { name: 'vpn-port-sync-tmp', emptyDir: { medium: 'Memory', sizeLimit: '4Mi' } },
  ];
  return { configMap, container, volumes };
}

/**
 * Alerts on port-sync's metrics (scrape the routed pod's `port-sync` port): the app listens on another port than the
 * one forwarded for longer than a reconnect takes, or no port has been forwarded for a long time. With `app: 'command'`
 * port-sync cannot read the app's port: its `app_listen_port` is the port the command last succeeded with, so the
 * first is `VPNForwardedPortCommandFailing` instead (after `mismatchFor`), which fires while the command keeps
 * failing or timing out with the forwarded port; an app that forgets a port the command set is not seen.
 */
export function portForwardAlertGroups(props: VpnGatewayProps, opts: { mismatchFor?: string; lostFor?: string; runbookUrl?: string } = {}): { name: string; rules: Record<string, unknown>[] }[] {
  const f = gatewayFacts(props);
  if (props.portForwarding?.app === 'slskd') {
    // slskd syncs its port itself: no port-sync sidecar, so no metrics for these rules to read.
    throwIfProblems([{ path: 'portForwarding.app', code: 'no-metrics', message: 'no port-forwarding alerts for slskd: slskd polls gluetun itself and no port-sync sidecar serves the metrics these rules read; watch slskd\'s own VPN state (its log: "Waiting for VPN client")' }], 'port-forwarding alerts');
  }
  const app = props.portForwarding?.app ?? 'app';
  const rules: { alert: keyof typeof PORT_FORWARD_RUNBOOKS; expr: string; for: string; labels: Record<string, string>; annotations: Record<string, string> }[] = [
    ...(app === 'command' ? [{
      // app_listen_port is the port the command last succeeded with (0: none yet), and the command is stopped after
      // COMMAND_TIMEOUT (port-sync.sh): a command that keeps failing or hanging leaves it behind the forwarded port.
      alert: 'VPNForwardedPortCommandFailing' as const,
      expr: 'tunnelwright_port_forward_forwarded_port > 0 and tunnelwright_port_forward_app_listen_port != tunnelwright_port_forward_forwarded_port',
      for: opts.mismatchFor ?? '5m',
      labels: { severity: 'warning' },
      annotations: { summary: 'the command has not succeeded with the forwarded port', description: '{{ $labels.namespace }}/{{ $labels.pod }}: port-sync\'s command keeps failing (or timing out) with the port the VPN forwards; the app may not listen on it. See the vpn-port-sync container\'s log.' },
    }] : [{
      alert: 'VPNForwardedPortNotListening' as const,
      expr: 'tunnelwright_port_forward_forwarded_port > 0 and tunnelwright_port_forward_app_listen_port != tunnelwright_port_forward_forwarded_port',
      for: opts.mismatchFor ?? '5m',
      labels: { severity: 'warning' },
      annotations: { summary: `${app} does not listen on the port the VPN forwards`, description: '{{ $labels.namespace }}/{{ $labels.pod }}: the VPN forwards one port and the app listens on another; peers cannot reach it. See the vpn-port-sync container\'s log.' },
    }, {
      // port-sync sends refused credentials only once (a ban would lock the user out too): until they change, the
      // port is never set, and this says why.
      alert: 'VPNPortSyncLoginRefused' as const,
      expr: 'tunnelwright_port_forward_login_refused == 1',
      for: '1m',
      labels: { severity: 'warning' },
      annotations: { summary: `${app} refuses port-sync's credentials`, description: '{{ $labels.namespace }}/{{ $labels.pod }}: the app refused the login port-sync was given; port-sync does not send it again until the Secret\'s value changes or the pod restarts, so the listen port is not kept.' },
    }]),
    {
      // Without a scrape of the sidecar none of the others can fire: the forwarded workload's series, absent for 10m.
      alert: 'VPNPortSyncAbsent' as const,
      expr: `absent_over_time(tunnelwright_port_forward_forwarded_port{namespace="${props.portForwarding?.workloadNamespace ?? ''}"}[10m])`,
      for: '5m',
      labels: { severity: 'warning' },
      annotations: { summary: 'no port-sync metrics are scraped', description: `${props.portForwarding?.workloadNamespace ?? ''}: Prometheus has no tunnelwright_port_forward_* series from port-sync in this namespace, so no port-forwarding alert can fire. Scrape the vpn-port-sync container's metrics port.` },
    },
    {
      alert: 'VPNNoForwardedPort',
      expr: 'tunnelwright_port_forward_forwarded_port == 0',
      for: opts.lostFor ?? '15m',
      labels: { severity: 'warning' },
      annotations: { summary: 'the VPN forwards no port', description: '{{ $labels.namespace }}/{{ $labels.pod }}: gluetun reports no forwarded port (or its control server does not answer port-sync).' },
    },
  ];
  return [{
    name: `tunnelwright-${f.name}-port-forwarding`,
    rules: rules.map((r) => ({
      ...r,
      annotations: { ...r.annotations, runbook: PORT_FORWARD_RUNBOOKS[r.alert], ...(opts.runbookUrl ? { runbook_url: `${opts.runbookUrl}#${r.alert.toLowerCase()}` } : {}) },
    })),
  }];
}

/** Each port-forwarding alert's runbook, shipped in the alert (the `runbook` annotation); docs/runbooks.md has them too. */
const PORT_FORWARD_RUNBOOKS = {
  VPNForwardedPortNotListening: [
    '1. kubectl logs <pod> -c vpn-port-sync: why the port was not set (a refused login, an app that does not answer, a forwarded port the pod serves itself).',
    '2. The app\'s own setting: qBittorrent Options > Connection > listening port (and Session\\Interface: an app bound to one interface never sees vxlan0).',
  ].join('\n'),
  VPNForwardedPortCommandFailing: [
    '1. kubectl logs <pod> -c vpn-port-sync: the command\'s exit status, or "did not finish within" for a timeout.',
    '2. Run the command by hand in the vpn-port-sync container with PORT set to the forwarded port.',
  ].join('\n'),
  VPNPortSyncAbsent: [
    '1. kubectl -n <namespace> get pods -l <the workload\'s labels>: the forwarded workload must run, with its vpn-port-sync container.',
    '2. Prometheus must scrape the vpn-port-sync container\'s metrics port (a PodMonitor of its pods; kube-prometheus-stack selects PodMonitors by podMonitorSelector): the target must be up under Status > Targets.',
  ].join('\n'),
  VPNPortSyncLoginRefused: [
    '1. Compare the Secret portForwarding.appCredentialsSecret (or appApiKeySecret) with the app\'s Web UI login.',
    '2. Fix the Secret (port-sync tries the new value within a period), or fix the app\'s password and restart the pod.',
  ].join('\n'),
  VPNNoForwardedPort: [
    '1. kubectl logs deploy/<gateway> -c gluetun | grep -i "port forward": the provider\'s answer (ProtonVPN over OpenVPN needs +pmp in the username; a ProtonVPN WireGuard key must be made with NAT-PMP on).',
    '2. kubectl logs <pod> -c vpn-port-sync: "gluetun refused the API key" or "did not answer" is the control server, not the provider.',
  ].join('\n'),
};

/** The problems of a route target (from JavaScript or YAML, anything may arrive). */
function checkRouteTarget(target: unknown): Problem[] {
  if (!commonModel.isRecord(target)) return [{ path: 'route', code: 'type', message: `expected the workload to route ({ namespace, podLabels, name }), received ${typeof target === 'object' ? 'null' : typeof target}` }];
  const problems: Problem[] = [];
  if (typeof target.namespace !== 'string' || !isDnsLabel(target.namespace)) problems.push({ path: 'route.namespace', code: 'namespace', message: `expected the workload's namespace, ${typeof target.namespace === 'string' ? commonModel.received(target.namespace) : `received ${typeof target.namespace}`}` });
  if (typeof target.name !== 'string' || !isDnsSubdomain(target.name)) problems.push({ path: 'route.name', code: 'name', message: `expected the workload's name, ${typeof target.name === 'string' ? commonModel.received(target.name) : `received ${typeof target.name}`}` });
  const labels = target.podLabels;
  if (!commonModel.isRecord(labels) || Object.values(labels).some((v) => typeof v !== 'string')) problems.push({ path: 'route.podLabels', code: 'labels', message: 'expected the pod template\'s labels: a map of strings' });
  else if (Object.keys(labels).length === 0) problems.push({ path: 'route.podLabels', code: 'selector-empty', message: 'the routed workload has no pod labels: its kill switch would select every pod in the namespace' });
  return problems;
}

/**
 * The problems of the port-forwarding workload: anything but a StatefulSet of 0 or 1 replica can run two pods on its
 * one fixed VXLAN address (see `planRoute`). `replicas` must be a plain number: a value known only later (a Pulumi
 * Output) cannot be checked.
 */
function checkForwardedTarget(target: RouteTarget): Problem[] {
  const what = `${String(target.namespace)}/${String(target.name)}`;
  const kind: unknown = target.kind ?? 'Deployment';
  const first = `${String(target.name)}-${typeof target.ordinalsStart === 'number' ? target.ordinalsStart : 0}`;
  // A cdk8s-plus StatefulSet makes its headless Service from a container port, or takes `service` (cdk8s-plus-28
  // lib/stateful-set.js:73-79 `_createHeadlessService`): without either it throws.
  const sts = `make it a StatefulSet with replicas 1 (portForwarding.workload names it; a cdk8s-plus StatefulSet needs a container port or \`service\`): its controller starts ${first} again only once the old pod is gone`;
  const problems: Problem[] = [];
  if (kind !== 'StatefulSet') {
    const shown = target.kind === undefined ? 'a Deployment (route.kind unset: the default)'
      : typeof kind === 'string' && /^[A-Z][A-Za-z]{0,62}$/.test(kind) ? `a ${kind}` : `of kind ${commonModel.describeValue(kind)}`;
    const why = kind === 'DaemonSet'
      ? 'it runs a pod on every node it fits, and each would take the one fixed VXLAN address'
      : kind === 'Deployment' || kind === 'ReplicaSet'
        ? `${kind === 'Deployment' ? 'its ReplicaSet' : 'the ReplicaSet controller'} starts the replacement pod as soon as the old one is terminating (a pod delete, a drain, an eviction${kind === 'Deployment' ? '; `Recreate` covers rollouts only' : ''}), and both hold the one fixed VXLAN address until the old one is killed, since pod-gateway's sidecar ignores SIGTERM`
        : 'only a StatefulSet never runs two pods of one replica at once, and two would both take the one fixed VXLAN address';
    problems.push({ path: 'route.kind', code: 'two-pods', message: `the port-forwarding workload ${what} is ${shown}: ${why}; ${sts}` });
  }
  const start: unknown = target.ordinalsStart;
  if (start !== undefined && (typeof start !== 'number' || !Number.isInteger(start) || start < 0)) {
    problems.push({ path: 'route.ordinalsStart', code: 'type', message: `expected the port-forwarding workload ${what}'s spec.ordinals.start as a plain whole number, received ${commonModel.describeValue(start)}: its init container lets only the pod of that ordinal start` });
  }
  const replicas: unknown = target.replicas;
  if (replicas !== undefined && (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)) {
    problems.push({ path: 'route.replicas', code: 'type', message: `expected the port-forwarding workload ${what}'s spec.replicas as a plain whole number (0 or 1), received ${commonModel.describeValue(replicas)}: a value known only at deploy time (a Pulumi Output) cannot be checked for a second pod` });
  } else if (typeof replicas === 'number' && replicas > 1) {
    problems.push({ path: 'route.replicas', code: 'two-pods', message: `the port-forwarding workload ${what} has ${replicas} replicas: they would all take the one fixed VXLAN address and one forwarded port; set replicas to 1` });
  }
  return problems;
}

/**
 * The forwarded workload's init command: pod-gateway's client_init.sh, only in the StatefulSet's first pod
 * `<name>-<ordinals.start>`. client_init.sh looks its nat.conf entry up by `hostname | cut -d'-' -f1` (pod-gateway
 * v1.13.0 bin/client_init.sh:42-44, :54) and takes its fixed address (:93-95), and the StatefulSet controller hostnames
 * every ordinal by its pod name (kubernetes v1.28.0 pkg/controller/statefulset/stateful_set_utils.go:383-387
 * `initIdentity`): `<name>-1`, made by `kubectl scale`, an HPA or a `replicas` patch, cuts to the same key and would
 * take the same address. Any other pod exits 1 here and never starts. The sidecar's reconnect (client_sidecar.sh) runs
 * client_init.sh in a pod that passed this check. A pod name is a DNS subdomain: no quoting needed. Only the first
 * label is compared (`${h%%.*}`, POSIX sh and busybox ash): with `setHostnameAsFQDN: true` the kernel hostname is
 * `<pod>.<subdomain>.<ns>.svc.<domain>` (kubernetes v1.28.0 pkg/kubelet/util/util.go:33-45, from kubelet_pods.go:482;
 * the StatefulSet sets the subdomain to serviceName, stateful_set_utils.go:387).
 */
function forwardedInitCommand(target: RouteTarget): string[] {
  const first = `${target.name}-${target.ordinalsStart ?? 0}`;
  const refusal = `vpn-route-init: this pod is $h, not ${first}: only ${first} may take the forwarded workload's fixed VXLAN address (a second replica of the StatefulSet ${target.name}, from kubectl scale, an autoscaler or a replicas patch, would take it too); scale ${target.name} to 1`;
  return ['/bin/sh', '-c', `h=$(hostname); [ "\${h%%.*}" = "${first}" ] || { echo "${refusal}" >&2; exit 1; }; exec /bin/client_init.sh`];
}

/** An autoscaler in the app (a HorizontalPodAutoscaler's `spec.scaleTargetRef`), for `checkForwardedWorkloadAtSynth`. */
export interface AutoscalerTarget {
  /** Where it is (a construct path), named in the problem. */
  readonly at: string;
  readonly namespace: string;
  /** `spec.scaleTargetRef.kind`. */
  readonly kind: string;
  /** `spec.scaleTargetRef.name`. */
  readonly name: string;
}

/**
 * The problems of the port-forwarding workload as it is finally written (an adapter reads it once the app is built,
 * after every patch): `final` is the routed target read again (a `replicas` patch added after route() counts), and
 * an autoscaler of the app that scales it is refused, since its second pod would start (and, without the init
 * container's check, take the fixed address: see `forwardedInitCommand`). `path` prefixes each problem's path.
 * `routed`, the target as route() saw it, is what its init command (`<name>-<ordinals.start>`) and nat.conf key were
 * made from: a `metadata.name` or `spec.ordinals.start` patched after route() is refused, since the StatefulSet
 * controller creates only `<final name>-<final start>` (kubernetes v1.28.0 pkg/controller/statefulset/
 * stateful_set_control.go:614-631, `podInOrdinalRange`/`newVersionedStatefulSetPod`), which the guard would refuse.
 */
export function checkForwardedWorkloadAtSynth(final: RouteTarget, autoscalers: readonly AutoscalerTarget[], path: string, routed?: RouteTarget): Problem[] {
  const problems = checkForwardedTarget(final).map((p) => ({ ...p, path: `${path}${p.path.replace(/^route/, '')}`, message: `as written, after every patch: ${p.message}` }));
  if (routed && routed.name !== final.name) {
    problems.push({ path: `${path}.metadata.name`, code: 'changed-after-route', message: `as written, after every patch: the port-forwarding workload is named ${final.namespace}/${final.name}, but route() made its vpn-route-init guard and nat.conf entry for ${routed.name}: its pod ${final.name}-${final.ordinalsStart ?? 0} would be refused and never start; call route() after naming the workload (or do not patch metadata.name after route())` });
  } else if (routed && (routed.ordinalsStart ?? 0) !== (final.ordinalsStart ?? 0)) {
    problems.push({ path: `${path}.ordinals`, code: 'changed-after-route', message: `as written, after every patch: the port-forwarding workload ${final.namespace}/${final.name} has spec.ordinals.start ${String(final.ordinalsStart ?? 0)}, but route() made its vpn-route-init guard for ${routed.name}-${String(routed.ordinalsStart ?? 0)}: the controller creates only ${final.name}-${String(final.ordinalsStart ?? 0)}, which the guard refuses, so it would never start; call route() after setting ordinals (or do not patch them after route())` });
  }
  for (const a of autoscalers) {
    if (a.kind !== final.kind || a.name !== final.name || a.namespace !== final.namespace) continue;
    problems.push({ path: `${path}.autoscaler`, code: 'two-pods', message: `the HorizontalPodAutoscaler ${a.at} scales the port-forwarding workload ${final.namespace}/${final.name}: a second pod could not take the one fixed VXLAN address (its init container refuses any pod but ${final.name}-${final.ordinalsStart ?? 0}) and would never start; remove the autoscaler (the forwarded workload runs one replica)` });
  }
  return problems;
}

/**
 * The gateway's port-forwarding workload, if no route of the app matched it (its name and namespace): the gateway
 * would forward to the fixed VXLAN address nobody holds, and no port-sync sidecar would run. `routed` are the
 * workloads the gateway routed; `path` is where to report it (the gateway's construct path).
 */
export function checkForwardedWorkloadRouted(gatewayProps: VpnGatewayProps, routed: readonly RouteTarget[], path: string): Problem[] {
  const pf = gatewayProps.portForwarding;
  if (!pf || (pf.toPort === undefined && pf.app === undefined) || routed.some((t) => isForwardedTarget(gatewayProps, t))) return [];
  const seen = routed.length === 0 ? 'it routed no workload' : `it routed ${routed.map((t) => `${t.namespace}/${t.name}`).join(', ')}`;
  return [{ path: `${path}:portForwarding.workload`, code: 'not-routed', message: `the port-forwarding workload ${String(pf.workloadNamespace)}/${String(pf.workload)} is not routed through this gateway (${seen}): the forwarded port would reach no pod; route it with route(), giving it metadata.name ${String(pf.workload)} (cdk8s-plus names an object from its construct path otherwise) in namespace ${String(pf.workloadNamespace)}, or correct portForwarding.workload and workloadNamespace` }];
}

/** A pod spec routed through the gateway: the client init container first, the sidecar last, DNS by the gateway. Pure. */
export function applyRoute(spec: IPodSpec, route: RoutePlan): IPodSpec {
  if (!commonModel.isRecord(spec) || !Array.isArray(spec.containers) || spec.containers.some((c) => !commonModel.isRecord(c))) {
    throw new ValidationError([{ path: 'spec', code: 'pod-spec', message: 'expected a pod spec with its containers (spec.template.spec of a Deployment, StatefulSet or DaemonSet)' }], 'routed pod spec');
  }
  for (const key of ['initContainers', 'volumes'] as const) {
    if (spec[key] !== undefined && !Array.isArray(spec[key])) throw new ValidationError([{ path: `spec.${key}`, code: 'type', message: `expected a list, received ${commonModel.describeValue(spec[key])}` }], 'routed pod spec');
  }
  const has = (list: { name: string }[] | undefined, name: string) => (list ?? []).some((c) => c.name === name);
  if (has(spec.initContainers, route.initContainer.name)) return spec;
  const containers = [...spec.containers];
  if (route.appEnv) {
    const i = appContainerIndex(spec, route);
    containers[i] = { ...containers[i], env: [...(containers[i].env ?? []), ...route.appEnv.env] };
  }
  return {
    ...spec,
    initContainers: [route.initContainer, ...(spec.initContainers ?? [])],
    containers: [...containers, route.sidecar, ...(route.extraContainers ?? [])],
    volumes: [...(spec.volumes ?? []), route.volume, ...(route.extraVolumes ?? [])],
    dnsPolicy: route.dnsPolicy,
    dnsConfig: route.dnsConfig,
  };
}

/**
 * The index of the container that gets `route.appEnv` (slskd's): the one named `portForwarding.appContainer`, else the
 * first. Refuses a name the pod does not have, and a variable the container already sets (it would be set twice, and
 * Kubernetes keeps the last). Pure; the cdk8s adapter patches the same index.
 */
export function appContainerIndex(spec: IPodSpec, route: RoutePlan): number {
  const want = route.appEnv?.container;
  const i = want === undefined ? 0 : spec.containers.findIndex((c) => c.name === want);
  if (i < 0) {
    throw new ValidationError([{ path: 'portForwarding.appContainer', code: 'container', message: `the routed workload has no container "${want}" (it has ${spec.containers.map((c) => `"${c.name}"`).join(', ')}): name the container that runs slskd` }], 'routed pod spec');
  }
  const own = new Set((spec.containers[i].env ?? []).map((e) => e.name));
  const clash = (route.appEnv?.env ?? []).filter((e) => own.has(e.name)).map((e) => e.name);
  if (clash.length > 0) {
    throw new ValidationError([{ path: `spec.containers[${i}].env`, code: 'conflict', message: `the container "${spec.containers[i].name}" already sets ${clash.join(', ')}: remove ${clash.length > 1 ? 'them' : 'it'}, the gateway sets slskd's VPN integration (the API key from portForwarding.controlApiKeySecret)` }], 'routed pod spec');
  }
  return i;
}

/** Kinds `route()` accepts. */
export const ROUTABLE_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet'] as const;

/** The pods a route's kill switch fences, for `checkDuplicateKillSwitches`; `construct` is the gateway's path. */
export function routeFence(gatewayProps: VpnGatewayProps, target: RouteTarget, route: RoutePlan, construct: string): Fence {
  const policy = route.objects.find((o) => o.kind.endsWith('NetworkPolicy'));
  return { construct, cluster: gatewayProps.cluster ?? 'default', namespace: target.namespace, selector: target.podLabels, route: { workload: `${target.namespace}/${target.name}`, policy: policy?.metadata.name ?? '' } };
}
