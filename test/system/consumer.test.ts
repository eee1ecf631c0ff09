import * as fs from 'node:fs';
import * as path from 'node:path';
import { OLDEST_PEERS, PEERS } from '../../projenrc/peers';
import { describeWithTools, must, run, tmpdir } from './tools';

const ROOT = path.resolve(__dirname, '../..');
const TEMPLATE = path.join(ROOT, 'node_modules/cdk8s-cli/templates/typescript-app');

/**
 * What a new user does: `npm pack`, then a fresh cdk8s app made from cdk8s-cli's own TypeScript template (its
 * tsconfig unchanged: no skipLibCheck, no esModuleInterop) and a Pulumi program, installing the tarball beside the
 * oldest and the newest peer versions in range. No ERESOLVE, no tsc error, `cdk8s synth` writes the manifests and the
 * host artefacts, and the Pulumi program registers its resources under mocks.
 */
describeWithTools('the packed package in a fresh cdk8s app and Pulumi program, at both ends of the peer ranges', ['npm', 'node', TEMPLATE], () => {
  const dir = tmpdir('tw-consumer-');
  let tarball = '';

  beforeAll(() => {
    const packed = must(run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT, timeout: 300_000 }), 'npm pack');
    tarball = path.join(dir, packed.stdout.trim().split('\n').pop()!);
  }, 300_000);

  const template = JSON.parse(fs.readFileSync(path.join(TEMPLATE, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };

  describe.each([['oldest', OLDEST_PEERS], ['newest', PEERS]] as const)('with the %s peers', (label, peers) => {
    const project = path.join(dir, label);
    const npm = (args: string[], timeout = 600_000) => run('npm', args, { cwd: project, timeout, env: { CDK8S_CHECK_UPGRADE: 'false', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' } });

    beforeAll(() => {
      fs.mkdirSync(project, { recursive: true });
      fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({
        name: `consumer-${label}`, version: '1.0.0', private: true,
        dependencies: { 'tunnelwright': `file:${tarball}`, ...peers },
        devDependencies: { '@types/node': template.devDependencies['@types/node'], 'typescript': '5.9.3', 'ts-node': template.devDependencies['ts-node'] },
      }, undefined, 2));
      fs.copyFileSync(path.join(TEMPLATE, 'tsconfig.json'), path.join(project, 'tsconfig.json'));
      fs.copyFileSync(path.join(TEMPLATE, 'cdk8s.yaml'), path.join(project, 'cdk8s.yaml'));
      for (const f of ['main.ts', 'pulumi.ts']) fs.copyFileSync(path.join(ROOT, 'test/consumer', f), path.join(project, f));
    });

    it('installs without a peer conflict', () => {
      const r = npm(['install', '--no-audit', '--no-fund']);
      expect(r.output).not.toMatch(/ERESOLVE|Conflicting peer dependency/);
      expect(r.status).toBe(0);
    }, 600_000);

    it('type-checks under cdk8s-cli\'s template tsconfig, unchanged', () => {
      const r = run(path.join(project, 'node_modules/.bin/tsc'), ['--build'], { cwd: project, timeout: 300_000 });
      expect(r.output).toBe('');
      expect(r.status).toBe(0);
    }, 300_000);

    it('cdk8s synth writes the manifests and each node\'s host artefacts', () => {
      fs.rmSync(path.join(project, 'dist'), { recursive: true, force: true });
      const r = run(process.execPath, [path.join(ROOT, 'node_modules/cdk8s-cli/bin/cdk8s'), 'synth'], { cwd: project, timeout: 300_000, env: { CDK8S_CHECK_UPGRADE: 'false' } });
      expect({ status: r.status, output: r.status === 0 ? '' : r.output }).toEqual({ status: 0, output: '' });
      const files = fs.readdirSync(path.join(project, 'dist'), { recursive: true }).map(String).sort();
      expect(files).toEqual(expect.arrayContaining(['media.k8s.yaml', 'hosts/home-cp1/user-data', 'hosts/home-cp1/ignition.json', 'hosts/office-w2/wg0.conf']));
      // The overlay chart holds only host artefacts: it writes no empty manifest.
      expect(files).not.toContain('overlay.k8s.yaml');
    }, 300_000);

    it('runs a Pulumi program under mocks', () => {
      const r = run(process.execPath, ['pulumi.js'], { cwd: project, timeout: 120_000 });
      expect(r.status).toBe(0);
      // Only the library's warnings (pulumi.log.warn) on stderr: the routed namespace's Pod Security level, k0s's node IP.
      expect(r.stderr.split('\n').filter((l) => l && !/^warning: |^nodes\[\d+\]\.installK0s: /.test(l))).toEqual([]);
      expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ deployment: true });
    }, 120_000);
  });
});
