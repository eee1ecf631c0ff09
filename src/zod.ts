/**
 * The one place tunnelwright imports zod (issue 30): `zod/mini`, the functional build of zod 4, named function by
 * function so that a bundler keeps only what the schemas use. Its schemas are zod's own core classes (`$ZodString`,
 * `$ZodObject`, …) with the same checks and the same English messages as the classic `z.string().regex(…).optional()`
 * chains; only the way they are written differs (`z.optional(z.string().check(z.regex(…)))`).
 *
 * In the package, `lib/zod.js` is not this file compiled but a one-file bundle of these names with English messages
 * only (scripts/bundle-zod.mjs, run after tsc): a private copy (its config and registry are its own, not zod's
 * `globalThis` ones) of about 65 KB in place of the 393 KB classic build. Tests run the sources against the zod
 * package; test/model/zod-bundle.test.ts runs them against the bundle too.
 */
export {
  array,
  boolean,
  discriminatedUnion,
  enum,
  literal,
  locales,
  maxLength,
  minLength,
  number,
  optional,
  partial,
  record,
  regex,
  strictObject,
  string,
  superRefine,
  union,
  unknown,
} from 'zod/mini';
export type { ZodMiniType as ZodType } from 'zod/mini';
export type { $RefinementCtx as RefinementCtx, $ZodError as ZodError } from 'zod/v4/core';
