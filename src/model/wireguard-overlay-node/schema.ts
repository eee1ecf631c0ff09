import * as z from '../../zod';
import { k0sConfigSchema, overlayCniSchema } from '../cni';
import { cidrSchema, clusterSchema, intInRange, networkCidrSchema, portSchema, secretSourceSchema } from '../common';
import { DNS_SUBDOMAIN } from '../labels';

/**
 * A Kubernetes node name: a DNS-1123 subdomain of at most 253 characters, as the API server takes it. It is also a
 * folder the App writes (`hosts/<node>/`): without the limit a long name validates and the synth fails on disk.
 * @internal
 */
export const nodeNameSchema = z.string()
  .check(z.regex(DNS_SUBDOMAIN, { message: 'expected a hostname (lowercase letters, digits, "-" and ".")' }))
  .check(z.maxLength(253, { message: 'expected a node name of at most 253 characters (a DNS subdomain, as Kubernetes takes it)' }));

const keyString = z.string();

/** @internal */
export const k0sInstallSchema = z.strictObject({
  tokenFrom: z.optional(secretSourceSchema),
  binary: z.optional(z.string().check(z.regex(/^\/[-_./a-zA-Z0-9]+$/, { message: 'expected an absolute path' }))),
});

const peerSchema = z.strictObject({
  publicKey: keyString,
  endpoint: z.optional(z.string()),
  allowedIPs: z.array(cidrSchema),
  persistentKeepalive: z.optional(intInRange(1, 65535, 'a keepalive interval in seconds')),
  presharedKey: z.optional(keyString),
  presharedKeyFrom: z.optional(secretSourceSchema),
});

const interfaceSchema = z.strictObject({
  name: z.string(),
  address: z.union([z.string(), z.array(z.string())], { error: 'expected an address with its prefix such as 10.10.0.1/24, or a list of them' }),
  listenPort: z.optional(portSchema),
  nodeAddress: z.optional(z.boolean()),
  mtu: z.optional(z.number()),
  underlayMtu: z.optional(intInRange(1280, 65535, 'an underlay MTU')),
  privateKey: z.optional(keyString),
  privateKeyFrom: z.optional(secretSourceSchema),
  publicKey: z.optional(keyString),
  peers: z.array(peerSchema),
});

/** @internal */
export const wireguardOverlayNodeSchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  node: nodeNameSchema,
  role: z.optional(z.enum(['controller', 'worker', 'controller+worker'])),
  distribution: z.optional(z.enum(['k0s', 'k3s', 'kubeadm'])),
  clusterEndpoint: z.optional(z.string()),
  ignitionVersion: z.optional(z.enum(['3.3.0', '3.4.0', '3.5.0'])),
  kubernetesVersion: z.optional(z.string()),
  installK0s: z.optional(k0sInstallSchema),
  installPackages: z.optional(z.boolean()),
  cni: z.optional(overlayCniSchema),
  k0sConfig: z.optional(k0sConfigSchema),
  podCidrs: z.optional(z.array(networkCidrSchema)),
  controlPlaneEndpoint: z.optional(z.string()),
  kubeadmJoin: z.optional(z.boolean()),
  wireguard: z.array(interfaceSchema),
});
