import * as pulumi from '@pulumi/pulumi';

/**
 * Props that name things made by other resources (a Secret's name and keys) may be Pulumi `Input`s: validation
 * cannot see their values, and needs none. Each such input is replaced by a placeholder that passes validation, the
 * plan is made with the placeholders, and every string of the planned objects that holds one is turned back into an
 * `Output` when the objects are registered. Structural props stay plain values: they are what the checks read.
 */
export interface LoweredInputs<T> {
  /** The args with a placeholder for every input that is not a plain string. */
  readonly plain: T;
  /** A planned value with the placeholders turned back into the inputs (an `Output` where one was found). */
  resolve(value: unknown): unknown;
}

const PREFIX = 'tw-input-';

export function lowerInputs<T>(args: T, paths: readonly (readonly string[])[]): LoweredInputs<T> {
  const inputs = new Map<string, pulumi.Input<string>>();
  const plain = structuredCloneLoose(args) as Record<string, unknown>;
  for (const p of paths) {
    let node: Record<string, unknown> | undefined = plain;
    for (const key of p.slice(0, -1)) node = node && typeof node[key] === 'object' && node[key] !== null ? (node[key] as Record<string, unknown>) : undefined;
    const last = p[p.length - 1];
    const value = node?.[last];
    // Only an Output or a promise is an input: any other non-string (a number, an object holding a key) stays as it
    // is, for validation to refuse; a placeholder would let it through to a registered resource.
    if (node && (pulumi.Output.isInstance(value) || isPromiseLike(value))) {
      const placeholder = `${PREFIX}${inputs.size}`;
      inputs.set(placeholder, value as pulumi.Input<string>);
      node[last] = placeholder;
    }
  }
  const pattern = new RegExp(`${PREFIX}\\d+`, 'g');
  const resolve = (value: unknown): unknown => {
    if (inputs.size === 0) return value;
    if (typeof value === 'string') {
      const found = value.match(pattern);
      if (!found) return value;
      if (found.length === 1 && found[0] === value) return inputs.get(value);
      return pulumi.all(found.map((f) => inputs.get(f)!)).apply((vals) => found.reduce((s, f, i) => s.replace(f, vals[i]), value));
    }
    if (Array.isArray(value)) return value.map(resolve);
    if (typeof value === 'object' && value !== null && !pulumi.Output.isInstance(value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
    }
    return value;
  };
  return { plain: plain as T, resolve };
}

/** A copy of plain data that keeps any non-plain leaf (an Output, a Promise) as it is. */
function structuredCloneLoose(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(structuredCloneLoose);
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, structuredCloneLoose(v)]));
  }
  return value;
}

function isPromiseLike(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
