import type { Container as IContainer } from 'kubernetes-types/core/v1';
import type { EnvVar as IEnvVar } from 'kubernetes-types/core/v1';
import type { Volume as IVolume } from 'kubernetes-types/core/v1';
import type { PortForwardingProps, VpnGatewayProps } from '../../model/vpn-gateway';
import { LOCATION_FILTERS, LocationFilter, providerName } from '../../model/vpn-providers';
import * as vpnGatewayModel from '../../model/vpn-gateway';
import { asset, inlineScript } from '../../assets';
import { CONTROL_PORT, FORWARDED_WORKLOAD_HOST, GatewayFacts, HEALTH_PORT, WIREGUARD_MTU } from './facts';
import { PF_FORWARD_CHAIN, PF_NAT_CHAIN } from './firewall';

/** gluetun's default control-server role for the loopback-only server: every route, no auth (fields of auth.Role, settings.go:111-126 at v3.41.1). */
const LOOPBACK_CONTROL_ROLE = '{"name":"loopback","auth":"none"}';

export const SECRETS_DIR = '/run/secrets';

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

/** Where the gateway's init container writes gluetun's auth file (a memory emptyDir: the key never reaches the state volume). */
export const AUTH_DIR = '/run/gluetun-auth';

/**
 * gluetun's up command (port-forward-up.sh beside this module): DNATs the forwarded port to the workload, never onto a port
 * the workload's pod serves. Held in single quotes in the command gluetun splits (internal/command/split.go).
 */
const PORT_FORWARD_UP = inlineScript(asset(__dirname, 'port-forward-up.sh'));

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

export function secretVolume(props: VpnGatewayProps): IVolume {
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

/**
 * gluetun's WireGuard adds an `ip rule` for table 51820 and, after an unclean exit (an OOM kill), leaves it in the
 * pod's network namespace: the restarted container fails with "file exists" (internal/wireguard/rule.go). The gluetun
 * wiki's Kubernetes page deletes the stale rule from a postStart hook, which runs beside the entrypoint and may delete
 * the fresh rule instead; deleting it before exec'ing the entrypoint (`/gluetun-entrypoint`, the image's ENTRYPOINT)
 * cannot race.
 */
export const GLUETUN_WIREGUARD_COMMAND = ['/bin/sh', '-c', inlineScript(asset(__dirname, 'gluetun-start.sh'))];

/** gluetun's security context and resources for the way it gets /dev/net/tun (see `tunDevice`). */
export function gluetunDevice(props: VpnGatewayProps): Pick<IContainer, 'securityContext' | 'resources'> {
  const tun = props.tunDevice;
  const resources = { requests: { cpu: '50m', memory: '256Mi' } as Record<string, string>, limits: { memory: '512Mi' } as Record<string, string> };
  if (typeof tun === 'object') {
    resources.requests[tun.resource] = '1';
    resources.limits[tun.resource] = '1';
  }
  return { securityContext: tun === 'privileged' ? { privileged: true } : { capabilities: { add: ['NET_ADMIN'] } }, resources };
}
