"""Addresses: split the VPC range into the nodes' private subnet and a small public subnet for NAT."""

from __future__ import annotations

import ipaddress

from plan.model import NetworkPlan, Subnet
from plan.node import Mirrors

# The head node's host number in the private subnet: clear of the addresses clouds reserve at the start.
HEAD_HOST = 10
NO_MIRRORS = Mirrors(pip="", apt="", cuda="", registry="")


def plan_network(vpc_cidr: str, mtu: int, nat: bool, mirrors: Mirrors = NO_MIRRORS) -> NetworkPlan:
    """First half of the VPC for nodes, the start of the second half (a /24 at most) for the NAT gateway."""
    vpc = ipaddress.IPv4Network(vpc_cidr)
    private, public = node_subnets(vpc)
    return NetworkPlan(
        vpc_cidr=str(vpc),
        private=Subnet(cidr=str(private)),
        public=Subnet(cidr=str(public)),
        head_address=str(private.network_address + HEAD_HOST),
        mtu=mtu,
        nat=nat,
        mirrors=mirrors,
    )


def node_subnets(vpc: ipaddress.IPv4Network) -> tuple[ipaddress.IPv4Network, ipaddress.IPv4Network]:
    """The nodes' subnet (the VPC's first half) and the NAT gateway's (the start of the second half, a /24 at most)."""
    private, upper = vpc.subnets(prefixlen_diff=1)
    return private, next(upper.subnets(new_prefix=max(upper.prefixlen, 24)))
