import { addResolvedSecret, planSecretSource } from '../../host/secret-source';
import type { OverlayNodeSpec } from '../../model/wireguard-overlay-node';
import { HostPlan } from '../../types';
import { yaml } from '../../lazy';
import { mergeK0sSpec } from '../cni';
import * as overlayNodeModel from '../../model/wireguard-overlay-node';

export const K0S_CONFIG_PATH = '/etc/k0s/k0s.yaml';
export const K0S_INSTALL_UNIT = 'tunnelwright-k0s-install.service';
/** What k0s writes once a worker has joined: the kubelet's kubeconfig (`KubeletAuthConfigPath`, k0s pkg/config/cfgvars.go:176, under the default data dir /var/lib/k0s, pkg/constant/constant_unix.go:10). */
export const K0S_JOINED_WORKER = '/var/lib/k0s/kubelet.conf';
/** What a k0s controller with its own etcd has once it has joined: etcd's database (k0s cmd/controller/controller.go:754-759; `EtcdDataDir`, cfgvars.go:173). */
export const K0S_JOINED_CONTROLLER = '/var/lib/k0s/etcd/member/snap/db';

/**
 * k0s: the controller's config (API address, SANs, etcd peer address on the overlay) and,
 * with `installK0s`, a first-boot unit that runs `k0s install` with the kubelet's node IP (k0s takes it only there)
 * once the overlay is up, then starts k0s. Returns `values.k0s`.
 */
export function renderK0s(host: HostPlan, input: OverlayNodeSpec, k8sUnit: string, nodeIps: string[], network: Record<string, unknown>): Record<string, unknown> {
  const controller = input.role !== 'worker';
  const runsKubelet = input.role !== 'controller';
  const installFlags = runsKubelet ? [`--kubelet-extra-args=--node-ip=${nodeIps.join(',')}`] : [];
  const out: Record<string, unknown> = { installFlags };
  if (controller) {
    const spec = mergeK0sSpec(input.k0sConfig, { api: { address: nodeIps[0], sans: nodeIps }, storage: { type: 'etcd', etcd: { peerAddress: nodeIps[0] } }, network });
    const config = { apiVersion: 'k0s.k0sproject.io/v1beta1', kind: 'ClusterConfig', metadata: { name: 'k0s' }, spec };
    out.config = config;
    host.files.push({ path: K0S_CONFIG_PATH, mode: 0o644, owner: 'root:root', content: `# written by tunnelwright: the API and etcd listen on the overlay address, pod traffic rides it\n${yaml().stringify(config)}` });
  }
  const install = input.installK0s;
  if (!install) return out;
  const binary = install.binary ?? overlayNodeModel.DEFAULT_K0S_BINARY;
  const after = input.wireguard.map((i) => `wg-quick@${i.name}.service`);
  const args = [binary, 'install', controller ? 'controller' : 'worker'];
  if (input.role === 'controller+worker') args.push('--enable-worker');
  if (controller) args.push(`--config=${K0S_CONFIG_PATH}`);
  if (install.tokenFrom) {
    // k0s install writes --token-file into k0s's own unit, but k0s reads the file only until the node has joined: a
    // worker once its kubelet kubeconfig exists (k0s pkg/component/worker/utils.go:43-46, read lazily by
    // cmd/worker/worker.go:167-190), a controller with its own etcd once etcd's member/snap/db exists
    // (cmd/controller/controller.go:226-236, needToJoin at :754-765). So the token is resolved only while that file is
    // missing: after the join, a reboot does not depend on the token's source (a short-lived token may be gone).
    const token = planSecretSource('k0s-token', install.tokenFrom, K0S_INSTALL_UNIT, [`ConditionPathExists=!${controller ? K0S_JOINED_CONTROLLER : K0S_JOINED_WORKER}`]);
    addResolvedSecret(host, token);
    after.push(token.unit);
    args.push(`--token-file=${token.path}`);
    // Until then k0s reads the file when it starts: it must be there first (a unit skipped by its condition fails no one).
    host.dropins.push({ unit: k8sUnit, name: '10-tunnelwright-k0s-token.conf', content: `[Unit]\nAfter=${token.unit}\nRequires=${token.unit}\n` });
  }
  args.push(...installFlags);
  host.units.push({
    name: K0S_INSTALL_UNIT,
    enabled: true,
    content: [
      '[Unit]',
      `Description=tunnelwright: install k0s with the kubelet on the overlay address`,
      `After=${after.join(' ')}`,
      `Requires=${after.join(' ')}`,
      `ConditionPathExists=!/etc/systemd/system/${k8sUnit}`,
      '',
      '[Service]',
      'Type=oneshot',
      'RemainAfterExit=yes',
      `ExecStart=${args.join(' ')}`,
      `ExecStart=/usr/bin/systemctl start --no-block ${k8sUnit}`,
      '',
      '[Install]',
      'WantedBy=multi-user.target',
      '',
    ].join('\n'),
  });
  return { ...out, installUnit: K0S_INSTALL_UNIT };
}
