"""Firewall rules: the cluster talks to itself, the world reaches nothing unless the stack names a CIDR."""

from __future__ import annotations

from plan.model import FirewallRule
from spec.cidrs import exposing, parse_cidr

ANYWHERE = "0.0.0.0/0"
SSH_PORT = 22
ALL_PORTS = (0, 65535)
# Written into the description of a rule open to the internet when the stack opted in; policy looks for it.
INTERNET_OPT_IN = "open to the internet by network.allowInternet"


def plan_firewall(fabric: str, port_range: tuple[int, int] | None, rendezvous_port: int,
                  metrics_ports: tuple[int, ...], ssh_cidrs: tuple[str, ...],
                  allow_internet: bool = False) -> tuple[FirewallRule, ...]:
    """Open everything between members unless a TCP cluster pins NCCL to a port range.

    RDMA-style fabrics (EFA, eRDMA, RDMA) need all traffic between members in both directions (EFA fails with
    "Unresponsive receiver" otherwise). A pinned range only works on TCP, where the node pins its ephemeral ports.
    """
    if port_range is None or fabric != "tcp":
        inside = [FirewallRule("ingress", "all", *ALL_PORTS, "self", "all traffic between cluster members"),
                  FirewallRule("egress", "all", *ALL_PORTS, "self", "all traffic between cluster members")]
    else:
        low, high = port_range
        inside = [FirewallRule("ingress", "tcp", low, high, "self", "NCCL and gloo on the pinned port range"),
                  FirewallRule("ingress", "tcp", rendezvous_port, rendezvous_port, "self", "torchrun c10d rendezvous"),
                  *(FirewallRule("ingress", "tcp", port, port, "self", "metrics scrape") for port in metrics_ports),
                  FirewallRule("egress", "tcp", *ALL_PORTS, "self", "connections to cluster members")]
    opted_in = f"SSH, {INTERNET_OPT_IN}"
    open_to_all = {str(n) for n in exposing([parse_cidr(c) for c in ssh_cidrs])} if allow_internet else set()
    outside = [FirewallRule("ingress", "tcp", SSH_PORT, SSH_PORT, cidr,
                            opted_in if cidr in open_to_all else "SSH from an allowed network")
               for cidr in ssh_cidrs]
    egress = [FirewallRule("egress", "tcp", 443, 443, ANYWHERE, "HTTPS: object storage, package and driver repos"),
              FirewallRule("egress", "tcp", 80, 80, ANYWHERE, "HTTP: package mirrors")]
    return tuple(inside + outside + egress)
