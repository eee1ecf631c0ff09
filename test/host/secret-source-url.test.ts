/**
 * A secret source URL is written into the host's user-data and Ignition config (issue 46), which a cloud's metadata
 * service serves to any process on the node: a URL that carries a credential is refused, saying where to put it.
 */
import { planWireguardOverlayNode, validateWireguardMesh, validateWireguardOverlayNode, WireguardOverlayNodeProps } from '../../src';
import { renderHostArtefacts } from '../../src/host/artefacts';
import { siteA, threeNodeMesh } from '../helpers/fixtures';

const withUrl = (url: string): WireguardOverlayNodeProps => ({ ...siteA(), wireguard: [{ ...siteA().wireguard[0], privateKeyFrom: { url } }] });
const SECRET = 's3cr3t-Value-9f8e7d';

describe('a secret source URL that carries a credential', () => {
  it.each<[string, string, string]>([
    ['user and password', `https://wg:${SECRET}@vault.example.test/v1/wg0`, 'user information (user:password@)'],
    ['a user alone (a token as user name)', `https://${SECRET}@vault.example.test/v1/wg0`, 'user information (user:password@)'],
    ['?token=', `https://vault.example.test/v1/wg0?token=${SECRET}`, 'the query parameter "token"'],
    ['?access_token=', `https://vault.example.test/v1/wg0?v=2&access_token=${SECRET}`, 'the query parameter "access_token"'],
    ['an S3 presigned URL', `https://bucket.s3.example.test/wg0?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA&X-Amz-Signature=${SECRET}`, 'the query parameter "X-Amz-Credential"'],
    ['an Azure SAS', `https://acct.blob.example.test/keys/wg0?sv=2022-11-02&sp=r&sig=${SECRET}`, 'the query parameter "sig"'],
    ['?api_key=', `https://keys.example.test/wg0?api_key=${SECRET}`, 'the query parameter "api_key"'],
  ])('is refused: %s, naming what without showing the URL', (_n, url, what) => {
    const problems = validateWireguardOverlayNode(withUrl(url));
    expect(problems.map((p) => `${p.path} ${p.code}`)).toEqual(['wireguard[0].privateKeyFrom.url url-credential']);
    expect(problems[0].message).toContain(`(${what}; the URL is not shown)`);
    expect(problems[0].message).toContain('use { file }');
    expect(JSON.stringify(problems)).not.toContain(SECRET);
  });

  it('is refused in a mesh and in k0s\'s join token too', () => {
    const mesh = threeNodeMesh();
    const problems = validateWireguardMesh({ ...mesh, nodes: mesh.nodes.map((n, i) => (i === 2 ? { ...n, privateKeyFrom: { url: `https://vault.example.test/v1/wg?token=${SECRET}` }, installK0s: { tokenFrom: { url: `https://u:${SECRET}@vault.example.test/k0s` } } } : n)) });
    expect(problems.map((p) => `${p.path} ${p.code}`)).toEqual(['nodes[2].installK0s.tokenFrom.url url-credential', 'nodes[2].privateKeyFrom.url url-credential']);
  });

  it.each([
    'https://vault.example.test/v1/wg0',
    'https://vault.example.test/v1/wg0?version=2&format=raw',
    'https://keys.example.test/wg0?key=wg0-private',
  ])('control: %s, without a credential, is accepted, and the user-data carries it (what the metadata service serves)', (url) => {
    expect(validateWireguardOverlayNode(withUrl(url))).toEqual([]);
    const artefacts = renderHostArtefacts(planWireguardOverlayNode(withUrl(url)).hosts[0]);
    expect(artefacts.cloudConfig).toContain(url);
  });
});
