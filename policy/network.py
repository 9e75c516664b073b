"""Network rules: the fabric's security group talks to itself both ways, and a node with several interfaces gets no
public address (what the internet may reach is policy.internet's). Each cloud's reader says how its resources hold
these."""

from __future__ import annotations

from collections.abc import Iterable

from policy.base import Inputs, Resource
from policy.readers import reader_for, readers


def public_ip_with_several_interfaces(kind: str, inputs: Inputs) -> Iterable[str]:
    reader = reader_for(kind)
    return reader.public_ip(kind, inputs) if reader else ()


def fabric_self_both_ways(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    """RDMA-style fabrics (EFA, eRDMA, HCC RDMA) need every protocol between members, in and out."""
    for reader in readers():
        yield from reader.self_traffic(resources)
