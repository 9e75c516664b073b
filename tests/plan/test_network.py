"""The network plan: the nodes' subnet is the VPC's first half, the NAT gateway's the start of the second half (a /24
at most), the head at a fixed host of the nodes' subnet; no mirror unless the plan names one."""

from __future__ import annotations

import ipaddress

from plan.network import HEAD_HOST, NO_MIRRORS, plan_network
from plan.node import Mirrors


def test_the_vpc_splits_into_the_nodes_half_and_a_nat_subnet_of_at_most_a_24():
    wide = plan_network("10.0.0.0/16", 9001, True)
    assert (wide.vpc_cidr, wide.private.cidr, wide.public.cidr) == ("10.0.0.0/16", "10.0.0.0/17", "10.0.128.0/24")
    assert wide.head_address == str(ipaddress.IPv4Address("10.0.0.0") + HEAD_HOST)
    narrow = plan_network("192.168.8.0/24", 1500, False)
    assert (narrow.private.cidr, narrow.public.cidr) == ("192.168.8.0/25", "192.168.8.128/25")
    assert (narrow.mtu, narrow.nat) == (1500, False)


def test_no_mirror_unless_the_plan_names_one():
    assert plan_network("10.0.0.0/16", 9001, True).mirrors == NO_MIRRORS
    named = Mirrors(pip="http://mirror.internal/simple/", apt="", cuda="", registry="")
    assert plan_network("10.0.0.0/16", 9001, True, named).mirrors == named
