#!/usr/bin/env python3
"""A userspace IPIP tunnel (RFC 2003: an outer IPv4 header, protocol 4), for tests only.

The kernel this repository's system tests run on has no `ipip` link type (`ip link add type ipip` answers "Unknown
device type"), so kube-router's tunnel (pkg/tunnels/linux_tunnels.go createIPIPTunnel: netlink.Iptun{Local, Remote})
(v2.1.0, what k0s 1.30 ships: `ip tunnel add <tun> mode ipip local <node IP> remote <peer>`,
pkg/controllers/routing/network_routes_controller.go:832; later versions through netlink)
is stood in for by a TUN device of the same name and this loop:
- a packet routed into the TUN is sent to REMOTE on a raw IPPROTO_IPIP socket bound to LOCAL: the kernel adds the outer
  IPv4 header (source LOCAL, protocol 4), and routes it as the kernel's ipip device would (here over WireGuard);
- an IPIP packet from REMOTE to this host loses its outer header and is written into the TUN (as ipip's receive path).
The TUN's MTU is set by the caller, as the kernel sets an ipip device's (the route's device MTU less 20).

usage: ipip-userspace.py TUN_NAME LOCAL REMOTE
"""
import fcntl
import os
import select
import socket
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def main() -> None:
    name, local, remote = sys.argv[1], sys.argv[2], sys.argv[3]
    tun = os.open('/dev/net/tun', os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack('16sH', name.encode(), IFF_TUN | IFF_NO_PI))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, 4)
    raw.bind((local, 0))
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    while True:
        ready, _, _ = select.select([tun, raw], [], [])
        if tun in ready:
            inner = os.read(tun, 65535)
            if inner and inner[0] >> 4 == 4:
                raw.sendto(inner, (remote, 0))
        if raw in ready:
            packet, (source, _) = raw.recvfrom(65535)
            if source == remote:
                os.write(tun, packet[(packet[0] & 0x0F) * 4:])


if __name__ == '__main__':
    main()
