"""Network rules: nothing is reachable from the internet unless the stack opted in, the fabric's security group
talks to itself both ways, and a node with several interfaces gets no public address. Each cloud's reader says how
its resources hold these."""

from __future__ import annotations

from collections.abc import Iterable

from components.plan.firewall import INTERNET_OPT_IN
from policy.base import Inputs, Resource
from policy.clouds import reader_for, readers

ANYWHERE = ("0.0.0.0/0", "::/0")
OPT_IN_HINT = ("name the networks in network.sshCidrs instead, or opt in with network.allowInternet: true "
               "(docs/gitops.md)")


def open_ingress(kind: str, inputs: Inputs) -> Iterable[str]:
    """SSH, NCCL, metrics or anything else open to 0.0.0.0/0 (or ::/0), unless the plan wrote the opt-in into the
    rule's description."""
    reader = reader_for(kind)
    for rule in reader.ingress(kind, inputs) if reader else ():
        if rule.cidr in ANYWHERE and INTERNET_OPT_IN not in str(rule.description or ""):
            yield f"ingress {rule.protocol} {rule.ports} is open to {rule.cidr}; {OPT_IN_HINT}."


def public_ip_with_several_interfaces(kind: str, inputs: Inputs) -> Iterable[str]:
    reader = reader_for(kind)
    return reader.public_ip(kind, inputs) if reader else ()


def fabric_self_both_ways(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """RDMA-style fabrics (EFA, eRDMA, HCC RDMA) need every protocol between members, in and out."""
    for reader in readers():
        yield from reader.self_traffic(resources)
