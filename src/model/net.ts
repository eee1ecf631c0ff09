/** IPv4 and IPv6 addresses and CIDRs as integers, for containment and overlap checks without pairwise scans. */
import * as ipaddr from 'ipaddr.js';

export type IpFamily = 4 | 6;

export interface ParsedIp {
  readonly family: IpFamily;
  readonly value: bigint;
}

export interface ParsedCidr {
  readonly family: IpFamily;
  /** The address as written (may have host bits set). */
  readonly address: bigint;
  readonly prefix: number;
  /** First address of the block. */
  readonly start: bigint;
  /** Last address of the block. */
  readonly end: bigint;
}

/**
 * Parses an IPv4 address in four-part decimal (no leading zeros, no short or hex forms) or an IPv6 address (no zone
 * id), with ipaddr.js; undefined for anything else, whatever its type.
 */
export function parseIp(text: unknown): ParsedIp | undefined {
  if (typeof text !== 'string' || text.length > 45) return undefined;
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return { family: 4, value: bytesToBigint(ipaddr.IPv4.parse(text).toByteArray()) };
  if (!text.includes(':') || !ipaddr.IPv6.isValid(text)) return undefined;
  const v6 = ipaddr.IPv6.parse(text);
  if (v6.zoneId !== undefined) return undefined;
  return { family: 6, value: bytesToBigint(v6.toByteArray()) };
}

/**
 * True for text that the C library's inet_aton would read as an IPv4 address although it is not four-part decimal
 * (`127.1`, `0x7f.0.0.1`, `010.0.0.1`): neither a canonical address nor a hostname, so refused wherever a host goes.
 */
export function isNonCanonicalIpv4(text: string): boolean {
  return ipaddr.IPv4.isValid(text) && !ipaddr.IPv4.isValidFourPartDecimal(text);
}

function bytesToBigint(bytes: number[]): bigint {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return v;
}

export function parseCidr(text: unknown): ParsedCidr | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const ip = parseIp(m[1]);
  if (!ip) return undefined;
  const prefix = Number(m[2]);
  const bits = ip.family === 4 ? 32 : 128;
  if (prefix > bits || String(prefix) !== m[2]) return undefined;
  const hostBits = BigInt(bits - prefix);
  const mask = (1n << hostBits) - 1n;
  const start = ip.value & ~mask;
  return { family: ip.family, address: ip.value, prefix, start, end: start | mask };
}

/** True when the CIDR's address has host bits set (`10.10.0.1/24`), i.e. it names an interface address, not a network. */
export function hasHostBits(c: ParsedCidr): boolean {
  return c.address !== c.start;
}

export function cidrContains(outer: ParsedCidr, inner: ParsedCidr): boolean {
  return outer.family === inner.family && outer.start <= inner.start && inner.end <= outer.end;
}

export function cidrContainsIp(outer: ParsedCidr, ip: ParsedIp): boolean {
  return outer.family === ip.family && outer.start <= ip.value && ip.value <= outer.end;
}

/** An address as text: dotted IPv4, or IPv6 in RFC 5952's compressed form. */
export function formatIp(family: IpFamily, value: bigint): string {
  const bytes: number[] = [];
  for (let i = family === 4 ? 3 : 15; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 255n));
  const ip = ipaddr.fromByteArray(bytes);
  return ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).toRFC5952String() : ip.toString();
}

export interface Located<T> {
  readonly value: T;
  /** Whatever identifies the item to the caller (a path). */
  readonly at: string;
}

/**
 * Every pair of overlapping CIDRs among `items`, found by sorting (O(n log n) plus the pairs reported).
 * CIDR blocks either nest or are disjoint, so a sweep that keeps the block with the furthest end suffices;
 * each overlapping item is reported once, against the earlier block that covers it.
 */
export function findOverlaps(items: readonly Located<ParsedCidr>[]): { a: Located<ParsedCidr>; b: Located<ParsedCidr> }[] {
  const sorted = [...items].sort((x, y) =>
    x.value.family - y.value.family || (x.value.start < y.value.start ? -1 : x.value.start > y.value.start ? 1 : x.value.prefix - y.value.prefix),
  );
  const out: { a: Located<ParsedCidr>; b: Located<ParsedCidr> }[] = [];
  let cover: Located<ParsedCidr> | undefined;
  for (const item of sorted) {
    if (cover && cover.value.family === item.value.family && item.value.start <= cover.value.end) {
      out.push({ a: cover, b: item });
      if (item.value.end > cover.value.end) cover = item;
    } else {
      cover = item;
    }
  }
  return out;
}

/** The items whose key is used more than once, each reported against its first use. */
export function findDuplicates<T>(items: readonly Located<T>[], key: (v: T) => string): { first: Located<T>; again: Located<T> }[] {
  const seen = new Map<string, Located<T>>();
  const out: { first: Located<T>; again: Located<T> }[] = [];
  for (const item of items) {
    const k = key(item.value);
    const first = seen.get(k);
    if (first) out.push({ first, again: item });
    else seen.set(k, item);
  }
  return out;
}
