import { KillSwitch as Cdk8sKillSwitch } from '../../src/cdk8s';
import { qbittorrentKillSwitch } from '../helpers/fixtures';
import { cdk8sObjects, pulumiObjects, typeToken } from '../helpers/parity';
import { recordResources } from '../helpers/pulumi';

const seen = recordResources();
const tw = require('../../src/pulumi') as typeof import('../../src/pulumi');

beforeEach(() => tw.resetRegistry());

describe('cdk8s and Pulumi register the same Kubernetes objects', () => {
  it.each(['kubernetes', 'cilium'] as const)('KillSwitch (%s)', async (flavor) => {
    const props = { ...qbittorrentKillSwitch(), flavor };
    const fromCdk8s = cdk8sObjects((chart) => new Cdk8sKillSwitch(chart, 'qb', props), 'ignored-chart-namespace');
    const fromPulumi = await pulumiObjects(seen, () => new tw.KillSwitch('qb', props));
    expect(fromPulumi.map((r) => r.inputs)).toEqual(fromCdk8s);
    expect(fromPulumi.map((r) => r.type)).toEqual(fromCdk8s.map(typeToken));
    expect(fromPulumi.map((r) => r.name)).toEqual([`qb-${String(fromCdk8s[0].kind).toLowerCase()}-media-qbittorrent-kill-switch`]);
  });
});
