import * as fs from 'node:fs';
import * as path from 'node:path';
import { RESOLVE_SECRET_SCRIPT } from '../../src/host/secret-source';
import { describeWithTools, sh, tmpdir } from '../system/tools';

/**
 * (A unit test since issue 48: no root, no network.) The resolver every secret unit runs, and every OpenVPN start runs again (`ExecStartPre=-… 0`), against a stand-in
 * for curl: `--output FILE` gets $STUB_BODY, and the exit status is $STUB_RC. What a unit reads is the file after it.
 */
describeWithTools('resolve-secret keeps the secret it has when a source answers with nothing', ['sh', 'cp', 'date'], () => {
  const dir = tmpdir('tw-resolve-');
  const dest = path.join(dir, 'run', 'secret');
  const curl = '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --output ] && { printf %s "$STUB_BODY" > "$2"; }; shift; done\nexit "${STUB_RC:-0}"\n';
  const resolve = (script: string, kind: string, source: string, env: Record<string, string>) =>
    sh(`sh ${script} ${kind} ${source} ${dest} 0`, { env: { ...process.env, PATH: `${dir}/bin:${process.env.PATH}`, ...env } as Record<string, string> });
  const now = () => fs.readFileSync(dest, 'utf8');

  beforeAll(() => {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'bin', 'curl'), curl, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'resolve-secret'), RESOLVE_SECRET_SCRIPT, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'url.curl'), 'url = "https://vault.example/v1/ovpn"\n', { mode: 0o600 });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('url: a body replaces the file; an empty 200 or a failure keeps it (and fails the run, which ExecStartPre=- ignores); control: without the size check the empty body replaces it', () => {
    const script = path.join(dir, 'resolve-secret');
    expect(resolve(script, 'url', `${dir}/url.curl`, { STUB_BODY: 'first\n' }).status).toBe(0);
    expect(now()).toBe('first\n');
    expect(resolve(script, 'url', `${dir}/url.curl`, { STUB_BODY: 'rotated\n' }).status).toBe(0);
    expect(now()).toBe('rotated\n');
    const empty = resolve(script, 'url', `${dir}/url.curl`, { STUB_BODY: '' });
    expect(empty.status).toBe(1);
    expect(empty.stderr).toContain('source not available after 0s');
    expect(now()).toBe('rotated\n');
    expect(resolve(script, 'url', `${dir}/url.curl`, { STUB_BODY: 'x', STUB_RC: '22' }).status).toBe(1);
    expect(now()).toBe('rotated\n');
    expect(fs.existsSync(`${dest}.partial`)).toBe(false);
    const noCheck = RESOLVE_SECRET_SCRIPT.replace(' && [ -s "$tmp" ]', '');
    expect(noCheck).not.toBe(RESOLVE_SECRET_SCRIPT);
    fs.writeFileSync(path.join(dir, 'no-check'), noCheck, { mode: 0o755 });
    expect(resolve(path.join(dir, 'no-check'), 'url', `${dir}/url.curl`, { STUB_BODY: '' }).status).toBe(0);
    expect(now()).toBe('');
  });

  it('file: an empty or missing source keeps the file', () => {
    const script = path.join(dir, 'resolve-secret');
    fs.writeFileSync(path.join(dir, 'source'), 'kept\n');
    expect(resolve(script, 'file', `${dir}/source`, {}).status).toBe(0);
    fs.writeFileSync(path.join(dir, 'source'), '');
    expect(resolve(script, 'file', `${dir}/source`, {}).status).toBe(1);
    expect(resolve(script, 'file', `${dir}/missing`, {}).status).toBe(1);
    expect(now()).toBe('kept\n');
  });
});
