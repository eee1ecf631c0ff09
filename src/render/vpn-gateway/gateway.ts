import type { ConfigMap as IConfigMap } from 'kubernetes-types/core/v1';
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import type { Service as IService } from 'kubernetes-types/core/v1';
import type { Deployment as IDeployment } from 'kubernetes-types/apps/v1';
import { VxlanEndpoint } from '../../invariants';
import { podSecurityLabels, requiredLevel } from '../../model/pod-security';
import type { VpnGatewaySpec } from '../../model/vpn-gateway';
import { KubeObject, Plan } from '../../types';
import { withConfigHashes } from '../config-hash';
import { AUTH_DIR, HEALTH_PORT, SECRETS_DIR } from './constants';
import { withStandby } from './failover';
import { postRules } from './firewall';
import { GLUETUN_AUTH_SCRIPT, GLUETUN_WIREGUARD_COMMAND, gluetunAuthEnv, gluetunDevice, gluetunEnv, secretVolume } from './gluetun';
import { dnsmasqReserved, DNSMASQ_RESERVED_PATH, gatewaySettings, natConf } from './pod-gateway-config';

/** Plans the gateway from its spec: settings ConfigMap, headless Service (clients find the pod by DNS), the Deployment, the state claim and the Namespace. */
export function renderVpnGateway(f: VpnGatewaySpec): Plan {
  const settingsName = `${f.name}-settings`;
  const configMap: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: settingsName, namespace: f.namespace, labels: f.podLabels },
    data: { 'settings.sh': gatewaySettings(f), 'nat.conf': natConf(f), 'post-rules.txt': postRules(f), 'dnsmasq-reserved.conf': dnsmasqReserved(f) },
  };
  const pf = f.portForwarding;
  // Only where gluetun keeps state (PIA's piaportforward.json): a claim for another provider would only wait for a
  // volume, and on a cluster without a default StorageClass keep the gateway from ever scheduling.
  const state = pf?.stateClaim;
  const stateClaimName = state?.name;
  const stateClaim: KubeObject | undefined = state?.create ? {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: state.name, namespace: f.namespace, labels: f.podLabels },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: state.create.size } }, ...(state.create.storageClassName ? { storageClassName: state.create.storageClassName } : {}) },
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
        command: ['/bin/sh', '-c', GLUETUN_AUTH_SCRIPT],
        env: gluetunAuthEnv(pf?.app),
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        volumeMounts: [{ name: 'control-api-key', mountPath: '/run/control-api-key', readOnly: true }, { name: 'gluetun-auth', mountPath: AUTH_DIR }],
      }] : []),
    ],
    containers: [
      {
        name: 'gluetun',
        image: f.images.gluetun,
        ...(f.vpnType === 'wireguard' ? { command: GLUETUN_WIREGUARD_COMMAND } : {}),
        env: gluetunEnv(f),
        ports: [{ name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' }, { name: 'vxlan', containerPort: f.vxlanPort, protocol: 'UDP' }],
        ...gluetunDevice(f),
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
      secretVolume(f),
      ...(stateClaimName ? [{ name: 'gluetun-state', persistentVolumeClaim: { claimName: stateClaimName } }] : []),
      ...(app ? [
        { name: 'control-api-key', secret: { secretName: pf!.controlApiKey!.name, defaultMode: 0o400, items: [{ key: pf!.controlApiKey!.key, path: 'api-key' }] } },
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
  const objects = withStandby(f, [configMap, service, ...(stateClaim ? [stateClaim] : []), deployment] as KubeObject[]);
  if (f.createNamespace) {
    // Privileged: gateway-init is (pod-gateway's routes need it), and gluetun adds NET_ADMIN.
    const level = requiredLevel(podSpec).level;
    objects.unshift({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: f.namespace, labels: { ...podSecurityLabels(level), 'app.kubernetes.io/managed-by': 'tunnelwright' } } });
  }
  return { objects: withConfigHashes(objects), hosts: [], values: {}, warnings: [] };
}

/** The gateway's VXLAN endpoint, for the cross-construct check of kill switches that reach it. */
export function vpnGatewayVxlan(f: VpnGatewaySpec, construct: string): VxlanEndpoint {
  return { construct, cluster: f.cluster, namespace: f.namespace, podLabels: f.podLabels, port: f.vxlanPort };
}
