/**
 * cdk8s constructs over the core, and `App`, which also writes host artefacts.
 *
 * @module tunnelwright/cdk8s
 */
export { App } from './app';
export { isTunnelwrightConstruct, type ITunnelwrightConstruct, type NodeArtefacts, TunnelwrightConstruct } from './base';
export { WireguardOverlayNode } from './wireguard-overlay-node';
export { WireguardMesh } from './wireguard-mesh';
export { KillSwitch } from './kill-switch';
export { VpnGateway } from './vpn-gateway';
export { EgressSteering } from './egress-steering';
export { EgressProbe } from './egress-probe';
export { EgressConformance, type EgressConformanceConstructProps, type EgressConformanceGateway, type EgressConformanceSteering } from './egress-conformance';
