import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Where scripts/install-system-tools.sh unpacks the tools it does not install (promtool, blackbox exporter). */
export const TOOLS_BIN = path.resolve(__dirname, '../../.tools/bin');
const PATH = `${TOOLS_BIN}:${process.env.PATH ?? ''}:/usr/sbin:/sbin`;

export function which(tool: string): string | undefined {
  for (const dir of PATH.split(':')) {
    const p = path.join(dir, tool);
    if (dir && fs.existsSync(p)) return p;
  }
  return undefined;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, for assertions that any output (a warning) is a failure. */
  output: string;
}

/** Runs a command (no shell) with the tools' PATH. */
export function run(cmd: string, args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string; timeout?: number } = {}): Run {
  const r: SpawnSyncReturns<string> = spawnSync(cmd, args, { encoding: 'utf8', input: opts.input, cwd: opts.cwd, timeout: opts.timeout ?? 60_000, env: { ...process.env, PATH, ...opts.env } });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** Runs a shell script. */
export function sh(script: string, opts: { env?: Record<string, string>; timeout?: number } = {}): Run {
  return run('/bin/bash', ['-c', script], opts);
}

/**
 * Polls `pred` every 0.1 s for up to `limitSeconds`: the seconds it took to hold, or NaN if it never did. For a
 * positive claim ("the log says X"), in place of a fixed sleep, whose length a loaded machine outlasts. A `pred` that
 * throws (a file not written yet) has not held yet.
 */
export function secondsUntilTrue(pred: () => boolean, limitSeconds = 30): number {
  const t0 = Date.now();
  for (;;) {
    let holds = false;
    try {
      holds = pred();
    } catch {
      // not yet (a file not written yet)
    }
    if (holds) return (Date.now() - t0) / 1000;
    if (Date.now() - t0 >= limitSeconds * 1000) return NaN;
    sh('sleep 0.1');
  }
}

export function tmpdir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;

/** Third-party scripts the tests run (never copied into the repository): `$TUNNELWRIGHT_VENDOR`, else `../shared/vendor`. */
export const VENDOR_DIR = process.env.TUNNELWRIGHT_VENDOR ?? path.resolve(__dirname, '../../../shared/vendor');

/**
 * `describe` for tests that need real tools (and root, for network namespaces): skipped with a notice when one is
 * missing, except under CI=true, where that fails. A tool given as an absolute path (a vendored script) must exist.
 */
export function describeWithTools(name: string, tools: string[], fn: () => void, needsRoot = false): void {
  const missing = tools.filter((t) => (path.isAbsolute(t) ? !fs.existsSync(t) : !which(t)));
  if (needsRoot && !IS_ROOT) missing.push('(root)');
  if (missing.length === 0) {
    describe(name, fn);
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      it('has its tools', () => {
        throw new Error(`missing: ${missing.join(', ')}: run scripts/install-system-tools.sh (CI=true makes this a failure)`);
      });
    });
  } else {
    process.stderr.write(`notice: skipping "${name}": missing ${missing.join(', ')} (run scripts/install-system-tools.sh as root)\n`);
    describe.skip(name, fn);
  }
}

/** For setup code (beforeAll): throws with the command's output unless it succeeded. */
export function must(r: Run, what: string): Run {
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}):\n${r.output}`);
  return r;
}

/** pod-gateway's image as the labs run it (its scripts, unchanged, from the vendor directory). */
export const POD_GATEWAY_DIR = path.join(VENDOR_DIR, 'pod-gateway-v1.13.0');

/** The namespaces every pod-gateway lab has: the internet, the node, the VPN server. */
export interface LabNamespaces {
  readonly inet: string;
  readonly node: string;
  readonly vpn: string;
}

/**
 * The pod-gateway labs' network (vpn-gateway-datapath, -port-sync, -failover-netns, egress-conformance-gateway), as
 * commands for `sh`: the internet, a bridge in `inet` at 198.18.0.3/24 (the echo server's address); the node's WAN
 * 198.18.0.1 and the VPN server's (`vpnAddresses`, 198.18.0.2) on it; the node: the pod network's bridge
 * 10.244.0.1/24, forwarding and NAT out of its WAN, and kube-dns's address (`nodeLoopback`, 10.96.0.10) on lo; each
 * pod `[netns, address, the node's end of its veth]` with eth0 on the pod bridge and its default route via the node.
 */
export function labNetwork(ns: LabNamespaces, pods: readonly (readonly [string, string, string])[], o: { vpnAddresses?: readonly string[]; nodeLoopback?: readonly string[] } = {}): string[] {
  return [
    `ip -n ${ns.inet} link add br0 type bridge && ip -n ${ns.inet} addr add 198.18.0.3/24 dev br0 && ip -n ${ns.inet} link set br0 up`,
    `ip link add wan0 netns ${ns.node} type veth peer name nodewan netns ${ns.inet} && ip -n ${ns.inet} link set nodewan master br0 up`,
    `ip link add wan0 netns ${ns.vpn} type veth peer name vpnwan netns ${ns.inet} && ip -n ${ns.inet} link set vpnwan master br0 up`,
    `ip -n ${ns.node} addr add 198.18.0.1/24 dev wan0 && ip -n ${ns.node} link set wan0 up`,
    [...(o.vpnAddresses ?? ['198.18.0.2']).map((a) => `ip -n ${ns.vpn} addr add ${a}/24 dev wan0`), `ip -n ${ns.vpn} link set wan0 up`].join(' && '),
    `ip -n ${ns.node} link add br0 type bridge && ip -n ${ns.node} addr add 10.244.0.1/24 dev br0 && ip -n ${ns.node} link set br0 up`,
    `ip netns exec ${ns.node} sysctl -qw net.ipv4.ip_forward=1`,
    `ip netns exec ${ns.node} iptables -t nat -A POSTROUTING -s 10.244.0.0/16 -o wan0 -j MASQUERADE`,
    (o.nodeLoopback ?? ['10.96.0.10']).map((a) => `ip -n ${ns.node} addr add ${a}/32 dev lo`).join(' && '),
    ...pods.flatMap(([n, ip, veth]) => [
      `ip link add eth0 netns ${n} type veth peer name ${veth} netns ${ns.node}`,
      `ip -n ${ns.node} link set ${veth} master br0 up`,
      `ip -n ${n} addr add ${ip}/24 dev eth0 && ip -n ${n} link set eth0 up && ip -n ${n} route add default via 10.244.0.1`,
    ]),
  ];
}

/**
 * The labs' VPN server, as commands for `sh`: forwarding, and wireguard-go's `wgs` at 10.2.0.1/24 listening on 51820
 * with `privateKey` (written to `dir`/server.key) and `peer`, when given (its NAT is each lab's own).
 */
export function labVpnServer(vpn: string, dir: string, privateKey: string, peer?: { publicKey: string; allowedIps: string }): string[] {
  return [
    `ip netns exec ${vpn} sysctl -qw net.ipv4.ip_forward=1`,
    `ip netns exec ${vpn} env WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 wireguard-go wgs >/dev/null 2>&1`,
    `echo ${privateKey} > ${dir}/server.key`,
    `ip netns exec ${vpn} wg set wgs private-key ${dir}/server.key listen-port 51820${peer ? ` peer ${peer.publicKey} allowed-ips ${peer.allowedIps}` : ''}`,
    `ip -n ${vpn} addr add 10.2.0.1/24 dev wgs && ip -n ${vpn} link set wgs up`,
  ];
}

/**
 * Writes the labs' echo server to `dir`/echo.py: it answers each GET on 198.18.0.3:8080 with the address it saw (and
 * appends that address to `log`, when given). Returns the command, ending in `& `, that starts it in `netns` in the
 * background (its output in `dir`/echo.out).
 */
export function echoServer(dir: string, netns: string, o: { log?: string } = {}): string {
  fs.writeFileSync(path.join(dir, 'echo.py'), [
    'import http.server',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    ...(o.log ? [`        open(${JSON.stringify(o.log)}, "a").write(self.client_address[0] + "\\n")`] : []),
    '        self.send_response(200); self.end_headers(); self.wfile.write(self.client_address[0].encode())',
    '    def log_message(self, *a): pass',
    'http.server.ThreadingHTTPServer(("198.18.0.3", 8080), H).serve_forever()',
  ].join('\n'));
  return `ip netns exec ${netns} setsid python3 ${dir}/echo.py </dev/null >${dir}/echo.out 2>&1 & `;
}
