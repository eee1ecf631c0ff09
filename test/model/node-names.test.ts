import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Chart } from 'cdk8s';
import { planHostKillSwitch, Problem, validateEgressSteering, validateKillSwitch, validateWireguardMesh, validateWireguardOverlayNode, ValidationError } from '../../src';
import { App, WireguardOverlayNode } from '../../src/cdk8s';
import { prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh } from '../helpers/fixtures';
import { mutated } from '../helpers/mutable';
import { shown } from '../helpers/shown';
import { thrown } from '../helpers/thrown';
import { expectWarnings } from '../helpers/stderr-guard';

/**
 * A node name is a Kubernetes node name (a DNS-1123 subdomain, at most 253 characters) and a folder the App writes
 * (`hosts/<node>/`). Without the limit a 300-character name validated and the synth failed on disk (ENAMETOOLONG).
 */
const LONGEST = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
const TOO_LONG = `${LONGEST}e`;
const WAY_TOO_LONG = 'n'.repeat(300);
const tooLong = (p: string, name: string): Problem => ({ path: p, code: 'too_big', message: `expected a node name of at most 253 characters (a DNS subdomain, as Kubernetes takes it), received ${shown(name)}` });

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'node names the App writes the folder of the longest name': ['lab/node: wireguard[0].nodeAddress'],
});

describe('node names', () => {
  it('are 253 characters long at most', () => {
    expect(LONGEST).toHaveLength(253);
  });

  const cases: [string, (name: string) => Problem[], string][] = [
    ['WireguardOverlayNode node', (name) => validateWireguardOverlayNode(mutated(siteA(), (p) => { p.node = name; })), 'node'],
    ['WireguardMesh nodes[1].node', (name) => validateWireguardMesh(mutated(threeNodeMesh(), (p) => { p.nodes[1].node = name; })), 'nodes[1].node'],
    ['KillSwitch host.node', (name) => validateKillSwitch(mutated(qbittorrentKillSwitch(), (p) => { p.host!.node = name; })), 'host.node'],
    ['planHostKillSwitch node', (name) => {
      const e = thrown(() => planHostKillSwitch({ ...qbittorrentKillSwitch().host!, node: name }));
      return e instanceof ValidationError ? [...e.problems] : [];
    }, 'node'],
  ];

  it.each(cases)('%s: the longest name is taken, one character more is refused with its path', (_n, validate, p) => {
    expect(validate(LONGEST)).toEqual([]);
    expect(validate(TOO_LONG)).toEqual([tooLong(p, TOO_LONG)]);
    expect(validate(WAY_TOO_LONG)).toEqual([tooLong(p, WAY_TOO_LONG)]);
  });

  it('EgressSteering gatewayNode is a kubernetes.io/hostname label value: 63 characters at most', () => {
    const validate = (name: string) => validateEgressSteering(mutated(prodSteering(), (p) => { p.gatewayNode = name; }));
    expect(validate('g'.repeat(63))).toEqual([]);
    expect(validate('g'.repeat(64))).toEqual([{
      path: 'gatewayNode', code: 'too_big',
      message: `expected at most 63 characters: the policy selects the node by its kubernetes.io/hostname label, and a label value is at most 63, received "${'g'.repeat(64)}"`,
    }]);
  });

  it('the App writes the folder of the longest name', () => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-names-'));
    try {
      const app = new App({ outdir });
      new WireguardOverlayNode(new Chart(app, 'lab'), 'node', mutated(siteA(), (p) => { p.node = LONGEST; }));
      app.synth();
      expect(fs.readdirSync(path.join(outdir, 'hosts'))).toEqual([LONGEST]);
      expect(fs.readdirSync(path.join(outdir, 'hosts', LONGEST)).sort()).toEqual(['ignition.json', 'user-data', 'wg0.conf']);
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true });
    }
  });
});
