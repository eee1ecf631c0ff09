import type { NetworkPolicy as INetworkPolicy } from 'kubernetes-types/networking/v1';
import type { NetworkPolicyEgressRule as INetworkPolicyEgressRule } from 'kubernetes-types/networking/v1';
import { Problem, throwIfProblems } from '../errors';
import type { HostKillSwitch, KillSwitchProps } from '../model/kill-switch';
import { killSwitchName, killSwitchSpec, KillSwitchSpec } from '../model/kill-switch-spec';
import { parseCidr } from '../model/net';
import { isRecord } from '../model/common';
import { Fence, VxlanEndpoint } from '../invariants';
import { emptyHostPlan, HostPlan, KubeObject, Plan } from '../types';
import * as killSwitchModel from '../model/kill-switch';
import { nftLoaderUnit } from '../host/host-plan';
import { fillTemplate } from '../host/template';
import { asset } from '../assets';

/** The host table's skeleton (kill-switch.nft): its sets, counters and rules by named substitution. */
const KILL_SWITCH_NFT = asset(__dirname, 'kill-switch.nft');

/** Returns the problems of KillSwitch props without throwing. */
export function validateKillSwitch(props: unknown): Problem[] {
  return killSwitchModel.checkKillSwitch(props).problems;
}

/** The nftables table of a host kill switch (never named `wg-quick-*`: wg-quick deletes those on down). */
export const KILL_SWITCH_TABLE = 'tunnelwright_killswitch';
export const KILL_SWITCH_NFT_PATH = '/etc/tunnelwright/killswitch.nft';
export const KILL_SWITCH_UNIT = 'tunnelwright-killswitch.service';
/**
 * Addresses learnt at run time (an OpenVPN tunnel's): the tunnel's up script writes `add element` lines here, and the
 * table file includes them, so a reload of the table (`nft -f`, a restart after a flush) keeps them.
 */
export const KILL_SWITCH_LEARNT_DIR = '/var/lib/tunnelwright/killswitch.d';

export { killSwitchName };

/** Plans the kill switch from KillSwitch props (`renderKillSwitch` of their spec, or a ValidationError with every problem). */
export function planKillSwitch(props: KillSwitchProps): Plan {
  return renderKillSwitch(killSwitchSpec(props));
}

/** Plans the kill switch from its spec: the pod policy, and the host table when `host` is set. */
export function renderKillSwitch(s: KillSwitchSpec): Plan {
  const objects: KubeObject[] = [s.flavor === 'cilium' ? ciliumPolicy(s) : networkPolicy(s)];
  const hosts = s.host ? [renderHostKillSwitch(s.host)] : [];
  return { objects, hosts, values: {}, warnings: [] };
}

const KUBE_DNS = { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } };

function networkPolicy(props: KillSwitchSpec): KubeObject {
  const egress: INetworkPolicyEgressRule[] = [{ to: props.allowCidrs.map((cidr) => ({ ipBlock: { cidr } })) }];
  if (props.allowDns) {
    egress.push({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': KUBE_DNS.namespace } }, podSelector: { matchLabels: { ...KUBE_DNS.labels } } }],
      ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
    });
  }
  if (props.gateway) {
    egress.push({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': props.gateway.namespace } }, podSelector: { matchLabels: { ...props.gateway.podLabels } } }],
      ports: [{ protocol: 'UDP', port: props.gateway.vxlanPort }],
    });
  }
  const policy: INetworkPolicy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: props.name, namespace: props.namespace, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'tunnelwright.dev/component': 'kill-switch' } },
    spec: { podSelector: { matchLabels: { ...props.selector } }, policyTypes: ['Egress'], egress },
  };
  return policy as KubeObject;
}

function ciliumPolicy(props: KillSwitchSpec): KubeObject {
  const egress: Record<string, unknown>[] = [
    // Cilium's CIDR rules never match in-cluster endpoints: the cluster is allowed as an entity.
    { toEntities: ['cluster'] },
    { toCIDRSet: props.allowCidrs.map((cidr) => ({ cidr })) },
  ];
  if (props.allowDns) {
    egress.push({
      toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': KUBE_DNS.namespace, ...KUBE_DNS.labels } }],
      toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }, { port: '53', protocol: 'TCP' }] }],
    });
  }
  if (props.gateway) {
    egress.push({
      toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': props.gateway.namespace, ...props.gateway.podLabels } }],
      toPorts: [{ ports: [{ port: String(props.gateway.vxlanPort), protocol: 'UDP' }] }],
    });
  }
  return {
    apiVersion: 'cilium.io/v2',
    kind: 'CiliumNetworkPolicy',
    metadata: { name: props.name, namespace: props.namespace, labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'tunnelwright.dev/component': 'kill-switch' } },
    spec: { endpointSelector: { matchLabels: { ...props.selector } }, enableDefaultDeny: { egress: true, ingress: false }, egress },
  };
}

/**
 * A forward drop for pod traffic that should have been steered into the tunnel: packets from `sources` (the pods) to
 * `destinations` but not `exempt` leaving by any interface but the tunnel and Cilium's own (`cilium_*`: its overlay,
 * its WireGuard, cilium_host). EgressSteering's failover puts it on every candidate gateway node (audit finding 3).
 */
export interface PodFence {
  readonly sources: readonly string[];
  readonly destinations: readonly string[];
  readonly exempt: readonly string[];
}

/** A host kill switch as rendered: without `wanInterface`, traffic leaving by anything but the tunnel (and loopback) is dropped. */
export type KillSwitchHost = Omit<HostKillSwitch, 'wanInterface'> & { readonly wanInterface?: string; readonly podFence?: PodFence };

/** The pod fence's sets (auto-merge: the exempt and destination CIDRs may overlap, e.g. 10.0.0.0/8 and 10.42.0.0/16). */
const FENCE_SETS = { sources: { 4: 'fence_pods_v4', 6: 'fence_pods_v6' }, destinations: { 4: 'fence_dst_v4', 6: 'fence_dst_v6' }, exempt: { 4: 'fence_exempt_v4', 6: 'fence_exempt_v6' } } as const;
export const POD_FENCE_COUNTER = 'pods_off_tunnel_dropped';

function fenceSetDecl(name: string, family: 4 | 6, cidrs: readonly string[]): string {
  return setDecl(name, family, cidrs).replace('\t\tflags interval', '\t\tflags interval\n\t\tauto-merge');
}

function fenceRules(tunnel: string): string[] {
  return ([4, 6] as const).map((fam) => {
    const ip = fam === 4 ? 'ip' : 'ip6';
    return `\t\t${ip} saddr @${FENCE_SETS.sources[fam]} ${ip} daddr @${FENCE_SETS.destinations[fam]} ${ip} daddr != @${FENCE_SETS.exempt[fam]} oifname != "${tunnel}" oifname != "cilium_*" counter name "${POD_FENCE_COUNTER}" drop`;
  });
}

/** The named sets of source addresses; a tunnel whose address is learnt at run time adds it to `tunnel_v4`/`tunnel_v6`. */
export const KILL_SWITCH_SETS = { tunnel: { 4: 'tunnel_v4', 6: 'tunnel_v6' }, pods: { 4: 'pods_v4', 6: 'pods_v6' } } as const;

function setDecl(name: string, family: 4 | 6, cidrs: readonly string[]): string {
  const elements = cidrs.filter((c) => parseCidr(c)!.family === family);
  return [`\tset ${name} {`, `\t\ttype ${family === 4 ? 'ipv4_addr' : 'ipv6_addr'}`, '\t\tflags interval', ...(elements.length > 0 ? [`\t\telements = { ${elements.join(', ')} }`] : []), '\t}'].join('\n');
}

/** One rule per family: traffic from the set, leaving by `oif` (or by anything but the tunnel and loopback). */
function rules(set: { 4: string; 6: string }, oif: string | undefined, tunnel: string, counter: string, verdict: 'accept' | 'drop'): string[] {
  const out = oif ? `oifname "${oif}"` : `oifname != { "${tunnel}", "lo" }`;
  return ([4, 6] as const).map((fam) => `\t\t${fam === 4 ? 'ip' : 'ip6'} saddr @${set[fam]} ${out} counter name "${counter}" ${verdict}`);
}

/**
 * The nftables table text: tunnel- and pod-sourced traffic accepted on the tunnel, dropped on the WAN (or, without
 * `wanInterface`, on every interface but the tunnel and loopback), every rule counted.
 */
export function renderKillSwitchTable(host: KillSwitchHost): string {
  const pods = host.podCidrs ?? [];
  const wan = host.wanInterface;
  const drop = wan ? `leaves by ${wan}` : 'leaves by any interface but the tunnel';
  const fence = host.podFence;
  const counters = ['tunnel_via_tunnel', 'tunnel_via_wan_dropped', 'masqueraded_via_wan_dropped', 'tunnel_inbound_dropped', ...(pods.length > 0 ? ['pods_via_tunnel', 'pods_via_wan_dropped'] : []), ...(fence ? [POD_FENCE_COUNTER] : [])];
  const inbound = [...new Set(host.tunnelInboundPorts ?? [])].sort((a, b) => a - b);
  return fillTemplate(KILL_SWITCH_NFT, {
    NODE: host.node, OR_PODS: pods.length > 0 ? ' or the pods' : '', TUNNEL: host.tunnelInterface, DROP: drop, TABLE: KILL_SWITCH_TABLE, LEARNT: KILL_SWITCH_LEARNT_DIR,
    SETS: [
      setDecl(KILL_SWITCH_SETS.tunnel[4], 4, host.tunnelCidrs),
      setDecl(KILL_SWITCH_SETS.tunnel[6], 6, host.tunnelCidrs),
      ...(pods.length > 0 ? [setDecl(KILL_SWITCH_SETS.pods[4], 4, pods), setDecl(KILL_SWITCH_SETS.pods[6], 6, pods)] : []),
      ...(fence ? (['sources', 'destinations', 'exempt'] as const).flatMap((k) => ([4, 6] as const).map((fam) => fenceSetDecl(FENCE_SETS[k][fam], fam, fence[k]))) : []),
    ],
    COUNTERS: counters.map((c) => `\tcounter ${c} {\n\t}`),
    // The tunnel is an uplink, not a LAN: what the VPN side opens to the node itself through it is dropped (a service
    // bound to 0.0.0.0 answers on the tunnel address too); replies to the node's own connections, and ICMP errors about
    // them, are established or related and pass.
    INBOUND: inbound.length > 0 ? [`\t\tiifname "${host.tunnelInterface}" meta l4proto { tcp, udp } th dport { ${inbound.join(', ')} } accept`] : [],
    OUTPUT: [
      ...rules(KILL_SWITCH_SETS.tunnel, host.tunnelInterface, host.tunnelInterface, 'tunnel_via_tunnel', 'accept'),
      ...rules(KILL_SWITCH_SETS.tunnel, wan, host.tunnelInterface, 'tunnel_via_wan_dropped', 'drop'),
    ],
    FORWARD: pods.length > 0 || fence ? [
      '',
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      ...(pods.length > 0 ? [
        ...rules(KILL_SWITCH_SETS.pods, host.tunnelInterface, host.tunnelInterface, 'pods_via_tunnel', 'accept'),
        ...rules(KILL_SWITCH_SETS.pods, wan, host.tunnelInterface, 'pods_via_wan_dropped', 'drop'),
      ] : []),
      ...(fence ? fenceRules(host.tunnelInterface) : []),
      '\t}',
    ] : [],
    POSTROUTING: rules(KILL_SWITCH_SETS.tunnel, wan, host.tunnelInterface, 'masqueraded_via_wan_dropped', 'drop'),
  });
}

/** The host plan of a host kill switch given on its own (as EgressSteering plans it): checked, then `renderHostKillSwitch`. */
export function planHostKillSwitch(host: KillSwitchHost): HostPlan {
  // The pod fence is the steering's own (not a user's prop); whatever else arrives, malformed or not, is checked.
  const checked = isRecord(host) ? Object.fromEntries(Object.entries(host).filter(([k]) => k !== 'podFence')) : host;
  throwIfProblems(killSwitchModel.checkHostKillSwitchInput(checked), 'host kill switch');
  return renderHostKillSwitch(host);
}

/** The host plan of a checked host kill switch: the table, and a unit that loads it before the network (and so any tunnel) starts. */
export function renderHostKillSwitch(host: KillSwitchHost): HostPlan {
  const plan = emptyHostPlan(host.node);
  plan.packages.push('nftables');
  plan.files.push({ path: KILL_SWITCH_NFT_PATH, mode: 0o644, owner: 'root:root', content: renderKillSwitchTable(host) });
  plan.units.push({
    name: KILL_SWITCH_UNIT,
    enabled: true,
    // Loaded before the network (and so any tunnel), and again after nftables.service's flush.
    content: nftLoaderUnit({
      description: `tunnelwright kill switch: tunnel-sourced traffic leaves by ${host.tunnelInterface} or not at all`,
      file: KILL_SWITCH_NFT_PATH,
      head: ['DefaultDependencies=no', 'Wants=network-pre.target'],
      tail: ['Before=network-pre.target shutdown.target', 'Conflicts=shutdown.target'],
      wantedBy: 'sysinit.target',
    }),
  });
  return plan;
}

/** The kill switch's VXLAN endpoint (when it lets its pods reach gateway pods), for the cross-construct port check. */
export function killSwitchVxlan(s: KillSwitchSpec, construct: string): VxlanEndpoint | undefined {
  if (!s.gateway) return undefined;
  return { construct, cluster: s.cluster, namespace: s.gateway.namespace, podLabels: s.gateway.podLabels, port: s.gateway.vxlanPort };
}

/** The pods a KillSwitch fences, for `checkDuplicateKillSwitches`. */
export function killSwitchFence(s: KillSwitchSpec, construct: string): Fence {
  return { construct, cluster: s.cluster, namespace: s.namespace, selector: s.selector, acknowledged: s.duplicateAcknowledged };
}
