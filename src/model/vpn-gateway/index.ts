/**
 * VpnGateway's model, one concern per file: `props` (what a user writes), `schema` (its parser), `checks` (the
 * provider matrix, port forwarding and the network: all problems at once), `spec` (the props parsed once, with every
 * derived fact: what render takes) and `route` (the workloads routed through a gateway, and their checks).
 */
export { APP_API_PORTS, type CredentialsSecretRef, DEFAULT_IMAGES, MIN_SLSKD, PORT_FORWARDING_APPS, type PortForwardingApp, type PortForwardingProps, servedPorts, type VpnGatewayProps, type VpnGatewayStandbyProps, type VpnGatewayWarning, type VpnServerSelection } from './props';
export { checkVpnGateway, clusterDnsIpOf, keepsPortForwardState, providerRow } from './checks';
export { FORWARDED_WORKLOAD_HOST, parseVpnGateway, type PortForwardingSpec, type SecretCredentials, type SecretKey, type StandbySpec, vxlanPortFor, type VpnGatewaySpec, WIREGUARD_MTU, ZTUNNEL_CIDR } from './spec';
export { type AutoscalerTarget, checkForwardedWorkloadAtSynth, checkForwardedWorkloadRouted, checkRoute, checkRoutedPodSpec, type ForwardedWorkload, forwardedWorkloadOf, isForwardedTarget, ROUTABLE_KINDS, type RouteTarget } from './route';
export { checkPortForwardAlerts } from './alerts';
