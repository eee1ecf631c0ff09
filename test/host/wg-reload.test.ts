/**
 * wg-reload as the reload drop-in runs it (`bash wg-reload wg0`), against stand-ins of `wg-quick strip` and `wg` on
 * PATH that record what they are asked: the config `wg syncconf` is given decides what the interface becomes (the real
 * `wg syncconf` replaces the key, the port and every peer with what it is given: wireguard-tools src/setconf.c).
 * `wg-quick strip` drops the keys wg-quick alone reads (wireguard-tools src/wg-quick/linux.bash, parse_options:
 * Address, DNS, MTU, Table, PreUp, PostUp, PreDown, PostDown, SaveConfig); `wg syncconf` refuses any other key, as
 * wg's parser does (src/config.c: "Line unrecognized", "Configuration parsing error", status 1).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WG_RELOAD_SCRIPT } from '../../src/host/wireguard-reload';
import { describeWithTools, run, tmpdir } from '../system/tools';

const KEY = 'yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=';
const PEER = 'xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=';

function lab(keyFile: 'present' | 'missing' | 'empty') {
  const dir = tmpdir('tw-wg-reload-');
  const f = (n: string) => path.join(dir, n);
  fs.mkdirSync(f('bin'));
  if (keyFile === 'present') fs.writeFileSync(f('wg0.key'), `${KEY}\n`, { mode: 0o600 });
  if (keyFile === 'empty') fs.writeFileSync(f('wg0.key'), '', { mode: 0o600 });
  fs.writeFileSync(f('wg0.conf'), ['[Interface]', 'Address = 10.10.0.1/24', 'ListenPort = 51820', 'MTU = 1420', `PostUp = wg set %i private-key ${f('wg0.key')}`, '', '[Peer]', `PublicKey = ${PEER}`, 'AllowedIPs = 10.10.0.2/32', ''].join('\n'));
  // wg-quick strip drops the wg-quick-only lines, as upstream does.
  fs.writeFileSync(f('bin/wg-quick'), `#!/bin/bash\n[ "$1" = strip ] && grep -Ev '^(Address|DNS|MTU|Table|PreUp|PostUp|PreDown|PostDown|SaveConfig) *=' "$2"\n`, { mode: 0o755 });
  // wg records each call; syncconf reads the config from its file argument, refuses a key wg does not know, and
  // records what it read.
  fs.writeFileSync(f('bin/wg'), [
    '#!/bin/bash',
    `echo "$*" >> ${f('calls')}`,
    'if [ "$1" = syncconf ]; then',
    '  conf=$(cat "$3") || exit 1',
    '  bad=$(printf "%s\\n" "$conf" | grep -Ev "^(\\[Interface\\]|\\[Peer\\]|(PrivateKey|ListenPort|FwMark|PublicKey|PresharedKey|AllowedIPs|Endpoint|PersistentKeepalive) *=.*|)$" | head -n 1)',
    '  if [ -n "$bad" ]; then echo "Line unrecognized: \\`$bad\\x27" >&2; echo "Configuration parsing error" >&2; exit 1; fi',
    `  printf "%s\\n" "$conf" > ${f('synced')}`,
    'fi',
    '',
  ].join('\n'), { mode: 0o755 });
  fs.writeFileSync(f('wg-reload'), WG_RELOAD_SCRIPT, { mode: 0o755 });
  const r = run('bash', [f('wg-reload'), 'wg0', f('wg0.conf')], { env: { PATH: `${f('bin')}:${process.env.PATH}`, WG_LOCK: f('lock') } });
  const read = (n: string) => (fs.existsSync(f(n)) ? fs.readFileSync(f(n), 'utf8') : '');
  return { r, calls: read('calls'), synced: read('synced') };
}

describeWithTools('wg-reload', ['bash', 'flock'], () => {
  it('syncs the interface with its key from the root-only file and its peers (the control)', () => {
    const { r, synced } = lab('present');
    expect(r.status).toBe(0);
    expect(synced).toBe(`[Interface]\nPrivateKey = ${KEY}\nListenPort = 51820\n\n[Peer]\nPublicKey = ${PEER}\nAllowedIPs = 10.10.0.2/32\n`);
  });

  it.each(['missing', 'empty'] as const)('a key file that is %s fails the reload before the interface is touched (wg is never called)', (keyFile) => {
    const { r, calls } = lab(keyFile);
    expect(r.status).toBe(1);
    expect(calls).toBe('');
    expect(r.stderr).toContain('wg-reload: wg0: cannot read ');
    expect(r.stderr).toContain(': left as it is');
  });
});
