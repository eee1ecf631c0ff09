import { Problem } from '../../errors';
import { isWireguardKey, publicKeyFromPrivate } from '../../keys';
import { checkKubeRouterPodCidr, checkKubeRouterSnatPackages, checkOverlayCni, checkPodCidrs } from '../cni';
import { asArray, isRecord, KEY_FIELD_MESSAGE, parseWith, received, redactProblems, sortProblems } from '../common';
import { cidrContainsIp, findDuplicates, findOverlaps, formatIp, Located, ParsedCidr, parseCidr, parseIp } from '../net';
import { checkInterfaceAddresses, derivedMtu } from './addresses';
import { clusterEndpointHost, endpointKey, parseEndpoint } from './endpoints';
import { checkControlPlaneEndpoint } from './kubeadm';
import { INTERFACE_NAME, kubernetesMinor, WireguardOverlayNodeProps } from './props';
import { wireguardOverlayNodeSchema } from './schema';
import { OverlayNodeSpec, overlayNodeSpec } from './node-spec';

function keyProblem(path: string, what: string): Problem {
  return { path, code: 'key', message: `expected a WireGuard ${what}: base64 of 32 bytes (44 characters ending in "="), received a value that is not one (not shown: it is secret)` };
}

/** Semantic checks of one node's props: everything the schema cannot see. Tolerates malformed parts (the schema reports them). */
function checkNode(input: Record<string, unknown>, problems: Problem[], warnings: Problem[]): void {
  const ifaces = asArray(input.wireguard);
  const names: Located<string>[] = [];
  const nodeAddressAt: string[] = [];
  let ipv6NodeAt: string | undefined;
  /** The families of the node-address interface's addresses (the node IPs the kubelet registers). */
  const nodeFamilies = new Set<4 | 6>();
  /** The node-address interface's `mtu`, when neither it nor `underlayMtu` is set (the CNI's MTU is then unknown). */
  let nodeMtuAt: string | undefined;
  const networks: ParsedCidr[] = [];
  ifaces.forEach((raw, i) => {
    if (!isRecord(raw)) return;
    const p = `wireguard[${i}]`;
    if (typeof raw.name === 'string') {
      if (!INTERFACE_NAME.test(raw.name) || raw.name.length > 15) {
        problems.push({ path: `${p}.name`, code: 'interface-name', message: `expected an interface name matching ^[a-z0-9][-a-z0-9]*$ of at most 15 characters, ${received(raw.name)}` });
      } else names.push({ value: raw.name, at: `${p}.name` });
    }
    const addrs = checkInterfaceAddresses(raw.address, `${p}.address`, problems);
    networks.push(...addrs);
    const hasV6 = addrs.some((a) => a.family === 6);
    if (typeof raw.mtu === 'number') {
      if (!Number.isInteger(raw.mtu) || raw.mtu < 576 || raw.mtu > 65535) {
        problems.push({ path: `${p}.mtu`, code: 'range', message: `expected an MTU: an integer from 576 to 65535, ${received(raw.mtu)}` });
      } else if (hasV6 && raw.mtu < 1280) {
        problems.push({ path: `${p}.mtu`, code: 'mtu-ipv6', message: `expected an MTU of at least 1280 on an interface with an IPv6 address, ${received(raw.mtu)}` });
      }
    } else if (typeof raw.underlayMtu === 'number' && Number.isInteger(raw.underlayMtu)) {
      const mtu = derivedMtu(raw.underlayMtu, asArray(raw.peers).map((peer) => (isRecord(peer) ? peer.endpoint : undefined)));
      if (hasV6 && mtu < 1280) {
        problems.push({ path: `${p}.underlayMtu`, code: 'mtu-ipv6', message: `the interface MTU derived from underlayMtu ${raw.underlayMtu} is ${mtu}, below the 1280 an IPv6 address needs; expected an underlay MTU of at least ${raw.underlayMtu + 1280 - mtu}` });
      }
    }
    const hasKey = raw.privateKey !== undefined;
    const hasFrom = raw.privateKeyFrom !== undefined;
    if (hasKey === hasFrom) {
      problems.push({ path: p, code: 'private-key', message: `expected exactly one of privateKey or privateKeyFrom, received ${hasKey ? 'both' : 'neither'}` });
    }
    if (typeof raw.publicKey === 'string') {
      if (!isWireguardKey(raw.publicKey)) problems.push({ path: `${p}.publicKey`, code: 'key', message: KEY_FIELD_MESSAGE });
      else if (typeof raw.privateKey === 'string' && isWireguardKey(raw.privateKey) && publicKeyFromPrivate(raw.privateKey) !== raw.publicKey) {
        problems.push({ path: `${p}.publicKey`, code: 'key-pair', message: 'this public key is not the one of privateKey (keys are never shown): set the public key of this interface\'s private key (publicKeyFromPrivate), or leave publicKey out' });
      }
    }
    if (typeof raw.privateKey === 'string') {
      if (!isWireguardKey(raw.privateKey)) problems.push(keyProblem(`${p}.privateKey`, 'private key'));
      else warnings.push({ path: `${p}.privateKey`, code: 'inline-secret', message: 'an inline private key ends up in the host artefacts (0600, secret outputs); use privateKeyFrom outside labs' });
    }
    if (raw.nodeAddress === true) {
      nodeAddressAt.push(`${p}.nodeAddress`);
      if (hasV6 && ipv6NodeAt === undefined) ipv6NodeAt = `${p}.address`;
      if (nodeAddressAt.length === 1) for (const a of addrs) nodeFamilies.add(a.family);
      if (nodeMtuAt === undefined && raw.mtu === undefined && raw.underlayMtu === undefined) nodeMtuAt = `${p}.mtu`;
    }
    checkPeers(raw, p, problems, warnings);
  });
  for (const d of findDuplicates(names, (v) => v)) {
    problems.push({ path: d.again.at, code: 'duplicate', message: `interface name ${JSON.stringify(d.again.value)} is already used by ${d.first.at.replace(/\.name$/, '')}` });
  }
  for (const at of nodeAddressAt.slice(1)) {
    problems.push({ path: at, code: 'node-address', message: `at most one interface per node registers the node address; ${nodeAddressAt[0].replace(/\.nodeAddress$/, '')} already does` });
  }
  if (nodeAddressAt.length === 0 && typeof input.clusterEndpoint === 'string') {
    const host = clusterEndpointHost(input.clusterEndpoint);
    const ip = host ? parseIp(host) : undefined;
    if (ip && networks.some((n) => cidrContainsIp(n, ip))) {
      warnings.push({ path: 'wireguard', code: 'no-node-address', message: `the node joins the cluster over the overlay (${input.clusterEndpoint}) but no interface sets nodeAddress: the kubelet will register another interface's address` });
    }
  }
  const distribution = input.distribution ?? 'k0s';
  if (typeof input.kubernetesVersion === 'string') {
    const minor = kubernetesMinor(input.kubernetesVersion);
    if (minor === undefined || minor < 28) {
      problems.push({ path: 'kubernetesVersion', code: 'kubernetes-version', message: `expected a Kubernetes version from 1.28 such as '1.31' or 'v1.31.2', ${received(input.kubernetesVersion)}` });
    }
  }
  if (input.installK0s !== undefined && distribution !== 'k0s') {
    problems.push({ path: 'installK0s', code: 'distribution', message: `installK0s installs k0s; this node's distribution is ${JSON.stringify(distribution)}` });
  }
  // A node of no role is a worker: only a controller runs no kubelet.
  const runsKubelet = input.role !== 'controller';
  if (distribution === 'k0s' && runsKubelet && nodeAddressAt.length > 0 && input.installK0s === undefined) {
    warnings.push({ path: nodeAddressAt[0], code: 'k0s-node-ip', message: 'k0s takes the kubelet\'s node IP only at `k0s install`: nothing on this host can set it, so the node registers its first interface\'s address unless you pass plan.values.k0s.installFlags to k0s install (k0sctl: the host\'s installFlags), or set installK0s' });
  }
  if (typeof distribution === 'string') checkOverlayCni(input, distribution, problems, warnings, 'plan', nodeAddressAt.length > 0, nodeAddressAt.length === 1 ? nodeMtuAt : undefined, ipv6NodeAt);
  if (typeof distribution === 'string') checkKubeRouterSnatPackages(input, distribution, nodeAddressAt.length > 0 && !(distribution === 'k0s' && input.role === 'controller'), warnings);
  if (typeof distribution === 'string') checkKubeRouterPodCidr(input, distribution, nodeAddressAt.length > 0, warnings);
  if (typeof distribution === 'string') checkPodCidrs(input, distribution, nodeFamilies, nodeAddressAt.length > 0 && !(distribution === 'k0s' && input.role === 'controller'), input.role !== undefined && input.role !== 'worker', problems, ipv6NodeAt ?? 'wireguard');
  // A node alone does not see the other controllers: the endpoint's form and distribution are checked here, where it
  // reaches them in a mesh (checkWireguardMesh).
  checkControlPlaneEndpoint({ distribution, controlPlaneEndpoint: input.controlPlaneEndpoint, controllers: [], networks: [], controllersAt: 'the controllers' }, problems, warnings);
  if (input.kubeadmJoin === true) {
    const controller = input.role === 'controller' || input.role === 'controller+worker';
    if (distribution !== 'kubeadm' || !controller) {
      problems.push({ path: 'kubeadmJoin', code: 'kubeadm-join', message: `kubeadmJoin joins a kubeadm control plane; this node is ${controller ? 'a controller' : 'a worker'} on ${JSON.stringify(distribution)}: ${distribution !== 'kubeadm' ? 'leave it out' : 'a worker joins with kubeadm join and its token, nothing to set here; leave it out, or set role controller'}` });
    } else if (input.controlPlaneEndpoint === undefined) {
      problems.push({ path: 'controlPlaneEndpoint', code: 'required', message: 'a controller that joins the control plane (kubeadmJoin) joins at the cluster\'s controlPlaneEndpoint: set it as the first controller has it (kubeadm join --control-plane refuses a cluster made without one)' });
    }
  }
  if (typeof input.clusterEndpoint === 'string' && !clusterEndpointHost(input.clusterEndpoint)) {
    problems.push({ path: 'clusterEndpoint', code: 'endpoint', message: `expected host:port or https://host:port, ${received(input.clusterEndpoint)}` });
  }
}

function checkPeers(raw: Record<string, unknown>, p: string, problems: Problem[], warnings: Problem[]): void {
  const keys: Located<string>[] = [];
  const allowed: Located<ParsedCidr>[] = [];
  const peerOf = new Map<string, number>();
  const dialled: Located<string>[] = [];
  asArray(raw.peers).forEach((peer, j) => {
    if (!isRecord(peer)) return;
    const pp = `${p}.peers[${j}]`;
    if (typeof peer.publicKey === 'string') {
      if (!isWireguardKey(peer.publicKey)) problems.push({ path: `${pp}.publicKey`, code: 'key', message: KEY_FIELD_MESSAGE });
      else keys.push({ value: peer.publicKey, at: `${pp}.publicKey` });
    }
    if (typeof peer.endpoint === 'string') {
      const e = parseEndpoint(peer.endpoint);
      if (!e) problems.push({ path: `${pp}.endpoint`, code: 'endpoint', message: `expected host:port (an IPv6 host in brackets), ${received(peer.endpoint)}` });
      if (e) dialled.push({ value: endpointKey(e, e.port!), at: `${pp}.endpoint` });
      if (e?.isHostname) warnings.push({ path: `${pp}.endpoint`, code: 'hostname-endpoint', message: `endpoint ${JSON.stringify(peer.endpoint)} is a hostname: tunnelwright-${typeof raw.name === 'string' ? raw.name : 'wg0'}-endpoints.service sets it once the interface is up and retries until the name resolves (DNS may need the overlay itself); until then this peer is unreachable, while the interface, its other peers and the distribution start without waiting; prefer an IP` });
    }
    if (Array.isArray(peer.allowedIPs)) {
      if (peer.allowedIPs.length === 0) problems.push({ path: `${pp}.allowedIPs`, code: 'required', message: 'expected at least one CIDR: a peer without allowedIPs receives nothing' });
      peer.allowedIPs.forEach((c, k) => {
        const parsed = parseCidr(c);
        if (parsed) {
          const at = `${pp}.allowedIPs[${k}]`;
          allowed.push({ value: parsed, at });
          peerOf.set(at, j);
        }
      });
    }
    if (peer.presharedKey !== undefined && peer.presharedKeyFrom !== undefined) {
      problems.push({ path: pp, code: 'preshared-key', message: 'expected at most one of presharedKey or presharedKeyFrom, received both' });
    }
    if (typeof peer.presharedKey === 'string') {
      if (!isWireguardKey(peer.presharedKey)) problems.push(keyProblem(`${pp}.presharedKey`, 'preshared key'));
      else warnings.push({ path: `${pp}.presharedKey`, code: 'inline-secret', message: 'an inline preshared key ends up in the host artefacts (0600, secret outputs); use presharedKeyFrom outside labs' });
    }
  });
  for (const d of findDuplicates(keys, (v) => v)) {
    problems.push({ path: d.again.at, code: 'duplicate-key', message: `this public key is already the key of ${d.first.at.replace(/\.publicKey$/, '')} (keys are never shown): one peer per key` });
  }
  for (const d of findDuplicates(dialled, (v) => v)) {
    problems.push({ path: d.again.at, code: 'duplicate-endpoint', message: `this peer is dialled at the same address and port as ${d.first.at.replace(/\.endpoint$/, '')}: WireGuard sends each peer's packets there and one host answers, so one of the two peers is never reached (a NAT forwards a port to one host). Give each peer its own port (a port forward and listenPort per node), or leave this endpoint out so the peer dials this node (with persistentKeepalive)` });
  }
  for (const o of findOverlaps(allowed)) {
    if (peerOf.get(o.a.at) === peerOf.get(o.b.at)) continue;
    problems.push({ path: o.b.at, code: 'overlap', message: `allowed IP ${cidrText(o.b.value)} overlaps ${cidrText(o.a.value)} of ${o.a.at}: WireGuard gives an address to one peer only, the other silently loses it` });
  }
}

function cidrText(c: ParsedCidr): string {
  // Report the CIDR in network form (what WireGuard keeps).
  return `${formatAddr(c)}/${c.prefix}`;
}

function formatAddr(c: ParsedCidr): string {
  return formatIp(c.family, c.address);
}

/** Validates WireguardOverlayNode props: all problems at once, and the warnings. */
export function checkWireguardOverlayNode(input: unknown): { problems: Problem[]; warnings: Problem[]; value?: WireguardOverlayNodeProps; spec?: OverlayNodeSpec } {
  const parsed = parseWith<WireguardOverlayNodeProps>(wireguardOverlayNodeSchema, input);
  const problems: Problem[] = parsed.ok ? [] : [...parsed.problems];
  const warnings: Problem[] = [];
  if (isRecord(input)) checkNode(input, problems, warnings);
  const value = problems.length === 0 && parsed.ok ? parsed.value : undefined;
  return { problems: redactProblems(sortProblems(problems)), warnings: redactProblems(warnings), value, spec: value ? overlayNodeSpec(value) : undefined };
}
