export { App } from './app';
export { isTunnelwrightConstruct, type ITunnelwrightConstruct, type NodeArtefacts, TunnelwrightConstruct } from './base';
export { WireguardOverlayNode } from './wireguard-overlay-node';
export { WireguardMesh } from './wireguard-mesh';
