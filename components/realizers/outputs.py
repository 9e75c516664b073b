"""Stack outputs every target shares, read straight off the plan; realizers add what only their cloud has."""

from __future__ import annotations

from typing import Any

from components.plan.model import ClusterPlan


def plan_outputs(plan: ClusterPlan) -> dict[str, Any]:
    return {
        "headAddress": plan.network.head_address,
        "checkpointUri": plan.storage.checkpoint_uri,
        "hourlyCostUsd": plan.cost.expected_hourly,
        "onDemandHourlyUsd": plan.cost.on_demand_hourly,
        **({"headReplacement": plan.lifecycle.head_replacement} if plan.lifecycle.head_replacement else {}),
    }
