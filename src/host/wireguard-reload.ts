import { asset } from '../assets';
import { HostDropin, HostFile } from '../types';

/** The reload script of every wg-quick interface tunnelwright writes. */
export const WG_RELOAD_PATH = '/opt/tunnelwright/bin/wg-reload';

/**
 * `systemctl reload wg-quick@<i>` runs `wg syncconf %i <(wg-quick strip %i)` upstream. Our configs hold no
 * `PrivateKey` when it comes from a file (`PostUp = wg set %i private-key <file>` applies it), and `wg syncconf` of a
 * config without one clears the interface's key: the tunnel dies. This script syncs the config with the key read
 * back from its file into the config it feeds `wg syncconf` (never into an argument: process lists are world-readable),
 * then re-applies every preshared key from its file (a peer added since boot gets its key too).
 * Routes are not changed by a reload (as upstream): allowed IPs outside the interface's addresses need a restart.
 */
export const WG_RELOAD_SCRIPT = asset(__dirname, 'wg-reload.sh');

export const WG_RELOAD_FILE: HostFile = { path: WG_RELOAD_PATH, mode: 0o755, owner: 'root:root', content: WG_RELOAD_SCRIPT };

/** The script that sets the endpoints of peers dialled by hostname once the interface is up. */
export const WG_ENDPOINTS_PATH = '/opt/tunnelwright/bin/wg-endpoints';

/** The unit that runs the endpoints script for an interface. */
export function wireguardEndpointsUnit(iface: string): string {
  return `tunnelwright-${iface}-endpoints.service`;
}

/**
 * `wg-quick up` resolves every `Endpoint` before the interface is up (`set_config` runs `wg addconf`,
 * wireguard-tools src/wg-quick/linux.bash:251-253, 333) and fails or waits for each: a name that does not exist
 * (EAI_NONAME) fails the whole `up`, which deletes the interface (the `del_if` trap, linux.bash:330), and a name whose
 * DNS is unreachable is retried for ever under upstream's unit (`WG_ENDPOINT_RESOLUTION_RETRIES=infinity`, src/config.c:
 * 177-192, 241-266; the unit is a oneshot without a start timeout). So a hostname endpoint is written as a comment,
 * and this script sets it once the interface is up, each peer alone. `--once` tries once for each peer without an
 * endpoint (for a manual check). Otherwise it runs until stopped:
 * - a peer without an endpoint gets one once its name resolves, tried again after WG_ENDPOINTS_INTERVAL seconds (10),
 *   the wait doubling up to WG_ENDPOINTS_MAX_INTERVAL (300): 16 tries and log lines in the first hour for a name that
 *   never resolves, then 12 an hour, not 360;
 * - a peer with an endpoint keeps it, learnt by roaming or not, while it works: its name is resolved again only while
 *   the peer is failing, that is its latest handshake is older than WG_ENDPOINTS_STALE seconds (180, WireGuard's
 *   REJECT_AFTER_TIME: no session is left) and either this node has sent it more than the one keepalive WireGuard
 *   sends after receiving data (32 bytes, no answer due) for WG_ENDPOINTS_QUIET seconds (30) without receiving
 *   anything, or the host has no route to its address (`ip route get` with the interface's fwmark fails, or goes
 *   through the interface itself; the kernel and wireguard-go count bytes sent only when the send succeeds). An idle
 *   link is not failing (the handshake of a link without keepalive ages without limit), so an endpoint learnt by
 *   roaming is not overwritten with a stale DNS answer. This is what wireguard-tools' contrib/reresolve-dns does (for
 *   `Endpoint =` lines only, with the handshake's age alone): a peer whose name moved (dynamic DNS) and that cannot
 *   reach this node first (behind NAT or a stateful firewall) is dialled at its new address; one that can is found
 *   sooner by roaming. While it keeps failing, the name is resolved again after the same doubling waits, each time
 *   dialling the address after the failing one.
 * A name is resolved by `getent ahosts` (getaddrinfo's order; `wg` takes the first, config.c), at most
 * WG_ENDPOINTS_LOOKUP_TIMEOUT seconds (5), outside any lock; then, holding the interface's lock (WG_LOCK), which
 * wg-reload holds around `wg syncconf`, the endpoint is set only if the peer still has the one it had: `wg set …
 * endpoint` creates a peer that is not there, without allowed IPs, so a peer removed or re-keyed by a reload is never
 * brought back, and an endpoint a reload set is not overwritten. The interface's lists are read once a round into
 * arrays. When the interface is gone (`wg-quick down` leaves its unit active), the script says so once and waits for
 * it; `--once` then exits 2. A config it cannot read fails it (exit 1).
 */
export const WG_ENDPOINTS_SCRIPT = asset(__dirname, 'wg-endpoints.sh');
/** How a peer's hostname endpoint is written in the config: a comment, which wg-quick and wg skip; the script's `deferred`. */
export const DEFERRED_ENDPOINT_PREFIX = /^deferred='([^']+)'$/m.exec(WG_ENDPOINTS_SCRIPT)![1];

export const WG_ENDPOINTS_FILE: HostFile = { path: WG_ENDPOINTS_PATH, mode: 0o755, owner: 'root:root', content: WG_ENDPOINTS_SCRIPT };

/**
 * The unit that sets an interface's hostname endpoints after it is up and keeps them working: the script runs until
 * stopped while the config has a name (with none it exits 0 at once, and the unit is inactive). Bound to the interface
 * (stopped and restarted with it: `BindsTo=`), pulled in by it (`Wants=` in the interface's drop-in), and nothing
 * waits for it: the distribution's unit is ordered after the interface only, so it starts while a name is still
 * unresolved. Restarted 10 s after it ends any way but exit 0, the end of a config without names (`Restart=always`:
 * `on-failure` counts a stray SIGTERM, SIGHUP or SIGPIPE as clean, systemd.service(5) `SuccessExitStatus=`), and
 * never refused a start: each reload restarts it, and five reloads within 10 s would otherwise hit systemd's default
 * start limit (`StartLimitBurst=5` per `StartLimitIntervalSec=10s`, systemd.unit(5)), which the reload's `-` would hide.
 */
export function wireguardEndpointsUnitContent(iface: string): string {
  const wgUnit = `wg-quick@${iface}.service`;
  return [
    '[Unit]',
    `Description=tunnelwright: set the hostname endpoints of ${iface}'s peers once it is up`,
    `After=${wgUnit} network-online.target nss-lookup.target`,
    `BindsTo=${wgUnit}`,
    'StartLimitIntervalSec=0',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${WG_ENDPOINTS_PATH} ${iface}`,
    'Restart=always',
    'RestartPreventExitStatus=0',
    'RestartSec=10',
    '',
  ].join('\n');
}

/**
 * The drop-in that makes `systemctl reload <wg-quick unit>` apply the config and keep the keys: each secret is first
 * resolved again from its source (`refresh`: a key rotated at its source is applied by the reload), then the reload
 * script syncs the config with it; then the endpoints unit (`endpointsUnit`) is restarted, so it reads the new config:
 * `wg syncconf` re-creates a peer whose key changed (or adds a new one) without an endpoint, since the name is only a
 * comment, and the unit sets it, retrying until the name resolves.
 * `--no-block`: the unit is ordered `After=` the interface, so its start job waits for this reload job to finish;
 * a blocking `systemctl` here would wait on itself (systemctl(1), `--no-block`). `-`: never fails the reload.
 */
export function wireguardReloadDropin(unit: string, refresh: readonly string[] = [], endpointsUnit?: string): HostDropin {
  const lines = ['[Service]', 'ExecReload=', ...refresh.map((c) => `ExecReload=${c}`), `ExecReload=${WG_RELOAD_PATH} %i`];
  if (endpointsUnit) lines.push(`ExecReload=-/usr/bin/systemctl restart --no-block ${endpointsUnit}`);
  return { unit, name: '20-tunnelwright-reload.conf', content: `${lines.join('\n')}\n` };
}
