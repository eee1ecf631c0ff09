import * as fs from 'node:fs';
import * as path from 'node:path';
import { must, POD_GATEWAY_DIR, Run, sh } from './tools';

/**
 * A "pod" for running a container image's scripts unchanged on this host: a network namespace (made by the caller)
 * plus private mount, UTS and PID namespaces whose root is an overlay over the host's `/`, with the image's files
 * placed in the upper layer (nothing on the host changes), its own /proc, /sys, /run and /tmp, and a hostname.
 * Killing the holder (PID 1 of the pod) ends every process the pod started.
 */
export interface Pod {
  readonly name: string;
  readonly netns: string;
  /** Host PID of the pod's PID 1 (the namespace holder). */
  readonly pid: number;
  /** The upper layer: the pod's own files. */
  readonly upper: string;
}

export interface PodFile {
  readonly content: string;
  readonly mode?: number;
}

export function startPod(dir: string, name: string, netns: string, hostname: string, files: Record<string, PodFile>): Pod {
  const base = path.join(dir, name);
  const upper = path.join(base, 'upper');
  const work = path.join(base, 'work');
  const merged = path.join(base, 'merged');
  for (const d of [upper, work, merged]) fs.mkdirSync(d, { recursive: true });
  for (const [p, f] of Object.entries(files)) {
    const full = path.join(upper, p);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, f.content, { mode: f.mode ?? 0o644 });
    fs.chmodSync(full, f.mode ?? 0o644);
  }
  const setup = [
    'mount --make-rprivate /',
    `mount -t overlay overlay -o lowerdir=/,upperdir=${upper},workdir=${work} ${merged}`,
    `mount -t proc proc ${merged}/proc`,
    `mount -t sysfs sysfs ${merged}/sys`,
    `mount --rbind /dev ${merged}/dev`,
    `mount -t tmpfs tmpfs ${merged}/run`,
    `mount -t tmpfs tmpfs ${merged}/tmp`,
    `hostname ${hostname}`,
    // PID 1 is a bash that reaps every orphan (as a container runtime's init does): killed processes leave no zombie.
    `exec chroot ${merged} /bin/bash -c "while :; do sleep 3600 & wait \\$!; done"`,
  ].join(' && ');
  const started = must(sh(`ip netns exec ${netns} unshare --mount --uts --pid --fork sh -c '${setup}' >${base}.log 2>&1 & echo $!`), `pod ${name}`);
  const parent = Number(started.stdout.trim());
  // The holder is unshare's child once it has exec'd bash in the pod's root (after its mounts).
  const found = must(sh(`for i in $(seq 50); do c=$(pgrep -P ${parent} -x bash) && { echo $c; exit 0; }; sleep 0.1; done; cat ${base}.log; exit 1`), `pod ${name} holder`);
  return { name, netns, pid: Number(found.stdout.trim()), upper };
}

/** Runs a bash script inside the pod (its namespaces and root). */
export function inPod(pod: Pod, script: string, opts: { env?: Record<string, string>; timeout?: number } = {}): Run {
  const env = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
  return sh(`nsenter -t ${pod.pid} -m -u -p -n -r -w env ${env} /bin/bash -c ${quote(script)}`, { timeout: opts.timeout ?? 60_000 });
}

/** Starts a bash script in the pod's background; its output goes to /tmp/<log> inside the pod. */
export function startInPod(pod: Pod, script: string, log: string, env: Record<string, string> = {}): void {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ');
  must(sh(`nsenter -t ${pod.pid} -m -u -p -n -r -w env ${vars} setsid /bin/bash -c ${quote(`${script} >/tmp/${log} 2>&1`)} </dev/null >/dev/null 2>&1 & echo started`), `start ${log} in ${pod.name}`);
}

export function podLog(pod: Pod, log: string): string {
  return inPod(pod, `cat /tmp/${log} 2>/dev/null`).stdout;
}

export function stopPod(pod: Pod): void {
  sh(`kill -9 ${pod.pid} 2>/dev/null; for i in $(seq 30); do kill -0 ${pod.pid} 2>/dev/null || exit 0; sleep 0.1; done`);
}

/** Single-quotes a script for bash. */
export function quote(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}

/**
 * Waits (up to `seconds`, 30 by default) until something in network namespace `netns` listens on every TCP port
 * given, or fails naming `what`, with what does listen there and the tail of each of `logs`, so that a slow or crashed
 * start says which it was.
 */
export function waitUntilListening(netns: string, what: string, ports: readonly number[], opts: { seconds?: number; logs?: readonly string[] } = {}): void {
  const all = ports.map((p) => `ss -Hltn "sport = :${p}" | grep -q ":${p} "`).join(' && ');
  const tries = Math.round((opts.seconds ?? 30) * 10);
  const tails = (opts.logs ?? []).map((f) => `echo "--- ${f}:"; tail -n 20 ${quote(f)} 2>&1`).join('; ');
  must(sh(`for i in $(seq ${tries}); do ip netns exec ${netns} bash -c ${quote(all)} && exit 0; sleep 0.1; done; ` +
    `echo "listening in ${netns}:"; ip netns exec ${netns} ss -Hltn; ${tails}; exit 1`), `${what} listens on ${ports.join(', ')}`);
}

/** A stand-in for gluetun's control server, as `startControlServerStandIn` starts it. */
export interface ControlServerStandIn {
  /** Its PID (the host's view). */
  readonly pid: string;
  /** What `GET /v1/portforward` answers from now on: `{"port":N}` (0: none forwarded yet). */
  forwardedIs(port: number): void;
  stop(): void;
}

/**
 * A stand-in for gluetun's control server on 127.0.0.1:8000 in network namespace `netns`, as far as port-sync uses it:
 * `GET /v1/portforward` with `X-API-Key: <key>` answers `{"port":N}` (gluetun v3.41.1 internal/server/portforward.go:34-46),
 * anything else 401, as a route no role grants or a key gluetun does not hold (internal/server/middlewares/auth/
 * middleware.go:55-60, :89). It starts forwarding no port (0); its files are `<dir>/ctl.py`, `pf.json` and `ctl.log`.
 * Returns once it listens.
 */
export function startControlServerStandIn(netns: string, dir: string, key: string): ControlServerStandIn {
  const answer = path.join(dir, 'pf.json');
  // Written whole, then renamed: the server never reads half a file.
  const forwardedIs = (port: number) => {
    fs.writeFileSync(`${answer}.tmp`, JSON.stringify({ port }));
    fs.renameSync(`${answer}.tmp`, answer);
  };
  forwardedIs(0);
  fs.writeFileSync(path.join(dir, 'ctl.py'), [
    'import http.server',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    `        if self.path != "/v1/portforward" or self.headers.get("X-API-Key") != ${JSON.stringify(key)}:`,
    '            self.send_response(401); self.end_headers(); return',
    `        self.send_response(200); self.end_headers(); self.wfile.write(open(${JSON.stringify(answer)}, "rb").read())`,
    '    def log_message(self, *a): pass',
    'http.server.HTTPServer(("127.0.0.1", 8000), H).serve_forever()',
  ].join('\n'));
  const pid = must(sh(`ip netns exec ${netns} bash -c ${quote(`python3 ${dir}/ctl.py >>${dir}/ctl.log 2>&1 & echo $!`)}`), 'control server stand-in').stdout.trim();
  waitUntilListening(netns, 'the control server stand-in', [8000], { logs: [`${dir}/ctl.log`] });
  return {
    pid,
    forwardedIs,
    stop: () => { sh(`kill ${pid} 2>/dev/null; for i in $(seq 50); do kill -0 ${pid} 2>/dev/null || exit 0; sleep 0.1; done`); },
  };
}

/**
 * The files kubelet places into the gateway sidecar from the synthesized settings ConfigMap by `subPath` (the whole
 * ConfigMap at /config is given by each lab itself): what the Deployment mounts, read from the plan.
 */
export function gatewaySidecarFiles(objects: readonly { kind: string }[]): Record<string, PodFile> {
  type Mount = { name: string; mountPath: string; subPath?: string };
  type Spec = { containers: { name: string; volumeMounts?: Mount[] }[]; volumes: { name: string; configMap?: { name: string } }[] };
  const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: Spec } } };
  const spec = deployment.spec.template.spec;
  const maps = objects.filter((o) => o.kind === 'ConfigMap') as unknown as { metadata: { name: string }; data: Record<string, string> }[];
  const files: Record<string, PodFile> = {};
  for (const m of spec.containers.find((c) => c.name === 'gateway-sidecar')!.volumeMounts ?? []) {
    const map = spec.volumes.find((v) => v.name === m.name)?.configMap;
    if (m.subPath === undefined || !map) continue;
    files[m.mountPath] = { content: maps.find((c) => c.metadata.name === map.name)!.data[m.subPath] };
  }
  return files;
}

/** pod-gateway's image (POD_GATEWAY_DIR): its scripts in /usr/bin and its default settings. */
export function podGatewayImage(): Record<string, PodFile> {
  const vendor = (p: string) => fs.readFileSync(path.join(POD_GATEWAY_DIR, p), 'utf8');
  const scripts = Object.fromEntries(['gateway_init.sh', 'gateway_sidecar.sh', 'client_init.sh', 'client_sidecar.sh', 'copy_resolv.sh'].map((s) => [`/usr/bin/${s}`, { content: vendor(`bin/${s}`), mode: 0o755 }]));
  return { ...scripts, '/default_config/settings.sh': { content: vendor('config/settings.sh') } };
}

/** busybox's inotifyd, which gateway_sidecar.sh runs, stood in by inotifywait (this host's busybox has none). */
export const INOTIFYD_STAND_IN: Record<string, PodFile> = {
  '/usr/local/bin/inotifyd': { content: '#!/bin/sh\nprog=$1; file=${2%%:*}\nwhile inotifywait -qq -e modify,attrib,close_write "$file"; do "$prog"; done\n', mode: 0o755 },
};

/**
 * A VpnGateway plan's gateway pod as the labs run it: pod-gateway's image; the synthesized settings ConfigMap where
 * the Deployment mounts it (/config, /iptables/post-rules.txt); what kubelet writes for a ClusterFirst pod in the
 * vpn-gateway namespace; the sidecar's own files (gatewaySidecarFiles: tunnelwright's dnsmasq file); and what this
 * host's packages lack: Debian's dnsmasq-base has no conf-dir line and keeps its trust anchors elsewhere, busybox has
 * no inotifyd.
 */
export function gatewayPodFiles(objects: readonly { kind: string }[]): Record<string, PodFile> {
  const data = (objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data;
  return {
    ...podGatewayImage(),
    '/config/settings.sh': { content: data['settings.sh'] },
    '/config/nat.conf': { content: data['nat.conf'] },
    '/iptables/post-rules.txt': { content: data['post-rules.txt'] },
    '/etc/resolv.conf': { content: 'search vpn-gateway.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n' },
    '/etc/dnsmasq.conf': { content: 'conf-dir=/etc/dnsmasq.d/,*.conf\n' },
    '/etc/dnsmasq.d/.keep': { content: '' },
    ...gatewaySidecarFiles(objects),
    '/usr/share/dnsmasq/trust-anchors.conf': { content: fs.readFileSync('/usr/share/dnsmasq-base/trust-anchors.conf', 'utf8') },
    ...INOTIFYD_STAND_IN,
  };
}

/**
 * gluetun's WireGuard tunnel as the labs stand it in, as commands for a gateway pod: wireguard-go's tun0 with
 * `privateKey`, its one peer the lab's VPN server (198.18.0.2:51820), `address` and `mtu`; gluetun's fwmark routing
 * (everything not marked 51820 by table 51820, the tunnel); and the start of its firewall (internal/firewall at
 * v3.41.1): INPUT dropped but loopback, established and the links that existed at start (vxlan0). Each lab adds the
 * rest of what it depends on. `{ openvpn: true }`: the same fwmark rule and firewall but no tun0: the OpenVPN client
 * the lab starts itself (`--dev tun0 --mark 51820`, without `persist-tun`, as gluetun runs it as root) makes tun0 at
 * each connect and adds table 51820's route; tun0 goes when that client dies.
 */
export function gluetunTunnelStandIn(o: { privateKey: string; serverPublicKey: string; address: string; mtu: string | number } | { openvpn: true }): string[] {
  return [
    ...('openvpn' in o ? [] : [
      'wireguard-go tun0',
      `echo ${o.privateKey} > /tmp/wg.key`,
      `wg set tun0 private-key /tmp/wg.key fwmark 51820 peer ${o.serverPublicKey} endpoint 198.18.0.2:51820 allowed-ips 0.0.0.0/0 persistent-keepalive 5`,
      `ip addr add ${o.address} dev tun0`,
      `ip link set tun0 mtu ${o.mtu} up`,
      'ip route add default dev tun0 table 51820',
    ]),
    'ip rule add not fwmark 51820 table 51820 priority 101',
    'iptables -P INPUT DROP',
    'iptables -A INPUT -i lo -j ACCEPT',
    'iptables -A INPUT -m state --state ESTABLISHED,RELATED -j ACCEPT',
    'iptables -A INPUT -i vxlan0 -j ACCEPT',
  ];
}
