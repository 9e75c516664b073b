"""Under Pulumi a local stack declares no cloud resources: `fleet up` brings it up. Its outputs still show the plan."""

from __future__ import annotations

from typing import Any

from components.realizers.contract import ClusterOutputs
from components.realizers.outputs import plan_outputs
from plan.model import ClusterPlan

# No provider computes anything here.
COMPUTED: dict[str, dict[str, Any]] = {}


def realize(plan: ClusterPlan) -> ClusterOutputs:
    return ClusterOutputs(**plan_outputs(plan), headInstanceId=None, image=None, workerGroups=[], workerInstanceIds=[],
                          placementGroups=[], securityGroupId=None, bucket=None,
                          bringUp=f"fleet up --stack {plan.stack}")
