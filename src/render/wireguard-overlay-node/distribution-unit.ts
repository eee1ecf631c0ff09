import type { Distribution, NodeRole } from '../../model/wireguard-overlay-node';

/** What the distribution calls its node unit, by role. */
export function distributionUnit(distribution: Distribution, role: NodeRole): string {
  const controller = role !== 'worker';
  switch (distribution) {
    case 'k0s':
      return controller ? 'k0scontroller.service' : 'k0sworker.service';
    case 'k3s':
      return controller ? 'k3s.service' : 'k3s-agent.service';
    case 'kubeadm':
      return 'kubelet.service';
  }
}
