"""One realizer per target, named by its cloud's profile; each is imported only when its cloud is used, and held to
the contract (components/realizers/contract.py) when it is."""

from __future__ import annotations

import importlib
import importlib.util
from datetime import UTC, datetime

from clouds import CLOUDS
from clouds.plans import lookups_for
from components.realizers.contract import LookUps, Realizer, StackOutputs, checked_outputs, conforming
from components.realizers.holders import gpu_holders
from plan.blocks import in_force
from plan.candidates import choose
from plan.facts import DeployFacts, Lookups, capacity_lookups
from plan.model import ClusterPlan
from spec.cluster import ClusterSpec


def realizer_of(cloud: str) -> Realizer:
    """The cloud's realizer module (`CloudProfile.realizer`), checked against the Realizer contract."""
    return conforming(importlib.import_module(CLOUDS[cloud].realizer), Realizer)


def lookups_of(cloud: str) -> LookUps | None:
    """The cloud's look-ups (`lookups` beside its realizer), checked against the LookUps contract; None where the
    cloud has none."""
    module = f"{CLOUDS[cloud].realizer.rsplit('.', 1)[0]}.lookups"
    if importlib.util.find_spec(module) is None:
        return None
    return conforming(importlib.import_module(module), LookUps)


def _answers(cloud: str, wanted: Lookups) -> DeployFacts:
    """The cloud's answers; none where nothing is wanted or the cloud has no look-ups."""
    module = lookups_of(cloud) if wanted else None
    return module.look_up(wanted) if module else DeployFacts()


def look_up(spec: ClusterSpec, stack: str, project: str | None = None) -> tuple[ClusterSpec, DeployFacts]:
    """The spec on the candidate the cluster of this stack (and Pulumi `project`, default this one) runs on, or for
    a cluster that runs on none, its first candidate with capacity (the stack's own place is the first, and the only
    one where it lists no others); and the deploy-time facts that spec needs, from the cloud's own data sources. A
    Capacity Block about to end counts as gone, and one that ended holds no place (plan/blocks.py)."""
    wanted = capacity_lookups(spec, stack, project)
    blocks = wanted.capacity_block_nodes > 0 or bool(wanted.named_block)
    capacity = in_force(_answers(spec.cloud, wanted).capacity, datetime.now(UTC), blocks=blocks)
    reservation = None
    if capacity:
        spec, chosen = choose(spec, capacity)
        reservation = chosen.reservation_id
    return spec, DeployFacts(**{**vars(_answers(spec.cloud, lookups_for(spec))), "capacity": capacity,
                                "reservation_id": reservation})


def realize(plan: ClusterPlan) -> StackOutputs:
    """Declare the plan's resources on its cloud; returns the stack outputs, the same keys on every cloud: the
    realizer's, and `gpuHolders`, every instance and group holding the cluster's GPUs
    (components/realizers/holders.py)."""
    outputs = checked_outputs(CLOUDS[plan.cloud].realizer, realizer_of(plan.cloud).realize(plan))
    return StackOutputs(**outputs, gpuHolders=gpu_holders(outputs))
