import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import type { Service as IService } from 'kubernetes-types/core/v1';
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import { Problem, throwIfProblems } from '../../errors';
import { Claim, VxlanEndpoint } from '../../invariants';
import { podSecurityLabels, requiredLevel } from '../../model/pod-security';
import type { VpnGatewayProps } from '../../model/vpn-gateway';
import { KubeObject, Plan } from '../../types';
import { withConfigHashes } from '../config-hash';
import * as vpnGatewayModel from '../../model/vpn-gateway';
import { gatewayFacts, HEALTH_PORT } from './facts';
import { postRules } from './firewall';
import { AUTH_DIR, GLUETUN_WIREGUARD_COMMAND, gluetunAuthScript, gluetunDevice, gluetunEnv, SECRETS_DIR, secretVolume } from './gluetun';
import { dnsmasqReserved, DNSMASQ_RESERVED_PATH, gatewaySettings, natConf } from './pod-gateway-config';

/** Returns the problems of VpnGateway props without throwing. */
export function validateVpnGateway(props: unknown): Problem[] {
  return vpnGatewayModel.checkVpnGateway(props).problems;
}

/** Plans the gateway: settings ConfigMap, headless Service (clients find the pod by DNS) and the Deployment. */
export function planVpnGateway(props: VpnGatewayProps): Plan {
  const checked = vpnGatewayModel.checkVpnGateway(props);
  throwIfProblems(checked.problems, 'VpnGateway props');
  const plan = renderVpnGateway(checked.value!);
  return { ...plan, warnings: checked.warnings };
}

export function renderVpnGateway(props: VpnGatewayProps): Plan {
  const f = gatewayFacts(props);
  const settingsName = `${f.name}-settings`;
  const configMap: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: settingsName, namespace: f.namespace, labels: f.podLabels },
    data: { 'settings.sh': gatewaySettings(f), 'nat.conf': natConf(props), 'post-rules.txt': postRules(f, props.portForwarding), 'dnsmasq-reserved.conf': dnsmasqReserved(f) },
  };
  const pf = props.portForwarding;
  // Only where gluetun keeps state (PIA's piaportforward.json): a claim for another provider would only wait for a
  // volume, and on a cluster without a default StorageClass keep the gateway from ever scheduling.
  const state = pf && vpnGatewayModel.keepsPortForwardState(props.vpnProvider, pf) ? pf.stateClaim ?? {} : undefined;
  const stateClaimName = state ? state.existingClaim ?? `${f.name}-gluetun-state` : undefined;
  const stateClaim: KubeObject | undefined = state && state.existingClaim === undefined ? {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: stateClaimName!, namespace: f.namespace, labels: f.podLabels },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: state.size ?? '64Mi' } }, ...(state.storageClassName ? { storageClassName: state.storageClassName } : {}) },
  } as KubeObject : undefined;
  const app = pf?.app !== undefined;
  const service: IService = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: f.name, namespace: f.namespace, labels: f.podLabels },
    spec: { clusterIP: 'None', selector: f.podLabels, ports: [{ name: 'vxlan', protocol: 'UDP', port: f.vxlanPort, targetPort: f.vxlanPort }] },
  };
  const configVolume = { name: 'pod-gateway-config', mountPath: '/config', readOnly: true };
  const podSpec: IPodSpec = {
    initContainers: [
      // Creates vxlan0 before gluetun starts: gluetun trusts every Ethernet link that exists when it starts.
      { name: 'gateway-init', image: f.images.podGateway, command: ['/bin/gateway_init.sh'], securityContext: { privileged: true }, volumeMounts: [configVolume] },
      ...(app ? [{
        name: 'gluetun-auth',
        image: f.images.gluetun,
        command: ['/bin/sh', '-c', gluetunAuthScript(pf?.app)],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        volumeMounts: [{ name: 'control-api-key', mountPath: '/run/control-api-key', readOnly: true }, { name: 'gluetun-auth', mountPath: AUTH_DIR }],
      }] : []),
    ],
    containers: [
      {
        name: 'gluetun',
        image: f.images.gluetun,
        ...((props.vpnType ?? 'wireguard') === 'wireguard' ? { command: GLUETUN_WIREGUARD_COMMAND } : {}),
        env: gluetunEnv(props, f),
        ports: [{ name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' }, { name: 'vxlan', containerPort: f.vxlanPort, protocol: 'UDP' }],
        ...gluetunDevice(props),
        // gluetun's health server: 500 while the tunnel is down (never /v1/publicip/ip, which is always 200).
        startupProbe: { httpGet: { path: '/', port: HEALTH_PORT }, periodSeconds: 5, failureThreshold: 60 },
        livenessProbe: { httpGet: { path: '/', port: HEALTH_PORT }, periodSeconds: 30, failureThreshold: 5 },
        readinessProbe: { httpGet: { path: '/', port: HEALTH_PORT }, periodSeconds: 10, failureThreshold: 3 },
        volumeMounts: [
          { name: 'gluetun-secrets', mountPath: SECRETS_DIR, readOnly: true },
          { name: 'pod-gateway-config', mountPath: '/iptables/post-rules.txt', subPath: 'post-rules.txt', readOnly: true },
          ...(stateClaimName ? [{ name: 'gluetun-state', mountPath: '/gluetun' }] : []),
          ...(app ? [{ name: 'gluetun-auth', mountPath: AUTH_DIR, readOnly: true }] : []),
        ],
      },
      {
        name: 'gateway-sidecar',
        image: f.images.podGateway,
        command: ['/bin/gateway_sidecar.sh'],
        ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { name: 'dhcp', containerPort: 67, protocol: 'UDP' }],
        securityContext: { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } },
        volumeMounts: [configVolume, { name: 'pod-gateway-config', mountPath: DNSMASQ_RESERVED_PATH, subPath: 'dnsmasq-reserved.conf', readOnly: true }],
      },
    ],
    volumes: [
      { name: 'pod-gateway-config', configMap: { name: settingsName } },
      secretVolume(props),
      ...(stateClaimName ? [{ name: 'gluetun-state', persistentVolumeClaim: { claimName: stateClaimName } }] : []),
      ...(app ? [
        { name: 'control-api-key', secret: { secretName: pf!.controlApiKeySecret!.name, defaultMode: 0o400, items: [{ key: pf!.controlApiKeySecret!.key ?? 'api-key', path: 'api-key' }] } },
        { name: 'gluetun-auth', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      ] : []),
    ],
  };
  const deployment: IDeployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: f.name, namespace: f.namespace, labels: f.podLabels },
    spec: {
      // Exactly one gateway pod: two would share one VPN session and steal it from each other.
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: f.podLabels },
      template: {
        // Never enrolled in Istio ambient: the gateway's traffic must not be redirected to ztunnel.
        metadata: { labels: { ...f.podLabels, 'istio.io/dataplane-mode': 'none' } },
        spec: podSpec,
      },
    },
  };
  const objects = [configMap, service, ...(stateClaim ? [stateClaim] : []), deployment] as KubeObject[];
  if (props.createNamespace !== false) {
    // Privileged: gateway-init is (pod-gateway's routes need it), and gluetun adds NET_ADMIN.
    const level = requiredLevel(podSpec).level;
    objects.unshift({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: f.namespace, labels: { ...podSecurityLabels(level), 'app.kubernetes.io/managed-by': 'tunnelwright' } } });
  }
  return { objects: withConfigHashes(objects), hosts: [], values: {}, warnings: [] };
}

/** The gateway's VXLAN endpoint, for the cross-construct check of kill switches that reach it. */
export function vpnGatewayVxlan(props: VpnGatewayProps, construct: string): VxlanEndpoint {
  const f = gatewayFacts(props);
  return { construct, cluster: f.cluster, namespace: f.namespace, podLabels: f.podLabels, port: f.vxlanPort };
}

/** What the gateway claims across an App: its VXLAN id in its cluster, its key Secret, a pinned server with its credential. */
export function vpnGatewayClaims(props: VpnGatewayProps): Claim[] {
  const f = gatewayFacts(props);
  const claims: Claim[] = [{ key: `cluster/${f.cluster}/vxlan/${f.vxlanId}`, path: 'vxlanId',
    what: `VXLAN id ${f.vxlanId}${props.vxlanId === undefined ? ' (the default)' : ''} in cluster "${f.cluster}"`,
    remedy: 'set a different `vxlanId` (1 to 16777215) on one of the two gateways: each gateway of a cluster needs its own' }];
  const key = props.wireguardPrivateKeySecret;
  if (key) claims.push({ key: `cluster/${f.cluster}/wireguard-key/${f.namespace}/${key.name}/${key.key ?? 'private-key'}`, path: 'wireguardPrivateKeySecret', what: `WireGuard key ${f.namespace}/${key.name} (a key used by two gateways steals the session)`,
    remedy: 'give each gateway a key of its own: generate one (`wg genkey`), register its public key with the provider as another device, and put it in a Secret (or a key of the Secret) that only this gateway names' });
  // The one server the gateway is pinned to, and the prop that pins it (where a clash is reported).
  const pinned = props.vpnEndpointIp ? { server: `${props.vpnEndpointIp}:${props.vpnEndpointPort}`, path: 'vpnEndpointIp' }
    : props.serverHostnames?.length === 1 ? { server: props.serverHostnames[0], path: 'serverHostnames[0]' }
      : props.serverNames?.length === 1 ? { server: props.serverNames[0], path: 'serverNames[0]' } : undefined;
  const credential = key ? `${f.namespace}/${key.name}/${key.key ?? 'private-key'}` : props.openvpnCredentialsSecret ? `${f.namespace}/${props.openvpnCredentialsSecret.name}` : undefined;
  if (pinned && credential) claims.push({ key: `vpn-server/${vpnGatewayModel.providerRow(props.vpnProvider)!.gluetunName}/${pinned.server}/${credential}`, path: pinned.path, what: `VPN server ${pinned.server} with the credential ${credential} (two gateways on one server and account steal each other's session)` });
  return claims;
}
