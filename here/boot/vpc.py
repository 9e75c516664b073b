"""The VPC's DHCP server and resolver on the bridge: dnsmasq, answering each node's MAC with its plan address (and the
cloud's MTU, router, resolver) and resolving the names a node contacts inside the cloud: the object store's
endpoints and, on Tencent, metadata.tencentyun.com. Every other name is NXDOMAIN at once, as in a VPC without a
route out. cloud-init asks DHCP before it reads EC2 or Alibaba metadata (its ephemeral network in init-local); an
answer here keeps that a fraction of a second, where silence would cost its 30 s timeout on every boot."""

from __future__ import annotations

import ipaddress
from pathlib import Path


def dnsmasq_command(directory: Path, subnet: ipaddress.IPv4Network, gateway: str, bridge: str, mtu: int,
                    leases: dict[str, tuple[str, str]], names: dict[str, str]) -> list[str]:
    """leases: MAC -> (address, host name); names: DNS name -> address."""
    directory.mkdir(parents=True, exist_ok=True)
    # Names on the command line, not in a hosts file: dnsmasq reads files after dropping to an unprivileged user,
    # which cannot read a run directory made 0700 (a test's tmp_path). An infinite lease: the address cloud-init's
    # ephemeral DHCP leaves on eth0 never expires, as nothing renews it (the harness keeps cloud-init's network off).
    cmd = ["dnsmasq", "--keep-in-foreground", "--log-facility=-", "--conf-file=/dev/null", "--no-resolv",
           "--no-hosts", "--address=/#/", f"--interface={bridge}", "--bind-interfaces",
           f"--listen-address={gateway}", f"--pid-file={directory / 'dnsmasq.pid'}",
           f"--dhcp-leasefile={directory / 'leases'}",
           f"--dhcp-range={subnet.network_address},static,{subnet.netmask},infinite",
           f"--dhcp-option=option:router,{gateway}", f"--dhcp-option=option:dns-server,{gateway}",
           f"--dhcp-option=option:mtu,{mtu}", "--dhcp-authoritative"]
    cmd += [f"--host-record={name},{address}" for name, address in names.items()]
    cmd += [f"--dhcp-host={mac},{address},{hostname.split('.')[0]}" for mac, (address, hostname) in leases.items()]
    return cmd
