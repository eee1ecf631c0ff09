import { egressAlertGroups, EgressSteeringProps } from '../../src';
import { prodSteering, wireguardSteering } from '../helpers/fixtures';
import { firing, perMinute, Series } from '../helpers/promtool';
import { describeWithTools } from '../system/tools';

/**
 * EgressSteering's alert rules under promtool at unit speed (40 simulated minutes a case), fed series named and
 * labelled as node-exporter 1.x and kube-state-metrics v2.x write them behind kube-prometheus-stack's ServiceMonitors,
 * each case beside a second gateway-like node whose series must change nothing. test/system/egress-alerts.test.ts
 * runs the long timelines (the seed's outages); this file pins the behaviours a golden file alone once guarded
 * (issue 48): a two-digit interface index, and the node filter.
 */
const MINUTES = 40;
const minutes = <T,>(f: (m: number) => T): T[] => Array.from({ length: MINUTES }, (_, m) => f(m));
const LABEL = 'label_tunnelwright_dev_egress_uplink';

const exporter = (ip: string, pod: string) => `container="node-exporter", endpoint="http-metrics", instance="${ip}:9100", job="node-exporter", namespace="monitoring", pod="kube-prometheus-stack-prometheus-node-exporter-${pod}", service="kube-prometheus-stack-prometheus-node-exporter"`;
const KSM = 'container="kube-state-metrics", endpoint="http", instance="10.42.1.17:8080", job="kube-state-metrics", namespace="monitoring", pod="kube-prometheus-stack-kube-state-metrics-6d9f7b7c4-abcde", service="kube-prometheus-stack-kube-state-metrics"';

/** A node over 40 minutes: tun0's ifindex (undefined: no tun0), the uplink label's ifindex, the latest WireGuard handshake (Unix s). */
interface Node {
  readonly name: string;
  readonly ip: string;
  readonly ifindex: (m: number) => number | undefined;
  /** The ifindex the node's uplink label names (undefined: no label); kube-state-metrics reports the node only with this set or `inCluster`. */
  readonly label?: (m: number) => number | undefined;
  readonly handshake?: (m: number) => number | undefined;
  /** kube-state-metrics has the node (kube_node_info). @default true */
  readonly inCluster?: boolean;
}

function seriesOf(nodes: readonly Node[]): Series[] {
  return nodes.flatMap((n) => {
    const t = exporter(n.ip, n.name.replace(/[^a-z]/g, '').slice(0, 5));
    const out: Series[] = [
      { series: `node_uname_info{${t}, domainname="(none)", machine="x86_64", nodename="${n.name}", release="6.1.0-28-amd64", sysname="Linux", version="#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)"}`, values: perMinute(minutes(() => 1)) },
      { series: `node_network_iface_id{${t}, device="tun0"}`, values: perMinute(minutes(n.ifindex)) },
      { series: `node_network_info{${t}, address="", adminstate="up", broadcast="", device="tun0", duplex="", ifalias="", operstate="unknown"}`, values: perMinute(minutes((m) => (n.ifindex(m) !== undefined ? 1 : undefined))) },
    ];
    if (n.handshake) out.push({ series: `tunnelwright_wireguard_latest_handshake_timestamp_seconds{${t}, interface="tun0", public_key="xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="}`, values: perMinute(minutes(n.handshake)) });
    if (n.inCluster !== false) {
      out.push({ series: `kube_node_info{${KSM}, node="${n.name}", container_runtime_version="containerd://1.7.22", internal_ip="${n.ip}", kernel_version="6.1.0-28-amd64", kubelet_version="v1.31.4", kubeproxy_version="deprecated", os_image="Debian GNU/Linux 12 (bookworm)", pod_cidr="10.42.3.0/24", provider_id="", system_uuid="4c4c4544-0042-3510-8052-b4c04f4e4d32"}`, values: perMinute(minutes(() => 1)) });
      const label = n.label ?? (() => undefined);
      // One series per label value (the address the tunnel had, and the ifindex).
      for (const v of new Set(minutes(label).filter((x): x is number => x !== undefined))) {
        out.push({ series: `kube_node_labels{${KSM}, node="${n.name}", ${LABEL}="10.8.0.${v % 250}-${v}"}`, values: perMinute(minutes((m) => (label(m) === v ? 1 : undefined))) });
      }
    }
    return out;
  });
}

const gateway = (n: Partial<Node>): Node => ({ name: 'prod-gw', ip: '192.168.20.5', ifindex: () => 12, label: () => 12, ...n });
/** The control: another node with a tunnel of its own, labelled alike, in the same cluster. */
const other = (n: Partial<Node>): Node => ({ name: 'other-gw', ip: '192.168.20.6', ifindex: () => 9, label: () => 9, ...n });
/** An interface re-created every 2 minutes from minute 5: a new ifindex each time. */
const looping = (base: number) => (m: number) => base + Math.max(0, Math.floor((m - 5) / 2) + 1);
const handshakeEvery2 = (m: number) => Math.floor(m / 2) * 120;

const openvpn = egressAlertGroups(prodSteering());
const wireguard = egressAlertGroups({ ...wireguardSteering(), gatewayNode: 'prod-gw', monitoring: {} } as EgressSteeringProps);
const ALL = ['VPNTunnelDown', 'VPNEgressSteeringStale', 'VPNTunnelReconnectLoop', 'VPNEgressUplinkLabelMissing'];

// Outside describeWithTools: without promtool (a Stryker sandbox, a clone without the tools) the file still has a test.
describe('EgressSteering alert rules', () => {
  it('has the four OpenVPN alerts and the WireGuard handshake alert', () => {
    expect(openvpn[0].rules.map((r) => r.alert)).toEqual(ALL);
    expect(wireguard[0].rules.map((r) => r.alert)).toEqual([...ALL, 'VPNTunnelHandshakeStale']);
  });
});

describeWithTools('EgressSteering alerts under promtool (unit speed, a second node as control)', ['promtool'], () => {
  const silent = Object.fromEntries(ALL.map((a) => [a, []]));

  it.each([
    ['one digit', 7],
    ['two digits', 12],
    ['three digits', 123],
  ])('an interface index of %s named by the label is not stale; control: the label naming another index is, from 5 minutes on', (_what, ifindex) => {
    expect(firing(openvpn, seriesOf([gateway({ ifindex: () => ifindex, label: () => ifindex }), other({})]), ALL, MINUTES)).toEqual(silent);
    // The label names an index that differs in its last digit only, or by a leading digit.
    for (const wrong of [ifindex + 1, ifindex * 10 + (ifindex % 10)]) {
      expect(firing(openvpn, seriesOf([gateway({ ifindex: () => ifindex, label: () => wrong }), other({})]), ['VPNEgressSteeringStale'], MINUTES)).toEqual({ VPNEgressSteeringStale: [[5, MINUTES - 1]] });
    }
  });

  it('a re-created interface at index 12 whose label follows a minute later is not stale; control: not followed, stale 5 minutes after', () => {
    const ifindex = (m: number) => (m < 10 ? 11 : 12);
    expect(firing(openvpn, seriesOf([gateway({ ifindex, label: (m) => (m < 11 ? 11 : 12) }), other({})]), ['VPNEgressSteeringStale'], MINUTES)).toEqual({ VPNEgressSteeringStale: [] });
    expect(firing(openvpn, seriesOf([gateway({ ifindex, label: () => 11 }), other({})]), ['VPNEgressSteeringStale'], MINUTES)).toEqual({ VPNEgressSteeringStale: [[15, MINUTES - 1]] });
  });

  it('the gateway without its tunnel: VPNTunnelDown fires after 2 minutes, however many other nodes have a tun0', () => {
    const down = seriesOf([gateway({ ifindex: (m) => (m < 10 ? 12 : undefined), label: (m) => (m < 10 ? 12 : undefined) }), other({})]);
    expect(firing(openvpn, down, ALL, MINUTES)).toEqual({ ...silent, VPNTunnelDown: [[12, MINUTES - 1]] });
  });

  it('another node\'s tunnel re-created every 2 minutes is no reconnect loop of the gateway\'s; control: the gateway\'s own is', () => {
    expect(firing(openvpn, seriesOf([gateway({}), other({ ifindex: looping(9), label: looping(9) })]), ALL, MINUTES)).toEqual(silent);
    const own = firing(openvpn, seriesOf([gateway({ ifindex: looping(12), label: looping(12) }), other({})]), ['VPNTunnelReconnectLoop', 'VPNEgressSteeringStale'], MINUTES);
    expect(own.VPNEgressSteeringStale).toEqual([]);
    expect(own.VPNTunnelReconnectLoop.length).toBe(1);
    expect(own.VPNTunnelReconnectLoop[0][1]).toBe(MINUTES - 1);
  });

  it('another node\'s unlabelled tunnel at a higher index than the gateway\'s is not the gateway\'s: not stale', () => {
    // The other node's tun0 has index 30 (above the gateway's 12: the rule takes the highest) and no label at all:
    // counted on the gateway, 30 would be "live and unnamed".
    expect(firing(openvpn, seriesOf([gateway({}), other({ ifindex: () => 30, label: () => undefined })]), ALL, MINUTES)).toEqual(silent);
  });

  it('the gateway\'s label missing while its tunnel is down and another node\'s is up: VPNTunnelDown only; control: with its tunnel up, LabelMissing after 10 minutes', () => {
    expect(firing(openvpn, seriesOf([gateway({ ifindex: () => undefined, label: () => undefined }), other({})]), ALL, MINUTES)).toEqual({ ...silent, VPNTunnelDown: [[2, MINUTES - 1]] });
    expect(firing(openvpn, seriesOf([gateway({ label: () => undefined }), other({})]), ALL, MINUTES)).toEqual({ ...silent, VPNEgressUplinkLabelMissing: [[10, MINUTES - 1]] });
  });

  it('nothing fires for a gateway node kube-state-metrics does not have (not in this cluster), though another node is', () => {
    expect(firing(openvpn, seriesOf([gateway({ ifindex: () => undefined, label: () => undefined, inCluster: false }), other({})]), ALL, MINUTES)).toEqual(silent);
  });

  it('WireGuard: another node\'s fresh handshakes do not hide the gateway\'s stale one, nor its stale ones the gateway\'s fresh ones', () => {
    const stale = (m: number) => (m < 10 ? handshakeEvery2(m) : handshakeEvery2(9));
    const alerts = ['VPNTunnelHandshakeStale', 'VPNTunnelDown'];
    // The gateway's peer silent from minute 10: 300 s later plus the 2-minute for.
    expect(firing(wireguard, seriesOf([gateway({ handshake: stale }), other({ handshake: handshakeEvery2 })]), alerts, MINUTES)).toEqual({ VPNTunnelHandshakeStale: [[16, MINUTES - 1]], VPNTunnelDown: [] });
    expect(firing(wireguard, seriesOf([gateway({ handshake: handshakeEvery2 }), other({ handshake: stale })]), alerts, MINUTES)).toEqual({ VPNTunnelHandshakeStale: [], VPNTunnelDown: [] });
    // Never collected on the gateway (no textfile directory) while the other node's is: fires after 2 minutes.
    expect(firing(wireguard, seriesOf([gateway({}), other({ handshake: handshakeEvery2 })]), alerts, MINUTES)).toEqual({ VPNTunnelHandshakeStale: [[2, MINUTES - 1]], VPNTunnelDown: [] });
  });
});
