/**
 * Pulumi ComponentResources over the same core.
 *
 * @module tunnelwright/pulumi
 */
export { childName, emitPlan, nodeOutputs, type NodeOutputs, reserve } from './base';
export { declaredNamespaces, registeredHosts, resetRegistry } from './registry';
export { registerNamespaces } from './namespaces';
export { WireguardOverlayNode, type WireguardOverlayNodeArgs } from './wireguard-overlay-node';
export { WireguardMesh, type WireguardMeshArgs } from './wireguard-mesh';
export { KillSwitch, type KillSwitchArgs } from './kill-switch';
export { type InputCredentialsSecretRef, type InputSecretKeyRef, type RouteTransform, VpnGateway, type VpnGatewayArgs } from './vpn-gateway';
export { EgressSteering, type EgressSteeringArgs } from './egress-steering';
export { EgressProbe, type EgressProbeArgs } from './egress-probe';
export { EgressConformance, type EgressConformanceArgs } from './egress-conformance';
