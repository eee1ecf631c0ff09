import * as fs from 'node:fs';
import * as path from 'node:path';
import { planEgressSteering } from '../../src';
import { OPENVPN_PIN_PATH, OPENVPN_UNIT } from '../../src/render/egress-steering';
import { describeWithTools, must, sh } from './tools';

/**
 * The pin script as synthesized, and OpenVPN's own option parser on its output with the unit's own command line
 * (openvpn --verb 4 prints the parsed options; no network: unshare -n, and a timeout).
 */
describeWithTools('EgressSteering OpenVPN config rewrite: a provider config with keepalive beside the unit\'s --ping', ['openvpn', 'openssl', 'unshare', 'timeout'], () => {
  const dir = `/tmp/tw-pin-${process.pid}`;
  const host = planEgressSteering({
    gatewayNode: 'gw-1',
    clusterCidrs: ['10.42.0.0/16'],
    tunnel: { type: 'openvpn', configFrom: { file: '/etc/openvpn/provider.ovpn' } },
  }).hosts[0];
  const unit = host.units.find((u) => u.name === OPENVPN_UNIT)!.content!;
  // The unit's command line up to its hooks (its pull-filters, --config, --ping and --ping-restart among them), with the
  // config given in place of the node's.
  const unitArgs = /ExecStart=\/usr\/sbin\/openvpn (.*?) --script-security/.exec(unit)![1];
  const parse = (config: string) => sh(`timeout 3 unshare -n openvpn ${unitArgs.replace(/--config \S+/, `--config ${config}`)} --verb 4 2>&1; true`).stdout;

  beforeAll(() => {
    fs.mkdirSync(dir, { recursive: true });
    must(sh(`openssl req -x509 -newkey rsa:2048 -nodes -keyout ${dir}/k.pem -out ${dir}/c.pem -subj /CN=tw -days 1`), 'cert');
    fs.writeFileSync(path.join(dir, 'pin'), host.files.find((f) => f.path === OPENVPN_PIN_PATH)!.content, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'provider.ovpn'), ['client', 'dev tun', 'remote 198.18.0.2 1194', 'keepalive 10 120', 'nobind', 'pull-filter accept ping-exit', 'pull-filter ignore "route-ipv6"', `ca ${dir}/c.pem`, `cert ${dir}/c.pem`, `key ${dir}/k.pem`, ''].join('\n'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  /** The provider's config without its keepalive: what the pin leaves of it, so OpenVPN's parser reads the rest. */
  const withoutKeepalive = () => fs.readFileSync(path.join(dir, 'provider.ovpn'), 'utf8').replace('keepalive 10 120\n', '');

  it('OpenVPN starts with the rewritten config and the unit\'s timers (ping 10, ping-restart 60); control: the config as given is a usage error', () => {
    must(sh(`${dir}/pin ${dir}/provider.ovpn ${dir}/provider.pinned`), 'pin');
    const pinned = parse(`${dir}/provider.pinned`);
    expect(pinned).not.toContain('Options error');
    expect(/ping_send_timeout = (\d+)/.exec(pinned)?.[1]).toBe('10');
    expect(/ping_rec_timeout = (\d+)/.exec(pinned)?.[1]).toBe('60');
    // The quoted pattern arrives as one argument (OpenVPN's pull-filter takes exactly three words, options.c:7135 at
    // v2.6.14): the filter list as OpenVPN shows it (options.c:1794), in the order it is matched, first match winning.
    // The unit's come first; the provider's follow, kept, and its `accept ping-exit` never reached for ping-exit.
    expect(pinned.match(/\b(?:accept|ignore|reject) "(?:"|[^"\n]*)"$/gm)).toEqual([
      'ignore """', 'ignore "\'"', 'ignore "redirect-gateway"', 'ignore "persist-tun"', ...'123456789'.split('').map((d) => `accept "ping-restart ${d}"`), 'ignore "ping-restart"', 'ignore "ping-exit"',
      'accept "ping-exit"', 'ignore "route-ipv6"',
    ]);
    expect(parse(`${dir}/provider.ovpn`)).toContain('Options error: --keepalive conflicts with --ping, --ping-exit, or --ping-restart.');
  });

  it('a config saved with Windows line ends loses persist-tun too (OpenVPN reads "\\r" as a space); control: the pin without its carriage-return strip keeps it', () => {
    const crlf = withoutKeepalive().replace(/\n/g, '\r\n') + 'persist-tun\r\n';
    fs.writeFileSync(path.join(dir, 'crlf.ovpn'), crlf);
    const persistTun = (pin: string) => {
      must(sh(`${pin} ${dir}/crlf.ovpn ${dir}/crlf.pinned`), 'pin');
      const out = parse(`${dir}/crlf.pinned`);
      expect(out).not.toContain('Options error');
      return /persist_tun = (\w+)/.exec(out)?.[1];
    };
    expect(persistTun(`${dir}/pin`)).toBe('DISABLED');
    const pin = fs.readFileSync(path.join(dir, 'pin'), 'utf8');
    const noStrip = pin.replace('  sub(/\\r$/, "")\n', '');
    expect(noStrip).not.toBe(pin);
    fs.writeFileSync(path.join(dir, 'pin-no-strip'), noStrip, { mode: 0o755 });
    expect(persistTun(`${dir}/pin-no-strip`)).toBe('ENABLED');
  });

  it('an inline file is data: its lines are copied as they are, even one that reads as an option; control: the pin without the block rule drops it', () => {
    // A PEM's last base64 line may be "user" or "ipchange" (valid base64 of length 4 and 8).
    const config = ['client', '<tls-auth>', 'user', 'ipchange', 'persist-tun', '</tls-auth>', 'user nobody', '<ca>\r', 'log\r', '</ca>\r', ''].join('\n');
    fs.writeFileSync(path.join(dir, 'inline.ovpn'), config);
    const pinned = (pin: string) => {
      must(sh(`${pin} ${dir}/inline.ovpn ${dir}/inline.pinned`), 'pin');
      return fs.readFileSync(path.join(dir, 'inline.pinned'), 'utf8');
    };
    expect(pinned(`${dir}/pin`)).toBe(['client', '<tls-auth>', 'user', 'ipchange', 'persist-tun', '</tls-auth>', '<ca>', 'log', '</ca>', ''].join('\n'));
    const pin = fs.readFileSync(path.join(dir, 'pin'), 'utf8');
    const noBlocks = pin.replace(/\n {2}if \(block != ""\)[^\n]*\n {2}if \(tok ~ [^\n]*\n/, '\n');
    expect(noBlocks).not.toBe(pin);
    fs.writeFileSync(path.join(dir, 'pin-no-blocks'), noBlocks, { mode: 0o755 });
    expect(pinned(`${dir}/pin-no-blocks`)).toBe(['client', '<tls-auth>', '</tls-auth>', '<ca>', '</ca>', ''].join('\n'));
  });

  it('the provider\'s own programs, process control and management port are dropped, each said on stderr, also as `setenv opt`; control: OpenVPN reads them in the config as given', () => {
    const hooks = ['route-up /bin/true', 'route-pre-down /bin/true', 'ipchange /bin/true', 'user nobody', 'group nogroup'];
    const rest = ['daemon', 'chroot /var/empty', 'setcon unconfined_t', 'log /tmp/x.log', 'log-append /tmp/x.log', 'management 0.0.0.0 7505', 'management-hold'];
    const base = withoutKeepalive();
    // `setenv opt X` is X to OpenVPN (options.c): the same options spelt so must go too.
    const asSetenv = ['setenv opt persist-tun', 'setenv opt route-up /bin/false'];
    fs.writeFileSync(path.join(dir, 'hooks.ovpn'), base + [...hooks, ...rest, ...asSetenv, 'setenv opt block-outside-dns', ''].join('\n'));
    const r = must(sh(`${dir}/pin ${dir}/hooks.ovpn ${dir}/hooks.pinned`), 'pin');
    const kept = fs.readFileSync(path.join(dir, 'hooks.pinned'), 'utf8');
    for (const line of [...hooks, ...rest, ...asSetenv]) expect(kept).not.toContain(`${line}\n`);
    for (const line of [...hooks, ...rest.slice(0, 5)]) expect(r.stderr).toContain(`: ${line.split(' ')[0]} dropped (the unit runs OpenVPN in the foreground, as root, with its own hooks only)\n`);
    expect(r.stderr).toContain(': management dropped (no management port on the node)\n');
    expect(r.stderr).toContain(': management-hold dropped (no management port on the node)\n');
    expect(kept).toContain('setenv opt block-outside-dns\n'); // an option OpenVPN 2.6 ignores elsewhere than Windows: kept
    const set = (out: string) => ['route_script', 'ipchange', 'username', 'groupname', 'management_addr'].filter((k) => new RegExp(`\\b${k} = '(?!\\[UNDEF\\])`).test(out));
    const pinned = parse(`${dir}/hooks.pinned`);
    expect(pinned).not.toContain('Options error');
    expect(set(pinned)).toEqual([]);
    expect(pinned).toContain('daemon = DISABLED');
    expect(pinned).toContain('persist_tun = DISABLED');
    // Control: the config as given (its daemon, log and the rest left out: they detach, or send the output elsewhere).
    fs.writeFileSync(path.join(dir, 'hooks-given.ovpn'), base + [...hooks, 'management 127.0.0.1 7505', 'setenv opt persist-tun', ''].join('\n'));
    const given = parse(`${dir}/hooks-given.ovpn`);
    expect(set(given)).toEqual(['route_script', 'ipchange', 'username', 'groupname', 'management_addr']);
    expect(given).toContain('persist_tun = ENABLED');
  });

  it.each(['tls-verify /bin/true', 'plugin /usr/lib/openvpn/openvpn-plugin-auth-pam.so login', 'setenv opt tls-verify /bin/true'])('refuses a config with a check of the provider\'s program (%s): dropped, the check would fail open', (line) => {
    fs.writeFileSync(path.join(dir, 'check.ovpn'), fs.readFileSync(path.join(dir, 'provider.ovpn'), 'utf8') + `${line}\n`);
    const r = sh(`${dir}/pin ${dir}/check.ovpn ${dir}/check.pinned`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('runs a program of the provider beside the unit: remove it (verify-x509-name checks the server name without one)');
    expect(fs.existsSync(path.join(dir, 'check.pinned'))).toBe(false);
    // Control: the pin without its refusal writes a copy, without the check (the line dropped or kept, never refused).
    const pin = fs.readFileSync(path.join(dir, 'pin'), 'utf8');
    const noRefusal = pin.replace(/\n {2}if \(tok == "tls-verify" \|\| tok == "plugin"\)[^\n]*/, '');
    expect(noRefusal).not.toBe(pin);
    fs.writeFileSync(path.join(dir, 'pin-no-refusal'), noRefusal, { mode: 0o755 });
    expect(sh(`${dir}/pin-no-refusal ${dir}/check.ovpn ${dir}/check.pinned`).status).toBe(0);
    fs.rmSync(path.join(dir, 'check.pinned'));
  });

  it('a byte-order mark before line 1 hides nothing: OpenVPN skips it, and so does the pin; control: the config as given has persist-tun', () => {
    fs.writeFileSync(path.join(dir, 'bom.ovpn'), `\uFEFFpersist-tun\n${withoutKeepalive()}`);
    must(sh(`${dir}/pin ${dir}/bom.ovpn ${dir}/bom.pinned`), 'pin');
    expect(parse(`${dir}/bom.pinned`)).toContain('persist_tun = DISABLED');
    expect(parse(`${dir}/bom.ovpn`)).toContain('persist_tun = ENABLED');
  });
});
