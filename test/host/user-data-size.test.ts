import { HostPlan, mergeHostPlans, planWireguardOverlayNode, renderHostArtefacts, WireguardOverlayNodeProps } from '../../src';
import { renderedCloudConfig, userDataSizeWarnings } from '../../src/host/artefacts';
import * as cloudInit from '../../src/host/cloud-init';
import { hostPlan, numberedKey, siteA } from '../helpers/fixtures';

/**
 * The user-data-size warning matches the user-data a cloud receives: it is given exactly when the rendered
 * cloud-config is over 16 KiB, also when the files alone are just under it and the YAML around them tips it over.
 */
function nodeWithPeers(count: number): WireguardOverlayNodeProps {
  const props = siteA();
  const peers = Array.from({ length: count }, (_, i) => ({
    publicKey: numberedKey(i), endpoint: `198.51.100.${(i % 250) + 1}:51820`, allowedIPs: [`10.10.${Math.floor(i / 250) + 1}.${(i % 250) + 1}/32`],
  }));
  return { ...props, wireguard: [{ ...props.wireguard[0], address: '10.10.0.1/16', peers }] };
}

// Computed inside each test, not in the describe body: code run while tests are collected is covered by no test.
function sizes() {
  return Array.from({ length: 60 }, (_, i) => 5 + i).map((count) => {
    const plan = planWireguardOverlayNode(nodeWithPeers(count));
    const warning = plan.warnings.find((w) => w.code === 'user-data-size');
    return { count, bytes: Buffer.byteLength(renderHostArtefacts(plan.hosts[0]).cloudConfig), warned: warning !== undefined, figure: Number(/\((\d+) bytes or more\)/.exec(warning?.message ?? '')?.[1]) };
  });
}

describe('the user-data size warning', () => {
  it('the range crosses 16 KiB (the cases below test both sides)', () => {
    const all = sizes();
    expect(all.some((s) => s.bytes <= 16384)).toBe(true);
    expect(all.some((s) => s.bytes > 16384)).toBe(true);
  });

  it('is given exactly when the rendered cloud-config is over 16 KiB', () => {
    expect(sizes().filter((s) => s.warned !== s.bytes > 16384)).toEqual([]);
  });

  it('gives a figure over 16 KiB and never over the real size: exact when the YAML around the files tips it over', () => {
    const warned = sizes().filter((s) => s.warned);
    expect(warned.filter((s) => !(s.figure > 16384 && s.figure <= s.bytes))).toEqual([]);
    expect(warned[0].figure).toBe(warned[0].bytes);
  });
});

describe('the user-data size warning at exactly 16 KiB', () => {
  const planOf = (n: number) => hostPlan({ files: [{ path: '/etc/x', mode: 0o644, owner: 'root:root', content: `${'x'.repeat(n - 1)}\n` }] });
  const bytes = (n: number) => Buffer.byteLength(renderHostArtefacts(planOf(n)).cloudConfig);

  it('is silent at 16384 bytes and given at 16385 (over, not at)', () => {
    const n = Array.from({ length: 400 }, (_, i) => 16384 - i).find((k) => bytes(k) === 16384)!;
    expect(bytes(n)).toBe(16384);
    expect(userDataSizeWarnings(planOf(n), 'p')).toEqual([]);
    expect(userDataSizeWarnings(planOf(n + 1), 'p').map((w) => w.message.split(': many')[0])).toEqual(['the cloud-config of node "n1" is over 16 KiB (16385 bytes or more)']);
  });

  it('measures the cloud-config when the files alone are exactly 16 KiB (the YAML around them tips it over)', () => {
    expect(userDataSizeWarnings(planOf(16384), 'p').map((w) => w.message.split(': many')[0])).toEqual([`the cloud-config of node "n1" is over 16 KiB (${bytes(16384)} bytes or more)`]);
  });
});

describe('the cloud-config measured for the warning is the one written (issue 30: rendered once per plan)', () => {
  const planOf = () => hostPlan({ files: [{ path: '/etc/x', mode: 0o644, owner: 'root:root', content: 'x\n' }] });

  it('renders once for the warning and the artefacts of the same plan, and the text is the same', () => {
    const render = jest.spyOn(cloudInit, 'renderCloudConfig');
    const plan = planOf();
    expect(userDataSizeWarnings(plan, 'p')).toEqual([]);
    const text = renderHostArtefacts(plan).cloudConfig;
    expect(render).toHaveBeenCalledTimes(1);
    expect(text).toBe(cloudInit.renderCloudConfig(planOf()));
  });

  it('renders again once the plan\'s lists changed, and the text shows the change', () => {
    const render = jest.spyOn(cloudInit, 'renderCloudConfig');
    const plan = planOf();
    userDataSizeWarnings(plan, 'p');
    plan.commands.push('echo added');
    expect(renderHostArtefacts(plan).cloudConfig).toContain('echo added');
    expect(render).toHaveBeenCalledTimes(2);
  });

  it('a merged copy of the plan, unchanged, reads the same rendering; with another plan on the node it renders its own', () => {
    const render = jest.spyOn(cloudInit, 'renderCloudConfig');
    const plan = planOf();
    userDataSizeWarnings(plan, 'p');
    const [alone] = mergeHostPlans([plan]).plans;
    expect(renderedCloudConfig(alone)).toBe(renderHostArtefacts(plan).cloudConfig);
    const [both] = mergeHostPlans([plan, hostPlan({ commands: ['true'] })]).plans;
    expect(renderedCloudConfig(both)).toBeUndefined();
    expect(renderHostArtefacts(both).cloudConfig).toContain('true');
    expect(render).toHaveBeenCalledTimes(2);
  });

  it.each<[string, (p: HostPlan) => void, string]>([
    ['a file\'s content replaced in place', (p) => Object.assign(p.files[0], { content: 'edited in place\n' }), 'edited in place'],
    ['a unit enabled in place', (p) => Object.assign(p.units[0], { enabled: true }), 'enable'],
    ['a package added', (p) => p.packages.push('wireguard-tools'), 'wireguard-tools'],
  ])('the App\'s lookup gives nothing once the plan changed: %s', (_name, change, shows) => {
    const plan = hostPlan({ files: [{ path: '/etc/x', mode: 0o644, owner: 'root:root', content: 'x\n' }], units: [{ name: 'x.service', content: '[Unit]\n' }] });
    userDataSizeWarnings(plan, 'p');
    expect(renderedCloudConfig(plan)).toBeDefined();
    change(plan);
    expect(renderedCloudConfig(plan)).toBeUndefined();
    const [copy] = mergeHostPlans([plan]).plans;
    expect(renderedCloudConfig(copy)).toBeUndefined();
    expect(renderHostArtefacts(plan).cloudConfig).toContain(shows);
  });

  it('a merged copy the merge changed (a command given twice) is rendered again', () => {
    const plan = hostPlan({ commands: ['true', 'true'] });
    userDataSizeWarnings(plan, 'p');
    const [copy] = mergeHostPlans([plan]).plans;
    expect(copy.commands).toEqual(['true']);
    expect(renderedCloudConfig(copy)).toBeUndefined();
  });

  it('renders again for another plan object with the same content (the control: the cache is per plan)', () => {
    const render = jest.spyOn(cloudInit, 'renderCloudConfig');
    userDataSizeWarnings(planOf(), 'p');
    void renderHostArtefacts(planOf()).cloudConfig;
    expect(render).toHaveBeenCalledTimes(2);
  });
});
