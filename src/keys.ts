import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';

/** A WireGuard key: base64 of 32 bytes (44 characters, the last one `=`). */
export const WIREGUARD_KEY = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

export function isWireguardKey(text: unknown): boolean {
  return typeof text === 'string' && WIREGUARD_KEY.test(text);
}

const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** The public key of a WireGuard private key (X25519, as `wg pubkey` computes it). */
export function publicKeyFromPrivate(privateKey: string): string {
  if (!isWireguardKey(privateKey)) throw new Error('expected a WireGuard private key: base64 of 32 bytes');
  const der = Buffer.concat([PKCS8_X25519_PREFIX, Buffer.from(privateKey, 'base64')]);
  const pub = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'der', type: 'spki' });
  return pub.subarray(pub.length - 32).toString('base64');
}

/** A fresh WireGuard key pair, for labs and tests (production keys belong in a secret store, not in code). */
export function generateKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('x25519');
  const raw = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('base64');
  return { privateKey: raw, publicKey: publicKeyFromPrivate(raw) };
}
