import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { thrown } from '../helpers/thrown';
import * as fc from 'fast-check';
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import { applyRoute, KubeObject, planRoute, planVpnGateway, PROVIDERS, vpnGatewayClaims, VpnGatewayProps } from '../../src';
import { parseCidr } from '../../src/model/net';
import { GLUETUN_ENV } from '../../src/model/vpn-providers';
import { checkKubeObjects } from '../../src/testing';
import { gatewayFor, nordvpnGateway } from '../helpers/fixtures';
import { describeWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { runs } from '../helpers/runs';
import { describeWithTools, run, tmpdir, VENDOR_DIR } from '../system/tools';

const deploymentOf = (props: VpnGatewayProps) => planVpnGateway(props).objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
const gluetunOf = (props: VpnGatewayProps) => deploymentOf(props).spec!.template.spec!.containers.find((c) => c.name === 'gluetun')!;

describe('planVpnGateway', () => {
  it('gives gluetun exactly the environment of the original design, keys as files', () => {
    expect(gluetunOf(nordvpnGateway()).env).toEqual([
      { name: 'VPN_SERVICE_PROVIDER', value: 'nordvpn' },
      { name: 'VPN_TYPE', value: 'wireguard' },
      { name: 'VPN_INTERFACE', value: 'tun0' },
      { name: 'WIREGUARD_PRIVATE_KEY_SECRETFILE', value: '/run/secrets/wireguard_private_key' },
      { name: 'WIREGUARD_MTU', value: '1320' },
      { name: 'SERVER_COUNTRIES', value: 'Switzerland' },
      { name: 'FIREWALL_OUTBOUND_SUBNETS', value: '10.1.0.0/16,10.152.183.0/24,192.168.1.0/24' },
      { name: 'FIREWALL_INPUT_PORTS', value: '9999' },
      { name: 'HEALTH_SERVER_ADDRESS', value: ':9999' },
      { name: 'HEALTH_RESTART_VPN', value: 'on' },
      { name: 'DNS_SERVER', value: 'off' },
      { name: 'DNS_ADDRESS', value: '1.1.1.1' },
      { name: 'HTTP_CONTROL_SERVER_ADDRESS', value: '127.0.0.1:8000' },
      { name: 'HTTP_CONTROL_SERVER_AUTH_DEFAULT_ROLE', value: '{"name":"loopback","auth":"none"}' },
    ]);
  });

  it('gives the loopback-only control server a default role with no auth (gluetun after v3.41.1 requires auth on every route otherwise), and the VXLAN-bound one none', () => {
    const control = (props: VpnGatewayProps) => gluetunOf(props).env!.filter((e) => e.name.startsWith('HTTP_CONTROL_SERVER_')).map((e) => `${e.name}=${e.value}`);
    expect(control(gatewayFor('protonvpn'))).toEqual(['HTTP_CONTROL_SERVER_ADDRESS=127.0.0.1:8000', 'HTTP_CONTROL_SERVER_AUTH_DEFAULT_ROLE={"name":"loopback","auth":"none"}']);
    const withApp = { ...gatewayFor('protonvpn'), portForwarding: { app: 'qbittorrent' as const, workload: 'qbittorrent', workloadNamespace: 'media', controlApiKeySecret: { name: 'gluetun-control' } } };
    expect(control(withApp)).toEqual(['HTTP_CONTROL_SERVER_ADDRESS=172.16.0.1:8000', 'HTTP_CONTROL_SERVER_AUTH_CONFIG_FILEPATH=/run/gluetun-auth/config.toml', 'HTTP_CONTROL_SERVER_LOG=off']);
  });

  it.each(Object.keys(PROVIDERS))('%s: every gluetun variable is one gluetun v3.41 reads, and no secret is a literal value', (provider) => {
    const env = gluetunOf(gatewayFor(provider)).env!;
    expect(env.map((e) => e.name).filter((n) => !GLUETUN_ENV.has(n))).toEqual([]);
    expect(env.filter((e) => /PRIVATE_KEY$|PRESHARED_KEY$|PASSWORD$|USER$|USERNAME$/.test(e.name) && e.value !== undefined)).toEqual([]);
  });

  it('joins lists for gluetun with commas, writes no variable for an empty filter, and names the OpenVPN port', () => {
    const env = (props: VpnGatewayProps) => Object.fromEntries(gluetunOf(props).env!.map((e) => [e.name, e.value]));
    const mullvad = env({ ...gatewayFor('mullvad'), wireguardAddresses: ['10.64.1.2/32', 'fc00:bbbb:bbbb:bb01::1:2/128'], serverCountries: ['Switzerland', 'Austria'], serverCities: [] });
    expect([mullvad.WIREGUARD_ADDRESSES, mullvad.SERVER_COUNTRIES, 'SERVER_CITIES' in mullvad]).toEqual(['10.64.1.2/32,fc00:bbbb:bbbb:bb01::1:2/128', 'Switzerland,Austria', false]);
    const { wireguardPrivateKeySecret: _k, ...noKey } = gatewayFor('protonvpn');
    const openvpn = env({ ...noKey, vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'proton-openvpn' }, vpnEndpointPort: 443 });
    expect(openvpn.OPENVPN_ENDPOINT_PORT).toBe('443');
  });

  it('mounts the preshared key from its Secret\'s default key', () => {
    const volumes = deploymentOf(gatewayFor('mullvad')).spec!.template.spec!.volumes!;
    const sources = volumes.find((v) => v.name === 'gluetun-secrets')!.projected!.sources!;
    expect(sources.map((x) => x.secret)).toEqual([
      { name: 'nordvpn-wireguard', items: [{ key: 'private-key', path: 'wireguard_private_key' }] },
      { name: 'mullvad-psk', items: [{ key: 'preshared-key', path: 'wireguard_preshared_key' }] },
    ]);
  });

  it('mounts the key Secret as the file gluetun reads', () => {
    const spec = deploymentOf(nordvpnGateway()).spec!.template.spec!;
    expect(spec.volumes!.find((v) => v.name === 'gluetun-secrets')).toEqual({
      name: 'gluetun-secrets',
      projected: { defaultMode: 0o400, sources: [{ secret: { name: 'nordvpn-wireguard', items: [{ key: 'private-key', path: 'wireguard_private_key' }] } }] },
    });
  });

  it('runs exactly one gateway pod, recreated, probed on the health server, outside Istio ambient', () => {
    const d = deploymentOf(nordvpnGateway());
    expect(d.spec!.replicas).toBe(1);
    expect(d.spec!.strategy).toEqual({ type: 'Recreate' });
    expect(d.spec!.template.metadata!.labels!['istio.io/dataplane-mode']).toBe('none');
    const gluetun = gluetunOf(nordvpnGateway());
    for (const probe of [gluetun.livenessProbe, gluetun.readinessProbe, gluetun.startupProbe]) expect(probe!.httpGet).toEqual({ path: '/', port: 9999 });
    expect(JSON.stringify(d)).not.toContain('publicip');
    expect(d.spec!.template.spec!.initContainers!.map((c) => c.name)).toEqual(['gateway-init']);
    expect(d.spec!.template.spec!.containers.map((c) => c.name)).toEqual(['gluetun', 'gateway-sidecar']);
  });

  it.each([
    ['cilium', 4789], ['flannel', 4789], ['calico', 8472], ['kube-router', 4789], [undefined, 4789],
  ] as const)('cni %s: the VXLAN uses UDP %d, opened in gluetun\'s INPUT for the cluster', (cni, port) => {
    const plan = planVpnGateway({ ...nordvpnGateway(), ...(cni ? { cni } : {}) });
    const cm = plan.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> };
    expect(cm.data['settings.sh']).toContain(`\nVXLAN_PORT="${port}"\n`);
    expect(cm.data['post-rules.txt'].split('\n')[0]).toBe(`iptables -A INPUT -i eth0 -s 10.1.0.0/16 -p udp --dport ${port} -j ACCEPT`);
    expect((plan.objects.find((o) => o.kind === 'Service')!.spec as { ports: unknown[] }).ports).toEqual([{ name: 'vxlan', protocol: 'UDP', port, targetPort: port }]);
  });

  it('derives the VXLAN MTU from the pod MTU and pins the WireGuard MTU', () => {
    const settings = (podMtu: number) => ((planVpnGateway({ ...nordvpnGateway(), podMtu }).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['settings.sh']);
    expect(settings(1450)).toContain('VPN_INTERFACE_MTU="1320"');
    expect(settings(1350)).toContain('VPN_INTERFACE_MTU="1300"');
  });

  it('keeps the ztunnel address local with Istio ambient', () => {
    expect(gluetunOf({ ...nordvpnGateway(), mesh: 'istio-ambient' }).env!.find((e) => e.name === 'FIREWALL_OUTBOUND_SUBNETS')!.value).toBe('10.1.0.0/16,10.152.183.0/24,192.168.1.0/24,169.254.7.127/32');
  });

  it('forwards the ProtonVPN port to the routed workload\'s fixed address', () => {
    const env = gluetunOf(gatewayFor('protonvpn')).env!;
    expect(env.find((e) => e.name === 'VPN_PORT_FORWARDING')).toEqual({ name: 'VPN_PORT_FORWARDING', value: 'on' });
    // What the up command does with a port: test/render/port-forward-up.test.ts runs it.
    expect((planVpnGateway(gatewayFor('protonvpn')).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['nat.conf']).toContain('\nqbittorrent 5 tcp:6881,udp:6881\n');
  });

  it('reads PIA port-forwarding credentials from Secret files, never the environment', () => {
    const plan = planVpnGateway(gatewayFor('custom'));
    const env = gluetunOf(gatewayFor('custom')).env!;
    expect(env.filter((e) => e.name.startsWith('VPN_PORT_FORWARDING'))).toEqual([
      { name: 'VPN_PORT_FORWARDING', value: 'on' },
      { name: 'VPN_PORT_FORWARDING_PROVIDER', value: 'private internet access' },
      { name: 'VPN_PORT_FORWARDING_USERNAME_SECRETFILE', value: '/run/secrets/vpn_port_forwarding_username' },
      { name: 'VPN_PORT_FORWARDING_PASSWORD_SECRETFILE', value: '/run/secrets/vpn_port_forwarding_password' },
    ]);
    expect(env.some((e) => e.valueFrom !== undefined)).toBe(false);
    const deployment = plan.objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment;
    const projected = deployment.spec!.template.spec!.volumes!.find((v) => v.name === 'gluetun-secrets')!.projected!.sources!;
    expect(projected.map((s) => s.secret)).toContainEqual({ name: 'pia-credentials', items: [{ key: 'username', path: 'vpn_port_forwarding_username' }, { key: 'password', path: 'vpn_port_forwarding_password' }] });
  });

  it.each([
    ['nordvpn', 'wireguard', 51820], ['ivpn', 'wireguard', 58237], ['windscribe', 'wireguard', 1194], ['airvpn', 'wireguard', 1637],
    ['nordvpn', 'openvpn', 1194], ['ivpn', 'openvpn', 1194], ['windscribe', 'openvpn', 1194], ['fastestvpn', 'openvpn', 4443], ['pia', 'openvpn', 1197],
  ] as const)('%s over %s: pod-gateway lets the tunnel out on gluetun\'s default port %d', (provider, vpnType, port) => {
    const { vpnEndpointPort: _port, ...base } = gatewayFor(provider === 'pia' ? 'nordvpn' : provider);
    const props = vpnType === 'wireguard' ? base : { clusterCidrs: base.clusterCidrs, nodeCidrs: base.nodeCidrs, vpnProvider: provider, vpnType, openvpnCredentialsSecret: { name: 'creds' } };
    const settings = (planVpnGateway(props).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['settings.sh'];
    expect(settings).toContain(`\nVPN_TRAFFIC_PORT="${port}"\n`);
  });

  it('sets DNS_LOCAL_SERVER to the cluster DNS (a restarted sidecar must not read gluetun\'s resolv.conf) and the cluster domain', () => {
    const settings = (planVpnGateway({ ...nordvpnGateway(), clusterDomain: 'corp.internal' }).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['settings.sh'];
    expect(settings).toContain('\nDNS_LOCAL_CIDRS="corp.internal"\nDNS_LOCAL_SERVER="10.152.183.10"\n');
    const route = planRoute({ ...nordvpnGateway(), clusterDomain: 'corp.internal' }, { namespace: 'media', podLabels: { app: 'x' }, name: 'x' });
    expect(route.dnsConfig.searches).toEqual(['media.svc.corp.internal', 'svc.corp.internal', 'corp.internal']);
    expect((route.objects[0] as unknown as { data: Record<string, string> }).data['settings.sh']).toContain('GATEWAY_NAME="vpn-gateway.vpn-gateway.svc.corp.internal"');
  });

  it.each([
    [undefined, '172.16.0.255'],
    ['10.250.3.0/24', '10.250.3.255'],
  ])('vxlanNetwork %s: the gateway sidecar\'s dnsmasq reads a dhcp-host line that holds %s, the broadcast address pod-gateway\'s dhcp-range ends at', (vxlanNetwork, broadcast) => {
    const plan = planVpnGateway({ ...nordvpnGateway(), ...(vxlanNetwork ? { vxlanNetwork } : {}) });
    const data = (plan.objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data;
    expect(data['dnsmasq-reserved.conf'].split('\n').filter((l) => l && !l.startsWith('#'))).toEqual([`dhcp-host=id:tunnelwright-vxlan-broadcast,${broadcast}`]);
    const sidecar = (plan.objects.find((o) => o.kind === 'Deployment') as unknown as IDeployment).spec!.template.spec!.containers.find((c) => c.name === 'gateway-sidecar')!;
    // pod-gateway writes its own file into /etc/dnsmasq.d (gateway_sidecar.sh:22): the directory stays the image's.
    expect(sidecar.volumeMounts).toContainEqual({ name: 'pod-gateway-config', mountPath: '/etc/dnsmasq.d/tunnelwright-reserved.conf', subPath: 'dnsmasq-reserved.conf', readOnly: true });
    expect(sidecar.volumeMounts!.map((m) => m.mountPath)).not.toContain('/etc/dnsmasq.d');
  });

  it('runs gluetun over WireGuard after deleting a stale table-51820 rule left by an unclean exit', () => {
    expect(gluetunOf(nordvpnGateway()).command).toEqual(['/bin/sh', '-c', 'while ip rule del table 51820 2>/dev/null; do :; done; while ip -6 rule del table 51820 2>/dev/null; do :; done; exec /gluetun-entrypoint']);
    expect(gluetunOf({ clusterCidrs: ['10.1.0.0/16', '10.152.183.0/24'], nodeCidrs: ['192.168.1.0/24'], vpnProvider: 'nordvpn', vpnType: 'openvpn', openvpnCredentialsSecret: { name: 'c' } }).command).toBeUndefined();
  });
});

describe('planRoute', () => {
  const target = { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent' };

  it('puts the client init container first, the sidecar last, and DNS through the gateway', () => {
    const route = planRoute(nordvpnGateway(), target);
    const spec = applyRoute({ initContainers: [{ name: 'config-fixer', image: 'busybox' }], containers: [{ name: 'app', image: 'qbittorrent' }] }, route);
    expect(spec.initContainers!.map((c) => c.name)).toEqual(['vpn-route-init', 'config-fixer']);
    expect(spec.containers.map((c) => c.name)).toEqual(['app', 'vpn-route-sidecar']);
    expect(spec.dnsPolicy).toBe('None');
    expect(spec.dnsConfig!.nameservers).toEqual(['172.16.0.1']);
    expect(applyRoute(spec, route)).toBe(spec);
  });

  it('writes the client settings in the workload\'s namespace and a kill switch for its pods', () => {
    const route = planRoute(nordvpnGateway(), target);
    expect(route.objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['ConfigMap media/qbittorrent-vpn-route', 'NetworkPolicy media/qbittorrent-vpn-kill-switch']);
    expect((route.objects[0] as unknown as { data: Record<string, string> }).data['settings.sh']).toContain('GATEWAY_NAME="vpn-gateway.vpn-gateway.svc.cluster.local"\nK8S_DNS_IPS="10.152.183.10"\nNOT_ROUTED_TO_GATEWAY_CIDRS="10.1.0.0/16 10.152.183.0/24 192.168.1.0/24"\n');
  });

  it('refuses a workload without pod labels', () => {
    expect(() => planRoute(nordvpnGateway(), { ...target, podLabels: {} })).toThrow('route.podLabels: the routed workload has no pod labels');
  });
});

/**
 * How Cilium decides a routed pod's egress, modelled from its policy language (cilium/cilium
 * Documentation/security/policy/language.rst, "IP/CIDR based"): a destination Cilium manages (a pod, a node) carries
 * an identity and is matched only by endpoint or entity rules, never by a CIDR (`ipBlock` or `toCIDRSet`); a
 * destination outside the cluster (the `world` entity) is matched by CIDR rules only.
 */
type Peer = { ip: string; managed: boolean; namespace?: string; labels?: Record<string, string>; port?: { port: number; protocol: string } };
function ciliumAllows(policy: KubeObject, peer: Peer): boolean {
  const inCidr = (cidr: string) => { const c = parseCidr(cidr)!; const a = parseCidr(peer.ip.includes(':') ? `${peer.ip}/128` : `${peer.ip}/32`)!; return c.family === a.family && a.start >= c.start && a.end <= c.end; };
  const portOk = (ports: { port: number | string; protocol: string }[] | undefined) => ports === undefined || (peer.port !== undefined && ports.some((p) => String(p.port) === String(peer.port!.port) && p.protocol === peer.port!.protocol));
  // A pod's labels as Cilium sees them: its own, and its namespace as `k8s:io.kubernetes.pod.namespace`.
  const identity: Record<string, string> = { ...peer.labels, ...(peer.namespace ? { 'k8s:io.kubernetes.pod.namespace': peer.namespace } : {}) };
  const matches = (sel: { matchLabels: Record<string, string> }) => peer.labels !== undefined && Object.entries(sel.matchLabels).every(([k, v]) => identity[k] === v);
  // A NetworkPolicy peer (Cilium translates it into an endpoint selector): the pod's labels and its namespace's name label.
  const npMatches = (t: { podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: { matchLabels: Record<string, string> } }) => peer.labels !== undefined
    && Object.entries(t.podSelector?.matchLabels ?? {}).every(([k, v]) => peer.labels![k] === v)
    && Object.entries(t.namespaceSelector?.matchLabels ?? {}).every(([k, v]) => k === 'kubernetes.io/metadata.name' && peer.namespace === v);
  const spec = policy.spec as Record<string, unknown>;
  if (policy.kind === 'NetworkPolicy') {
    return (spec.egress as { to: { ipBlock?: { cidr: string }; podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: { matchLabels: Record<string, string> } }[]; ports?: { port: number; protocol: string }[] }[]).some((r) => portOk(r.ports) && r.to.some((t) => (t.ipBlock ? !peer.managed && inCidr(t.ipBlock.cidr) : peer.managed && npMatches(t))));
  }
  return (spec.egress as { toEntities?: string[]; toCIDRSet?: { cidr: string }[]; toEndpoints?: { matchLabels: Record<string, string> }[]; toPorts?: { ports: { port: string; protocol: string }[] }[] }[]).some((r) => {
    if (!portOk(r.toPorts?.[0].ports)) return false;
    if (r.toEntities) return r.toEntities.includes(peer.managed ? 'cluster' : 'world') || r.toEntities.includes('all');
    if (r.toCIDRSet) return !peer.managed && r.toCIDRSet.some((c) => inCidr(c.cidr));
    return peer.managed && r.toEndpoints!.some(matches);
  });
}

describe("route() under the cluster's CNI", () => {
  const target = { namespace: 'media', podLabels: { app: 'sonarr' }, name: 'sonarr' };
  const prowlarr: Peer = { ip: '10.1.2.3', managed: true, namespace: 'media', labels: { app: 'prowlarr' }, port: { port: 9696, protocol: 'TCP' } };
  const kubeDns: Peer = { ip: '10.1.0.10', managed: true, namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' }, port: { port: 53, protocol: 'UDP' } };
  const gateway: Peer = { ip: '10.1.5.6', managed: true, namespace: 'vpn-gateway', labels: { 'app.kubernetes.io/name': 'vpn-gateway', 'app.kubernetes.io/component': 'vpn-gateway', 'app.kubernetes.io/managed-by': 'tunnelwright' }, port: { port: 4789, protocol: 'UDP' } };
  const killSwitchOf = (cni: VpnGatewayProps['cni']) => planRoute({ ...nordvpnGateway(), cni }, target).objects[1];

  it('under cilium writes a CiliumNetworkPolicy: the cluster as an entity, kube-dns and the gateway by endpoint, default deny', () => {
    expect(killSwitchOf('cilium')).toEqual({
      apiVersion: 'cilium.io/v2',
      kind: 'CiliumNetworkPolicy',
      metadata: { name: 'sonarr-vpn-kill-switch', namespace: 'media', labels: { 'app.kubernetes.io/managed-by': 'tunnelwright', 'tunnelwright.dev/component': 'kill-switch' } },
      spec: {
        endpointSelector: { matchLabels: { app: 'sonarr' } },
        enableDefaultDeny: { egress: true, ingress: false },
        egress: [
          { toEntities: ['cluster'] },
          { toCIDRSet: [{ cidr: '10.1.0.0/16' }, { cidr: '10.152.183.0/24' }, { cidr: '192.168.1.0/24' }] },
          { toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'kube-system', 'k8s-app': 'kube-dns' } }], toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }, { port: '53', protocol: 'TCP' }] }] },
          { toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'vpn-gateway', 'app.kubernetes.io/name': 'vpn-gateway', 'app.kubernetes.io/component': 'vpn-gateway', 'app.kubernetes.io/managed-by': 'tunnelwright' } }], toPorts: [{ ports: [{ port: '4789', protocol: 'UDP' }] }] },
        ],
      },
    });
  });

  it.each(['flannel', 'calico', 'kube-router', 'other', undefined] as const)('under %s keeps the plain NetworkPolicy', (cni) => {
    expect(killSwitchOf(cni).kind).toBe('NetworkPolicy');
  });

  it.each<[string, Peer, boolean]>([
    ['Prowlarr, a pod in the cluster (matched by identity, never by CIDR)', prowlarr, true],
    ['kube-dns', kubeDns, true],
    ['the gateway pod, by VXLAN', gateway, true],
    ['a node of the cluster (the remote-node identity)', { ip: '192.168.1.11', managed: true, port: { port: 10250, protocol: 'TCP' } }, true],
    ['a NAS on the LAN (no identity: matched by CIDR)', { ip: '192.168.1.50', managed: false, port: { port: 445, protocol: 'TCP' } }, true],
    ['the world, outside the tunnel (1.1.1.1:443)', { ip: '1.1.1.1', managed: false, port: { port: 443, protocol: 'TCP' } }, false],
    ['the world by IPv6 (2606:4700::1111:443)', { ip: '2606:4700::1111', managed: false, port: { port: 443, protocol: 'TCP' } }, false],
  ])('under cilium a routed pod reaching %s: allowed %p', (_, peer, allowed) => {
    expect(ciliumAllows(killSwitchOf('cilium'), peer)).toBe(allowed);
  });

  it('control: the plain NetworkPolicy (the route before the fix) under Cilium lets Sonarr reach kube-dns and the gateway only, not Prowlarr', () => {
    const plain = killSwitchOf('other');
    expect(ciliumAllows(plain, prowlarr)).toBe(false);
    expect(ciliumAllows(plain, kubeDns)).toBe(true);
    expect(ciliumAllows(plain, gateway)).toBe(true);
    expect(ciliumAllows(plain, { ip: '1.1.1.1', managed: false, port: { port: 443, protocol: 'TCP' } })).toBe(false);
  });

  it('no egress rule of the cilium kill switch takes the world: no world or all entity, no CIDR that covers a default route', () => {
    const egress = (killSwitchOf('cilium').spec as { egress: { toEntities?: string[]; toCIDRSet?: { cidr: string }[] }[] }).egress;
    expect(egress.flatMap((r) => r.toEntities ?? [])).toEqual(['cluster']);
    expect(egress.flatMap((r) => r.toCIDRSet ?? []).map((c) => parseCidr(c.cidr)!.prefix).every((p) => p > 0)).toBe(true);
  });
});

describeWithSchemas('the cilium kill switch route() writes, against the CiliumNetworkPolicy schema', () => {
  it('validates', () => {
    const route = planRoute({ ...nordvpnGateway(), cni: 'cilium' }, { namespace: 'media', podLabels: { app: 'sonarr' }, name: 'sonarr' });
    expect(route.objects.map((o) => o.kind)).toEqual(['ConfigMap', 'CiliumNetworkPolicy']);
    expect(checkKubeObjects(route.objects, SCHEMA_DIR)).toEqual([]);
  });
});

describe('properties', () => {
  it('for random valid gateways no object carries a literal key but the server\'s public key where gluetun reads it, and two plans are byte-identical', () => {
    // The props hold a key: a random server public key for the custom provider (the only key a gateway's props take
    // inline), so the check below can see one that ends up anywhere else.
    const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64'));
    const arb = fc.record({
      publicKey: key,
      provider: fc.constantFrom(...Object.keys(PROVIDERS)),
      vxlanId: fc.integer({ min: 1, max: 16777215 }),
      cni: fc.constantFrom('cilium', 'flannel', 'calico', 'kube-router', 'other') as fc.Arbitrary<'cilium'>,
      podMtu: fc.integer({ min: 1280, max: 9000 }),
      mesh: fc.constantFrom('none', 'istio-ambient') as fc.Arbitrary<'none'>,
    });
    fc.assert(fc.property(arb, ({ provider, publicKey, ...rest }) => {
      const base = gatewayFor(provider);
      const props = { ...base, ...(base.wireguardPublicKey ? { wireguardPublicKey: publicKey } : {}), ...rest };
      const plan = planVpnGateway(props);
      const text = JSON.stringify(plan);
      expect(JSON.stringify(planVpnGateway(structuredClone(props)))).toBe(text);
      const keys = text.match(/[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=/g) ?? [];
      // The public key, once, as gluetun's WIREGUARD_PUBLIC_KEY; no other key anywhere.
      expect(keys).toEqual(props.wireguardPublicKey ? [publicKey] : []);
      const env = plan.objects.flatMap((o) => ((o.spec as { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } })?.template?.spec?.containers ?? []).flatMap((c) => c.env ?? []));
      expect(env.filter((e) => e.value === publicKey).map((e) => e.name)).toEqual(props.wireguardPublicKey ? ['WIREGUARD_PUBLIC_KEY'] : []);
      expect(text).not.toMatch(/"name":"[A-Z_]*(PRIVATE_KEY|PRESHARED_KEY|PASSWORD|USER)","value"/);
    }), { numRuns: runs(100) });
  });
});

describeWithSchemas('VpnGateway objects against their schemas', () => {
  it.each(Object.keys(PROVIDERS))('%s', (provider) => {
    const plan = planVpnGateway(gatewayFor(provider));
    // protonvpn's fixture forwards a port to qbittorrent: it must be a StatefulSet (any kind for the others).
    const route = planRoute(gatewayFor(provider), { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent', kind: 'StatefulSet' });
    expect(checkKubeObjects([...plan.objects, ...route.objects], SCHEMA_DIR)).toEqual([]);
  });
});

const CLIENT_INIT = path.join(VENDOR_DIR, 'pod-gateway-v1.13.0', 'bin', 'client_init.sh');
describeWithTools('port forwarding to a StatefulSet whose name has a dash (pod-gateway looks clients up by hostname | cut -d- -f1)', ['busybox', CLIENT_INIT], () => {
  const props = { ...gatewayFor('protonvpn'), portForwarding: { toPort: 6881, workload: 'my-qbit', workloadNamespace: 'media' } };
  /**
   * The nat.conf entry client_init.sh takes in the pod hostnamed `hostname`: its own two lines (pod-gateway v1.13.0
   * bin/client_init.sh:44 and :54, in Kubernetes), run by busybox sh with `hostname` answered by a stub on PATH.
   */
  const lookup = (hostname: string, natConf: string) => {
    const dir = tmpdir('tw-nat-entry-');
    try {
      const vendor = fs.readFileSync(CLIENT_INIT, 'utf8').split('\n');
      const lines = [vendor.find((l) => l.includes('HOSTNAME_REAL=$(hostname | cut'))!.trim(), vendor.find((l) => l.startsWith('NAT_ENTRY='))!.replace('/config/nat.conf', path.join(dir, 'nat.conf'))];
      fs.writeFileSync(path.join(dir, 'hostname'), `#!/bin/sh\necho ${hostname}\n`, { mode: 0o755 });
      fs.writeFileSync(path.join(dir, 'nat.conf'), natConf);
      const r = run('busybox', ['sh', '-c', `${lines.join('\n')}\nprintf %s "$NAT_ENTRY"`], { env: { PATH: `${dir}:${process.env.PATH}` } });
      expect(r.status).toBe(0);
      return r.stdout;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  const natOf = (route: { objects: unknown[] }) => (route.objects[0] as { data: Record<string, string> }).data['nat.conf'].split('\n').filter((l) => l && !l.startsWith('#'));

  it('keys nat.conf (the gateway\'s and the client\'s) by what the lookup cuts from the pod\'s hostname, its pod name my-qbit-0', () => {
    const natConf = (planVpnGateway(props).objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data['nat.conf'];
    const route = planRoute(props, { namespace: 'media', podLabels: { app: 'my-qbit' }, name: 'my-qbit', kind: 'StatefulSet' });
    expect(natOf(route)).toEqual(['my 5 tcp:6881,udp:6881']);
    // What pod my-qbit-0 takes from the client's nat.conf, and from the gateway's: the same entry.
    expect(lookup('my-qbit-0', natOf(route).join('\n'))).toBe('my 5 tcp:6881,udp:6881');
    expect(lookup('my-qbit-0', natConf)).toBe('my 5 tcp:6881,udp:6881');
    // No hostname is set: the StatefulSet controller sets it to the pod name whatever the template says.
    expect(applyRoute({ containers: [{ name: 'q', image: 'q' }] }, route).hostname).toBeUndefined();
  });

  it('gives no fixed address when the port is forwarded nowhere (no toPort)', () => {
    const nowhere = { ...gatewayFor('protonvpn'), portForwarding: { workload: 'my-qbit', workloadNamespace: 'media' } };
    expect(natOf(planRoute(nowhere, { namespace: 'media', podLabels: { app: 'my-qbit' }, name: 'my-qbit', kind: 'StatefulSet' }))).toEqual([]);
  });

  it('gives a workload whose pods cut to the same key (my-sonarr), or of the same name in another namespace, no entry and no fixed address', () => {
    for (const t of [{ namespace: 'media', name: 'my-sonarr' }, { namespace: 'other', name: 'my-qbit' }]) {
      const route = planRoute(props, { ...t, podLabels: { app: t.name } });
      expect(natOf(route)).toEqual([]);
      // Its pod (a Deployment's: name-hash-suffix) takes nothing from its own nat.conf, so no fixed address.
      expect(lookup(`${t.name}-7d9f-x2x`, (route.objects[0] as unknown as { data: Record<string, string> }).data['nat.conf'])).toBe('');
      // Control: its hostname cuts to the forwarded workload's key: given that workload's entry, it would take .5.
      expect(lookup(`${t.name}-7d9f-x2x`, 'my 5 tcp:6881,udp:6881\n')).toBe('my 5 tcp:6881,udp:6881');
    }
    // Control: the forwarded StatefulSet itself has the entry.
    expect(natOf(planRoute(props, { namespace: 'media', podLabels: { app: 'my-qbit' }, name: 'my-qbit', kind: 'StatefulSet' }))).toHaveLength(1);
  });
});

describe('what a gateway claims across an App', () => {
  const VXLAN = { key: 'cluster/default/vxlan/42', path: 'vxlanId', what: 'VXLAN id 42 (the default) in cluster "default"', remedy: 'set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' };
  const KEY = { key: 'cluster/default/wireguard-key/vpn-gateway/nordvpn-wireguard/private-key', path: 'wireguardPrivateKeySecret', what: 'WireGuard key vpn-gateway/nordvpn-wireguard (a key used by two gateways steals the session)', remedy: 'give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' };
  const server = (provider: string, name: string, credential: string, path: string) => ({
    key: `vpn-server/${provider}/${name}/${credential}`, path, what: `VPN server ${name} with the credential ${credential} (two gateways on one server and account steal each other's session)`,
  });
  it.each<[string, VpnGatewayProps, object[]]>([
    ['a country filter: no one server', nordvpnGateway(), [VXLAN, KEY]],
    ['an endpoint IP and port, with the key', gatewayFor('custom'), [VXLAN, KEY, server('custom', '203.0.113.50:1337', 'vpn-gateway/nordvpn-wireguard/private-key', 'vpnEndpointIp')]],
    ['one server hostname', { ...nordvpnGateway(), serverHostnames: ['ch1.nordvpn.com'] }, [VXLAN, KEY, server('nordvpn', 'ch1.nordvpn.com', 'vpn-gateway/nordvpn-wireguard/private-key', 'serverHostnames[0]')]],
    ['two server hostnames: no one server', { ...nordvpnGateway(), serverHostnames: ['ch1.nordvpn.com', 'ch2.nordvpn.com'] }, [VXLAN, KEY]],
    ['one server name, with OpenVPN credentials', { ...gatewayFor('private internet access'), serverNames: ['swiss401'] }, [VXLAN, server('private internet access', 'swiss401', 'vpn-gateway/pia-credentials', 'serverNames[0]')]],
  ])('%s', (_name, props, claims) => {
    expect(vpnGatewayClaims(props)).toEqual(claims);
  });
});

describe('a route for a long workload name', () => {
  it('cuts its ConfigMap and kill-switch names to 63 characters: the start, a hash of the whole name, the suffix', () => {
    // The cut for the ConfigMap ends `…w.` and the kill switch's `…w-`: the "." and "-" go (a name ends with a letter or digit).
    const name = `${'w'.repeat(37)}-${'w'.repeat(5)}.${'w'.repeat(30)}`;
    const route = planRoute(nordvpnGateway(), { namespace: 'media', podLabels: { app: 'x' }, name });
    const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
    const names = [`ConfigMap ${'w'.repeat(37)}-${'w'.repeat(5)}-${hash}-vpn-route`, `NetworkPolicy ${'w'.repeat(37)}-${hash}-vpn-kill-switch`];
    expect(route.objects.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual(names);
    expect(names.map((n) => n.split(' ')[1].length)).toEqual([62, 62]); // 63, less the "." or "-" dropped at the cut
    expect(route.volume.configMap!.name).toBe(names[0].split(' ')[1]);
  });
});

describe('a pod spec to route', () => {
  it('is refused when any of its containers is not an object, naming the routed pod spec', () => {
    const route = planRoute(nordvpnGateway(), { namespace: 'media', podLabels: { app: 'x' }, name: 'x' });
    const e = thrown(() => applyRoute({ containers: [{ name: 'app' }, null] } as never, route)) as Error & { problems: unknown };
    expect(e.message.split('\n')[0]).toBe('invalid routed pod spec:');
    expect(e.problems).toEqual([{ path: 'spec', code: 'pod-spec', message: 'expected a pod spec with its containers (spec.template.spec of a Deployment, StatefulSet or DaemonSet)' }]);
    const list = thrown(() => applyRoute({ containers: [{ name: 'app' }], volumes: {} } as never, route))!;
    expect(list.message.split('\n')[0]).toBe('invalid routed pod spec:');
  });
});

describe('a route target from JavaScript or YAML', () => {
  it.each([[null, 'null'], [5, 'number'], ['media/qbittorrent', 'string'], [undefined, 'undefined']])('refuses %p at route, saying what arrived', (target, type) => {
    const error = thrown(() => planRoute(nordvpnGateway(), target as never)) as Error & { problems: unknown };
    expect(error.name).toBe('ValidationError');
    expect(error.problems).toEqual([{ path: 'route', code: 'type', message: `expected the workload to route ({ namespace, podLabels, name }), received ${type}` }]);
  });
});

describe('a route target with bad parts, and a pod spec that is none', () => {
  const target = { namespace: 'media', podLabels: { app: 'qbittorrent' }, name: 'qbittorrent' };
  it.each<[string, unknown, object[]]>([
    ['a namespace that is no DNS label, and a missing name', { ...target, namespace: 'Media', name: undefined }, [
      { path: 'route.namespace', code: 'namespace', message: 'expected the workload\'s namespace, received "Media"' },
      { path: 'route.name', code: 'name', message: 'expected the workload\'s name, received undefined' },
    ]],
    ['a name that is no DNS subdomain, and a namespace that is a number', { ...target, namespace: 7, name: 'QB torrent' }, [
      { path: 'route.namespace', code: 'namespace', message: 'expected the workload\'s namespace, received number' },
      { path: 'route.name', code: 'name', message: 'expected the workload\'s name, received "QB torrent"' },
    ]],
    ['labels that are not a map of strings', { ...target, podLabels: { app: 5 } }, [
      { path: 'route.podLabels', code: 'labels', message: 'expected the pod template\'s labels: a map of strings' },
    ]],
    ['labels that are a list', { ...target, podLabels: ['app=qbittorrent'] }, [
      { path: 'route.podLabels', code: 'labels', message: 'expected the pod template\'s labels: a map of strings' },
    ]],
  ])('refuses %s', (_name, t, problems) => {
    const error = thrown(() => planRoute(nordvpnGateway(), t as never)) as Error & { problems: unknown };
    expect(error.name).toBe('ValidationError');
    expect(error.problems).toEqual(problems);
  });

  it('refuses a target that is null beside a port-forwarding gateway (whose name check reads the target)', () => {
    const error = thrown(() => planRoute(gatewayFor('protonvpn'), null as never)) as Error & { problems: unknown };
    expect(error.name).toBe('ValidationError');
    expect(error.problems).toEqual([{ path: 'route', code: 'type', message: 'expected the workload to route ({ namespace, podLabels, name }), received null' }]);
  });

  it.each<[string, unknown, object]>([
    ['no pod spec', null, { path: 'spec', code: 'pod-spec', message: 'expected a pod spec with its containers (spec.template.spec of a Deployment, StatefulSet or DaemonSet)' }],
    ['a pod spec without containers', { volumes: [] }, { path: 'spec', code: 'pod-spec', message: 'expected a pod spec with its containers (spec.template.spec of a Deployment, StatefulSet or DaemonSet)' }],
    ['a container that is not an object', { containers: ['qbittorrent'] }, { path: 'spec', code: 'pod-spec', message: 'expected a pod spec with its containers (spec.template.spec of a Deployment, StatefulSet or DaemonSet)' }],
    ['volumes that are not a list', { containers: [{ name: 'app', image: 'x' }], volumes: { data: {} } }, { path: 'spec.volumes', code: 'type', message: 'expected a list, received an object' }],
  ])('applyRoute refuses %s', (_name, spec, problem) => {
    const error = thrown(() => applyRoute(spec as never, planRoute(nordvpnGateway(), target))) as Error & { problems: unknown };
    expect(error.name).toBe('ValidationError');
    expect(error.problems).toEqual([problem]);
  });
});
