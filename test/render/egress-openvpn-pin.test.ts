import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { planEgressSteering } from '../../src';
import { prodSteering } from '../helpers/fixtures';

/**
 * The OpenVPN pin script as the node gets it (the host file the unit's ExecStartPre runs), run with sh on provider
 * configs, its output read as OpenVPN reads a config: each line's first token unquoted and without a leading "--"
 * (options.c at v2.6.14: parse_line() unquotes, bypass_doubledash() drops "--"), "setenv opt X" read as X, lines of an
 * inline block (<ca>…</ca>) data. test/system/egress-openvpn-pin.test.ts runs OpenVPN's own parser on it.
 */
const PIN = '/opt/tunnelwright/bin/egress-openvpn-pin';
const script = (pinned: boolean) => {
  const host = planEgressSteering(pinned ? prodSteering() : { ...prodSteering(), tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/pia/nl_amsterdam.ovpn' } } }).hosts[0];
  return host.files.find((f) => f.path === PIN)!.content;
};

/** Runs `text` through the pin script as the unit does (`pin` or not): its exit status, stderr and output file. */
function pin(text: string, pinned: boolean, content = script(pinned)) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-pin-'));
  try {
    fs.writeFileSync(path.join(dir, 'pin'), content, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'provider.ovpn'), text);
    const r = spawnSync('sh', [path.join(dir, 'pin'), path.join(dir, 'provider.ovpn'), path.join(dir, 'out'), ...(pinned ? ['pin'] : [])], { encoding: 'utf8' });
    const out = fs.existsSync(path.join(dir, 'out')) ? fs.readFileSync(path.join(dir, 'out'), 'utf8') : undefined;
    return { status: r.status, stderr: r.stderr, out };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The options OpenVPN reads from a config, by name (the first token of each line outside inline blocks). */
function options(text: string): string[] {
  const bare = (t: string) => t.replace(/["'\\]/g, '').replace(/^--/, '');
  const out: string[] = [];
  let block = '';
  for (const raw of text.split('\n')) {
    // OpenVPN reads "\r" as a space; '#' and ';' start a comment.
    const words = raw.replace(/\r/g, ' ').trim().split(/[ \t]+/);
    let name = bare(words[0] ?? '');
    if (name === 'setenv' && bare(words[1] ?? '') === 'opt') name = bare(words[2] ?? '');
    if (block) {
      if (name === `</${block}>`) block = '';
      continue;
    }
    const open = /^<([a-z0-9-]+)>$/.exec(name);
    if (open) {
      block = open[1];
      continue;
    }
    if (name && !name.startsWith('#') && !name.startsWith(';')) out.push(name);
  }
  return out;
}

const PROVIDER = ['client', 'dev tun', 'proto udp', 'remote nl-amsterdam.privacy.network 1198', 'resolv-retry infinite', 'nobind', 'cipher aes-128-cbc', 'auth sha1', 'auth-user-pass', 'verb 1', '<ca>', '-----BEGIN CERTIFICATE-----', 'persist-tun', '-----END CERTIFICATE-----', '</ca>', ''];

describe('the OpenVPN pin script run on a provider\'s config', () => {
  it.each([
    ['as PIA ships it', 'persist-tun'],
    ['indented', '   persist-tun'],
    ['with a leading "--"', '--persist-tun'],
    ['quoted', '"persist-tun"'],
    ['with a Windows line end', 'persist-tun\r'],
    ['given as "setenv opt"', 'setenv opt persist-tun'],
  ])('drops persist-tun %s, in either mode, and keeps the rest (the inline block as it is)', (_how, line) => {
    const text = [...PROVIDER.slice(0, 6), line, ...PROVIDER.slice(6)].join('\n');
    expect(options(text)).toContain('persist-tun');
    for (const pinned of [true, false]) {
      const r = pin(text, pinned);
      expect(r.status).toBe(0);
      expect(options(r.out!)).not.toContain('persist-tun');
      // Everything else kept: the provider's other options (its remote too when not pinning), the <ca> data whole.
      expect(options(r.out!)).toEqual(options(text).filter((o) => o !== 'persist-tun' && !(pinned && o === 'remote')));
      expect(r.out).toContain('<ca>\n-----BEGIN CERTIFICATE-----\npersist-tun\n-----END CERTIFICATE-----\n</ca>\n');
    }
  });

  it('control: the script without its persist-tun line keeps it (the test reads what OpenVPN would)', () => {
    const text = [...PROVIDER.slice(0, 6), 'persist-tun', ...PROVIDER.slice(6)].join('\n');
    const planted = script(true).replace('  if (tok == "persist-tun") next\n', '');
    expect(planted).not.toBe(script(true));
    expect(options(pin(text, true, planted).out!)).toContain('persist-tun');
  });
});
