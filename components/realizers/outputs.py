"""Stack outputs every target shares, read straight off the plan; each realizer adds what it made."""

from __future__ import annotations

import json

from components.realizers.contract import PlanOutputs
from plan.model import ClusterPlan
from plan.software import FAILURE_BUDGET, PERMANENT_FAILURES, failure_records


def plan_outputs(plan: ClusterPlan) -> PlanOutputs:
    """Where the head listens and the checkpoints go, what the cluster costs and when its head is replaced; which
    software matrix the nodes hold to, and where a stopped replacement loop shows: the failure records in the bucket
    and the node metric gpufleet-report sets. The USD costs are None where the plan is priced in another currency
    (`fleet plan` shows it in that one)."""
    usd = plan.cost.currency == "USD"
    return PlanOutputs(
        headAddress=plan.network.head_address,
        checkpointUri=plan.storage.checkpoint_uri,
        hourlyCostUsd=plan.cost.expected_hourly if usd else None,
        onDemandHourlyUsd=plan.cost.on_demand_hourly if usd else None,
        headReplacement=plan.lifecycle.head_replacement,
        rollout=[nodes.how for nodes in plan.rollout],
        nodes=plan.scaling.nodes_desired,
        nodesCeiling=plan.scaling.nodes_max if plan.scaling.policy_sized else None,
        ceilingHourlyCostUsd=plan.cost.ceiling_hourly if usd else None,
        software=json.loads(plan.software.to_json()),
        failureBudget={"nodes": FAILURE_BUDGET, "permanentReasons": list(PERMANENT_FAILURES),
                       "records": failure_records(plan.storage.checkpoint_uri),
                       "metric": "gpufleet_replacement_stopped"},
    )
