"""Placement: a placement group, deployment set or HPC cluster and its nodes live in one zone and one subnet (EFA,
eRDMA and HCC RDMA do not cross zones). Each cloud's reader finds its own groups and members."""

from __future__ import annotations

from collections.abc import Iterable

from policy.base import Resource
from policy.readers import readers


def placement_one_zone(resources: list[Resource]) -> Iterable[tuple[str, str]]:
    for reader in readers():
        yield from reader.placement(resources)
