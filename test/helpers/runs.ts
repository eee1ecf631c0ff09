/**
 * A property's number of runs. `npm run mutation` sets TUNNELWRIGHT_PROPERTY_RUNS_SCALE (0.15): each mutant runs
 * every covering test to its end, and the properties were most of that time. The seed is unchanged, so a mutation
 * run draws the first inputs of the full run: its score is a lower bound of the full suite's.
 */
export function runs(n: number): number {
  const scale = Number(process.env.TUNNELWRIGHT_PROPERTY_RUNS_SCALE ?? '1');
  return Number.isFinite(scale) && scale > 0 && scale < 1 ? Math.max(10, Math.ceil(n * scale)) : n;
}
