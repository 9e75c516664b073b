"""What every node shares: the plan's slice it is made of, market arguments, disk, and the placement references
(HPC cluster, spread group)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from plan.model import ClusterPlan, ImagePlan, MarketPlan
from plan.rollout import RolloutPlan

SYSTEM_DISK = "CLOUD_SSD"
ON_DEMAND = "POSTPAID_BY_HOUR"
# The spot type is spelt differently by CVM instances and AS configs (docs/cloud-facts.md#tencent-spot).
SPOT_TYPE = {"instance": "ONE-TIME", "as": "one-time"}


def market_args(market: MarketPlan, spot: bool, kind: str) -> dict:
    """On-demand, or SPOTPAID with the one-time spot type and the stack's max price (the spec requires one)."""
    if not spot:
        return {"instance_charge_type": ON_DEMAND}
    return {"instance_charge_type": "SPOTPAID", "spot_instance_type": SPOT_TYPE[kind],
            "spot_max_price": f"{market.max_spot_price:.2f}"}


@dataclass(frozen=True)
class NodeArgs:
    """The slice of the plan every node is made of."""

    instance_type: str
    worker_types: tuple[str, ...]  # what a worker scaling group may launch, highest priority first
    image: ImagePlan
    root_volume_gb: int
    zone: str
    market: MarketPlan
    rollout: tuple[RolloutPlan, ...]

    @classmethod
    def of(cls, plan: ClusterPlan) -> NodeArgs:
        return cls(instance_type=plan.instance.name, worker_types=plan.worker_types,
                   image=plan.image, root_volume_gb=plan.storage.root_volume_gb,
                   zone=plan.zone, market=plan.market, rollout=plan.rollout)


@dataclass(frozen=True)
class Placement:
    """Where nodes go: the VPC/subnet/group every node shares, the HPC cluster and the spread group of each role; and
    the code bundle their user-data names, which every node and configuration waits for."""

    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    group_id: pulumi.Input[str]
    role_name: pulumi.Input[str]
    hpc_cluster_id: dict[str, pulumi.Input[str]]
    spread_group_id: dict[str, pulumi.Input[str]]
    code: pulumi.Resource
