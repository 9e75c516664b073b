"""One realizer per target, named by its cloud's profile; each is imported only when its cloud is used, and held to
the contract (components/realizers/contract.py) when it is."""

from __future__ import annotations

import importlib
import importlib.util

from clouds import CLOUDS
from clouds.plans import lookups_for
from components.realizers.contract import ClusterOutputs, LookUps, Realizer, checked_outputs, conforming
from plan.facts import DeployFacts
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


def look_up(spec: ClusterSpec) -> DeployFacts:
    """The deploy-time facts the spec needs, from the cloud's own data sources (none for most stacks)."""
    wanted = lookups_for(spec)
    return lookups_of(spec.cloud).look_up(wanted) if wanted else DeployFacts()


def realize(plan: ClusterPlan) -> ClusterOutputs:
    """Declare the plan's resources on its cloud; returns the stack outputs, the same keys on every cloud."""
    return checked_outputs(CLOUDS[plan.cloud].realizer, realizer_of(plan.cloud).realize(plan))
