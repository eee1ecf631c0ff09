import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFERRED_ENDPOINT_PREFIX, WG_ENDPOINTS_SCRIPT } from '../../src/host/wireguard-reload';

/**
 * The endpoints script under bash, with a `wg` on PATH that lists many peers (as a large mesh's interface does) and
 * records what it is asked to set. The script's peer check once piped `wg show <iface> peers` into `grep -q`: grep
 * exits at the first match, `wg` then dies of SIGPIPE writing the rest, and under `set -o pipefail` the pipeline
 * failed, so the peer was skipped for good while the unit succeeded (an outsider's read reproduced it with 400 peers,
 * 6 runs in 100). The list here is far over a pipe's buffer, so the old form loses the peer every time.
 */
const KEY = Buffer.alloc(32, 9).toString('base64');
const OLD_CHECK = '    if ! wg show "$iface" peers | grep -qxF -- "$key"; then continue; fi';

function run(script: string): { status: number | null; stdout: string; set: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-endpoints-'));
  try {
    // A bash `wg`: builtin echo dies of SIGPIPE like wg's own write when its reader has gone.
    fs.writeFileSync(path.join(dir, 'wg'), [
      '#!/bin/bash',
      `if [ "$1" = show ]; then echo "${KEY}"; for ((i = 0; i < 100000; i++)); do echo "peer-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx="; done; exit 0; fi`,
      `if [ "$1" = set ]; then echo "$*" >> "${dir}/set"; exit 0; fi`,
      'exit 1',
    ].join('\n'), { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'wg0.conf'), `[Interface]\nAddress = 10.10.0.1/24\n\n[Peer]\nPublicKey = ${KEY}\n${DEFERRED_ENDPOINT_PREFIX}d.example.net:51820\nAllowedIPs = 10.10.0.4/32\n`);
    fs.writeFileSync(path.join(dir, 'wg-endpoints'), script, { mode: 0o755 });
    const r = spawnSync('bash', [path.join(dir, 'wg-endpoints'), '--once', 'wg0', path.join(dir, 'wg0.conf')], { encoding: 'utf8', env: { ...process.env, PATH: `${dir}:${process.env.PATH}` }, timeout: 60_000 });
    const setFile = path.join(dir, 'set');
    return { status: r.status, stdout: r.stdout, set: fs.existsSync(setFile) ? fs.readFileSync(setFile, 'utf8') : '' };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('wg-endpoints on an interface with many peers', () => {
  it('sets the endpoint of a listed peer however long the peer list', () => {
    const r = run(WG_ENDPOINTS_SCRIPT);
    expect(r.status).toBe(0);
    expect(r.set).toBe(`set wg0 peer ${KEY} endpoint d.example.net:51820\n`);
    expect(r.stdout).toBe(`wg-endpoints: wg0: peer ${KEY} at d.example.net:51820\n`);
  });

  it('control: with wg piped into grep -q (the check of before), the peer is skipped and the script still succeeds', () => {
    const before = WG_ENDPOINTS_SCRIPT.replace(/\n {2}# The interface's peers[^\n]*\n[^\n]*\n {2}peers=\$\(wg show "\$iface" peers\)\n {2}while read -r key endpoint; do\n[^\n]*\n/, `\n  while read -r key endpoint; do\n${OLD_CHECK}\n`);
    expect(before).toContain(OLD_CHECK);
    const r = run(before);
    expect(r.status).toBe(0);
    expect(r.set).toBe('');
  });
});
