/**
 * The one place tunnelwright imports zod (issue 30). In the package, `lib/zod.js` is not this file compiled but a
 * one-file bundle of the same zod with English messages only (scripts/bundle-zod.mjs, run after tsc): a private copy
 * (its config and registry are its own, not zod's `globalThis` ones) that loads in a third of the time. Tests run the sources against the
 * zod package; test/model/zod-bundle.test.ts runs them against the bundle too.
 */
export { z } from 'zod';
