import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { run, tmpdir } from '../system/tools';

/** A promtool input series: its name and labels as the exporter writes them, one value per minute. */
export interface Series {
  readonly series: string;
  readonly values: string;
}

/**
 * One value per minute (undefined: not scraped) in promtool's series notation. A series that ends gets a staleness
 * marker, as Prometheus writes one when a target stops exposing it.
 */
export function perMinute(values: readonly (number | undefined)[]): string {
  return values.map((v, i) => (v !== undefined ? String(v) : i > 0 && values[i - 1] !== undefined ? 'stale' : '_')).join(' ');
}

/**
 * The minutes (0..minutes-1) at which promtool sees each of `alerts` firing under `groups` (a PrometheusRule's
 * `spec.groups`), fed `series`: one `promtool test rules` run expecting silence at every minute, whose failures name
 * the minutes and the labels it fired with. Returned per alert as ranges `[from, to]`; `labelled` gives, per alert,
 * the value of label `by` in each firing (to tell which node or pod fired).
 */
export function firing(groups: unknown, series: readonly Series[], alerts: readonly string[], minutes: number): Record<string, [number, number][]> {
  return firingBy(groups, series, alerts, minutes).ranges;
}

export function firingBy(groups: unknown, series: readonly Series[], alerts: readonly string[], minutes: number, by?: string): { ranges: Record<string, [number, number][]>; labelled: Record<string, string[]> } {
  const dir = tmpdir('tw-promtool-');
  try {
    fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
    const tests = [{
      interval: '1m',
      input_series: series,
      alert_rule_test: alerts.flatMap((alertname) => Array.from({ length: minutes }, (_, m) => ({ eval_time: `${m}m`, alertname, exp_alerts: [] }))),
    }];
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir, timeout: 120_000 });
    // Anything but a pass or failed expectations (a rule promtool cannot load, a bad series) is the test's error.
    if (r.status !== 0 && !/FAILED:/.test(r.output)) throw new Error(r.output);
    if (r.status === 0 && !/SUCCESS/.test(r.output)) throw new Error(r.output);
    const ranges: Record<string, [number, number][]> = Object.fromEntries(alerts.map((a) => [a, []]));
    const labelled: Record<string, string[]> = Object.fromEntries(alerts.map((a) => [a, []]));
    // promtool prints each failed expectation as "alertname: A, time: 1h2m," then what it got, one Labels line per alert.
    const blocks = r.output.split(/\n\s*alertname: /).slice(1);
    for (const block of blocks) {
      const head = /^(\w+), time: (?:(\d+)h)?(?:(\d+)m)?,/.exec(block);
      if (!head) throw new Error(`unexpected promtool output: ${block}`);
      const alert = head[1];
      const m = Number(head[2] ?? 0) * 60 + Number(head[3] ?? 0);
      const list = ranges[alert];
      const last = list[list.length - 1];
      if (last && last[1] === m - 1) last[1] = m;
      else list.push([m, m]);
      if (by) {
        for (const l of block.matchAll(new RegExp(`Labels:\\{[^}]*\\b${by}="([^"]*)"`, 'g'))) if (!labelled[alert].includes(l[1])) labelled[alert].push(l[1]);
      }
    }
    return { ranges, labelled };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
