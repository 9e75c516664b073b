"""The one-group form (AWS, Alibaba): the whole market mix in one scaling group, on-demand alone without spot, and
a group for a single worker; none only when the cluster is the head alone."""

from __future__ import annotations

from plan.model import MIXED, ON_DEMAND, SCALING_GROUP, MarketPlan, ScalingPlan, WorkerGroupPlan
from plan.workers import mixed_group


def market(spot_percent: int) -> MarketPlan:
    return MarketPlan(on_demand_base=0, spot_percent=spot_percent, spot_strategy="price-capacity-optimized",
                      max_spot_price=None, reservation_id=None, capacity_block=False)


def test_one_group_holds_the_mix_or_on_demand_alone():
    scaling = ScalingPlan(nodes_min=2, nodes_desired=3, nodes_max=5, gpu_util_target=None)
    assert mixed_group(scaling, market(50)) == (WorkerGroupPlan("workers", SCALING_GROUP, MIXED, 1, 2, 4),)
    assert mixed_group(scaling, market(0)) == (WorkerGroupPlan("workers", SCALING_GROUP, ON_DEMAND, 1, 2, 4),)


def test_a_single_worker_gets_its_group_and_the_head_alone_none():
    one = ScalingPlan(nodes_min=2, nodes_desired=2, nodes_max=2, gpu_util_target=None)
    assert mixed_group(one, market(0)) == (WorkerGroupPlan("workers", SCALING_GROUP, ON_DEMAND, 1, 1, 1),)
    alone = ScalingPlan(nodes_min=1, nodes_desired=1, nodes_max=1, gpu_util_target=None)
    assert mixed_group(alone, market(100)) == ()
