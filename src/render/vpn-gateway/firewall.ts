import { FORWARDED_WORKLOAD_HOST, VpnGatewaySpec } from '../../model/vpn-gateway';
import { CONTROL_PORT } from './constants';

/** gluetun's /iptables/post-rules.txt: VXLAN and ICMP from the cluster, through gluetun's INPUT DROP. */
export function postRules(f: VpnGatewaySpec): string {
  const pf = f.portForwarding;
  // localCidrs are IPv4 only (parseVpnGateway).
  const lines = f.localCidrs.flatMap((c) => [
    `iptables -A INPUT -i eth0 -s ${c} -p udp --dport ${f.vxlanPort} -j ACCEPT`,
    `iptables -A INPUT -i eth0 -s ${c} -p icmp -j ACCEPT`,
    `iptables -A OUTPUT -o eth0 -d ${c} -p icmp -j ACCEPT`,
  ]);
  if (pf?.workload !== undefined) {
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
