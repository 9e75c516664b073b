"""Account facts only the cloud can give (its current image, the account's id, its Capacity Block), looked up when the
program runs.

The planner never calls a cloud: `lookups(spec, cloud)` says what a spec needs, the cloud's realizer package answers it
(`components/<cloud>/lookups.py`, through the provider's own data sources) and the answers are inputs to `plan`.
Offline, the preview's mocks answer with stand-ins (fleet/preview.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from plan.candidates import Availability, Candidate, candidates
from plan.identity import cluster_identity, project_name
from plan.profile import CloudProfile, ImageQuery
from spec.cluster import ClusterSpec


@dataclass(frozen=True)
class Lookups:
    """What a spec needs looked up before it can be planned; empty for most stacks."""

    image: ImageQuery | None = None
    instance_type: str = ""
    account_id: bool = False
    candidates: tuple[Candidate, ...] = ()  # the places whose capacity to look up, in order; () = not asked
    # A Capacity Block stack naming no reservation: each candidate's capacity is the account's active block there,
    # and where it has none, the offering of a block of this many nodes; 0 = not such a stack.
    capacity_block_nodes: int = 0
    # The cluster's identity (its `gpufleet:cluster` tag): where its instances run now, each candidate's capacity
    # aside, is looked up by it; "" = not asked.
    cluster: str = ""
    # The Capacity Block a stack names (market.reservationId): its state and end are looked up by its id, as the
    # stack's own place's (plan/blocks.py); "" = not asked.
    named_block: str = ""

    def __bool__(self) -> bool:
        return self.image is not None or self.account_id or bool(self.candidates)


@dataclass(frozen=True)
class DeployFacts:
    """The answers: the image `auto` found, the account's id, the Capacity Block the chosen candidate runs in. None
    where nothing was asked."""

    image_id: str | None = None
    account_id: str | None = None
    reservation_id: str | None = None
    capacity: tuple[Availability, ...] = ()  # per candidate asked, in its order


def lookups(spec: ClusterSpec, cloud: CloudProfile) -> Lookups:
    """An image look-up for `image: auto` where the cloud has no alias; the account id where bucket names carry it
    and the stack names no bucket to create: the default bucket's name ends in it, and an existing bucket the stack
    names must be of that account (and not its own default)."""
    image = cloud.auto_image.lookup if spec.image == "auto" else None
    account = cloud.account_in_bucket and spec.storage.checkpoint_bucket is None
    return Lookups(image=image, instance_type=spec.instance_type if image else "", account_id=account)


def capacity_lookups(spec: ClusterSpec, stack: str, project: str | None = None) -> Lookups:
    """The capacity of every candidate, the stack's own place first (its only one where it lists no `candidates`),
    and which of them the cluster (its identity on this stack and `project`, default this one) runs on now; asked
    before the other look-ups, which then ask about the candidate chosen. A `capacityBlock` stack naming no
    reservation has its capacity in the account's blocks: the one it runs in is the chosen candidate's; one that
    names its block has that block's state and end looked up."""
    block = spec.market.capacity_block and not spec.market.reservation_id
    named = spec.market.reservation_id if spec.market.capacity_block else None
    identity = cluster_identity(spec.name or stack, project or project_name(), stack, spec.region)
    return Lookups(candidates=candidates(spec), capacity_block_nodes=spec.counts.max if block else 0,
                   cluster=identity, named_block=named or "")
