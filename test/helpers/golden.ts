import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Compares text with a golden file a person reviews in diffs. `UPDATE_GOLDEN=1 npm test` rewrites them; a missing
 * golden file fails (never silently created in CI).
 */
export function expectGolden(name: string, text: string): void {
  const file = path.join(__dirname, '..', 'golden', name);
  if (process.env.UPDATE_GOLDEN === '1') fs.writeFileSync(file, text);
  if (!fs.existsSync(file)) throw new Error(`golden file ${name} is missing: run UPDATE_GOLDEN=1 npm test and review it`);
  expect(text).toBe(fs.readFileSync(file, 'utf8'));
}
