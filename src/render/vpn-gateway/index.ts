/**
 * VpnGateway's plans, one concern per file: `facts` (what the gateway derives from its props), `gateway` (its
 * objects), `gluetun` (gluetun's container), `pod-gateway-config` (pod-gateway's settings files), `firewall` (the
 * gateway pod's iptables rules), `route` (a routed workload), `port-sync` (the port-forwarding workload's sidecar) and
 * `alerts` (port forwarding's alert rules, with their runbooks).
 */
export { type AutoscalerTarget, checkForwardedWorkloadAtSynth, checkForwardedWorkloadRouted } from './route-checks';
export { type GatewayFacts, CONTROL_PORT, FORWARDED_WORKLOAD_HOST, forwardedWorkloadAddress, gatewayFacts, HEALTH_PORT, PORT_SYNC_METRICS_PORT, vxlanPortFor, WIREGUARD_MTU, ZTUNNEL_CIDR } from './facts';
export { controlRoutes, GLUETUN_AUTH_SCRIPT, GLUETUN_WIREGUARD_COMMAND, gluetunAuthScript, gluetunEnv } from './gluetun';
export { clientLookupName, DNSMASQ_RESERVED_PATH } from './pod-gateway-config';
export { planVpnGateway, renderVpnGateway, validateVpnGateway, vpnGatewayClaims, vpnGatewayVxlan } from './gateway';
export { applyRoute, appContainerIndex, planRoute, ROUTE_CONFIG_HASH_ENV, type RoutePlan, routeFence } from './route';
export { isForwardedTarget, ROUTABLE_KINDS, type RouteTarget } from './target';
export { PORT_SYNC_SCRIPT } from './port-sync';
export { portForwardAlertGroups } from './alerts';
