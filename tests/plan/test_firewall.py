"""The cluster's firewall: members talk to each other (everything, unless a TCP cluster pins NCCL's ports), SSH only
from the networks the stack names (marked for the policy where the stack opened it to the internet on purpose), and
out only to HTTPS and HTTP."""

from __future__ import annotations

from plan.firewall import INTERNET_OPT_IN, plan_firewall
from plan.model import FirewallRule

ALL_INSIDE = [FirewallRule("ingress", "all", 0, 65535, "self", "all traffic between cluster members"),
              FirewallRule("egress", "all", 0, 65535, "self", "all traffic between cluster members")]
OUT = [FirewallRule("egress", "tcp", 443, 443, "0.0.0.0/0", "HTTPS: object storage, package and driver repos"),
       FirewallRule("egress", "tcp", 80, 80, "0.0.0.0/0", "HTTP: package mirrors")]


def test_members_reach_each_other_on_every_port_unless_a_tcp_cluster_pins_a_range():
    assert list(plan_firewall("tcp", None, 29400, (9100,), ())) == ALL_INSIDE + OUT
    for fabric in ("efa", "erdma", "rdma"):
        assert list(plan_firewall(fabric, (20000, 20100), 29400, (9100,), ())) == ALL_INSIDE + OUT, fabric


def test_a_pinned_range_opens_nccl_the_rendezvous_and_each_metrics_port_between_members():
    rules = plan_firewall("tcp", (20000, 20100), 29400, (9100, 9400), ())
    assert list(rules) == [
        FirewallRule("ingress", "tcp", 20000, 20100, "self", "NCCL and gloo on the pinned port range"),
        FirewallRule("ingress", "tcp", 29400, 29400, "self", "torchrun c10d rendezvous"),
        FirewallRule("ingress", "tcp", 9100, 9100, "self", "metrics scrape"),
        FirewallRule("ingress", "tcp", 9400, 9400, "self", "metrics scrape"),
        FirewallRule("egress", "tcp", 0, 65535, "self", "connections to cluster members"), *OUT]


def test_ssh_comes_from_each_named_network_and_only_an_opted_in_internet_range_is_marked():
    cidrs = ("203.0.113.0/24", "0.0.0.0/0")
    plain = "SSH from an allowed network"
    ssh = [r for r in plan_firewall("efa", None, 29400, (), cidrs) if r.from_port == 22]
    assert ssh == [FirewallRule("ingress", "tcp", 22, 22, cidr, plain) for cidr in cidrs]
    opted = [r for r in plan_firewall("efa", None, 29400, (), cidrs, allow_internet=True) if r.from_port == 22]
    assert opted == [FirewallRule("ingress", "tcp", 22, 22, "203.0.113.0/24", plain),
                     FirewallRule("ingress", "tcp", 22, 22, "0.0.0.0/0", f"SSH, {INTERNET_OPT_IN}")]
