/**
 * The capabilities the baseline Pod Security level lets a container add, as the Pod Security Standards list them
 * ("Capabilities", baseline: AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP,
 * SETGID, SETPCAP, SETUID, SYS_CHROOT; kubernetes staging/src/k8s.io/pod-security-admission/policy/
 * check_capabilities_baseline.go, capabilities_allowed_1_0): a pod adding any one of them is admitted at baseline, so
 * the library must not ask for a privileged namespace for it; any other capability needs privileged.
 */
import type { PodSpec as IPodSpec } from 'kubernetes-types/core/v1';
import { requiredLevel } from '../../src';

const adding = (cap: string): IPodSpec => ({ containers: [{ name: 'app', image: 'nginx', securityContext: { capabilities: { add: [cap] } } }] });

describe('requiredLevel: a container adding one capability', () => {
  it.each(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'])('%s: baseline admits it', (cap) => {
    expect(requiredLevel(adding(cap)).level).toBe('baseline');
  });
  // Controls: capabilities outside the list (and a listed one written with CAP_) need privileged.
  it.each(['NET_ADMIN', 'NET_RAW', 'SYS_ADMIN', 'SYS_PTRACE', 'CAP_KILL', ''])('%p: only privileged admits it', (cap) => {
    expect(requiredLevel(adding(cap)).level).toBe('privileged');
  });
});
