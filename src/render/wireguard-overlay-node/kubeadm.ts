import { asset } from '../../assets';
import type { OverlayNodeSpec } from '../../model/wireguard-overlay-node';
import { HostPlan } from '../../types';
import { yaml } from '../../lazy';

/**
 * Runs kubeadm init or join with the node's config, its secret placeholders filled from files on the node at run time
 * (kubeadm takes a certificate key, a token or a CA hash either in the config or as flags, and refuses those flags
 * beside --config: kubernetes cmd/kubeadm/app/apis/kubeadm/validation/validation.go isAllowedFlag, v1.31.0).
 */
export const KUBEADM_SCRIPT = asset(__dirname, 'kubeadm.sh');
export const KUBEADM_SCRIPT_PATH = '/usr/local/sbin/tunnelwright-kubeadm';
/** Where tunnelwright-kubeadm reads the secrets, each a file the user puts there (never in user-data). */
export const KUBEADM_SECRETS_DIR = '/etc/kubernetes/tunnelwright';
/** The placeholders tunnelwright-kubeadm fills: each file of KUBEADM_SECRETS_DIR by its name. */
export const KUBEADM_PLACEHOLDERS = { certificateKey: '@certificate-key@', token: '@bootstrap-token@', caCertHash: '@ca-cert-hash@' } as const;

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
  const endpoint = spec.controlPlaneEndpoint;
  if (endpoint !== undefined && spec.kubeadmControlPlane === 'join') {
    // kubeadm join --control-plane: discovery at the cluster's endpoint, this controller's API and etcd on its overlay
    // address (JoinConfiguration.controlPlane.localAPIEndpoint), the certificates downloaded with the certificate key
    // (JoinControlPlane.certificateKey; v1beta3 and v1beta4 types.go alike). ClusterConfiguration comes from the cluster.
    const join = {
      apiVersion, kind: 'JoinConfiguration',
      discovery: { bootstrapToken: { apiServerEndpoint: endpoint, token: KUBEADM_PLACEHOLDERS.token, caCertHashes: [KUBEADM_PLACEHOLDERS.caCertHash] } },
      controlPlane: { localAPIEndpoint: { advertiseAddress: nodeIp }, certificateKey: KUBEADM_PLACEHOLDERS.certificateKey },
      nodeRegistration: { kubeletExtraArgs },
    };
    host.files.push(kubeadmScriptFile());
    host.files.push({ path: KUBEADM_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: ${KUBEADM_SCRIPT_PATH} runs kubeadm join --config <this, its placeholders filled from ${KUBEADM_SECRETS_DIR}/> (controlPlane: a control-plane join)\n${yaml().stringify(join)}` });
    return { joinConfiguration: join, command: KUBEADM_SCRIPT_PATH };
  }
  const docs = [
    // With a controlPlaneEndpoint the first controller uploads the control plane's certificates, encrypted with the
    // certificate key, for the others to join with (kubeadm init --upload-certs; InitConfiguration.certificateKey).
    { apiVersion, kind: 'InitConfiguration', localAPIEndpoint: { advertiseAddress: nodeIp }, nodeRegistration: { kubeletExtraArgs }, ...(endpoint !== undefined ? { certificateKey: KUBEADM_PLACEHOLDERS.certificateKey } : {}) },
    // networking.podSubnet: one CIDR per family, comma-joined (kubeadm v1beta3 and v1beta4 Networking.PodSubnet
    // string, cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go); kubeadm then starts kube-controller-manager with
    // --allocate-node-cidrs and --cluster-cidr, and each node gets spec.podCIDRs for flannel or kube-router.
    // controlPlaneEndpoint: kubeadm adds its host to the API server certificate's SANs itself.
    { apiVersion, kind: 'ClusterConfiguration', ...(endpoint !== undefined ? { controlPlaneEndpoint: endpoint } : {}), apiServer: { certSANs: apiSans }, ...(spec.podCidrs?.length ? { networking: { podSubnet: spec.podCidrs.join(',') } } : {}) },
  ];
  const text = docs.map((d) => yaml().stringify(d)).join('---\n');
  if (endpoint === undefined) {
    host.files.push({ path: KUBEADM_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: kubeadm init --config ${KUBEADM_CONFIG_PATH}\n${text}` });
    return { initConfiguration: docs[0], clusterConfiguration: docs[1] };
  }
  host.files.push(kubeadmScriptFile());
  host.files.push({ path: KUBEADM_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: ${KUBEADM_SCRIPT_PATH} runs kubeadm init --upload-certs --config <this, its placeholders filled from ${KUBEADM_SECRETS_DIR}/>\n${text}` });
  return { initConfiguration: docs[0], clusterConfiguration: docs[1], command: KUBEADM_SCRIPT_PATH };
}

function kubeadmScriptFile() {
  return { path: KUBEADM_SCRIPT_PATH, mode: 0o755, owner: 'root:root', content: KUBEADM_SCRIPT };
}
