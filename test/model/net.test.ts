import { cidrContains, cidrContainsIp, findOverlaps, parseCidr, parseIp } from '../../src/model/net';

/** What the validators see of an address: kept, or refused. Written against the survivors of the first mutation run. */
const cidr = (t: string) => parseCidr(t)!;

describe('addresses and CIDRs', () => {
  it.each([
    ['10.0.0.1', true],
    ['ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255', true], // 45 characters: the longest IPv6 text
    ['0000:0000:0000:0000:0000:ffff:255.255.255.255x', false],
    ['0000:0000:0000:0000:0000:0000:0000:0000:0000', false],
    ['10.0.0.1.5', false],
    ['fe80::1%eth0', false],
    ['::', true],
  ])('parseIp(%j) accepts it: %s', (text, ok) => {
    expect(parseIp(text) !== undefined).toBe(ok);
  });

  it.each([
    ['10.0.0.0/8', true],
    ['x10.0.0.0/8', false],
    ['10.0.0.0/8x', false],
    ['10.0.0.0/08', false],
    ['10.0.0.0/33', false],
    ['fd00::/129', false],
    ['fd00::/128', true],
  ])('parseCidr(%j) accepts it: %s', (text, ok) => {
    expect(parseCidr(text) !== undefined).toBe(ok);
  });

  it.each([
    ['10.0.0.0/8', '10.1.0.0/16', true],
    ['10.0.0.0/8', '10.0.0.0/8', true], // equal blocks contain each other
    ['10.1.0.0/16', '10.0.0.0/8', false],
    ['10.0.0.0/16', '10.0.255.0/24', true], // the inner block ends where the outer ends
    ['10.0.0.0/16', '10.1.0.0/24', false],
    ['10.0.128.0/17', '10.0.0.0/24', false],
    ['0.0.0.0/0', '::/0', false], // different families never contain each other
    ['::/0', '0.0.0.0/0', false], // not even when the numbers would fit
    ['::/0', 'fd00::/8', true],
  ])('cidrContains(%s, %s) is %s', (outer, inner, expected) => {
    expect(cidrContains(cidr(outer), cidr(inner))).toBe(expected);
  });

  it.each([
    ['10.0.0.0/24', '10.0.0.0', true], // the first address
    ['10.0.0.0/24', '10.0.0.255', true], // the last address
    ['10.0.0.0/24', '9.255.255.255', false],
    ['10.0.0.0/24', '10.0.1.0', false],
    ['0.0.0.0/0', '::1', false],
  ])('cidrContainsIp(%s, %s) is %s', (outer, ip, expected) => {
    expect(cidrContainsIp(cidr(outer), parseIp(ip)!)).toBe(expected);
  });

  it.each([
    [['10.0.0.0/8', '10.1.0.0/16'], ['10.0.0.0/8 ⊇ 10.1.0.0/16']],
    [['10.1.0.0/16', '10.0.0.0/8'], ['10.0.0.0/8 ⊇ 10.1.0.0/16']], // order of the input does not matter
    [['10.0.0.0/24', '10.0.1.0/24'], []], // adjacent blocks do not overlap
    [['10.0.0.0/24', '10.0.0.255/32'], ['10.0.0.0/24 ⊇ 10.0.0.255/32']], // the block's last address is inside it
    [['10.0.0.0/24', '10.0.0.0/24'], ['10.0.0.0/24 ⊇ 10.0.0.0/24']],
    [['10.0.0.0/8', '10.1.0.0/16', '10.200.0.0/16'], ['10.0.0.0/8 ⊇ 10.1.0.0/16', '10.0.0.0/8 ⊇ 10.200.0.0/16']], // the wider block keeps covering
    [['10.0.0.0/16', '10.0.0.0/8', '10.5.0.0/16'], ['10.0.0.0/8 ⊇ 10.0.0.0/16', '10.0.0.0/8 ⊇ 10.5.0.0/16']], // same start: the wider one first
    [['10.0.0.0/8', '::/0', 'fd00::/8'], ['::/0 ⊇ fd00::/8']],
    [['0.0.0.0/0', '::/0'], []],
  ])('findOverlaps(%j) reports %j', (items, expected) => {
    const found = findOverlaps(items.map((t) => ({ value: cidr(t), at: t }))).map(({ a, b }) => `${a.at} ⊇ ${b.at}`);
    expect(found).toEqual(expected);
  });

  it('reports each copy of one block against the first, where the user wrote it first', () => {
    const found = findOverlaps(['a', 'b', 'c'].map((at) => ({ value: cidr('10.0.0.0/24'), at }))).map(({ a, b }) => `${a.at} ⊇ ${b.at}`);
    expect(found).toEqual(['a ⊇ b', 'a ⊇ c']);
  });
});
