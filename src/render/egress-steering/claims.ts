import type { SecretSource } from '../../model/common';
import type { EgressSteeringSpec } from '../../model/egress-steering-spec';
import { Claim } from '../../invariants';

function sourceId(s: SecretSource): string {
  return 'url' in s ? s.url : s.file;
}

/** Claims: the pods it steers in its cluster (by class, per namespace or all), and a pinned VPN server with its credential across the App. */
export function steeringClaims(s: EgressSteeringSpec): Claim[] {
  const base = `cluster/${s.cluster}/egress-class/${s.classLabel}=${s.vpnClass}`;
  const claims: Claim[] = s.namespaces
    ? s.namespaces.map((ns, i) => ({ key: `${base}/ns/${ns}`, path: `namespaces[${i}]`, what: `pods with ${s.classLabel}=${s.vpnClass} in namespace ${ns} of cluster "${s.cluster}"` }))
    : [{ key: base, path: 'vpnClass', what: `pods with ${s.classLabel}=${s.vpnClass} in cluster "${s.cluster}"`, covers: true }];
  const t = s.tunnel;
  if (t?.type === 'openvpn') {
    // The server and session: the pinned remote, else the config that names the servers; with the credential when
    // there is one. (A hostname and its address are two names here: they are not recognised as one server.)
    const server = t.remote?.text ?? `config ${sourceId(t.configFrom)}`;
    const credential = t.credentialsFrom ? sourceId(t.credentialsFrom) : 'the config\'s own credential';
    claims.push({ key: `vpn-server/openvpn/${server}/${credential}`, path: t.remote ? 'tunnel.remote' : 'tunnel.configFrom', what: `VPN server ${server} with ${t.credentialsFrom ? `the credential ${credential}` : credential} (two gateways on one server and account steal each other's session)` });
  }
  if (t?.type === 'wireguard') {
    claims.push({ key: `vpn-server/wireguard/${t.peer.endpoint}/${sourceId(t.privateKeyFrom)}`, path: 'tunnel.peer.endpoint', what: `VPN server ${t.peer.endpoint} with the key ${sourceId(t.privateKeyFrom)}` });
  }
  return claims;
}
