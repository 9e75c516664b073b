"""One realizer per target, named by its cloud's profile; each is imported only when its cloud is used."""

from __future__ import annotations

import importlib
from typing import Any

from components.clouds import CLOUDS
from components.plan.facts import DeployFacts, lookups
from components.plan.model import ClusterPlan
from components.spec import ClusterSpec


def lookups_module(cloud: str) -> str:
    """Where a cloud's deploy-time look-ups live: `lookups` beside its realizer."""
    return f"{CLOUDS[cloud].realizer.rsplit('.', 1)[0]}.lookups"


def look_up(spec: ClusterSpec) -> DeployFacts:
    """The deploy-time facts the spec needs, from the cloud's own data sources (none for most stacks)."""
    wanted = lookups(spec)
    return importlib.import_module(lookups_module(spec.cloud)).look_up(wanted) if wanted else DeployFacts()


def realize(plan: ClusterPlan) -> dict[str, Any]:
    """Declare the plan's resources on its cloud; returns the stack outputs."""
    return importlib.import_module(CLOUDS[plan.cloud].realizer).realize(plan)
