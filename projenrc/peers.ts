/**
 * The peer dependencies' versions, read by .projenrc.ts (peer ranges, dev pins) and by the consumer test
 * (test/system/consumer.test.ts), which installs the packed package beside each end of every range.
 */

/** The newest end: the dev pins the project builds and tests with (@pulumi/pulumi 3.248 is the last on Node 20). */
export const PEERS: Record<string, string> = {
  'cdk8s': '2.70.106',
  'cdk8s-plus-28': '2.5.6',
  // The major `cdk8s init typescript-app` of cdk8s-cli 2.207.60 brings (templates/typescript-app/package.json).
  'cdk8s-plus-33': '2.5.57',
  'constructs': '10.8.1',
  '@pulumi/pulumi': '3.248.0',
  '@pulumi/kubernetes': '4.34.2',
};

/** The oldest end the consumer test installs and builds against: peer ranges run from it to the next major. */
export const OLDEST_PEERS: Record<string, string> = {
  'cdk8s': '2.68.12',
  'cdk8s-plus-28': '2.0.3',
  'cdk8s-plus-33': '2.3.5',
  'constructs': '10.3.0',
  '@pulumi/pulumi': '3.145.0',
  '@pulumi/kubernetes': '4.18.0',
};

/**
 * What `tunnelwright/testing` needs at run time (22 MB of kubernetes-models among them): optional peers, so that a
 * user who never imports the testing entry point never installs them. Tested at these versions.
 */
export const TESTING_PEERS: Record<string, string> = {
  'ajv': '8.17.1',
  'ajv-formats': '3.0.1',
  'ajv-draft-04': '1.0.0',
  'kubernetes-models': '4.5.1',
  '@kubernetes-models/prometheus-operator': '4.4.4',
};

/** `>=oldest <next major`. */
export function peerRange(oldest: string): string {
  return `>=${oldest} <${Number(oldest.split('.')[0]) + 1}.0.0`;
}
