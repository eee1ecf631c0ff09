/**
 * Key rotation through a diff-driven deploy (issue 46): a deploy that copies and reloads only the nodes whose files
 * changed must reload the rotated node too, so the node's own artefacts change when its key does.
 */
import { generateKeyPair, planWireguardMesh, planWireguardOverlayNode, validateWireguardOverlayNode, WireguardMeshProps } from '../../src';
import { renderHostArtefacts } from '../../src/host/artefacts';
import { siteA, threeNodeMesh } from '../helpers/fixtures';

const NODES = ['site-a', 'site-b', 'site-c'];
/** Every file of each node's plan, by node: what a diff-driven deploy compares. */
const filesOf = (mesh: WireguardMeshProps) => Object.fromEntries(NODES.map((n) => [n, Object.fromEntries(planWireguardMesh(mesh).nodes[n].host.files.map((f) => [f.path, f.content]))]));
const changed = (before: WireguardMeshProps, after: WireguardMeshProps) => {
  const a = filesOf(before);
  const b = filesOf(after);
  return NODES.filter((n) => JSON.stringify(a[n]) !== JSON.stringify(b[n]));
};
const rotated = (i: number): WireguardMeshProps => {
  const mesh = threeNodeMesh();
  return { ...mesh, nodes: mesh.nodes.map((n, j) => (j === i ? { ...n, publicKey: generateKeyPair().publicKey } : n)) };
};

describe('a rotated key changes the rotated node\'s own files, so a diff-driven deploy reloads it', () => {
  it.each([0, 1, 2])('rotating nodes[%i]\'s key changes every node\'s files, its own included', (i) => {
    expect(changed(threeNodeMesh(), rotated(i))).toEqual(NODES);
  });
  it('hub and spoke: rotating a spoke\'s key changes the spoke and the hub, not the other spoke', () => {
    const hub = (m: WireguardMeshProps): WireguardMeshProps => ({ ...m, topology: { hub: 'site-a' } });
    expect(changed(hub(threeNodeMesh()), hub(rotated(1)))).toEqual(['site-a', 'site-b']);
  });
  it('the rotated node\'s wg0.conf and its user-data name its new public key', () => {
    const after = rotated(1);
    const plan = planWireguardMesh(after).nodes['site-b'];
    const conf = plan.host.files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;
    expect(conf.split('\n').slice(0, 3)).toEqual(['# wg0 on site-b: written by tunnelwright', `# public key: ${after.nodes[1].publicKey}`, '[Interface]']);
    expect(renderHostArtefacts(plan.host).cloudConfig).toContain(after.nodes[1].publicKey);
  });
  it('control: a change that touches no key leaves every file as it was', () => {
    expect(changed(threeNodeMesh(), threeNodeMesh())).toEqual([]);
  });
});

describe('WireguardOverlayNode: an interface\'s own publicKey', () => {
  const pair = generateKeyPair();
  const other = generateKeyPair();
  const withKey = (extra: Record<string, unknown>) => ({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], ...extra }] });
  it('is recorded in its config', () => {
    const conf = planWireguardOverlayNode(withKey({ publicKey: pair.publicKey })).hosts[0].files.find((f) => f.path === '/etc/wireguard/wg0.conf')!.content;
    expect(conf).toContain(`\n# public key: ${pair.publicKey}\n[Interface]\n`);
  });
  it.each<[string, Record<string, unknown>, string[]]>([
    ['a value that is no key', { publicKey: 'not-a-key' }, ['wireguard[0].publicKey key']],
    ['the public key of another private key than the inline one', { privateKeyFrom: undefined, privateKey: pair.privateKey, publicKey: other.publicKey }, ['wireguard[0].publicKey key-pair']],
    ['control: the inline private key\'s own public key', { privateKeyFrom: undefined, privateKey: pair.privateKey, publicKey: pair.publicKey }, []],
  ])('refuses %s', (_n, extra, expected) => {
    const problems = validateWireguardOverlayNode(withKey(extra));
    expect(problems.map((p) => `${p.path} ${p.code}`)).toEqual(expected);
    for (const p of problems) expect(p.message).not.toContain(other.publicKey);
  });
});
