import { isDnsSubdomain } from '../labels';
import { isNonCanonicalIpv4, parseIp } from '../net';

/** An endpoint `host:port`: IPv4, `[IPv6]` or a hostname. */
export interface ParsedEndpoint {
  readonly host: string;
  readonly port?: number;
  readonly isHostname: boolean;
}

/** Parses `host:port` (or `host` when `portOptional`). */
export function parseEndpoint(text: string, portOptional = false): ParsedEndpoint | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) return undefined;
  const host = m[1] ?? m[2];
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port === undefined && !portOptional) return undefined;
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  if (m[1] !== undefined) return parseIp(host)?.family === 6 ? { host, port, isHostname: false } : undefined;
  if (parseIp(host)) return { host, port, isHostname: false };
  // Dotted digits that are not an address (`1.2.3.4.5`, `256.1.1.1`) are no hostname either: a top-level label is never all digits.
  if (/^[\d.]+$/.test(host) || isNonCanonicalIpv4(host)) return undefined;
  return isDnsSubdomain(host) ? { host, port, isHostname: true } : undefined;
}

/**
 * What two endpoints share when they reach one socket: the address (an IP in canonical form, a hostname in lower case
 * without a final dot) and the port. WireGuard sends to one address and port, where one host answers: two peers
 * dialled there (two nodes behind one NAT with one forwarded port) are one of them, and the other is never reached.
 */
export function endpointKey(e: ParsedEndpoint, port: number): string {
  const ip = parseIp(e.host);
  return `${ip ? `${ip.family}/${ip.value}` : e.host.toLowerCase().replace(/\.$/, '')}|${port}`;
}

/** `host:port` with IPv6 hosts in brackets. */
export function formatEndpoint(host: string, port: number): string {
  return parseIp(host)?.family === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The API endpoint's host, from `host:port` or `https://host:port`. */
export function clusterEndpointHost(text: string): string | undefined {
  const stripped = text.replace(/^https:\/\//, '').replace(/\/$/, '');
  return parseEndpoint(stripped, true)?.host;
}
