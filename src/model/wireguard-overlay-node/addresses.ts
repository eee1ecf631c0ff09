import { Problem } from '../../errors';
import { received } from '../common';
import { hasHostBits, parseCidr, ParsedCidr, parseIp } from '../net';
import { parseEndpoint } from './endpoints';
import { WIREGUARD_OVERHEAD } from './props';

/** Checks that only look at one interface address. */
export function checkInterfaceAddress(address: unknown, path: string, problems: Problem[]): ParsedCidr | undefined {
  if (typeof address !== 'string') return undefined;
  const c = parseCidr(address);
  if (!c) {
    const bare = parseIp(address);
    problems.push({ path, code: 'cidr', message: bare ? `expected an interface address with its prefix such as ${address}/24, received a bare IP ${JSON.stringify(address)}` : `expected an interface address such as 10.10.0.1/24, ${received(address)}` });
    return undefined;
  }
  const bits = c.family === 4 ? 32 : 128;
  if (c.prefix < bits - 1 && (!hasHostBits(c) || (c.family === 4 && c.address === c.end))) {
    problems.push({ path, code: 'host-address', message: `expected a host address inside the network, ${received(address)}, which is the network${c.address === c.end ? "'s broadcast" : ''} address` });
    return undefined;
  }
  return c;
}

/** The interface's addresses: one, or a list of one IPv4 and/or one IPv6 address, each checked alone. */
export function checkInterfaceAddresses(address: unknown, path: string, problems: Problem[]): ParsedCidr[] {
  if (typeof address === 'string') {
    const c = checkInterfaceAddress(address, path, problems);
    return c ? [c] : [];
  }
  if (!Array.isArray(address)) return [];
  if (address.length === 0 || address.length > 2) {
    problems.push({ path, code: 'addresses', message: `expected one IPv4 and/or one IPv6 interface address, received a list of ${address.length}` });
  }
  const out: ParsedCidr[] = [];
  address.forEach((a, k) => {
    const c = checkInterfaceAddress(a, `${path}[${k}]`, problems);
    if (!c) return;
    if (out.some((o) => o.family === c.family)) {
      problems.push({ path: `${path}[${k}]`, code: 'addresses', message: `expected at most one IPv${c.family} address per interface (a dual-stack interface has one of each), ${received(a)}` });
    } else out.push(c);
  });
  return out;
}

/**
 * The interface MTU derived from the underlay's: minus 80 when any peer is dialled over IPv6 or by hostname (which
 * may resolve to IPv6), else minus 60.
 */
export function derivedMtu(underlayMtu: number, endpoints: readonly unknown[]): number {
  const v6 = endpoints.some((e) => {
    if (typeof e !== 'string') return false;
    const parsed = parseEndpoint(e, true);
    return parsed !== undefined && (parsed.isHostname || parseIp(parsed.host)?.family === 6);
  });
  return underlayMtu - WIREGUARD_OVERHEAD[v6 ? 6 : 4];
}
