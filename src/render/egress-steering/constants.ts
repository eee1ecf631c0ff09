/** The routing table and rule priority that send tunnel-sourced traffic out of the tunnel. */
export const EGRESS_ROUTE_TABLE = 51821;
export const EGRESS_RULE_PRIORITY = 5210;
/** An OpenVPN address held after its session ended: `from <address> blackhole` at this priority (above the table's rule). */
export const EGRESS_HOLD_PRIORITY = 5209;
/** The closed state of the egress table: a blackhole default below the tunnel's route, so tunnel-sourced traffic never falls through to the main table. */
export const EGRESS_BLACKHOLE = `blackhole default table ${EGRESS_ROUTE_TABLE} metric 4294967295`;
export const RESTEER_PATH = '/opt/tunnelwright/bin/egress-resteer';
export const RESTEER_SERVICE = 'tunnelwright-egress-resteer.service';
export const RESTEER_TIMER = 'tunnelwright-egress-resteer.timer';
export const OPENVPN_UNIT = 'tunnelwright-openvpn.service';
export const RESTEER_NAMESPACE = 'kube-system';
export const OPENVPN_UP_PATH = '/opt/tunnelwright/bin/egress-openvpn-up';
export const OPENVPN_DOWN_PATH = '/opt/tunnelwright/bin/egress-openvpn-down';
export const OPENVPN_PIN_PATH = '/opt/tunnelwright/bin/egress-openvpn-pin';
/** OpenVPN's keepalive on the node's command line: a server silent for OPENVPN_PING_RESTART seconds ends the session (and tun0). */
export const OPENVPN_PING = 10;
export const OPENVPN_PING_RESTART = 60;
/** The node's textfile metric: the latest handshake of each peer of a WireGuard tunnel, in Unix seconds (0: never). */
export const WG_HANDSHAKE_METRIC = 'tunnelwright_wireguard_latest_handshake_timestamp_seconds';
export const WG_HANDSHAKE_PATH = '/opt/tunnelwright/bin/egress-wireguard-handshake';
export const WG_HANDSHAKE_SERVICE = 'tunnelwright-wireguard-handshake.service';
export const WG_HANDSHAKE_TIMER = 'tunnelwright-wireguard-handshake.timer';
/** The label every object the construct emits carries. */
export const MANAGED = { 'app.kubernetes.io/managed-by': 'tunnelwright' };
/**
 * systemd-networkd's drop-in on the gateway node: networkd removes routing policy rules it did not configure
 * (networkd.conf(5), `ManageForeignRoutingPolicyRules=`, default yes; at its start and when it reconfigures a link), the
 * tunnel's rules at priorities 5209 and 5210 among them. Inert where networkd does not manage the node.
 */
export const NETWORKD_DROPIN_PATH = '/etc/systemd/networkd.conf.d/10-tunnelwright-egress.conf';
export const NETWORKD_DROPIN = '[Network]\nManageForeignRoutingPolicyRules=no\n';
