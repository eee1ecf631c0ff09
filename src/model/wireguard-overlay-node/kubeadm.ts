import { Problem } from '../../errors';
import { received } from '../common';
import { cidrContainsIp, formatIp, ParsedCidr, parseIp } from '../net';
import { formatEndpoint, parseEndpoint } from './endpoints';

/** The API server's port when controlPlaneEndpoint names none (kubeadm APIEndpoint.BindPort's default). */
export const KUBEADM_API_PORT = 6443;

/** A controller as the controlPlaneEndpoint check sees it: where it is in the props, and its overlay addresses. */
export interface KubeadmController {
  readonly at: string;
  readonly addresses: readonly { readonly family: 4 | 6; readonly value: bigint }[];
}

/** controlPlaneEndpoint as kubeadm takes it, `host:port` (the port 6443 when not given); undefined when it is not one. */
export function normalizeControlPlaneEndpoint(text: string): string | undefined {
  const e = parseEndpoint(text, true);
  return e ? formatEndpoint(e.host, e.port ?? KUBEADM_API_PORT) : undefined;
}

/**
 * kubeadm's controlPlaneEndpoint, where several controllers need one. kubeadm join --control-plane refuses a cluster
 * initialised without one (kubernetes cmd/kubeadm/app/cmd/phases/join/preflight.go, checkIfReadyForAdditionalControlPlane:
 * "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address"),
 * and it cannot be added later without new certificates (kubeadm's create-cluster guide: "Turning a single control
 * plane cluster created without --control-plane-endpoint into a highly available cluster is not supported").
 *
 * Over the overlay the endpoint must reach a controller: WireGuard gives each peer only its node's own address
 * (AllowedIPs /32 or /128), so a VIP inside the overlay network that no node owns is routed to no peer and never
 * answers. A DNS name with one record per controller's overlay address works: Go's dialer tries each address in turn
 * (net/dial.go dialSerial), which kubelet, kube-proxy and kubeadm use.
 */
export function checkControlPlaneEndpoint(
  input: { distribution: unknown; controlPlaneEndpoint: unknown; controllers: readonly KubeadmController[]; networks: readonly ParsedCidr[]; controllersAt: string },
  problems: Problem[], warnings: Problem[],
): void {
  const { controlPlaneEndpoint: given, controllers } = input;
  const example = controllers.flatMap((c) => c.addresses.map((a) => formatIp(a.family, a.value))).join(', ');
  if (given === undefined) {
    if (input.distribution === 'kubeadm' && controllers.length > 1) {
      problems.push({
        path: 'controlPlaneEndpoint', code: 'kubeadm-controllers',
        message: `kubeadm with ${controllers.length} controllers (${controllers.map((c) => c.at).join(', ')}): kubeadm join --control-plane refuses a cluster made without a stable controlPlaneEndpoint, and one cannot be added later. Set controlPlaneEndpoint to a DNS name whose records are the controllers' overlay addresses (${example}), e.g. 'api.cluster.internal:6443', or to a load balancer's address; or make all but one of ${input.controllersAt} workers`,
      });
    }
    return;
  }
  if (typeof given !== 'string') return;
  if (input.distribution !== 'kubeadm') {
    problems.push({ path: 'controlPlaneEndpoint', code: 'distribution', message: `controlPlaneEndpoint is kubeadm's; the distribution is ${JSON.stringify(input.distribution)}: ${input.distribution === 'k0s' ? 'k0s takes a stable API address as k0sConfig api.externalAddress' : 'k3s agents take the server URL in their own config (server:)'}, so leave controlPlaneEndpoint out` });
    return;
  }
  const e = parseEndpoint(given, true);
  if (!e) {
    problems.push({ path: 'controlPlaneEndpoint', code: 'endpoint', message: `expected a DNS name or an IP, with an optional port (api.cluster.internal:6443, 10.10.0.1, [fd10::1]:6443), ${received(given)}` });
    return;
  }
  const ip = parseIp(e.host);
  if (!ip) return;
  const owner = controllers.find((c) => c.addresses.some((a) => a.family === ip.family && a.value === ip.value));
  if (!owner && input.networks.some((n) => cidrContainsIp(n, ip))) {
    problems.push({ path: 'controlPlaneEndpoint', code: 'control-plane-endpoint', message: `${e.host} is inside the overlay network but is no controller's address: WireGuard routes to each peer only its node's own address, so a virtual IP there reaches no one. Use a DNS name whose records are the controllers' overlay addresses${example ? ` (${example})` : ''}, or a load balancer outside the overlay network` });
  } else if (owner && controllers.length > 1) {
    warnings.push({ path: 'controlPlaneEndpoint', code: 'control-plane-endpoint', message: `${e.host} is ${owner.at}'s address: while that controller is down, no worker or controller reaches the API through it although the others are up, and kubeadm writes it into every kubeconfig and certificate. Prefer a DNS name whose records are the controllers' overlay addresses (${example})` });
  }
}
