import type { Container as IContainer } from 'kubernetes-types/core/v1';
import type { EnvVar as IEnvVar } from 'kubernetes-types/core/v1';
import type { Volume as IVolume } from 'kubernetes-types/core/v1';
import type { PortForwardingApp, VpnGatewaySpec } from '../../model/vpn-gateway';
import { WIREGUARD_MTU } from '../../model/vpn-gateway';
import { asset, inlineScript } from '../../assets';
import { AUTH_DIR, CONTROL_PORT, HEALTH_PORT, SECRETS_DIR, VPN_INTERFACE } from './constants';

/** gluetun's default control-server role for the loopback-only server: every route, no auth (fields of auth.Role, settings.go:111-126 at v3.41.1). */
const LOOPBACK_CONTROL_ROLE = '{"name":"loopback","auth":"none"}';

/** gluetun's environment: only variables gluetun reads; secrets as files (`*_SECRETFILE`) or Secret references. */
export function gluetunEnv(f: VpnGatewaySpec): IEnvVar[] {
  const env: IEnvVar[] = [];
  const set = (name: string, value: string | number | undefined) => {
    if (value !== undefined) env.push({ name, value: String(value) });
  };
  set('VPN_SERVICE_PROVIDER', f.provider);
  set('VPN_TYPE', f.vpnType);
  set('VPN_INTERFACE', VPN_INTERFACE);
  const wg = f.wireguard;
  if (wg) {
    set('WIREGUARD_PRIVATE_KEY_SECRETFILE', `${SECRETS_DIR}/wireguard_private_key`);
    if (wg.presharedKey) set('WIREGUARD_PRESHARED_KEY_SECRETFILE', `${SECRETS_DIR}/wireguard_preshared_key`);
    if (wg.addresses) set('WIREGUARD_ADDRESSES', wg.addresses.join(','));
    set('WIREGUARD_MTU', WIREGUARD_MTU);
    // Only custom has them (validation refuses both for any other provider).
    set('WIREGUARD_ENDPOINT_IP', wg.endpointIp);
    set('WIREGUARD_PUBLIC_KEY', wg.publicKey);
    set('WIREGUARD_ENDPOINT_PORT', wg.endpointPort);
  } else {
    set('OPENVPN_USER_SECRETFILE', `${SECRETS_DIR}/openvpn_user`);
    set('OPENVPN_PASSWORD_SECRETFILE', `${SECRETS_DIR}/openvpn_password`);
    set('OPENVPN_ENDPOINT_PORT', f.openvpn?.endpointPort);
  }
  for (const [name, value] of f.serverFilters) set(name, value);
  set('FIREWALL_OUTBOUND_SUBNETS', f.localCidrs.join(','));
  set('FIREWALL_INPUT_PORTS', HEALTH_PORT);
  set('HEALTH_SERVER_ADDRESS', `:${HEALTH_PORT}`);
  set('HEALTH_RESTART_VPN', 'on');
  set('DNS_SERVER', 'off');
  set('DNS_ADDRESS', f.dnsAddress);
  const pf = f.portForwarding;
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
    set('VPN_PORT_FORWARDING_PROVIDER', pf.provider);
    if (pf.credentials) {
      // gluetun reads any setting from `<NAME>_SECRETFILE` (sources/secrets/reader.go): never the environment.
      set('VPN_PORT_FORWARDING_USERNAME_SECRETFILE', `${SECRETS_DIR}/vpn_port_forwarding_username`);
      set('VPN_PORT_FORWARDING_PASSWORD_SECRETFILE', `${SECRETS_DIR}/vpn_port_forwarding_password`);
    }
    if (pf.workload) {
      const to = pf.workload.address;
      // port-forward-up.sh, its values as arguments: gluetun replaces {{PORT}} (service/command.go:20-21). With an
      // app: the same port on the workload ("same": no translation). It refuses a forwarded port the pod serves.
      const served = pf.servedPorts;
      const args = ['port-forward-up', '{{PORT}}', to, String(pf.toPort ?? 'same'), served.length ? served.join(',') : 'none'];
      set('VPN_PORT_FORWARDING_UP_COMMAND', `/bin/sh -c '${PORT_FORWARD_UP}' ${args.join(' ')}`);
      set('VPN_PORT_FORWARDING_DOWN_COMMAND', `/bin/sh -c '${PORT_FORWARD_DOWN}'`);
    }
  }
  return env;
}

/**
 * gluetun's up command (port-forward-up.sh beside this module): DNATs the forwarded port to the workload, never onto a port
 * the workload's pod serves. Held in single quotes in the command gluetun splits (internal/command/split.go).
 */
const PORT_FORWARD_UP = inlineScript(asset(__dirname, 'port-forward-up.sh'));

/** gluetun's down command (port-forward-down.sh beside this module): empties the chains the up command fills. */
const PORT_FORWARD_DOWN = inlineScript(asset(__dirname, 'port-forward-down.sh'));

/**
 * The control-server routes each app's reader calls, and nothing else: port-sync reads only the port; slskd reads the
 * public IP first (an empty one means "VPN down") and then the port (slskd/slskd src/slskd/Integrations/VPN/Clients/
 * Gluetun.cs:93, :105 at 5770c7e). Both are valid gluetun routes (internal/server/middlewares/auth/settings.go:156-157).
 */
export function controlRoutes(app: PortForwardingApp | undefined): string[] {
  return app === 'slskd' ? ['GET /v1/publicip/ip', 'GET /v1/portforward'] : ['GET /v1/portforward'];
}

/**
 * The gluetun-auth init container's script (gluetun-auth.sh beside this module): writes gluetun's auth file from the API
 * key Secret (a TOML file cannot read a Secret itself), one role with the routes its reader needs (`controlRoutes`), and
 * refuses a key that would break out of the TOML string. Its values come from `gluetunAuthEnv`.
 */
export const GLUETUN_AUTH_SCRIPT = inlineScript(asset(__dirname, 'gluetun-auth.sh'));

/** The gluetun-auth script's environment: the role's name and its routes (comma-separated). */
export function gluetunAuthEnv(app: PortForwardingApp | undefined): IEnvVar[] {
  return [{ name: 'AUTH_ROLE', value: app === 'slskd' ? 'slskd' : 'port-sync' }, { name: 'AUTH_ROUTES', value: controlRoutes(app).join(',') }];
}

/** The projected volume of gluetun's secrets, each a file under `SECRETS_DIR`. */
export function secretVolume(f: VpnGatewaySpec): IVolume {
  const sources: { secret: { name: string; items: { key: string; path: string }[] } }[] = [];
  if (f.wireguard) {
    sources.push({ secret: { name: f.wireguard.privateKey.name, items: [{ key: f.wireguard.privateKey.key, path: 'wireguard_private_key' }] } });
    if (f.wireguard.presharedKey) sources.push({ secret: { name: f.wireguard.presharedKey.name, items: [{ key: f.wireguard.presharedKey.key, path: 'wireguard_preshared_key' }] } });
  } else {
    const c = f.openvpn!.credentials;
    sources.push({ secret: { name: c.name, items: [{ key: c.userKey!, path: 'openvpn_user' }, { key: c.passwordKey, path: 'openvpn_password' }] } });
  }
  const pf = f.portForwarding?.credentials;
  if (pf) sources.push({ secret: { name: pf.name, items: [{ key: pf.userKey!, path: 'vpn_port_forwarding_username' }, { key: pf.passwordKey, path: 'vpn_port_forwarding_password' }] } });
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
export function gluetunDevice(f: VpnGatewaySpec): Pick<IContainer, 'securityContext' | 'resources'> {
  const tun = f.tunDevice;
  const resources = { requests: { cpu: '50m', memory: '256Mi' } as Record<string, string>, limits: { memory: '512Mi' } as Record<string, string> };
  if (typeof tun === 'object') {
    resources.requests[tun.resource] = '1';
    resources.limits[tun.resource] = '1';
  }
  return { securityContext: tun === 'privileged' ? { privileged: true } : { capabilities: { add: ['NET_ADMIN'] } }, resources };
}
