import type { VpnGatewaySpec } from '../../model/vpn-gateway';

/** When the port-forwarding alerts fire, and where their runbooks are. */
export interface PortForwardAlertOptions {
  /** How long the app may listen on another port than the forwarded one. @default '5m' */
  readonly mismatchFor?: string;
  /** How long no port may be forwarded. @default '15m' */
  readonly lostFor?: string;
  /** Base URL of docs/runbooks.md: each rule gets `runbook_url` `<base>#<alert, lowercase>`. @default - none */
  readonly runbookUrl?: string;
}

/**
 * Alerts on port-sync's metrics (scrape the routed pod's `port-sync` port): the app listens on another port than the
 * one forwarded for longer than a reconnect takes, or no port has been forwarded for a long time. With `app: 'command'`
 * port-sync cannot read the app's port: its `app_listen_port` is the port the command last succeeded with, so the
 * first is `VPNForwardedPortCommandFailing` instead (after `mismatchFor`), which fires while the command keeps
 * failing or timing out with the forwarded port; an app that forgets a port the command set is not seen. The spec is
 * one `checkPortForwardAlerts` accepted (slskd has no port-sync to read).
 */
export function renderPortForwardAlertGroups(f: VpnGatewaySpec, opts: PortForwardAlertOptions = {}): { name: string; rules: Record<string, unknown>[] }[] {
  const app = f.portForwarding?.app ?? 'app';
  const rules: { alert: keyof typeof PORT_FORWARD_RUNBOOKS; expr: string; for: string; labels: Record<string, string>; annotations: Record<string, string> }[] = [
    ...(app === 'command' ? [{
      // app_listen_port is the port the command last succeeded with (0: none yet), and the command is stopped after
      // COMMAND_TIMEOUT (port-sync.sh): a command that keeps failing or hanging leaves it behind the forwarded port.
      alert: 'VPNForwardedPortCommandFailing' as const,
      expr: 'tunnelwright_port_forward_forwarded_port > 0 and tunnelwright_port_forward_app_listen_port != tunnelwright_port_forward_forwarded_port',
      for: opts.mismatchFor ?? '5m',
      labels: { severity: 'warning' },
      annotations: { summary: 'the command has not succeeded with the forwarded port', description: '{{ $labels.namespace }}/{{ $labels.pod }}: port-sync\'s command keeps failing (or timing out) with the port the VPN forwards; the app may not listen on it. See the vpn-port-sync container\'s log.' },
    }] : [{
      alert: 'VPNForwardedPortNotListening' as const,
      expr: 'tunnelwright_port_forward_forwarded_port > 0 and tunnelwright_port_forward_app_listen_port != tunnelwright_port_forward_forwarded_port',
      for: opts.mismatchFor ?? '5m',
      labels: { severity: 'warning' },
      annotations: { summary: `${app} does not listen on the port the VPN forwards`, description: '{{ $labels.namespace }}/{{ $labels.pod }}: the VPN forwards one port and the app listens on another; peers cannot reach it. See the vpn-port-sync container\'s log.' },
    }, {
      // port-sync sends refused credentials only once (a ban would lock the user out too): until they change, the
      // port is never set, and this says why.
      alert: 'VPNPortSyncLoginRefused' as const,
      expr: 'tunnelwright_port_forward_login_refused == 1',
      for: '1m',
      labels: { severity: 'warning' },
      annotations: { summary: `${app} refuses port-sync's credentials`, description: '{{ $labels.namespace }}/{{ $labels.pod }}: the app refused the login port-sync was given; port-sync does not send it again until the Secret\'s value changes or the pod restarts, so the listen port is not kept.' },
    }, ...(app === 'qbittorrent' ? [{
      // port-sync reads qBittorrent's interface and address binding with its preferences (port-sync.sh qbt_binding):
      // bound to eth0, another interface or another address, it listens where no forwarded connection arrives.
      alert: 'VPNForwardedPortAppBoundElsewhere' as const,
      expr: 'tunnelwright_port_forward_app_bound_elsewhere == 1',
      for: '1m',
      labels: { severity: 'warning' },
      annotations: { summary: 'qbittorrent listens only where the forwarded port does not arrive', description: '{{ $labels.namespace }}/{{ $labels.pod }}: qBittorrent is bound to one network interface or address (Options > Advanced), and forwarded connections arrive on vxlan0: peers cannot reach it, though its listen port is the forwarded one.' },
    }] : [])]),
    {
      // Without a scrape of the sidecar none of the others can fire: the forwarded workload's series, absent for 10m.
      alert: 'VPNPortSyncAbsent' as const,
      expr: `absent_over_time(tunnelwright_port_forward_forwarded_port{namespace="${f.portForwarding?.workload?.namespace ?? ''}"}[10m])`,
      for: '5m',
      labels: { severity: 'warning' },
      annotations: { summary: 'no port-sync metrics are scraped', description: `${f.portForwarding?.workload?.namespace ?? ''}: Prometheus has no tunnelwright_port_forward_* series from port-sync in this namespace, so no port-forwarding alert can fire. Scrape the vpn-port-sync container's metrics port.` },
    },
    {
      alert: 'VPNNoForwardedPort',
      expr: 'tunnelwright_port_forward_forwarded_port == 0',
      for: opts.lostFor ?? '15m',
      labels: { severity: 'warning' },
      annotations: { summary: 'the VPN forwards no port', description: '{{ $labels.namespace }}/{{ $labels.pod }}: gluetun reports no forwarded port (or its control server does not answer port-sync).' },
    },
  ];
  return [{
    name: `tunnelwright-${f.name}-port-forwarding`,
    rules: rules.map((r) => ({
      ...r,
      annotations: { ...r.annotations, runbook: PORT_FORWARD_RUNBOOKS[r.alert], ...(opts.runbookUrl ? { runbook_url: `${opts.runbookUrl}#${r.alert.toLowerCase()}` } : {}) },
    })),
  }];
}

/** Each port-forwarding alert's runbook, shipped in the alert (the `runbook` annotation); docs/runbooks.md has them too. */
const PORT_FORWARD_RUNBOOKS = {
  VPNForwardedPortNotListening: [
    '1. kubectl logs <pod> -c vpn-port-sync: why the port was not set (a refused login, an app that does not answer, a forwarded port the pod serves itself).',
    '2. The app\'s own setting: qBittorrent Options > Connection > listening port (an app bound to one interface has the right port, and VPNForwardedPortAppBoundElsewhere fires instead).',
  ].join('\n'),
  VPNForwardedPortAppBoundElsewhere: [
    '1. kubectl logs <pod> -c vpn-port-sync | grep "listens only on": the interface and address qBittorrent is bound to.',
    '2. qBittorrent Options > Advanced: Network interface "Any interface" (or vxlan0), Optional IP address to bind to "All addresses" (Session\\Interface, Session\\InterfaceAddress); the kill switch keeps its traffic off the node\'s network.',
  ].join('\n'),
  VPNForwardedPortCommandFailing: [
    '1. kubectl logs <pod> -c vpn-port-sync: the command\'s exit status, or "did not finish within" for a timeout.',
    '2. Run the command by hand in the vpn-port-sync container with PORT set to the forwarded port.',
  ].join('\n'),
  VPNPortSyncAbsent: [
    '1. kubectl -n <namespace> get pods -l <the workload\'s labels>: the forwarded workload must run, with its vpn-port-sync container.',
    '2. Prometheus must scrape the vpn-port-sync container\'s metrics port (a PodMonitor of its pods; kube-prometheus-stack selects PodMonitors by podMonitorSelector): the target must be up under Status > Targets.',
  ].join('\n'),
  VPNPortSyncLoginRefused: [
    '1. Compare the Secret portForwarding.appCredentialsSecret (or appApiKeySecret) with the app\'s Web UI login.',
    '2. Fix the Secret (port-sync tries the new value within a period), or fix the app\'s password and restart the pod.',
  ].join('\n'),
  VPNNoForwardedPort: [
    '1. kubectl logs deploy/<gateway> -c gluetun | grep -i "port forward": the provider\'s answer (ProtonVPN over OpenVPN needs +pmp in the username; a ProtonVPN WireGuard key must be made with NAT-PMP on).',
    '2. kubectl logs <pod> -c vpn-port-sync: "gluetun refused the API key" or "did not answer" is the control server, not the provider.',
  ].join('\n'),
};
