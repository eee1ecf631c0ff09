import { HostFile, HostPlan, mergeHostPlans, Problem, wireguardConfigs } from '../../src';
import { mergedFrom } from '../../src/host/host-plan';
import { hostPlan as plan } from '../helpers/fixtures';

/**
 * Two constructs on one machine: their host plans merge into the one user-data the machine boots with. A file,
 * unit or drop-in given twice alike is written once; given twice differently it is refused, since a machine takes
 * one version of a file. A unit one construct only enables and another writes is written and enabled.
 */
const file = (f: Partial<HostFile> = {}): HostFile => ({ path: '/etc/x', mode: 0o644, owner: 'root:root', content: 'x\n', ...f });
const conflict = (path: string, message: string): Problem => ({ path, code: 'host-file-conflict', message });

describe('merging host plans', () => {
  it.each<[string, HostPlan[], Partial<HostPlan>[], Problem[]]>([
    ['the same file from two constructs is written once', [plan({ files: [file()] }), plan({ files: [file()] })], [{ files: [file()] }], []],
    ['a file with another mode is refused', [plan({ files: [file()] }), plan({ files: [file({ mode: 0o600 })] })], [{ files: [file()] }],
      [conflict('b:/etc/x', 'node "n1": /etc/x is also written by a with different content; one machine takes one version of a file')]],
    ['a file with another owner is refused', [plan({ files: [file()] }), plan({ files: [file({ owner: 'nobody:nogroup' })] })], [{ files: [file()] }],
      [conflict('b:/etc/x', 'node "n1": /etc/x is also written by a with different content; one machine takes one version of a file')]],
    ['a file with other content is refused', [plan({ files: [file()] }), plan({ files: [file({ content: 'y\n' })] })], [{ files: [file()] }],
      [conflict('b:/etc/x', 'node "n1": /etc/x is also written by a with different content; one machine takes one version of a file')]],
    ['a unit only enabled by one and written by the other is written and enabled',
      [plan({ units: [{ name: 'x.service', enabled: true }] }), plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] })],
      [{ units: [{ name: 'x.service', content: '[Unit]\n', enabled: true }] }], []],
    ['a unit written by one and only enabled by the other is written and enabled',
      [plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] }), plan({ units: [{ name: 'x.service', enabled: true }] })],
      [{ units: [{ name: 'x.service', content: '[Unit]\n', enabled: true }] }], []],
    ['the unit enabled is the one named, among others',
      [plan({ units: [{ name: 'a.service', content: '[Unit]\n' }, { name: 'x.service', content: '[Service]\n' }] }), plan({ units: [{ name: 'x.service', enabled: true }] })],
      [{ units: [{ name: 'a.service', content: '[Unit]\n' }, { name: 'x.service', content: '[Service]\n', enabled: true }] }], []],
    ['after an enable and a write, a third version is refused, naming the writer',
      [plan({ units: [{ name: 'x.service', enabled: true }] }), plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] }), plan({ units: [{ name: 'x.service', content: '[Service]\n' }] })],
      [{ units: [{ name: 'x.service', content: '[Unit]\n', enabled: true }] }], [conflict('hosts[2]:x.service', 'node "n1": unit x.service is also written by b with different content')]],
    ['a unit written twice alike, enabled by the second, is enabled',
      [plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] }), plan({ units: [{ name: 'x.service', content: '[Unit]\n', enabled: true }] })],
      [{ units: [{ name: 'x.service', content: '[Unit]\n', enabled: true }] }], []],
    ['a unit written twice alike, enabled by neither, stays disabled',
      [plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] }), plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] })],
      [{ units: [{ name: 'x.service', content: '[Unit]\n', enabled: undefined }] }], []],
    ['a unit written twice differently is refused',
      [plan({ units: [{ name: 'x.service', content: '[Unit]\n' }] }), plan({ units: [{ name: 'x.service', content: '[Service]\n' }] })],
      [{ units: [{ name: 'x.service', content: '[Unit]\n' }] }], [conflict('b:x.service', 'node "n1": unit x.service is also written by a with different content')]],
    ['a drop-in given twice alike is written once',
      [plan({ dropins: [{ unit: 'k.service', name: '10-a.conf', content: 'a' }] }), plan({ dropins: [{ unit: 'k.service', name: '10-a.conf', content: 'a' }] })],
      [{ dropins: [{ unit: 'k.service', name: '10-a.conf', content: 'a' }] }], []],
    ['a drop-in given twice differently is refused',
      [plan({ dropins: [{ unit: 'k.service', name: '10-a.conf', content: 'a' }] }), plan({ dropins: [{ unit: 'k.service', name: '10-a.conf', content: 'b' }] })],
      [{ dropins: [{ unit: 'k.service', name: '10-a.conf', content: 'a' }] }], [conflict('b:k.service/10-a.conf', 'node "n1": drop-in k.service/10-a.conf is also written by a with different content')]],
    ['commands and packages once each, in first-seen order',
      [plan({ commands: ['a', 'b'], packages: ['p'] }), plan({ commands: ['b', 'c'], packages: ['q', 'p'] })],
      [{ commands: ['a', 'b', 'c'], packages: ['p', 'q'] }], []],
    ['two machines stay two', [plan({ commands: ['a'] }), plan({ node: 'n2', commands: ['b'] })], [{ commands: ['a'] }, { node: 'n2', commands: ['b'] }], []],
  ])('%s', (_n, plans, expected, problems) => {
    const merged = mergeHostPlans(plans, ['a', 'b']);
    expect(merged.problems).toEqual(problems);
    expect(merged.plans).toEqual(expected.map((e) => plan(e)));
  });

  it('names an unnamed contribution by its index', () => {
    expect(mergeHostPlans([plan({ files: [file()] }), plan({ files: [file({ content: 'y' })] })]).problems).toEqual([
      conflict('hosts[1]:/etc/x', 'node "n1": /etc/x is also written by hosts[0] with different content; one machine takes one version of a file'),
    ]);
  });
});

describe('a node one plan makes alone', () => {
  // Issue 30: the merged copy names the plan it was made from, so a rendering of that plan (the user-data size
  // warning's) can be written while their contents agree; the copy's lists are its own, so changing them never reaches
  // the construct.
  it('is a copy with lists of its own, that names the plan it was made from', () => {
    const alone = plan({ files: [file()], units: [{ name: 'x.service', content: '[Unit]\n', enabled: true }], commands: ['true'], packages: ['nftables'] });
    const other = plan({ node: 'n2', files: [file()] });
    const merged = mergeHostPlans([alone, other]);
    expect(merged.plans).toEqual([alone, other]);
    expect(merged.plans[0]).not.toBe(alone);
    expect(merged.plans[0].files).not.toBe(alone.files);
    expect(mergedFrom(merged.plans[0])).toBe(alone);
    expect(mergedFrom(merged.plans[1])).toBe(other);
  });

  it('names none when two plans make the node, even alike (the control)', () => {
    const a = plan({ files: [file()] });
    const [merged] = mergeHostPlans([a, plan({ files: [file()] })]).plans;
    expect(merged).toEqual(a);
    expect(mergedFrom(merged)).toBeUndefined();
  });
});

describe('the wg-quick configs of a host plan (the day-2 copy to /etc/wireguard/)', () => {
  it('takes the files directly in /etc/wireguard/ named *.conf, with their secrecy, and nothing else', () => {
    const file = (path: string, secret?: boolean): HostFile => ({ path, mode: 0o600, owner: 'root:root', content: `# ${path}\n`, ...(secret === undefined ? {} : { secret }) });
    const configs = wireguardConfigs(plan({
      files: [file('/etc/wireguard/wg0.conf', true), file('/srv/etc/wireguard/wg1.conf'), file('/etc/wireguard/keys/wg2.conf'), file('/etc/wireguard/wg3.conf.bak'), file('/etc/wireguard/wg4.conf')],
    }));
    expect(configs).toEqual([
      { name: 'wg0.conf', content: '# /etc/wireguard/wg0.conf\n', secret: true },
      { name: 'wg4.conf', content: '# /etc/wireguard/wg4.conf\n', secret: false },
    ]);
  });
});
