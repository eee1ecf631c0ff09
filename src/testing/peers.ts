/** What `tunnelwright/testing` loads at run time: optional peer dependencies of the package. */
export const TESTING_PEERS = ['ajv', 'ajv-formats', 'ajv-draft-04', 'kubernetes-models', '@kubernetes-models/prometheus-operator'] as const;

/**
 * Loads an optional peer of `tunnelwright/testing`, or says exactly what to install: these packages (kubernetes-models
 * alone is 22 MB) are needed only by the output checks, so a user of the constructs never installs them.
 */
export function requirePeer<T>(name: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(name) as T;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const pkg = name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0];
    if (err.code === 'MODULE_NOT_FOUND' && err.message.includes(`'${name}'`)) {
      throw new Error(`tunnelwright/testing needs ${pkg}, an optional peer dependency: npm install --save-dev ${TESTING_PEERS.join(' ')}`);
    }
    throw e;
  }
}
