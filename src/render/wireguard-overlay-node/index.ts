// The overlay node's render, by concern: the plan (plan.ts), the wg-quick config (wg-conf.ts), the distributions
// (k0s.ts, k3s.ts, kubeadm.ts, distribution-unit.ts) and kube-router's SNAT table and fail-closed routes (kube-router.ts).
export * from './plan';
export * from './wg-conf';
export * from './distribution-unit';
export * from './k0s';
export { K3S_CONFIG_PATH } from './k3s';
export { KUBEADM_CONFIG_PATH, KUBEADM_KUBELET_DEFAULTS_PATHS, KUBEADM_PLACEHOLDERS, KUBEADM_SCRIPT_PATH, KUBEADM_SECRETS_DIR } from './kubeadm';
export { kubeRouterFailClosedRoutes, kubeRouterFailClosedUnit, kubeRouterSnatPath, kubeRouterSnatUnit } from './kube-router';
