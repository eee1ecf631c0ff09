import type { OverlayCni } from '../../model/cni';
import { HostPlan } from '../../types';
import { yaml } from '../../lazy';
import { k3sFlannel } from '../cni';

export const K3S_CONFIG_PATH = '/etc/rancher/k3s/config.yaml.d/50-tunnelwright.yaml';

/** k3s: the node IP (and a controller's advertise address and SANs) on the overlay, flannel on the overlay interface. Returns `values.k3s`. */
export function renderK3s(host: HostPlan, cni: OverlayCni, overlayIface: string, nodeIps: string[], controller: boolean): Record<string, unknown> {
  const nodeIp = nodeIps[0];
  const apiSans = controller ? nodeIps : [];
  // k3s merges config.yaml.d files key by key: a plain key replaces the user's value, `key+` appends to it
  // (pkg/configfilearg). node-ip and advertise-address are ours to set; the SANs add to the user's.
  const config: Record<string, unknown> = { 'node-ip': nodeIps.join(','), ...(cni === 'flannel' ? k3sFlannel(overlayIface) : {}) };
  if (controller) Object.assign(config, { 'advertise-address': nodeIp, 'tls-san+': apiSans });
  host.files.push({ path: K3S_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: register the overlay address${cni === 'flannel' ? ', flannel\'s VXLAN on the overlay' : ''}\n${yaml().stringify(config)}` });
  return { config };
}
