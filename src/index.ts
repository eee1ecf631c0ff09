/**
 * tunnelwright: the pure core. Props, validation, planning and host renderers; imports no framework.
 * The cdk8s constructs are in `tunnelwright/cdk8s`, the Pulumi components in `tunnelwright/pulumi`.
 *
 * @module tunnelwright
 */
export { formatProblems, joinPath, type Problem, ValidationError } from './errors';
export { CLUSTER_SCOPED_KINDS, type HostDropin, type HostFile, type HostPlan, type HostUnit, type KubeObject, type Plan } from './types';
export { type Cidr, type Duration, type SecretKeyRef, type SecretSource } from './model/common';
export { durationSeconds, K0S_OWNED_KEYS, PORT_FORWARDING_APPS } from './model/values';
export { type Claim, type ClaimSet, checkClaims, checkVxlanPorts, type VxlanEndpoint } from './invariants';
export { generateKeyPair, isWireguardKey, publicKeyFromPrivate } from './keys';
export { mergeHostPlans } from './host/host-plan';
export { renderCloudConfig, USER_DATA_WARN_BYTES } from './host/cloud-init';
export {
  DEFAULT_IGNITION_VERSION, type IgnitionConfig, type IgnitionFile, type IgnitionUnit, type IgnitionVersion, IGNITION_VERSIONS, renderIgnition, renderIgnitionJson,
} from './host/ignition';
export { type HostArtefacts, renderHostArtefacts, type WireguardConfigFile, wireguardConfigs } from './host/artefacts';
export { type Distribution, type K0sInstall, type NodeRole, type WireguardInterface, type WireguardOverlayNodeProps, type WireguardPeer } from './model/wireguard-overlay-node';
export { type WireguardMeshNode, type WireguardMeshProps } from './model/wireguard-mesh';
export { type OverlayCni } from './model/cni';
export { distributionUnit, planWireguardOverlayNode, validateWireguardOverlayNode } from './render/wireguard-overlay-node';
export { type MeshNodePlan, type MeshPlan, planWireguardMesh, validateWireguardMesh } from './render/wireguard-mesh';
export { type RenderInterface, type RenderPeer } from './render/wireguard-overlay-node';
export { type HostKillSwitch, type KillSwitchProps } from './model/kill-switch';
export { KILL_SWITCH_TABLE, type KillSwitchHost, type PodFence, killSwitchName, planHostKillSwitch, planKillSwitch, renderKillSwitchTable, validateKillSwitch } from './render/kill-switch';
export { type CredentialsSecretRef, type PortForwardingApp, type PortForwardingProps, type VpnGatewayProps, type VpnGatewayStandbyProps, type VpnGatewayWarning, type VpnServerSelection } from './model/vpn-gateway';
export { PROVIDERS, type ProviderOpenvpn, type ProviderRow, type ProviderWireguard } from './model/vpn-providers';
export { applyRoute, planRoute, planVpnGateway, failoverAlertGroups, portForwardAlertGroups, type PortForwardAlertOptions, ROUTE_CONFIG_HASH_ENV, type RoutePlan, type RouteTarget, validateVpnGateway, vpnGatewayClaims } from './render/vpn-gateway';
export { CONFIG_HASH_ANNOTATION, configMapsHash } from './render/config-hash';
export { PORT_SYNC_SCRIPT } from './render/vpn-gateway';
export { type EgressSteeringMonitoring, type EgressSteeringProps, type EgressTunnel } from './model/egress-steering';
export { type EgressStandby, type EgressSteeringFailover } from './model/egress-steering-failover';
export { egressAlertGroups, egressSteeringClaims, egressSteeringValues, excludedCidrsOf, planEgressSteering, renderResteerScript, validateEgressSteering } from './render/egress-steering';
export { type DnsLeakProbe, type EgressProbeProps, type EgressProbeVia } from './model/egress-probe';
export { checkPodSecurity, type LevelNeed, type ModePolicy, namespacePolicy, type PodSecurityLevel, type PodSecurityNeed, podSecurityLabels, requiredLevel } from './model/pod-security';
export { addressRegexp, blackboxConfig, cidrRegexp, egressProbeAlertGroups, ipv6CidrsRegexp, planEgressProbe, validateEgressProbe } from './render/egress-probe';
export { type ConformanceGateway, type ConformanceSteering, type EgressConformanceProps } from './model/egress-conformance';
export { type ConformanceFailoverOptions } from './model/egress-conformance-failover';
export { type ConformanceFailover } from './render/egress-conformance-failover';
export { CONFORMANCE_SCRIPT, conformanceSources, type ConformanceSource, planEgressConformance, renderConformanceScript, validateEgressConformance } from './render/egress-conformance';
