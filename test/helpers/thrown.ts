/** The error `fn` throws, or undefined: lets a test assert on it without a conditional expect. */
export function thrown(fn: () => unknown): Error | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return e as Error;
  }
}
