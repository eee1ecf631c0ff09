import type { OverlayNodeSpec } from '../../model/wireguard-overlay-node';
import { HostPlan } from '../../types';
import { yaml } from '../../lazy';

/** Where the packaged kubelet unit reads KUBELET_EXTRA_ARGS: Debian family, then RPM family. */
export const KUBEADM_KUBELET_DEFAULTS_PATHS = ['/etc/default/kubelet', '/etc/sysconfig/kubelet'] as const;
export const KUBEADM_CONFIG_PATH = '/etc/kubernetes/tunnelwright-kubeadm.yaml';

/**
 * kubeadm: the kubelet's node IP on every node (the packaged kubelet's defaults file) and, on a controller, kubeadm
 * init's config with the API on the overlay. Returns `values.kubeadm` (a controller's), else undefined.
 */
export function renderKubeadm(host: HostPlan, spec: OverlayNodeSpec, nodeIps: string[]): Record<string, unknown> | undefined {
  const controller = spec.role !== 'worker';
  const nodeIp = nodeIps[0];
  const apiSans = controller ? nodeIps : [];
  // The packaged kubelet drop-in (10-kubeadm.conf) reads /etc/default/kubelet on Debian-family hosts and
  // /etc/sysconfig/kubelet on RPM-family ones: both, with the same line.
  const defaults = `# written by tunnelwright: register the overlay address\nKUBELET_EXTRA_ARGS=--node-ip=${nodeIps.join(',')}\n`;
  for (const path of KUBEADM_KUBELET_DEFAULTS_PATHS) host.files.push({ path, mode: 0o644, owner: 'root:root', content: defaults });
  if (!controller) return undefined;
  const v4 = spec.kubernetesMinor >= 31;
  const apiVersion = v4 ? 'kubeadm.k8s.io/v1beta4' : 'kubeadm.k8s.io/v1beta3';
  const kubeletExtraArgs = v4 ? [{ name: 'node-ip', value: nodeIps.join(',') }] : { 'node-ip': nodeIps.join(',') };
  const docs = [
    { apiVersion, kind: 'InitConfiguration', localAPIEndpoint: { advertiseAddress: nodeIp }, nodeRegistration: { kubeletExtraArgs } },
    // networking.podSubnet: one CIDR per family, comma-joined (kubeadm v1beta3 and v1beta4 Networking.PodSubnet
    // string, cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go); kubeadm then starts kube-controller-manager with
    // --allocate-node-cidrs and --cluster-cidr, and each node gets spec.podCIDRs for flannel or kube-router.
    { apiVersion, kind: 'ClusterConfiguration', apiServer: { certSANs: apiSans }, ...(spec.podCidrs?.length ? { networking: { podSubnet: spec.podCidrs.join(',') } } : {}) },
  ];
  host.files.push({ path: KUBEADM_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: kubeadm init --config ${KUBEADM_CONFIG_PATH}\n${docs.map((d) => yaml().stringify(d)).join('---\n')}` });
  return { initConfiguration: docs[0], clusterConfiguration: docs[1] };
}
