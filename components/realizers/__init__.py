"""One realizer per target behind a small registry; each is imported only when its cloud is used."""

from __future__ import annotations

import importlib
from typing import Any

from components.plan.facts import DeployFacts, lookups
from components.plan.model import ClusterPlan
from components.spec import ClusterSpec

REALIZERS = {
    "aws": "components.aws.cluster",
    "alicloud": "components.alicloud.cluster",
    "tencentcloud": "components.tencentcloud.cluster",
    "local": "components.realizers.local_outputs",
}


def lookups_module(cloud: str) -> str:
    """Where a cloud's deploy-time look-ups live: `lookups` beside its realizer."""
    return f"{REALIZERS[cloud].rsplit('.', 1)[0]}.lookups"


def look_up(spec: ClusterSpec) -> DeployFacts:
    """The deploy-time facts the spec needs, from the cloud's own data sources (none for most stacks)."""
    wanted = lookups(spec)
    return importlib.import_module(lookups_module(spec.cloud)).look_up(wanted) if wanted else DeployFacts()


def realize(plan: ClusterPlan) -> dict[str, Any]:
    """Declare the plan's resources on its cloud; returns the stack outputs."""
    return importlib.import_module(REALIZERS[plan.cloud]).realize(plan)
