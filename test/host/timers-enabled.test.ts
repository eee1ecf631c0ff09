import { parse } from 'yaml';
import { EgressSteeringProps, planEgressSteering, planKillSwitch, planWireguardMesh, planWireguardOverlayNode, renderHostArtefacts } from '../../src';
import type { HostPlan } from '../../src/types';
import { prodSteering, qbittorrentKillSwitch, siteA, threeNodeMesh, wireguardSteering } from '../helpers/fixtures';

/**
 * A systemd timer written but not enabled never starts: nothing runs its service, so what the service does (the
 * handshake metric VPNTunnelHandshakeStale reads, the uplink label Cilium re-selects by) never happens and the alert
 * cannot fire. What a node enables is what its artefacts say: cloud-init's `systemctl enable --now` list, and
 * Ignition's `enabled: true` (which enables by the unit's [Install] section: systemd.unit(5), "WantedBy="). Asserted
 * here for every timer of every host plan the constructs write, and by name for the ones EgressSteering must have.
 */
interface Enabled {
  timers: string[];
  /** Enabled by cloud-init (`systemctl enable --now …` in runcmd). */
  cloudInit: string[];
  /** Enabled by Ignition. */
  ignition: string[];
  /** Timers whose unit file has `WantedBy=timers.target` in [Install] (what enabling links it into). */
  installed: string[];
  /** Timers whose Unit= is a service the plan writes. */
  triggersWritten: string[];
}

function enabledOn(host: HostPlan): Enabled {
  const a = renderHostArtefacts(host);
  const runcmd = ((parse(a.cloudConfig.replace(/^#cloud-config\n/, '')) as { runcmd?: (string | string[])[] }).runcmd ?? []);
  const enable = runcmd.filter((c): c is string[] => Array.isArray(c) && c[0] === 'systemctl' && c[1] === 'enable');
  const timers = host.units.filter((u) => u.name.endsWith('.timer'));
  const section = (text: string, name: string) => (text.split(/^\[/m).find((s) => s.startsWith(`${name}]`)) ?? '').split('\n');
  return {
    timers: timers.map((t) => t.name),
    cloudInit: timers.filter((t) => enable.some((c) => c.slice(2).filter((w) => !w.startsWith('--')).includes(t.name))).map((t) => t.name),
    ignition: timers.filter((t) => a.ignition.systemd?.units.some((u) => u.name === t.name && u.enabled === true)).map((t) => t.name),
    installed: timers.filter((t) => section(t.content ?? '', 'Install').includes('WantedBy=timers.target')).map((t) => t.name),
    triggersWritten: timers.filter((t) => {
      const unit = section(t.content ?? '', 'Timer').find((l) => l.startsWith('Unit='))?.slice('Unit='.length) ?? t.name.replace(/\.timer$/, '.service');
      return host.units.some((u) => u.name === unit && u.content !== undefined);
    }).map((t) => t.name),
  };
}

const wgMonitored: EgressSteeringProps = { ...wireguardSteering(), monitoring: {} };

describe('every timer a node gets is enabled by both its cloud-init and its Ignition', () => {
  it.each<[string, HostPlan, string[]]>([
    ['EgressSteering, OpenVPN', planEgressSteering(prodSteering()).hosts[0], ['tunnelwright-egress-resteer.timer']],
    ['EgressSteering, WireGuard without monitoring', planEgressSteering(wireguardSteering()).hosts[0], ['tunnelwright-egress-resteer.timer']],
    ['EgressSteering, WireGuard with monitoring (the handshake metric)', planEgressSteering(wgMonitored).hosts[0], ['tunnelwright-egress-resteer.timer', 'tunnelwright-wireguard-handshake.timer']],
  ])('%s: its timers, each installed, enabled and triggering a service it writes', (_what, host, timers) => {
    const e = enabledOn(host);
    expect(e.timers.sort()).toEqual(timers);
    expect(e).toEqual({ timers: e.timers, cloudInit: e.timers, ignition: e.timers, installed: e.timers, triggersWritten: e.timers });
  });

  it.each<[string, HostPlan[]]>([
    ['WireguardOverlayNode', planWireguardOverlayNode(siteA()).hosts],
    ['WireguardMesh', Object.values(planWireguardMesh({ ...threeNodeMesh(), mtu: 1420 }).nodes).map((n) => n.host)],
    ['KillSwitch', planKillSwitch(qbittorrentKillSwitch()).hosts],
  ])('%s: any timer it writes is installed and enabled', (_what, hosts) => {
    for (const host of hosts) {
      const e = enabledOn(host);
      expect(e).toEqual({ timers: e.timers, cloudInit: e.timers, ignition: e.timers, installed: e.timers, triggersWritten: e.timers });
    }
  });

  it('control: the handshake timer written without enabled is seen as not enabled by either', () => {
    const host = planEgressSteering(wgMonitored).hosts[0];
    const disabled = { ...host, units: host.units.map((u) => (u.name === 'tunnelwright-wireguard-handshake.timer' ? { ...u, enabled: undefined } : u)) };
    const e = enabledOn(disabled);
    expect({ cloudInit: e.cloudInit, ignition: e.ignition }).toEqual({ cloudInit: ['tunnelwright-egress-resteer.timer'], ignition: ['tunnelwright-egress-resteer.timer'] });
  });
});
