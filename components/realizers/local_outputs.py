"""Under Pulumi a local stack declares no cloud resources: `fleet up` brings it up. Its outputs still show the plan."""

from __future__ import annotations

from typing import Any

from components.plan.model import ClusterPlan


def realize(plan: ClusterPlan) -> dict[str, Any]:
    return {
        "headAddress": plan.network.head_address,
        "nodes": plan.scaling.nodes_desired,
        "checkpointUri": plan.storage.checkpoint_uri,
        "hourlyCostUsd": plan.cost.expected_hourly,
        "bringUp": f"fleet up --stack {plan.stack}",
    }
