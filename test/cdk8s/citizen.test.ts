import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App as Cdk8sApp, Chart, Testing } from 'cdk8s';
import { ValidationError } from '../../src';
import { App, EgressConformance, KillSwitch, VpnGateway, WireguardMesh } from '../../src/cdk8s';
import { checkIgnition } from '../../src/testing';
import { homelabConformance, KEYS, nordvpnGateway, qbittorrentKillSwitch, threeNodeMesh } from '../helpers/fixtures';
import { itWithSchemas, SCHEMA_DIR } from '../helpers/schemas';
import { thrown } from '../helpers/thrown';
import { expectWarnings } from '../helpers/stderr-guard';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'tw-citizen-'));

// The warnings each test's constructs print, by test (issue 31: a passing run prints nothing to stderr).
expectWarnings({
  'errors a user can act on checkIgnition reads the JSON text a file or an output holds': ['o/m: mtu', 'o/m: nodes[0].installK0s', 'o/m: nodes[1].installK0s', 'o/m: nodes[2].installK0s'],
  'App.synth leaves no stale output removes hosts/<node>/ of nodes no longer in the app': ['o/m: mtu', 'o/m: nodes[0].installK0s', 'o/m: nodes[1].installK0s', 'o/m: nodes[2].installK0s', 'o/m: mtu', 'o/m: nodes[0].installK0s', 'o/m: nodes[1].installK0s'],
});

describe('the invariants hold under any App (cdk8s validations)', () => {
  it.each([
    ['cdk8s\'s own App', () => new Cdk8sApp({ outdir: tmp() })],
    ['Testing.app()', () => Testing.app()],
  ])('%s refuses two gateways with one VXLAN id at synth', (_name, make) => {
    const app = make();
    const chart = new Chart(app, 'media');
    new VpnGateway(chart, 'a', nordvpnGateway());
    new VpnGateway(chart, 'b', { ...nordvpnGateway(), name: 'second', namespace: 'vpn-b', wireguardPrivateKeySecret: { name: 'other-key' } });
    expect(() => app.synth()).toThrow(/media\/b:vxlanId: VXLAN id 42 \(the default\) in cluster "default" is already claimed by media\/a:vxlanId: set a different `vxlanId`/);
  });

  it('says, under cdk8s\'s App, that host artefacts are not written and what to use', () => {
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const app = new Cdk8sApp({ outdir: tmp() });
      new WireguardMesh(new Chart(app, 'overlay'), 'mesh', threeNodeMesh());
      app.synth();
      expect(write).toHaveBeenCalledWith(expect.stringContaining('warning: overlay/mesh: its host artefacts (user-data, ignition.json) are not written under cdk8s\'s App: use App from tunnelwright/cdk8s'));
    } finally {
      write.mockRestore();
    }
  });
});

describe('two EgressConformance checks of one name', () => {
  it('are refused at synth: the second one\'s probes and script ConfigMap would replace the first\'s; distinct names pass', () => {
    const app = new App({ outdir: tmp() });
    const chart = new Chart(app, 'check');
    new EgressConformance(chart, 'a', homelabConformance());
    new EgressConformance(chart, 'b', homelabConformance());
    const problems = (thrown(() => app.synth()) as ValidationError).problems;
    expect(problems.map((p) => `${p.path} ${p.code} ${p.message.split(' in cluster')[0]}`)).toEqual([
      'Deployment media/egress-conformance-g0-vpn', 'ConfigMap media/egress-conformance-g0-vpn-vpn-route', 'NetworkPolicy media/egress-conformance-g0-vpn-vpn-kill-switch', 'Deployment media/egress-conformance-g0-direct',
      'Deployment media/egress-conformance-s0-vpn', 'Deployment media/egress-conformance-s0-direct', 'Deployment media/egress-conformance-s0-agent', 'ConfigMap media/egress-conformance',
    ].map((o) => `check/b:name claimed-twice ${o}`));
    const ok = new App({ outdir: tmp() });
    const c2 = new Chart(ok, 'check');
    new EgressConformance(c2, 'a', homelabConformance());
    new EgressConformance(c2, 'b', { ...homelabConformance(), name: 'egress-conformance-2' });
    expect(ok.checkHosts().problems).toEqual([]);
  });
});

describe('a KillSwitch and the gateway it reaches agree on the VXLAN port', () => {
  const killSwitch = () => {
    const { host: _h, ...props } = qbittorrentKillSwitch();
    return { ...props, gatewayPodLabels: { 'app.kubernetes.io/name': 'vpn-gateway' }, gatewayNamespace: 'vpn-gateway' };
  };
  it('refuses the default 4789 beside a Calico gateway (8472), and accepts the matching port', () => {
    const app = new App({ outdir: tmp() });
    const chart = new Chart(app, 'media');
    new VpnGateway(chart, 'gateway', { ...nordvpnGateway(), cni: 'calico' });
    new KillSwitch(chart, 'qbittorrent', killSwitch());
    const error = thrown(() => app.synth()) as ValidationError;
    expect(error.problems).toEqual([{ path: 'media/qbittorrent:vxlanPort', code: 'vxlan-port', message: 'VXLAN to the gateway pods is allowed on UDP 4789, but the gateway media/gateway uses 8472 (derived from its cni): set vxlanPort: 8472' }]);
    const ok = new App({ outdir: tmp() });
    const c2 = new Chart(ok, 'media');
    new VpnGateway(c2, 'gateway', { ...nordvpnGateway(), cni: 'calico' });
    new KillSwitch(c2, 'qbittorrent', { ...killSwitch(), vxlanPort: 8472 });
    expect(ok.checkHosts().problems).toEqual([]);
  });
});

describe('errors a user can act on', () => {
  it('names the construct whose props are wrong', () => {
    const chart = new Chart(new App({ outdir: tmp() }), 'media');
    expect(() => new KillSwitch(chart, 'qbittorrent', { ...qbittorrentKillSwitch(), selector: {} })).toThrow(/^invalid KillSwitch props at media\/qbittorrent:\n/);
  });

  it('prints each problem once when uncaught (the problems are not an enumerable field)', () => {
    const error = thrown(() => new KillSwitch(new Chart(new App({ outdir: tmp() }), 'media'), 'ks', { ...qbittorrentKillSwitch(), selector: {} })) as ValidationError;
    expect(Object.keys(error)).not.toContain('problems');
    expect(error.problems.length).toBeGreaterThan(0);
    const printed = require('node:util').inspect(error) as string;
    const line = `${error.problems[0].path}: ${error.problems[0].message}`;
    expect(printed.split(line).length - 1).toBe(1);
  });

  it('never echoes a key field, even a private key pasted as a public key', () => {
    const nodes = threeNodeMesh().nodes.map((n, i) => (i === 1 ? { ...n, publicKey: `${KEYS.b.privateKey}x` } : n));
    const error = thrown(() => new WireguardMesh(new Chart(new App({ outdir: tmp() }), 'o'), 'm', { ...threeNodeMesh(), nodes })) as ValidationError;
    expect(error.message).not.toContain(KEYS.b.privateKey);
    expect(error.problems.map((p) => p.path)).toEqual(['nodes[1].publicKey']);
  });

  itWithSchemas('checkIgnition reads the JSON text a file or an output holds', () => {
    const app = new App({ outdir: tmp() });
    const mesh = new WireguardMesh(new Chart(app, 'o'), 'm', threeNodeMesh());
    expect(checkIgnition(JSON.stringify(mesh.nodes['site-a'].ignition), SCHEMA_DIR)).toEqual([]);
    expect(checkIgnition('{not json', SCHEMA_DIR)[0]).toMatch(/^\(root\): expected an Ignition config \(an object, or its JSON text\), received text that is not JSON/);
  });
});

describe('App.synth leaves no stale output', () => {
  it('removes hosts/<node>/ of nodes no longer in the app', () => {
    const outdir = tmp();
    const first = new App({ outdir });
    new WireguardMesh(new Chart(first, 'o'), 'm', threeNodeMesh());
    first.synth();
    expect(fs.readdirSync(path.join(outdir, 'hosts')).sort()).toEqual(['site-a', 'site-b', 'site-c']);
    const second = new App({ outdir });
    new WireguardMesh(new Chart(second, 'o'), 'm', { ...threeNodeMesh(), nodes: threeNodeMesh().nodes.slice(0, 2).map((n) => ({ ...n, endpoint: n.endpoint ?? '198.51.100.9' })) });
    second.synth();
    expect(fs.readdirSync(path.join(outdir, 'hosts')).sort()).toEqual(['site-a', 'site-b']);
  });
});
