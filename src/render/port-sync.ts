import { asset } from '../assets';

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
