/** IPv4 and IPv6 addresses and CIDRs as integers, for containment and overlap checks without pairwise scans. */

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

const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export function parseIp(text: string): ParsedIp | undefined {
  if (typeof text !== 'string') return undefined;
  if (V4.test(text)) {
    const v = text.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
    return { family: 4, value: v };
  }
  return parseIpv6(text);
}

function parseIpv6(text: string): ParsedIp | undefined {
  if (!/^[0-9A-Fa-f:.]+$/.test(text) || text.length > 45) return undefined;
  let head = text;
  let tailV4: bigint | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.')) {
    const v4 = parseIp(text.slice(lastColon + 1));
    if (!v4 || v4.family !== 4) return undefined;
    tailV4 = v4.value;
    head = text.slice(0, lastColon + 1) + '0:0';
  }
  const parts = head.split('::');
  if (parts.length > 2) return undefined;
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(parts[0]);
  const right = parts.length === 2 ? groups(parts[1]) : [];
  const total = left.length + right.length;
  if (parts.length === 1 ? total !== 8 : total > 7) return undefined;
  const all = [...left, ...Array(8 - total).fill('0'), ...right];
  let v = 0n;
  for (const g of all) {
    if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return undefined;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  if (tailV4 !== undefined) v = (v & ~0xffffffffn) | tailV4;
  return { family: 6, value: v };
}

export function parseCidr(text: string): ParsedCidr | undefined {
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

/** The network form of a CIDR: `10.10.0.1/24` → `10.10.0.0/24`. */
export function networkOf(c: ParsedCidr): string {
  return `${formatIp(c.family, c.start)}/${c.prefix}`;
}

export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.');
  }
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((value >> BigInt(i * 16)) & 0xffffn).toString(16));
  // Compress the longest run of zero groups (RFC 5952).
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
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
