"""The gate's section of the node plan (NodePlan.health): what a node's health gate, its NCCL probe and the cluster
acceptance hold it to besides the node's own GPUs and fabric (cloud-init/health/README.md documents every field),
decided here from the same values that configure what they check: the network name NCCL logs under the NCCL_NET the
plan exports, the absolute thresholds (plan/thresholds.py) and how thorough the gate is (the stack's
`gate`)."""

from __future__ import annotations

from typing import Literal

from plan.catalog import InstanceType
from plan.model import FabricPlan
from plan.node import HealthPlan
from plan.thresholds import thresholds

GateLevel = Literal["light", "deep"]
DCGM_LEVEL: dict[str, int] = {"light": 1, "deep": 2}
"""DCGM's diagnostic level per gate level, where dcgmi exists: 1 (seconds: deployment checks) for light, 2 (about two
minutes: adds short stress tests) for deep. Level 3 is for a person running `python -m health --dcgm-level 3`."""


def plan_health(row: InstanceType, fabric: FabricPlan, level: GateLevel) -> HealthPlan:
    """The gate's expectations for one row, fabric and level."""
    return HealthPlan(level=level, dcgm_level=DCGM_LEVEL[level], nccl_network=fabric.nccl_network,
                      thresholds=thresholds(row))
