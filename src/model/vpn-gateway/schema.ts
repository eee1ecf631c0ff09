import * as z from '../../zod';
import { cidrSchema, networkCidrSchema, clusterSchema, credentialsSecretRefSchema, intInRange, ipSchema, portSchema, secretKeyRefSchema } from '../common';
import { PORT_FORWARDING_APPS } from '../values';
import { VPN_GATEWAY_WARNINGS } from './props';
import { standbySchema } from '../vpn-gateway-failover';
import { serverSelectionShape } from '../server-filters';

const credentials = credentialsSecretRefSchema;

/** @internal */
export const vpnGatewaySchema = z.strictObject({
  cluster: z.optional(clusterSchema),
  name: z.optional(z.string()),
  namespace: z.optional(z.string()),
  clusterCidrs: z.array(networkCidrSchema),
  nodeCidrs: z.array(networkCidrSchema),
  clusterDnsIp: z.optional(ipSchema),
  clusterDomain: z.optional(z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, { message: 'expected a DNS domain such as cluster.local' })).check(z.maxLength(253))),
  vpnProvider: z.string(),
  vpnType: z.optional(z.enum(['wireguard', 'openvpn'])),
  wireguardPrivateKeySecret: z.optional(secretKeyRefSchema),
  wireguardPresharedKeySecret: z.optional(secretKeyRefSchema),
  wireguardAddresses: z.optional(z.array(cidrSchema)),
  openvpnCredentialsSecret: z.optional(credentials),
  ...serverSelectionShape,
  vpnEndpointPort: z.optional(portSchema),
  portForwarding: z.optional(z.strictObject({
    provider: z.optional(z.string()),
    credentialsSecret: z.optional(credentials),
    app: z.optional(z.enum(PORT_FORWARDING_APPS)),
    appUrl: z.optional(z.string().check(z.regex(/^https?:\/\/[^\s"'\\]+$/, { message: 'expected an http(s) URL such as http://127.0.0.1:8080' }))),
    appCredentialsSecret: z.optional(credentials),
    appApiKeySecret: z.optional(secretKeyRefSchema),
    appContainer: z.optional(z.string()),
    command: z.optional(z.string().check(z.minLength(1))),
    controlApiKeySecret: z.optional(secretKeyRefSchema),
    syncPeriodSeconds: z.optional(intInRange(1, 3600, 'a period in seconds')),
    stateClaim: z.optional(z.strictObject({ existingClaim: z.optional(z.string()), storageClassName: z.optional(z.string()), size: z.optional(z.string().check(z.regex(/^[0-9]+(Ki|Mi|Gi|Ti)$/, { message: 'expected a size such as 64Mi' }))) })),
    toPort: z.optional(portSchema),
    workload: z.optional(z.string()),
    workloadNamespace: z.optional(z.string()),
  })),
  vxlanId: z.optional(intInRange(1, 16777215, 'a VXLAN id')),
  vxlanNetwork: z.optional(cidrSchema),
  dnsOverTls: z.optional(z.boolean()),
  dnsAddress: z.optional(ipSchema),
  dnssec: z.optional(z.boolean()),
  cni: z.optional(z.enum(['cilium', 'flannel', 'calico', 'kube-router', 'other'])),
  podMtu: z.optional(intInRange(1280, 9000, 'a pod MTU')),
  mesh: z.optional(z.enum(['none', 'istio-ambient'])),
  standby: z.optional(standbySchema),
  images: z.optional(z.strictObject({ gluetun: z.optional(z.string()), podGateway: z.optional(z.string()), portSync: z.optional(z.string()) })),
  createNamespace: z.optional(z.boolean()),
  acknowledge: z.optional(z.array(z.enum(VPN_GATEWAY_WARNINGS))),
  tunDevice: z.optional(z.union([
    z.enum(['runtime', 'privileged']),
    z.strictObject({ resource: z.string().check(z.regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$/, { message: 'expected an extended resource name such as squat.ai/tun' })) }),
  ], { error: 'expected \'runtime\', \'privileged\' or { resource: <an extended resource name such as squat.ai/tun> }' })),
});
