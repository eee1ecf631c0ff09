/**
 * The kubectl stand-in of test/helpers/host-tools answers `label` as the real kubectl does: the same sequence of
 * label calls run through both, the real one on a Node manifest offline (`--local -f node.yaml -o yaml`, which runs
 * the same checks before it would send a patch: kubectl/pkg/cmd/label/label.go parseLabels and the overwrite check),
 * each call's exit status and the labels it leaves compared. The ip and nft stand-ins' refusals (a duplicate `ip rule
 * add`: "File exists"; `nft list table` / `add element` on a table not loaded; `nft -f` on a missing file) were
 * checked against iproute2 6.1 and nftables 1.0.6 in a network namespace; their answers are written in host-tools.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { hostTools } from './helpers/host-tools';
import { describeWithTools, run, tmpdir } from './system/tools';

const KEY = 'tunnelwright.dev/egress-uplink';
describeWithTools('the kubectl stand-in answers label as kubectl does', ['kubectl'], () => {
  // One sequence: each step's status depends on the labels the steps before left.
  const steps: [string, string[]][] = [
    ['a new label', [`${KEY}=10.8.0.2-12`]],
    ['the same value again, without --overwrite', [`${KEY}=10.8.0.2-12`]],
    ['another value without --overwrite', [`${KEY}=10.8.0.6-13`]],
    ['another value with --overwrite', ['--overwrite', `${KEY}=10.8.0.6-13`]],
    ['the empty value without --overwrite', [`${KEY}=`]],
    ['a value with a colon', ['--overwrite', `${KEY}=10.8.0.6:13`]],
    ['a value of 64 characters', ['--overwrite', `${KEY}=${'a'.repeat(64)}`]],
    ['a value ending in a dash', ['--overwrite', `${KEY}=10.8.0.6-`]],
    ['a request timeout beside the label', ['--overwrite', '--request-timeout=10s', `${KEY}=10.8.0.10-14`]],
    ['the label removed', [`${KEY}-`]],
    ['a label removed that is not there', [`${KEY}-`]],
  ];

  it('each call\'s status and the labels left, step by step', () => {
    const dir = tmpdir('tw-kubectl-');
    const tools = hostTools();
    try {
      const node = path.join(dir, 'node.yaml');
      fs.writeFileSync(node, stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'gw-1', labels: { 'kubernetes.io/hostname': 'gw-1' } } }));
      const seen = steps.map(([what, args]) => {
        const real = run('kubectl', ['label', '--local', '-f', node, '-o', 'yaml', ...args]);
        if (real.status === 0) fs.writeFileSync(node, real.stdout);
        const stand = tools.run(`kubectl label node gw-1 ${args.map((a) => `'${a}'`).join(' ')}`);
        const labels = (parse(fs.readFileSync(node, 'utf8')) as { metadata: { labels?: Record<string, string> } }).metadata.labels ?? {};
        return {
          what,
          real: { status: real.status, label: labels[KEY] },
          standIn: { status: stand.status, label: tools.labels('node', 'gw-1').find((l) => l.startsWith(`${KEY}=`))?.slice(KEY.length + 1) },
        };
      });
      for (const s of seen) expect({ what: s.what, ...s.standIn }).toEqual({ what: s.what, ...s.real });
      // The sequence reaches both answers: refusals and changes.
      expect(seen.filter((s) => s.real.status !== 0).length).toBe(5);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(tools.dir, { recursive: true, force: true });
    }
  });
});
