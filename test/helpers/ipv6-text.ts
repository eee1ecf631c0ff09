import * as fc from 'fast-check';

/**
 * IPv6 addresses in the text forms RFC 4291 §2.2 allows (without an embedded dotted quad), written from the RFC's rules
 * and not from the code under test: each group in hex with 0 to 3 leading zeros kept, each digit in either case, and
 * at most one run of zero groups (one group or more) written `::`.
 */
export function ipv6Text(value: bigint): fc.Arbitrary<string> {
  const groups = Array.from({ length: 8 }, (_, g) => Number((value >> BigInt(112 - 16 * g)) & 0xffffn));
  const zeroRuns: [number, number][] = [];
  for (let i = 0; i < 8; i++) for (let j = i + 1; j <= 8 && groups[j - 1] === 0; j++) zeroRuns.push([i, j]);
  const group = (v: number) => fc.tuple(fc.integer({ min: 0, max: 4 - v.toString(16).length }), fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }))
    .map(([zeros, upper]) => [...'0'.repeat(zeros) + v.toString(16)].map((ch, k) => (upper[k] ? ch.toUpperCase() : ch)).join(''));
  return fc.tuple(fc.tuple(...groups.map(group)), fc.option(fc.constantFrom(...(zeroRuns.length ? zeroRuns : [[0, 0] as [number, number]])), { nil: undefined }))
    .map(([written, run]) => (run === undefined || run[0] === run[1] ? written.join(':') : `${written.slice(0, run[0]).join(':')}::${written.slice(run[1]).join(':')}`));
}

/** The fully written form: eight groups of four lower-case digits. */
export function ipv6Full(value: bigint): string {
  return Array.from({ length: 8 }, (_, g) => ((value >> BigInt(112 - 16 * g)) & 0xffffn).toString(16).padStart(4, '0')).join(':');
}

const MASK = (1n << 128n) - 1n;

/** A prefix (/1 to /128, host bits clear), an address inside it and one outside it. */
export const ipv6PrefixCase = fc.tuple(fc.bigInt({ min: 0n, max: MASK }), fc.integer({ min: 1, max: 128 }), fc.bigInt({ min: 0n, max: MASK }), fc.nat())
  .map(([base, prefix, host, flip]) => {
    const hostMask = (1n << BigInt(128 - prefix)) - 1n;
    const start = base & ~hostMask & MASK;
    const inside = start | (host & hostMask);
    // Flipping one bit of the prefix leaves it.
    const outside = inside ^ (1n << BigInt(127 - (flip % prefix)));
    return { start, prefix, inside, outside };
  });
