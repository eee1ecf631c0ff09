/**
 * port-sync's metrics endpoint, scraped by a real Prometheus (Debian's 2.42, unpacked by scripts/install-system-tools.sh)
 * as a ServiceMonitor/PodMonitor would: the emitted script run as its container runs it (test/helpers/port-sync-lab.ts)
 * against the stand-ins of gluetun's control server and qBittorrent 5.2, its `busybox nc -ll -e` server on a loopback
 * port. What Prometheus stored is read back through its HTTP API (`up`, the tunnelwright_port_forward_* series), and
 * the port-forwarding alerts are run by promtool on series named and labelled exactly as they were scraped.
 * Control: the endpoint as it was (answering before reading the request) scrapes 0 times.
 * Needs no root: loopback only.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { stringify } from 'yaml';
import { portForwardAlertGroups } from '../../src';
import { labProps, startSyncLab, SyncLab } from '../helpers/port-sync-lab';
import { describeWithTools, run, tmpdir, which } from './tools';

/** A free loopback port (bound, read, closed). */
async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeWithTools('port-sync\'s metrics endpoint under a real Prometheus', ['prometheus', 'promtool', 'busybox', 'curl', 'python3'], () => {
  const pf = { app: 'qbittorrent', appCredentialsSecret: { name: 'qbt' } };
  const figures: Record<string, unknown> = {};
  const stops: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const s of stops.reverse()) await s();
    process.stdout.write(`port-sync metrics figures: ${JSON.stringify(figures)}\n`);
  });

  /** Prometheus scraping 127.0.0.1:`target` every second until it has scraped `scrapes` times: its HTTP API's answers to `queries`. */
  async function scrape(target: number, scrapes: number, queries: string[]): Promise<Record<string, { metric: Record<string, string>; value: [number, string] }[]>> {
    const dir = tmpdir('tw-ps-prom-');
    const web = await freePort();
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), stringify({
      global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
      scrape_configs: [{ job_name: 'port-sync', static_configs: [{ targets: [`127.0.0.1:${target}`], labels: { namespace: 'media', pod: 'seeder-0' } }] }],
    }));
    const prom = spawn(which('prometheus')!, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${web}`], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let promLog = '';
    prom.stderr!.on('data', (d: Buffer) => { promLog += d.toString(); });
    const stop = () => {
      try {
        process.kill(-prom.pid!, 'SIGKILL');
      } catch {
        // gone
      }
      prom.stderr!.destroy();
    };
    try {
      const query = async (q: string) => {
        const r = await fetch(`http://127.0.0.1:${web}/api/v1/query?query=${encodeURIComponent(q)}`);
        return (await r.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      };
      const deadline = Date.now() + 60_000;
      for (;;) {
        await sleep(500);
        const n = await query('count_over_time(up[1m])').catch(() => undefined);
        if (Number(n?.data.result[0]?.value[1] ?? 0) >= scrapes) break;
        if (Date.now() > deadline) throw new Error(`Prometheus did not scrape ${scrapes} times in 60 s: ${promLog}`);
      }
      const out: Record<string, { metric: Record<string, string>; value: [number, string] }[]> = {};
      for (const q of queries) {
        const body = await query(q);
        if (body.status !== 'success') throw new Error(`${q}: ${JSON.stringify(body)} ${promLog}`);
        out[q] = body.data.result;
      }
      const targets = (await (await fetch(`http://127.0.0.1:${web}/api/v1/targets`)).json()) as { data: { activeTargets: { lastError: string }[] } };
      out.lastError = [{ metric: { error: targets.data.activeTargets[0]?.lastError ?? '' }, value: [0, ''] }];
      return out;
    } finally {
      stop();
    }
  }

  const queries = ['up', 'count_over_time(up[1m])', 'sum_over_time(up[1m])', '{__name__=~"tunnelwright_port_forward_.*"}'];
  let scraped: Awaited<ReturnType<typeof scrape>>;
  let lab: SyncLab;

  beforeAll(async () => {
    lab = await startSyncLab(tmpdir('tw-ps-metrics-'), { standIn: 'qbittorrent-5.2', portForwarding: pf, forwarded: 41234, metricsPort: await freePort(), period: '1' });
    stops.push(() => lab.stop());
    if (!(await lab.until(() => lab.listenPort() === 41234))) throw new Error(`port-sync did not set the port: ${lab.log}`);
    scraped = await scrape(Number(lab.env.METRICS_PORT), 12, queries);
  }, 120_000);

  it('scrapes every time (up == 1 at each of 12 scrapes) and stores the seven tunnelwright_port_forward_* series of the emitted script', () => {
    const total = Number(scraped['count_over_time(up[1m])'][0].value[1]);
    const up = Number(scraped['sum_over_time(up[1m])'][0].value[1]);
    figures.fixed = { scrapes: total, up, lastError: scraped.lastError[0].metric.error };
    expect(total).toBeGreaterThanOrEqual(12);
    expect(up).toBe(total);
    expect(scraped.up.map((s) => s.value[1])).toEqual(['1']);
    const series = Object.fromEntries(scraped['{__name__=~"tunnelwright_port_forward_.*"}'].map((s) => [s.metric.__name__, { labels: s.metric, value: s.value[1] }]));
    expect(Object.keys(series).sort()).toEqual([
      'tunnelwright_port_forward_app_bound_elsewhere', 'tunnelwright_port_forward_app_listen_port', 'tunnelwright_port_forward_bans_total', 'tunnelwright_port_forward_errors_total',
      'tunnelwright_port_forward_forwarded_port', 'tunnelwright_port_forward_last_success_timestamp_seconds', 'tunnelwright_port_forward_login_refused',
    ]);
    expect(series.tunnelwright_port_forward_forwarded_port).toEqual({ labels: { __name__: 'tunnelwright_port_forward_forwarded_port', app: 'qbittorrent', instance: `127.0.0.1:${lab.env.METRICS_PORT}`, job: 'port-sync', namespace: 'media', pod: 'seeder-0' }, value: '41234' });
    expect(series.tunnelwright_port_forward_app_listen_port.value).toBe('41234');
    expect(series.tunnelwright_port_forward_errors_total.value).toBe('0');
    expect(series.tunnelwright_port_forward_app_bound_elsewhere.value).toBe('0'); // the stand-in binds to any interface
  });

  it('the port-forwarding alerts fire in promtool on the series as scraped (their names and labels), with a second pod as control', () => {
    const dir = tmpdir('tw-ps-promtool-');
    const groups = portForwardAlertGroups(labProps(pf));
    fs.writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups }));
    const stored = scraped['{__name__=~"tunnelwright_port_forward_.*"}'];
    /** A scraped series' selector with its labels as Prometheus stored them, `pod` replaced. */
    const selector = (name: string, pod: string) => {
      const labels = { ...stored.find((s) => s.metric.__name__ === name)!.metric, pod };
      delete (labels as Record<string, string>).__name__;
      return `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(', ')}}`;
    };
    const rule = (name: string) => groups[0].rules.find((r) => r.alert === name) as { labels: Record<string, string>; annotations: Record<string, string> };
    const base = Object.fromEntries(Object.entries(stored[0].metric).filter(([k]) => k !== '__name__'));
    const fired = (name: string) => [{
      exp_labels: { ...rule(name).labels, ...base, pod: 'seeder-0' },
      exp_annotations: Object.fromEntries(Object.entries(rule(name).annotations).map(([k, v]) => [k, v.replace('{{ $labels.namespace }}/{{ $labels.pod }}', 'media/seeder-0')])),
    }];
    const tests = [
      // seeder-0 stays on the old port after a reconnect; seeder-1 (the control) follows it.
      {
        interval: '1m', name: 'the app keeps the old port; a second pod follows',
        input_series: [
          { series: selector('tunnelwright_port_forward_forwarded_port', 'seeder-0'), values: '41234x5 42345x20' },
          { series: selector('tunnelwright_port_forward_app_listen_port', 'seeder-0'), values: '41234x25' },
          { series: selector('tunnelwright_port_forward_forwarded_port', 'seeder-1'), values: '41234x5 42345x20' },
          { series: selector('tunnelwright_port_forward_app_listen_port', 'seeder-1'), values: '41234x6 42345x19' },
        ],
        alert_rule_test: [{ eval_time: '12m', alertname: 'VPNForwardedPortNotListening', exp_alerts: fired('VPNForwardedPortNotListening') }],
      },
      {
        interval: '1m', name: 'no port forwarded on one pod',
        input_series: [
          { series: selector('tunnelwright_port_forward_forwarded_port', 'seeder-0'), values: '0x30' },
          { series: selector('tunnelwright_port_forward_forwarded_port', 'seeder-1'), values: '41234x30' },
        ],
        alert_rule_test: [{ eval_time: '20m', alertname: 'VPNNoForwardedPort', exp_alerts: fired('VPNNoForwardedPort') }],
      },
    ];
    fs.writeFileSync(path.join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = run('promtool', ['test', 'rules', 'tests.yaml'], { cwd: dir });
    expect(r.output).toBe('Unit Testing:  tests.yaml\n  SUCCESS\n\n');
  });

  it('control: the endpoint as it was, answering before it read the request, loses most of 12 scrapes (the connection reset)', async () => {
    const old = lab.file('port-sync/port-sync-old.sh');
    const script = fs.readFileSync(lab.file('port-sync/port-sync.sh'), 'utf8');
    // The request-reading lines removed: what the endpoint did before.
    const without = script.replace(/\n {2}\(\n {4}sleep 10 &[\s\S]*?\n {2}done\n/, '\n');
    expect(without).not.toBe(script);
    fs.writeFileSync(old, without, { mode: 0o555 });
    const port = await freePort();
    const nc = spawn('busybox', ['nc', '-ll', '-p', String(port), '-e', old, 'serve-metrics'], { detached: true, stdio: 'ignore', env: { ...process.env, METRICS_FILE: lab.env.METRICS_FILE } });
    stops.push(() => {
      try {
        process.kill(-nc.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    });
    await sleep(300);
    const was = await scrape(port, 12, ['count_over_time(up[1m])', 'sum_over_time(up[1m])', '{__name__=~"tunnelwright_port_forward_.*"}']);
    const total = Number(was['count_over_time(up[1m])'][0].value[1]);
    figures.old = { scrapes: total, up: Number(was['sum_over_time(up[1m])'][0].value[1]), lastError: was.lastError[0].metric.error };
    expect(total).toBeGreaterThanOrEqual(12);
    // The old endpoint loses scrapes (the fixed one above gets every one). Most are lost, not all: when the script
    // closes before the request has arrived, the close is a FIN, not a reset, and that scrape reads the answer (CI on
    // a loaded machine saw 1 of 12 up).
    expect(Number(was['sum_over_time(up[1m])'][0].value[1])).toBeLessThan(total / 2);
    // Which error Go's HTTP client reports depends on when the reset lands: while it writes the request
    // ("connection reset by peer") or while it peeks for the answer ("readLoopPeekFailLocked"); CI saw both.
    expect(was.lastError[0].metric.error).toMatch(/connection reset by peer|readLoopPeekFailLocked|EOF/);
  });
});
