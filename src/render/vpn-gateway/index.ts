/**
 * VpnGateway's plans, one concern per file, each taking the gateway's spec (`parseVpnGateway` in the model): `gateway`
 * (its objects), `gluetun` (gluetun's container), `pod-gateway-config` (pod-gateway's settings files), `firewall` (the
 * gateway pod's iptables rules), `route` (a routed workload), `port-sync` (the port-forwarding workload's sidecar) and
 * `alerts` (port forwarding's alert rules, with their runbooks). `plan` holds the entry points that take props.
 */
export { CONTROL_PORT, HEALTH_PORT, PORT_SYNC_METRICS_PORT } from './constants';
export { FORWARDED_WORKLOAD_HOST, isForwardedTarget, ROUTABLE_KINDS, type RouteTarget, type AutoscalerTarget, vxlanPortFor, WIREGUARD_MTU, ZTUNNEL_CIDR } from '../../model/vpn-gateway';
export { controlRoutes, GLUETUN_AUTH_SCRIPT, GLUETUN_WIREGUARD_COMMAND, gluetunAuthEnv, gluetunEnv } from './gluetun';
export { clientLookupName, DNSMASQ_RESERVED_PATH } from './pod-gateway-config';
export { renderVpnGateway, vpnGatewayVxlan } from './gateway';
export { appContainerIndex, renderRoute, ROUTE_CONFIG_HASH_ENV, type RoutePlan, routeFence, routePodSpec } from './route';
export { PORT_SYNC_SCRIPT } from './port-sync';
export { type PortForwardAlertOptions, renderPortForwardAlertGroups } from './alerts';
export { applyRoute, gatewayFacts, gatewayPlan, type GatewayFacts, planRoute, planVpnGateway, portForwardAlertGroups, validateVpnGateway, vpnGatewayClaims } from './plan';
export { failoverAlertGroups } from './failover-alerts';
