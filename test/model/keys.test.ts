import { generateKeyPair, isWireguardKey, publicKeyFromPrivate } from '../../src';
import { KEYS } from '../helpers/fixtures';

describe('key helpers', () => {
  it.each(['a', 'b', 'c'] as const)('derives the public key wg pubkey derived for key %s', (k) => {
    expect(publicKeyFromPrivate(KEYS[k].privateKey)).toBe(KEYS[k].publicKey);
  });

  it('generates pairs whose public key matches the private key', () => {
    const pair = generateKeyPair();
    expect(isWireguardKey(pair.privateKey)).toBe(true);
    expect(publicKeyFromPrivate(pair.privateKey)).toBe(pair.publicKey);
    expect(generateKeyPair().privateKey).not.toBe(pair.privateKey);
  });

  it('refuses something that is not a key', () => {
    expect(() => publicKeyFromPrivate('not-a-key')).toThrow('expected a WireGuard private key: base64 of 32 bytes');
  });
});
