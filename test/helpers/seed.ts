// Jest setupFilesAfterEnv: every fast-check property in a test file draws from one fixed seed, so a run of the suite
// draws the same inputs as the last one (issue 30: a result that depends on chance is as unrepeatable as one that
// depends on time). A property that passes its own `seed` keeps it. TUNNELWRIGHT_FC_SEED=<integer> draws other inputs,
// to search further than the fixed ones; a failing property prints its seed and path, which replay it.
import * as fc from 'fast-check';

/** The seed every property draws from unless it sets its own. */
export const PROPERTY_SEED = 20261202;

const given = process.env.TUNNELWRIGHT_FC_SEED;
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: given !== undefined && Number.isSafeInteger(Number(given)) ? Number(given) : PROPERTY_SEED });
