"""Under Pulumi a local stack declares no cloud resources: `fleet up` brings it up. Its outputs still show the plan."""

from __future__ import annotations

from typing import Any

from components.plan.model import ClusterPlan
from components.realizers.outputs import plan_outputs


def realize(plan: ClusterPlan) -> dict[str, Any]:
    return {**plan_outputs(plan), "nodes": plan.scaling.nodes_desired, "bringUp": f"fleet up --stack {plan.stack}"}
