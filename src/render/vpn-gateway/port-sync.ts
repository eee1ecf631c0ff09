import type { Container as IContainer } from 'kubernetes-types/core/v1';
import type { EnvVar as IEnvVar } from 'kubernetes-types/core/v1';
import type { Volume as IVolume } from 'kubernetes-types/core/v1';
import { asset } from '../../assets';
import { boundedName } from '../../model/labels';
import type { RouteTarget, VpnGatewaySpec } from '../../model/vpn-gateway';
import { KubeObject } from '../../types';
import { CONTROL_PORT, PORT_SYNC_METRICS_PORT } from './constants';

/**
 * The port-sync sidecar's script: a POSIX sh reconcile loop that keeps a routed app's listen port equal to the port
 * the VPN provider forwards (read from gluetun's control server over the VXLAN). Written into a ConfigMap by
 * `planRoute`; linted by shellcheck and run against the real apps in test/system/vpn-gateway-port-sync.test.ts.
 * The script is `port-sync.sh` beside this module (src/assets.ts); values reach it by its environment only.
 *
 * Upstream behaviour it rests on:
 * - gluetun v3.41.1 `GET /v1/portforward` answers `{"port":N}` (0 while none is forwarded) or `{"ports":[…]}`
 *   (internal/server/portforward.go:34-46, internal/server/wrappers.go:28-34); the API key goes in `X-API-Key`
 *   (internal/server/middlewares/auth/apikey.go:29-35); a route no role grants answers 401 (middleware.go:55-60).
 * - qBittorrent WebUI API v2: `POST /api/v2/auth/login` answers "Ok." or "Fails.", and 403 once the address is banned
 *   (5 failures ban it for 3600 s by default, src/base/preferences.cpp `WebUI/MaxAuthenticationFailCount`,
 *   `WebUI/BanDuration`); `GET /api/v2/app/preferences` has `listen_port`; `POST /api/v2/app/setPreferences`
 *   takes `json={"listen_port":N}`. API keys (`Authorization: Bearer`) exist from 5.2.0 only.
 * - Deluge 2 Web UI JSON-RPC at `/json` (`{"method","params","id"}` → `{"result","error","id"}`, error code 1 when not
 *   logged in): `auth.login [password]` sets the session cookie (deluge/ui/web/auth.py `Auth.login`);
 *   `web.connected`, `web.get_hosts` (`[[id, host, port, user], …]`) and `web.connect [id]` attach the Web UI to a
 *   daemon (deluge/ui/web/json_api.py `WebApi`); `core.get_config_value "listen_ports"` and
 *   `core.set_config {listen_ports, random_port}` (deluge/core/core.py:812, :822 in Debian's 2.0.3; the keys'
 *   defaults `[6881, 6891]` / `True` in core/preferencesmanager.py:48, :51, and random_port overrides listen_ports
 *   at :206-214).
 * - Transmission RPC (Debian's transmission-daemon 3.00, libtransmission/rpc-server.c `handle_request`): HTTP Basic
 *   auth first (401 "Unauthorized User. N unsuccessful login attempts.", :673-683), then a 409 that hands out
 *   `X-Transmission-Session-Id`; `session-get` / `session-set` with `peer-port` (rpc-spec). After 100 failed logins in a
 *   row (one counter for every client; a good login resets it, :686) 3.00 always answers every request 403 "Too many
 *   unsuccessful login attempts. Please restart transmission-daemon." (`loginattempts == 100`, :637-641). 4.x counts
 *   failures only with `anti-brute-force-enabled`, which defaults to false; then it answers 403 past
 *   `anti-brute-force-threshold` (default 100) with the plain body "<h1>403: Forbidden</h1>", the same as an address
 *   its rpc-whitelist refuses (4.0.6 libtransmission/rpc-server.cc:431-435, :459-466, :470; defaults rpc-server.h:33-34).
 *   Either way a wrong password is retried only after BAN_BACKOFF: retrying every period would lock the user's own
 *   Web UI out within minutes on 3.00, or on 4.x with the lock enabled.
 * - curl's config file (`-K`): a value in double quotes takes `\\` and `\"` escapes (curl docs, `--config`), so a
 *   secret is escaped before it is written there (a quote or a backslash in a password would end the value).
 */
export const PORT_SYNC_SCRIPT = asset(__dirname, 'port-sync.sh');

/**
 * slskd's own gluetun integration, as environment on the slskd container (the `SLSKD_` prefix, slskd/slskd
 * src/slskd/Program.cs:131; the names at src/slskd/Core/Options.cs:2420 `VPN`, :2429 `VPN_PORT_FORWARDING`, :2437
 * `VPN_POLLING_INTERVAL` (ms, 500 or more, :2439), :2485 `VPN_GLUETUN_URL`, :2519 `VPN_GLUETUN_API_KEY`, at 5770c7e).
 * With `VPN_PORT_FORWARDING` slskd stays disconnected from Soulseek until gluetun reports a port other than 0
 * (Integrations/VPN/Clients/Gluetun.cs:103-111, VPNService.cs:203-208, :267-270) and sets its listen port to each new
 * one (VPNService.cs:209-222): the start-up port 0 is never written. slskd reads options from environment variables,
 * its YAML file or the command line only (no `_FILE` form), so the API key comes from the Secret by `secretKeyRef`.
 */
export function slskdEnv(f: VpnGatewaySpec): { container?: string; env: IEnvVar[] } {
  const pf = f.portForwarding!;
  return {
    ...(pf.appContainer !== undefined ? { container: pf.appContainer } : {}),
    env: [
      { name: 'SLSKD_VPN', value: 'true' },
      { name: 'SLSKD_VPN_PORT_FORWARDING', value: 'true' },
      { name: 'SLSKD_VPN_GLUETUN_URL', value: `http://${f.vxlanPrefix}.1:${CONTROL_PORT}` },
      { name: 'SLSKD_VPN_GLUETUN_API_KEY', valueFrom: { secretKeyRef: { name: pf.controlApiKey!.name, key: pf.controlApiKey!.key } } },
      ...(pf.syncPeriodGiven !== undefined ? [{ name: 'SLSKD_VPN_POLLING_INTERVAL', value: String(pf.syncPeriodGiven * 1000) }] : []),
    ],
  };
}

/** The port-sync sidecar of the port-forwarding workload: its script ConfigMap, container and volumes. */
export function portSync(f: VpnGatewaySpec, target: RouteTarget): { configMap: KubeObject; container: IContainer; volumes: IVolume[] } {
  const pf = f.portForwarding!;
  const app = pf.app!;
  const name = boundedName(target.name, '-vpn-port-sync');
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: target.namespace, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'app.kubernetes.io/component': 'vpn-port-sync' } },
    data: { 'port-sync.sh': PORT_SYNC_SCRIPT },
  } as KubeObject;
  const sources: { secret: { name: string; items: { key: string; path: string }[] } }[] = [
    { secret: { name: pf.controlApiKey!.name, items: [{ key: pf.controlApiKey!.key, path: 'gluetun-api-key' }] } },
  ];
  // Deluge's Web UI has a password only: its spec has no username key (a missing key would stop the pod).
  const creds = pf.appCredentials;
  const userItem = creds?.userKey !== undefined ? [{ key: creds.userKey, path: 'app-username' }] : [];
  if (creds) sources.push({ secret: { name: creds.name, items: [...userItem, { key: creds.passwordKey, path: 'app-password' }] } });
  if (pf.appApiKey) sources.push({ secret: { name: pf.appApiKey.name, items: [{ key: pf.appApiKey.key, path: 'app-api-key' }] } });
  const env: IEnvVar[] = [
    { name: 'APP', value: app },
    { name: 'GLUETUN_URL', value: `http://${f.vxlanPrefix}.1:${CONTROL_PORT}` },
    { name: 'GLUETUN_API_KEY_FILE', value: '/run/port-sync-secrets/gluetun-api-key' },
    ...(pf.appUrl !== undefined ? [{ name: 'APP_URL', value: pf.appUrl }] : []),
    ...(userItem.length ? [{ name: 'APP_USERNAME_FILE', value: '/run/port-sync-secrets/app-username' }] : []),
    ...(creds ? [{ name: 'APP_PASSWORD_FILE', value: '/run/port-sync-secrets/app-password' }] : []),
    ...(pf.appApiKey ? [{ name: 'APP_API_KEY_FILE', value: '/run/port-sync-secrets/app-api-key' }] : []),
    ...(pf.command !== undefined ? [{ name: 'COMMAND', value: pf.command }] : []),
    { name: 'PERIOD', value: String(pf.syncPeriodSeconds) },
    { name: 'METRICS_PORT', value: String(PORT_SYNC_METRICS_PORT) },
    { name: 'SERVED_PORTS', value: pf.servedPorts.join(',') },
    ...(pf.workload ? [{ name: 'VXLAN_ADDRESS', value: pf.workload.address }] : []),
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
