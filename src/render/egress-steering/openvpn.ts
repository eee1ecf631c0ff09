import * as path from 'node:path';
import { addResolvedSecret, planSecretSource } from '../../host/secret-source';
import { mergeHostPlans } from '../../host/host-plan';
import type { EgressSteeringSpec, EgressTunnelSpec } from '../../model/egress-steering-spec';
import { HostPlan } from '../../types';
import { asset, withSettings } from '../../assets';
import { KILL_SWITCH_LEARNT_DIR, KILL_SWITCH_NFT_PATH, KILL_SWITCH_SETS, KILL_SWITCH_TABLE, KILL_SWITCH_UNIT, renderHostKillSwitch } from '../kill-switch';
import { podFenceOf } from './pod-fence';
import {
  EGRESS_BLACKHOLE, EGRESS_HOLD_PRIORITY, EGRESS_ROUTE_TABLE, EGRESS_RULE_PRIORITY, OPENVPN_DOWN_PATH, OPENVPN_PIN_PATH, OPENVPN_PING, OPENVPN_PING_RESTART, OPENVPN_UNIT, OPENVPN_UP_PATH, RESTEER_PATH,
} from './constants';

const OPENVPN_UP_SCRIPT = asset(__dirname, 'openvpn-up.sh');
const OPENVPN_DOWN_SCRIPT = asset(__dirname, 'openvpn-down.sh');
const OPENVPN_PIN_SCRIPT = asset(__dirname, 'openvpn-pin.sh');

function openvpnScripts(): { up: string; down: string; pin: string } {
  return {
    up: withSettings(OPENVPN_UP_SCRIPT, {
      LEARNT_DIR: KILL_SWITCH_LEARNT_DIR, TABLE: KILL_SWITCH_TABLE, SET: KILL_SWITCH_SETS.tunnel[4], NFT_PATH: KILL_SWITCH_NFT_PATH,
      BLACKHOLE: EGRESS_BLACKHOLE, PRIORITY: String(EGRESS_RULE_PRIORITY), HOLD_PRIORITY: String(EGRESS_HOLD_PRIORITY), TABLE_ID: String(EGRESS_ROUTE_TABLE), RESTEER: RESTEER_PATH,
    }),
    down: withSettings(OPENVPN_DOWN_SCRIPT, { HOLD_PRIORITY: String(EGRESS_HOLD_PRIORITY), RESTEER: RESTEER_PATH }),
    pin: OPENVPN_PIN_SCRIPT,
  };
}

/** The first digits of a pushed ping-restart the unit keeps: a positive number of seconds (see openvpnHost). */
const OPENVPN_PING_RESTART_KEPT = ['1', '2', '3', '4', '5', '6', '7', '8', '9'];

/** The OpenVPN split tunnel: its secrets, hooks, unit and the host kill switch (the address is learnt at connect). */
export function openvpnHost(s: EgressSteeringSpec, t: Extract<EgressTunnelSpec, { type: 'openvpn' }>, host: HostPlan, before: readonly string[]): HostPlan {
  const config = planSecretSource(`${s.name}-openvpn-config`, t.configFrom, OPENVPN_UNIT);
  addResolvedSecret(host, config);
  const waits = [config.unit];
  const creds = t.credentialsFrom ? planSecretSource(`${s.name}-openvpn-credentials`, t.credentialsFrom, OPENVPN_UNIT) : undefined;
  if (creds) {
    addResolvedSecret(host, creds);
    waits.push(creds.unit);
  }
  host.packages.push('openvpn');
  const scripts = openvpnScripts();
  host.files.push({ path: OPENVPN_UP_PATH, mode: 0o755, owner: 'root:root', content: scripts.up });
  host.files.push({ path: OPENVPN_DOWN_PATH, mode: 0o755, owner: 'root:root', content: scripts.down });
  host.files.push({ path: OPENVPN_PIN_PATH, mode: 0o755, owner: 'root:root', content: scripts.pin });
  // Parsed in the spec: OpenVPN takes the host without brackets, and the port apart.
  const remote = t.remote;
  const pinned = `${config.path}.pinned`;
  const args = [
    // The pull-filters come before --config, the other options after it. OpenVPN reads --config where it stands on the
    // command line, so the config's options are parsed between the two groups. A scalar option takes the last value
    // parsed: the options after --config win over the config's. A pull-filter is a prefix match on the pushed line,
    // kept in parse order, and the first match wins (openvpn v2.6.14 src/openvpn/options.c:5487-5498, and
    // alloc_pull_filter appends at the tail; a removed one logs "Pushed option removed by filter"). So ours come
    // first: a provider's `pull-filter accept ping-exit` (or `accept redirect-gateway`) cannot let the line through
    // before ours. The provider's own filters for other lines (`pull-filter ignore "route-ipv6"`) still apply.
    // With these, a silent server ends the session within ping-restart (the server's pushed value when it pushes one:
    // pushed options are applied after the command line), and a pushed persist-tun is ignored like the config's.
    // - ping-restart: a pushed 0 turns silent-server detection off (ping_rec_timeout 0, options.c:6950-6955), so tun0
    //   would stay up on a dead server. A server's real ping-restart is kept (its ping may be slower than our 60 s):
    //   "ping-restart " then a digit 1-9 is accepted, and every other pushed ping-restart is ignored. A filter is a
    //   prefix match on the raw line, split into words only after it (options.c:5481-5497), so ignoring "ping-restart 0"
    //   alone let "ping-restart  0" (two spaces), a tab or "-1" (positive_atoi gives 0, options.c:4952-4956) through.
    //   systemd unquotes ExecStart's "…" into one argument, as OpenVPN's `pull-filter` needs (three words).
    // - A pushed line that starts with a quote: OpenVPN unquotes it after the filters (options.c:5532), so
    //   `"persist-tun"` or `"ping-restart" 0` would pass every filter above. No server quotes what it pushes.
    // - --auth-retry none, after --config: OpenVPN exits on AUTH_FAILED (push.c:91-104), and the unit's next start
    //   resolves the secrets again. A config's `auth-retry nointeract` would retry in the same process, with the same
    //   rotated-away password, forever.
    // - ping-exit, any value: it shares ping-restart's timer (options.c:6944-6949), so `ping-exit 0` also turns it off,
    //   and any other value makes a silent server end OpenVPN (ping.c:56, openvpn.c:356) where ping-restart would
    //   reconnect it, with status 0.
    // Restart=always, not on-failure: OpenVPN also exits with status 0 on a pushed `inactive` or `session-timeout` and
    // on a server's HALT, which on-failure never restarts (systemd.service(5), Restart=): the node would stay without a
    // tunnel, the kill switch holding. `systemctl stop`, and a stop through Requires=, are not restarted.
    '--suppress-timestamps', `--pull-filter ignore '"'`, `--pull-filter ignore "'"`, '--pull-filter ignore redirect-gateway', '--pull-filter ignore persist-tun',
    ...OPENVPN_PING_RESTART_KEPT.map((d) => `--pull-filter accept "ping-restart ${d}"`), '--pull-filter ignore ping-restart', '--pull-filter ignore ping-exit',
    `--config ${pinned}`, `--dev ${s.iface}`, '--dev-type tun', '--route-noexec', '--auth-retry none',
    `--ping ${OPENVPN_PING} --ping-restart ${OPENVPN_PING_RESTART}`,
    '--script-security 2', `--up ${OPENVPN_UP_PATH}`, `--down ${OPENVPN_DOWN_PATH}`, '--down-pre',
    ...(creds ? [`--auth-user-pass ${creds.path}`] : []), ...(remote ? [`--remote ${remote.host} ${remote.port}`] : []),
  ];
  host.units.push({
    name: OPENVPN_UNIT,
    enabled: true,
    content: [
      '[Unit]', `Description=tunnelwright: OpenVPN split tunnel ${s.iface} (no default-route takeover)`,
      // Never without the kill switch: Requires= stops the tunnel when the table's unit fails or stops. The secret
      // units only Wants=: one whose source was out of reach at boot fails, and Requires= would then never start the
      // tunnel, nor retry. This way the unit starts, its ExecStartPre resolves the secrets again, and a start that
      // still finds no config fails and is retried every RestartSec (at most 3 starts in systemd's default 10 s
      // start-limit window, whose burst is 5).
      `Wants=network-online.target ${waits.join(' ')}`, `After=network-online.target ${[...before, ...waits, KILL_SWITCH_UNIT].join(' ')}`, `Requires=${KILL_SWITCH_UNIT}`,
      '', '[Service]', 'Type=simple',
      // A relative path in the config (`ca ca.crt` beside a provider's .ovpn) is read from the working directory, as
      // with OpenVPN's own openvpn-client@.service (WorkingDirectory=/etc/openvpn/client): the config file's folder.
      // "-": a folder not there yet is not fatal (systemd.exec(5)); the pin then fails on the missing config, retried.
      ...('file' in t.configFrom ? [`WorkingDirectory=-${path.posix.dirname(t.configFrom.file).replace(/%/g, '%%')}`] : []),
      // The boot units resolve the secrets once (RemainAfterExit=yes); each start resolves them again from their
      // sources, so a restart (Restart=always, after AUTH_FAILED for a rotated password) reads the rotated value. The
      // "-": a source not reachable keeps the file the boot resolved.
      `ExecStartPre=-${config.refresh}`, ...(creds ? [`ExecStartPre=-${creds.refresh}`] : []),
      `ExecStartPre=${OPENVPN_PIN_PATH} ${config.path} ${pinned}${t.remote ? ' pin' : ''}`, `ExecStart=/usr/sbin/openvpn ${args.join(' ')}`, 'Restart=always', 'RestartSec=5s',
      '', '[Install]', 'WantedBy=multi-user.target', '',
    ].join('\n'),
  });
  // The address is learnt at connect: the up script adds it to the kill switch's set.
  return mergeHostPlans([host, renderHostKillSwitch({ node: s.gatewayNode, tunnelInterface: s.iface, tunnelCidrs: [], ...podFenceOf(s) })]).plans[0];
}
