import * as z from '../zod';
import { Problem } from '../errors';
import { Cidr, cidrSchema, credentialsSecretRefSchema, intInRange, isRecord, SecretKeyRef, secretKeyRefSchema } from './common';
import { serverSelectionShape } from './server-filters';
import { LOCATION_FILTERS, LocationFilter } from './vpn-providers';
import type { CredentialsSecretRef, VpnServerSelection } from './vpn-gateway/props';

/** The agent's default probe through the tunnel: an IP literal (no DNS: the pod's resolver is gluetun's), plain HTTP. */
/** The probe's targets by default: two operators' resolvers, so one operator's outage is not read as a dead tunnel. */
export const DEFAULT_PROBE_URLS: readonly string[] = ['http://1.1.1.1/', 'http://8.8.8.8/'];

/**
 * A warm standby for a VpnGateway (issue 43): two gateway pods on different nodes, each with a tunnel of its own
 * credential; exactly one holds the gateway role, decided by a `coordination.k8s.io/v1` Lease that each pod's failover
 * agent takes and renews only while its own tunnel is healthy (gluetun's health server and the agent's own probe
 * through the tunnel, `probeUrl`), with hysteresis and no
 * failback. Only the holder is behind the gateway's name (its pod is labelled `tunnelwright.io/role=active`, which the
 * Service selects); a pod without the role takes pod-gateway's `vxlan0` down, so its clients re-resolve the name and
 * move (pod-gateway's client_sidecar.sh re-runs client_init.sh when its heartbeat fails: ~15 s).
 */
export interface VpnGatewayStandbyProps {
  /**
   * The standby pod's own WireGuard private key (a Secret in the gateway namespace, key default `private-key`). Required
   * with WireGuard, and refused when it is the active pod's: the provider follows the latest handshake, so two hot
   * tunnels on one key steal the session from each other (research: 13 of 31 requests failed in 20 s). The check
   * compares the Secret's name and key, not its value (synth never reads a Secret): two Secrets holding one key pass it.
   * A second key is a second device at the provider, which some plans limit or charge for: check your plan.
   */
  readonly wireguardPrivateKeySecret?: SecretKeyRef;
  /**
   * `WIREGUARD_ADDRESSES` the provider assigned to the standby's key: required where the gateway needs
   * `wireguardAddresses` (Mullvad, Surfshark, custom…: the provider assigns them per key, and drops a key's traffic
   * from another key's address). @default - the provider's default (NordVPN, ProtonVPN: one address for every key)
   */
  readonly wireguardAddresses?: Cidr[];
  /** The standby key's own preshared key, required when the gateway has `wireguardPresharedKeySecret` (one per key at the provider). */
  readonly wireguardPresharedKeySecret?: SecretKeyRef;
  /**
   * The standby pod's own OpenVPN login (a Secret in the gateway namespace, the same shape as `openvpnCredentialsSecret`).
   * Required with OpenVPN, and refused when it names the active pod's Secret and username key (unless
   * `sharedOpenvpnLogin`; another `userKey` of the same Secret counts as a second login): both tunnels
   * stay up, and an OpenVPN server that names sessions by user (`username-as-common-name`) without `duplicate-cn`
   * closes the older session when the same login connects again (OpenVPN 2.6.22 src/openvpn/multi.c:1363
   * `multi_delete_dup`, called at :2548-2550 unless `duplicate_cn`; src/openvpn/ssl_verify.c:1736-1738), so the
   * standby's connect, and each of its reconnects, kills the holder's tunnel. The check compares the Secret's name and
   * username key, not their values (synth never reads a Secret): two Secrets holding one login pass it. A second login
   * may cost a second subscription or device at your provider: check your plan. gluetun stops OpenVPN with SIGKILL
   * (internal/openvpn/start.go:35 at v3.41.1: no exit notify), so each restart leaves the old session at the provider
   * until its own timeout, counted against a session limit meanwhile.
   */
  readonly openvpnCredentialsSecret?: CredentialsSecretRef;
  /**
   * With OpenVPN: `true` lets the standby log in with the active pod's `openvpnCredentialsSecret`. Only for a provider
   * that allows several sessions on one login at once (several devices per account, the server's `duplicate-cn`):
   * check your plan's device limit, and that two sessions count as two devices. Without that, each connect of either
   * pod drops the other's session: the holder's requests fail each time the standby connects or reconnects, and the
   * standby looks healthy while it does so. @default false
   */
  readonly sharedOpenvpnLogin?: boolean;
  /**
   * The standby's own VPN server: server filters (`serverCountries`, `serverRegions`, `serverCities`,
   * `serverHostnames`, `serverNames`) or, with `custom`, its own server (`vpnEndpointIp` and `wireguardPublicKey`; the
   * port is the gateway's `vpnEndpointPort` for both). Checked as the gateway's are, and given to the standby pod's
   * gluetun in place of the gateway's as a whole (a filter left out here is not taken from the gateway). gluetun picks
   * a server at random among the ones that match, at each connect: with the same narrow filters both pods can land on
   * one server, whose outage then takes both tunnels down. Both pods pinned to one and the same server (one hostname,
   * one server name, custom's one endpoint) and filters that may pick one server (both name servers or cities and
   * share one on each filter they both set) warn `standby-same-server`: the standby then covers a pod, node or session
   * failure but not that server's outage. Give the standby a server elsewhere, e.g.
   * `{ serverCities: ['Geneva'] }` beside the gateway's `serverCities: ['Zurich']`.
   * @default - the gateway's server filters (with `custom`: its endpoint, which warns `standby-same-server`)
   */
  readonly servers?: VpnServerSelection;
  /** Seconds the Lease lives without renewal: a frozen holder's clients move after about this plus ~15 s. @default 15 */
  readonly leaseSeconds?: number;
  /** Healthy checks in a row (one each 2 s) before a pod takes a free role. @default 3 */
  readonly acquireAfter?: number;
  /** Failed checks in a row (one each 2 s) before the holder gives the role up. @default 3 */
  readonly releaseAfter?: number;
  /**
   * The agent's own probe through the tunnel: at every check (each 2 s) it sends an HTTP HEAD request to these URLs, in
   * turn until one answers, out of `tun0` only (curl `--interface tun0`, 3 s limit), and counts the tunnel healthy only when gluetun's health server
   * and one of the URLs answers. Any HTTP answer passes, an error status too (the round trip crossed the tunnel); no answer
   * fails. gluetun's health server alone notices a tunnel that died silently (the far end stopped answering, the
   * interface stays up) only at its next check, once a minute, after retries of up to 120 s: 60 to 180 s
   * (internal/healthcheck/checker.go:89-175 at v3.41.1); the probe notices it in three checks. Give an `http://` or
   * `https://` URL by IP address (a name is resolved by gluetun's resolver, and a DNS outage then reads as a dead
   * tunnel) that answers quickly and does not mind one request each 2 s from each pod, e.g. your provider's own
   * check page; never a URL with a credential (it is written into the pod spec). The agent also requires gluetun's
   * tunnel interface (`tun0`) to exist and be up, with or without a probe. `false`: no probe; gluetun's health server
   * and `tun0` still catch a VPN client that stopped (its interface goes; gluetun's server alone keeps answering 200,
   * internal/vpn/tunnelup.go:89-95 at v3.41.1), but a tunnel that dies silently (the far end stops answering, `tun0`
   * stays up) is seen only 60 to 180 s late. @default ['http://1.1.1.1/', 'http://8.8.8.8/'] (Cloudflare's and Google's resolvers, gluetun's own ICMP check
   * targets: internal/configuration/settings/health.go)
   */
  readonly probeUrl?: string | string[] | false;
}

/** @internal */
export const standbySchema = z.strictObject({
  wireguardPrivateKeySecret: z.optional(secretKeyRefSchema),
  wireguardAddresses: z.optional(z.array(cidrSchema)),
  wireguardPresharedKeySecret: z.optional(secretKeyRefSchema),
  openvpnCredentialsSecret: z.optional(credentialsSecretRefSchema),
  sharedOpenvpnLogin: z.optional(z.boolean()),
  servers: z.optional(z.strictObject(serverSelectionShape)),
  leaseSeconds: z.optional(intInRange(6, 300, 'seconds')),
  acquireAfter: z.optional(intInRange(1, 30, 'a count of checks')),
  releaseAfter: z.optional(intInRange(1, 30, 'a count of checks')),
  probeUrl: z.optional(z.union([z.literal(false), z.string(), z.array(z.string()).check(z.minLength(1))])),
});

/** The standby's refusals, each at its prop with what to do. */
export function checkStandby(input: Record<string, unknown>, keepsPortForwardState: boolean, addressesRequired: boolean): Problem[] {
  const sb = input.standby;
  if (!isRecord(sb)) return [];
  const problems: Problem[] = [];
  const vpnType = input.vpnType ?? 'wireguard';
  const key = (r: unknown) => (isRecord(r) ? `${String(r.name)}/${String(r.key ?? 'private-key')}` : undefined);
  // One login: the same Secret and the same username key (another key of the Secret may hold a second login).
  const login = (r: unknown) => (isRecord(r) ? `${String(r.name)}/${String(r.userKey ?? 'username')}` : undefined);
  if (vpnType === 'wireguard') {
    if (sb.wireguardPrivateKeySecret === undefined) {
      problems.push({ path: 'standby.wireguardPrivateKeySecret', code: 'required', message: 'required with WireGuard: the standby keeps its tunnel up, and needs a key of its own (create a second key or device at your provider and put it in its own Secret)' });
    } else if (key(sb.wireguardPrivateKeySecret) === key(input.wireguardPrivateKeySecret)) {
      problems.push({ path: 'standby.wireguardPrivateKeySecret', code: 'shared-credential', message: 'is the active gateway\'s key: the provider follows the latest handshake, so two hot tunnels on one key steal the session from each other and requests fail; create a second key at your provider and give its Secret here' });
    }
    if (addressesRequired && sb.wireguardAddresses === undefined) {
      problems.push({ path: 'standby.wireguardAddresses', code: 'required', message: 'required where the gateway needs wireguardAddresses: the provider assigned the standby\'s key addresses of its own (in the key\'s config file, the Address line), and drops its traffic from the active key\'s address' });
    }
    if (input.wireguardPresharedKeySecret !== undefined && sb.wireguardPresharedKeySecret === undefined) {
      problems.push({ path: 'standby.wireguardPresharedKeySecret', code: 'required', message: 'required with wireguardPresharedKeySecret: a preshared key belongs to one key at the provider; give the standby key\'s own' });
    }
    for (const k of ['openvpnCredentialsSecret', 'sharedOpenvpnLogin'] as const) if (sb[k] !== undefined) problems.push({ path: `standby.${k}`, code: 'forbidden', message: 'an OpenVPN setting, but vpnType is wireguard' });
  } else {
    for (const k of ['wireguardPrivateKeySecret', 'wireguardAddresses', 'wireguardPresharedKeySecret'] as const) if (sb[k] !== undefined) problems.push({ path: `standby.${k}`, code: 'forbidden', message: 'a WireGuard setting, but vpnType is openvpn' });
    if (sb.openvpnCredentialsSecret === undefined) {
      problems.push({ path: 'standby.openvpnCredentialsSecret', code: 'required', message: 'required with OpenVPN: the standby keeps its tunnel up, and needs a login of its own (a second user or device login at your provider, in its own Secret), or the active gateway\'s Secret with sharedOpenvpnLogin: true where the provider allows several sessions on one login' });
    } else if (login(sb.openvpnCredentialsSecret) === login(input.openvpnCredentialsSecret) && sb.sharedOpenvpnLogin !== true) {
      problems.push({ path: 'standby.openvpnCredentialsSecret', code: 'shared-credential', message: 'is the active gateway\'s login (its Secret and username key): an OpenVPN server without duplicate-cn drops the older session when the same login connects again, so the standby\'s connect (and each reconnect) kills the holder\'s tunnel; give a second login of your provider in its own Secret, or set standby.sharedOpenvpnLogin: true if your provider allows several sessions on one login at once' });
    }
  }
  // A URL with a credential is refused by the props-wide secret-value check (secretValueProblems), never echoed.
  const probeUrls = typeof sb.probeUrl === 'string' ? [sb.probeUrl] : Array.isArray(sb.probeUrl) ? sb.probeUrl : [];
  for (const [i, url] of probeUrls.entries()) if (typeof url === 'string' && !/^https?:\/\/[^\s'"\\$`]+$/.test(url)) {
    problems.push({ path: Array.isArray(sb.probeUrl) ? `standby.probeUrl[${i}]` : 'standby.probeUrl', code: 'url', message: 'expected an http:// or https:// URL without spaces or quotes (the URL is not shown), such as http://1.1.1.1/; or false for no probe through the tunnel' });
  }
  if (keepsPortForwardState) {
    problems.push({ path: 'standby', code: 'state-claim', message: 'refused with private internet access port forwarding: gluetun keeps its port in a ReadWriteOnce claim (portForwarding.stateClaim) that two gateway pods on different nodes cannot share; remove standby or the port forwarding' });
  }
  return problems;
}

/** Why failover alerts cannot be made for these props (a gateway without `standby` has no Lease, role or second pod). */
export function failoverAlertsProblems(props: { readonly standby?: unknown }): Problem[] {
  return props.standby ? [] : [{ path: 'standby', code: 'no-standby', message: 'failover alerts are for a gateway with standby: without one there is no Lease, no role and no second pod to watch' }];
}

/** A server selection as the checks read it: each filter's values lowercased (gluetun compares with strings.EqualFold). */
type Selection = Partial<Record<LocationFilter | 'vpnEndpointIp', string[]>>;

/** The selection in props (the gateway's, or `standby.servers`); values that are not strings are the schema's to report. */
function selectionOf(r: Record<string, unknown>): Selection {
  const out: Selection = {};
  for (const k of Object.keys(LOCATION_FILTERS) as LocationFilter[]) {
    const v = r[k];
    if (Array.isArray(v) && v.length > 0) out[k] = v.filter((x): x is string => typeof x === 'string').map((x) => x.toLowerCase());
  }
  if (typeof r.vpnEndpointIp === 'string') out.vpnEndpointIp = [r.vpnEndpointIp.toLowerCase()];
  return out;
}

/**
 * The one server a selection pins, if it names exactly one: custom's endpoint (`vpnEndpointIp`), one hostname or one
 * server name (gluetun then has one server to pick, whatever else is filtered). Used for the standby and for the
 * gateway's claim across an App (two gateways pinned to one server with one credential).
 */
export function pinnedServer(props: VpnServerSelection): { readonly field: 'vpnEndpointIp' | 'serverHostnames' | 'serverNames'; readonly value: string } | undefined {
  if (typeof props.vpnEndpointIp === 'string') return { field: 'vpnEndpointIp', value: props.vpnEndpointIp };
  if (props.serverHostnames?.length === 1) return { field: 'serverHostnames', value: props.serverHostnames[0] };
  if (props.serverNames?.length === 1) return { field: 'serverNames', value: props.serverNames[0] };
  return undefined;
}

/** Filters that leave gluetun a few servers at most: hostnames and server names name servers, a city may have one. */
const NARROW: readonly (keyof Selection)[] = ['vpnEndpointIp', 'serverHostnames', 'serverNames', 'serverCities'];

/**
 * Whether the standby's server may be the gateway's own (issue 43, audit finding 4): both pods connect at once, and
 * gluetun picks at random among the servers matching all filters given, one value of each (storage/filter.go:50-139;
 * utils/connection.go:41-78, pick.go:45-56 at v3.41.1), again at each reconnect (vpn/run.go:21-43). Each server has
 * one country, region, city, hostname and name, so two selections are kept apart when they set one filter with no
 * value in common; synth has no list of which server is where, so filters on different fields may still meet.
 * - A warning (`standby-same-server`) when both pin one and the same server: not refused, since nothing breaks or
 *   leaks and a standby on one server (a self-hosted endpoint) still covers a pod, node or session failure.
 * - The same warning when they are not kept apart and both are narrow (hostnames, server names, cities): both may
 *   pick one server out of a few. A broad side (no filter, a country or a region) is not warned:
 *   with n matching servers on one side, at most 1 in n connects lands both on one server, and a reconnect picks again.
 */
export function standbyServerFindings(input: Record<string, unknown>): { problems: Problem[]; warnings: Problem[] } {
  const sb = input.standby;
  if (!isRecord(sb)) return { problems: [], warnings: [] };
  const own = isRecord(sb.servers);
  const gateway = selectionOf(input);
  const standby = own ? selectionOf(sb.servers as Record<string, unknown>) : gateway;
  const whose = own ? 'standby.servers' : 'the standby (without standby.servers it takes the gateway\'s server filters)';
  const a = pinnedServer(input as VpnServerSelection);
  const b = pinnedServer((own ? sb.servers : input) as VpnServerSelection);
  if (a && b && a.field === b.field && typeof a.value === 'string' && typeof b.value === 'string' && a.value.toLowerCase() === b.value.toLowerCase()) {
    // Warned, not refused: nothing breaks or leaks, and one server (a self-hosted endpoint, a plan of one server) still
    // gets a standby for a pod, node or session failure; only that server's outage takes both down.
    return {
      problems: [],
      warnings: [{
        path: 'standby.servers',
        code: 'standby-same-server',
        message: `${whose} connects to the gateway's one server (${a.field} "${a.value}"): the standby then takes over when a pod, a node or a session fails, but that server's outage takes both tunnels down; give standby.servers a server of its own${a.field === 'vpnEndpointIp' ? ' (vpnEndpointIp and wireguardPublicKey of another server)' : ` (another ${a.field === 'serverHostnames' ? 'hostname' : 'server name'}, or a city or country of its own)`}, or acknowledge 'standby-same-server' where there is only one`,
      }],
    };
  }
  const fields = Object.keys(gateway).filter((k) => standby[k as keyof Selection] !== undefined) as (keyof Selection)[];
  const apart = fields.some((k) => !gateway[k]!.some((v) => standby[k]!.includes(v)));
  const narrow = (s: Selection) => NARROW.some((k) => s[k] !== undefined);
  if (apart || !narrow(gateway) || !narrow(standby)) return { problems: [], warnings: [] };
  // The gateway's values as the user wrote them.
  const raw = (k: keyof Selection) => (Array.isArray(input[k]) ? input[k] as unknown[] : [input[k]]).filter((v): v is string => typeof v === 'string');
  const shared = fields.map((k) => `${k} ${raw(k).filter((v) => standby[k]!.includes(v.toLowerCase())).map((v) => JSON.stringify(v)).join(', ')}`);
  return {
    problems: [],
    warnings: [{
      path: 'standby.servers',
      code: 'standby-same-server',
      message: `${whose} and the gateway may connect to one server (${shared.length > 0 ? `both allow ${shared.join('; ')}` : 'they filter different fields, which synth cannot compare'}): gluetun picks at random among a few matching servers, and one server's outage then takes both tunnels down. Give standby.servers a value of its own on a filter both set (e.g. serverCities: ['Geneva'] beside the gateway's ['Zurich']), or acknowledge 'standby-same-server' if the filters cannot meet`,
    }],
  };
}
