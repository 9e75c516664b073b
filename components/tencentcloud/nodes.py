"""What every node shares: market arguments, disk, and the placement references (HPC cluster, spread group)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.plan.model import ClusterPlan

SYSTEM_DISK = "CLOUD_SSD"
ON_DEMAND = "POSTPAID_BY_HOUR"
# The spot type is spelt differently by CVM instances and AS configs (FACTS.md).
SPOT_TYPE = {"instance": "ONE-TIME", "as": "one-time"}


def market_args(plan: ClusterPlan, spot: bool, kind: str) -> dict:
    """On-demand, or SPOTPAID with the one-time spot type and the stack's max price (the spec requires one)."""
    if not spot:
        return {"instance_charge_type": ON_DEMAND}
    return {"instance_charge_type": "SPOTPAID", "spot_instance_type": SPOT_TYPE[kind],
            "spot_max_price": f"{plan.market.max_spot_price:.2f}"}


@dataclass(frozen=True)
class Placement:
    """Where nodes go: the VPC/subnet/group every node shares, the HPC cluster of HCC types, the spread group."""

    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    group_id: pulumi.Input[str]
    role_name: pulumi.Input[str]
    hpc_cluster_id: pulumi.Input[str] | None
    spread_group_id: pulumi.Input[str] | None
