/** gluetun's health server port (`HEALTH_SERVER_ADDRESS`), which its probes read. */
export const HEALTH_PORT = 9999;
/** gluetun's control server port (its default, `:8000`, settings/server.go:91). */
export const CONTROL_PORT = 8000;
/** The port-sync sidecar's metrics port. */
export { PORT_SYNC_METRICS_PORT } from '../../model/values';
/** Where gluetun reads its secrets as files (`*_SECRETFILE`). */
export const SECRETS_DIR = '/run/secrets';
/** Where the gateway's init container writes gluetun's auth file (a memory emptyDir: the key never reaches the state volume). */
export const AUTH_DIR = '/run/gluetun-auth';
/** gluetun's tunnel interface (`VPN_INTERFACE`), which the failover agent's probe goes out of. */
export const VPN_INTERFACE = 'tun0';
