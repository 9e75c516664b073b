"""Placement: which placement groups a cluster gets and which roles join them, as the cloud's profile decides.

The same decision validates a stack (a setting the cloud cannot honour becomes a problem with the reason) and
plans it, so the two can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from plan.catalog import InstanceType

if TYPE_CHECKING:
    from spec.cluster import ClusterSpec


@dataclass(frozen=True)
class PlacementAsk:
    """What the stack asks of placement, and the facts a cloud's choice depends on."""

    anti_affinity: bool
    capacity_block: bool
    reservation: bool
    nodes_max: int
    instance: InstanceType


def ask_of(spec: ClusterSpec, row: InstanceType) -> PlacementAsk:
    return PlacementAsk(anti_affinity=spec.network.anti_affinity, capacity_block=spec.market.capacity_block,
                        reservation=bool(spec.market.reservation_id), nodes_max=spec.counts.max, instance=row)
