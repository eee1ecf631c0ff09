/**
 * EgressSteering's plan, one concern per file: the policies (policy.ts), the alerts (alerts.ts), the re-steer
 * credential (rbac.ts), the Helm values (values.ts), the claims (claims.ts) and the gateway node's host artefacts
 * (host.ts, openvpn.ts, and the scripts beside them). Each takes the spec the model parsed once
 * (`model/egress-steering-spec.ts`); the functions here that take props parse them first.
 */
import { Problem } from '../../errors';
import { Claim } from '../../invariants';
import type { EgressSteeringProps } from '../../model/egress-steering';
import { checkEgressSteering } from '../../model/egress-steering';
import { egressSteeringSpec, EgressSteeringSpec, ignitionPackagesWarning } from '../../model/egress-steering-spec';
import { KubeObject, Plan } from '../../types';
import { alertGroups, prometheusRule } from './alerts';
import { steeringClaims } from './claims';
import { steeringHostPlan } from './host';
import { ipv6DenyPolicy, kyvernoPolicy, steeringPolicy } from './policy';
import { resteerRbac } from './rbac';
import { resteerKyvernoPolicy, VAP_KINDS } from './kyverno';
import { steeringValues } from './values';
import { addFailoverAgent, candidatesOf, failoverObjects } from '../egress-steering-failover';
import { planSecretSource } from '../../host/secret-source';
import { OPENVPN_UNIT, RESTEER_NAMESPACE, RESTEER_SERVICE } from './constants';

export * from './constants';
export { KSM_GAP, RECONNECT_LOOP_THRESHOLD, RECONNECT_LOOP_WINDOW, WG_HANDSHAKE_MAX_AGE } from './alerts';
export { renderHandshakeScript, renderResteerScript } from './host';
export { DEFAULT_TEXTFILE_DIRECTORY, excludedCidrsOf, ignitionPackagesWarning, mergedKsmAllowlist } from '../../model/egress-steering-spec';

/** Returns the problems of EgressSteering props without throwing. */
export function validateEgressSteering(props: unknown): Problem[] {
  return checkEgressSteering(props).problems;
}

/** Plans the steering from its spec: the policy, label enforcement, alerts, the hook's RBAC, Helm values and the gateway node's host plan. */
export function planSteering(s: EgressSteeringSpec): Plan {
  const objects: KubeObject[] = [steeringPolicy(s)];
  if (s.enforceLabels) objects.push(kyvernoPolicy(s, s.enforceLabels));
  if (s.monitoring) objects.push(prometheusRule(s, s.monitoring));
  // The re-steer scope at admission: the ValidatingAdmissionPolicy, or (instead of it) a Kyverno ClusterPolicy.
  objects.push(...(s.resteerAdmission === 'kyverno' ? [...resteerRbac(s).filter((o) => !VAP_KINDS.has(o.kind)), resteerKyvernoPolicy(s)] : resteerRbac(s)));
  // One host plan per candidate node (gatewayNode alone without failover), each with its own tunnel.
  const hosts = candidatesOf(s).map((c, i) => (i === 0 ? steeringHostPlan(s) : steeringHostPlan({ ...s, gatewayNode: c.node, tunnel: s.failover!.standbys[i - 1].tunnel })));
  if (s.failover) {
    objects.push(...failoverObjects(s, s.name, `${s.name}-resteer`, RESTEER_NAMESPACE));
    const kubeconfig = s.kubeconfigFrom ? planSecretSource(`${s.name}-kubeconfig`, s.kubeconfigFrom, RESTEER_SERVICE) : undefined;
    for (const h of hosts) {
      // After the tunnel's unit: started once it is, stopped (releasing the role) before it goes down.
      const tunnel = h.units.map((u) => u.name).filter((n) => n === `wg-quick@${s.iface}.service` || n === OPENVPN_UNIT);
      addFailoverAgent(h, s, { name: s.name, iface: s.iface, textfileDirectory: s.monitoring?.textfileDirectory, kubeconfig: kubeconfig?.path, after: [...(kubeconfig ? [kubeconfig.unit] : []), ...tunnel] });
    }
  }
  const host = hosts[0];
  if (s.denyIpv6) objects.push(ipv6DenyPolicy(s));
  // The host's packages (the tunnel's and the kill switch's nftables) are known once the host is planned.
  const packages = host.packages.length > 0 && !s.acknowledged.includes('ignition-packages') ? [ignitionPackagesWarning(host.packages, 'tunnel')] : [];
  return { objects, hosts, values: steeringValues(s), warnings: [...s.warnings, ...packages] };
}

/** Plans the steering: the policy, label enforcement, alerts, the hook's RBAC, Helm values and the gateway node's host plan. */
export function planEgressSteering(props: EgressSteeringProps): Plan {
  return planSteering(egressSteeringSpec(props));
}

/** The alert rules (PrometheusRule `spec.groups`), each gated on the gateway node existing. */
export function egressAlertGroups(p: EgressSteeringProps): { name: string; rules: Record<string, unknown>[] }[] {
  return alertGroups(egressSteeringSpec(p));
}

/**
 * The Helm values the policy needs, for Cilium and kube-state-metrics. Helm replaces lists: `devices` is given whole
 * (your `ciliumValues.devices` with the tunnel added) or not at all (a warning says to add the tunnel to yours).
 */
export function egressSteeringValues(p: EgressSteeringProps): Record<string, unknown> {
  return steeringValues(egressSteeringSpec(p));
}

/** Claims: the pods it steers in its cluster (by class, per namespace or all), and a pinned VPN server with its credential across the App. */
export function egressSteeringClaims(props: EgressSteeringProps): Claim[] {
  return steeringClaims(egressSteeringSpec(props));
}

export { steeringClaims };
