import { addResolvedSecret, planSecretSource } from '../../host/secret-source';
import { mergeHostPlans } from '../../host/host-plan';
import { WG_RELOAD_FILE, wireguardReloadDropin } from '../../host/wireguard-reload';
import type { EgressSteeringSpec, EgressTunnelSpec } from '../../model/egress-steering-spec';
import { emptyHostPlan, HostPlan } from '../../types';
import { asset, withSettings } from '../../assets';
import { KILL_SWITCH_UNIT, renderHostKillSwitch } from '../kill-switch';
import { podFenceOf } from './pod-fence';
import { renderWireguardConfig } from '../wireguard-overlay-node';
import {
  EGRESS_BLACKHOLE, EGRESS_ROUTE_TABLE, EGRESS_RULE_PRIORITY, NETWORKD_DROPIN, NETWORKD_DROPIN_PATH, RESTEER_PATH, RESTEER_SERVICE, RESTEER_TIMER, WG_HANDSHAKE_METRIC, WG_HANDSHAKE_PATH, WG_HANDSHAKE_SERVICE, WG_HANDSHAKE_TIMER,
} from './constants';
import { openvpnHost } from './openvpn';

const RESTEER_SCRIPT = asset(__dirname, 'resteer.sh');
const HANDSHAKE_SCRIPT = asset(__dirname, 'wireguard-handshake.sh');

/**
 * The re-steer hook: labels the Node and the CiliumNode `<label>=<address>-<ifindex>` from the live interface (an
 * IPv6 address with `:` written `.`), or removes the label while the interface is gone. It uses `$KUBECTL`, else
 * kubectl, `k3s kubectl` or `k0s kubectl`, whichever the node has.
 */
export function renderResteerScript(node: string, iface: string, label: string, kubeconfig?: string): string {
  return withSettings(RESTEER_SCRIPT, { IFACE: iface, NODE: node, LABEL: label, ...(kubeconfig ? { KUBECONFIG_FILE: kubeconfig } : {}) });
}

/**
 * Writes `<metric>{interface, public_key} <unix seconds>` for each peer of the interface (`wg show latest-handshakes`,
 * 0 for never) into node-exporter's textfile directory, atomically (the collector reads only `*.prom`). With the
 * interface gone the file holds no sample: VPNTunnelDown reports that.
 */
export function renderHandshakeScript(iface: string, dir: string): string {
  return withSettings(HANDSHAKE_SCRIPT, { IFACE: iface, DIR: dir, METRIC: WG_HANDSHAKE_METRIC });
}

/** The gateway node's host plan: the re-steer hook and its timer, and the tunnel with its kill switch. */
export function steeringHostPlan(s: EgressSteeringSpec): HostPlan {
  const host = emptyHostPlan(s.gatewayNode);
  // The unit that resolves the kubeconfig: the hook and the tunnel start after it.
  const before: string[] = [];
  let kubeconfig: string | undefined;
  // Each timer run resolves the kubeconfig again from its source (the boot unit does it once): a rotated token is
  // used within a minute, without a reboot. "-": a source out of reach keeps the copy resolved before.
  const refresh: string[] = [];
  if (s.kubeconfigFrom) {
    const secret = planSecretSource(`${s.name}-kubeconfig`, s.kubeconfigFrom, RESTEER_SERVICE);
    addResolvedSecret(host, secret);
    kubeconfig = secret.path;
    before.push(secret.unit);
    refresh.push(`ExecStartPre=-${secret.refresh}`);
  }
  host.files.push({ path: RESTEER_PATH, mode: 0o755, owner: 'root:root', content: renderResteerScript(s.gatewayNode, s.iface, s.uplinkLabel, kubeconfig) });
  host.units.push({
    name: RESTEER_SERVICE,
    content: ['[Unit]', `Description=tunnelwright: label ${s.gatewayNode} with the live ${s.iface} so Cilium re-selects it`, ...before.flatMap((u) => [`After=${u}`, `Wants=${u}`]), '', '[Service]', 'Type=oneshot', ...refresh, `ExecStart=${RESTEER_PATH}`,
      // A oneshot has no start timeout by default (systemd.service(5)): a hung API call would stall the unit, and the
      // timer that starts it would never fire again. kubectl's own calls stop after 10 s (--request-timeout).
      'TimeoutStartSec=60', ''].join('\n'),
  });
  host.units.push({
    name: RESTEER_TIMER,
    enabled: true,
    content: ['[Unit]', `Description=tunnelwright: converge the ${s.uplinkLabel} label`, '', '[Timer]', 'OnBootSec=1min', 'OnUnitActiveSec=1min', `Unit=${RESTEER_SERVICE}`, '', '[Install]', 'WantedBy=timers.target', ''].join('\n'),
  });
  const t = s.tunnel;
  if (!t) return host;
  // The tunnel's policy rules must outlive a restart or a link reconfiguration of systemd-networkd.
  host.files.push({ path: NETWORKD_DROPIN_PATH, mode: 0o644, owner: 'root:root', content: NETWORKD_DROPIN });
  if (t.type === 'wireguard' && s.monitoring) {
    host.files.push({ path: WG_HANDSHAKE_PATH, mode: 0o755, owner: 'root:root', content: renderHandshakeScript(s.iface, s.monitoring.textfileDirectory) });
    host.units.push({
      name: WG_HANDSHAKE_SERVICE,
      content: ['[Unit]', `Description=tunnelwright: ${s.iface}'s latest WireGuard handshake for node-exporter`, '', '[Service]', 'Type=oneshot', `ExecStart=${WG_HANDSHAKE_PATH}`, ''].join('\n'),
    });
    host.units.push({
      name: WG_HANDSHAKE_TIMER,
      enabled: true,
      content: ['[Unit]', `Description=tunnelwright: export ${s.iface}'s latest handshake`, '', '[Timer]', 'OnBootSec=30s', 'OnUnitActiveSec=30s', 'AccuracySec=5s', `Unit=${WG_HANDSHAKE_SERVICE}`, '', '[Install]', 'WantedBy=timers.target', ''].join('\n'),
    });
  }
  if (t.type === 'wireguard') return wireguardHost(s, t, host, before);
  return openvpnHost(s, t, host, before);
}

function wireguardHost(s: EgressSteeringSpec, t: Extract<EgressTunnelSpec, { type: 'wireguard' }>, host: HostPlan, before: readonly string[]): HostPlan {
  const unit = `wg-quick@${s.iface}.service`;
  // wg-quick and wg come from wireguard-tools (the kernel module alone has no wg-quick@.service).
  host.packages.push('wireguard-tools');
  const key = planSecretSource(`${s.iface}-private-key`, t.privateKeyFrom, unit);
  addResolvedSecret(host, key);
  const waits = [key.unit];
  const psk = t.peer.presharedKeyFrom ? planSecretSource(`${s.iface}-peer0-preshared-key`, t.peer.presharedKeyFrom, unit) : undefined;
  if (psk) {
    addResolvedSecret(host, psk);
    waits.push(psk.unit);
  }
  const ipCmd = t.family === 4 ? 'ip -4' : 'ip -6';
  const conf = renderWireguardConfig(s.gatewayNode, {
    name: s.iface,
    address: t.address,
    mtu: 1420,
    table: 'off',
    privateKeyFrom: t.privateKeyFrom,
    // Idempotent (wg-quick runs hooks under set -e; a rule left by an unclean exit must not block the next up), and the
    // rule and blackhole stay after down: tunnel-sourced traffic never falls through to the main table.
    postUp: [
      `${ipCmd} route replace ${EGRESS_BLACKHOLE}`,
      `while ${ipCmd} rule del priority ${EGRESS_RULE_PRIORITY} 2>/dev/null; do :; done`,
      `${ipCmd} rule add from ${t.from} lookup ${EGRESS_ROUTE_TABLE} priority ${EGRESS_RULE_PRIORITY}`,
      `${ipCmd} route replace default dev %i table ${EGRESS_ROUTE_TABLE}`,
      `${RESTEER_PATH} || true`,
    ],
    postDown: [`${RESTEER_PATH} || true`],
    peers: [{ publicKey: t.peer.publicKey, endpoint: t.peer.endpoint, allowedIPs: [t.family === 4 ? '0.0.0.0/0' : '::/0'], persistentKeepalive: 25, ...(t.peer.presharedKeyFrom ? { presharedKeyFrom: t.peer.presharedKeyFrom } : {}) }],
  }, key.path, psk ? new Map([[0, psk.path]]) : new Map());
  host.files.push({ path: `/etc/wireguard/${s.iface}.conf`, mode: 0o600, owner: 'root:root', content: conf }, WG_RELOAD_FILE);
  host.units.push({ name: unit, enabled: true });
  host.dropins.push(wireguardReloadDropin(unit, psk ? [key.refresh, psk.refresh] : [key.refresh]));
  host.dropins.push({ unit, name: '10-tunnelwright-egress.conf', content: `[Unit]\nAfter=${[...before, ...waits, KILL_SWITCH_UNIT].join(' ')}\nRequires=${[...waits, KILL_SWITCH_UNIT].join(' ')}\n` });
  return mergeHostPlans([host, renderHostKillSwitch({ node: s.gatewayNode, tunnelInterface: s.iface, tunnelCidrs: [t.address], ...podFenceOf(s) })]).plans[0];
}
