"""Each lifecycle setting decided from the features the cloud's groups offer, alone: the termination hook only where
the groups have one (named and bounded, so the node's spot watcher can complete it in time), the head's
replacement only where the cloud replaces it, the standby state and launching hook only with warm standby."""

from __future__ import annotations

from plan.lifecycle import DRAIN, HEAD_REPLACED, HEALTH_GRACE, REBALANCE, REFRESH, plan_lifecycle
from plan.model import MarketPlan

ON_DEMAND = MarketPlan(on_demand_base=0, spot_percent=0, spot_strategy="", max_spot_price=None,
                       reservation_id=None, capacity_block=False)
SPOT = MarketPlan(on_demand_base=0, spot_percent=100, spot_strategy="price-capacity-optimized",
                  max_spot_price=None, reservation_id=None, capacity_block=False)
ALL = frozenset({HEALTH_GRACE, REFRESH, REBALANCE, DRAIN, HEAD_REPLACED})


def test_the_termination_hook_comes_only_with_the_feature_named_and_bounded():
    drain = plan_lifecycle(frozenset({DRAIN}), SPOT, 0).drain
    assert drain is not None and drain.hook and drain.timeout_s > 0
    assert plan_lifecycle(ALL - {DRAIN}, SPOT, 0).drain is None


def test_the_head_is_replaced_only_where_the_cloud_replaces_it_and_the_plan_says_so():
    replaced = plan_lifecycle(frozenset({HEAD_REPLACED}), ON_DEMAND, 0).head_replacement
    assert replaced and "checkpoint" in replaced
    assert plan_lifecycle(ALL - {HEAD_REPLACED}, ON_DEMAND, 0).head_replacement is None


def test_without_standby_there_is_no_standby_state_and_no_launching_hook():
    none = plan_lifecycle(ALL, SPOT, 0)
    assert (none.standby, none.standby_state, none.launch_hook) == (0, None, None)
    warm = plan_lifecycle(ALL, SPOT, 2)
    assert warm.standby == 2 and warm.standby_state and warm.launch_hook is not None
    assert warm.launch_hook.hook and warm.launch_hook.timeout_s > 0
    assert warm.launch_hook.hook != warm.drain.hook, "the launching and the termination hook are two hooks"


def test_grace_and_rolling_refresh_come_with_their_features():
    both = plan_lifecycle(frozenset({HEALTH_GRACE, REFRESH}), ON_DEMAND, 0)
    assert both.health_grace_s > 0 and 0 < both.refresh_min_healthy_percent < 100


def test_every_setting_is_unset_where_the_cloud_offers_none():
    bare = plan_lifecycle(frozenset(), SPOT, 0)
    assert (bare.health_grace_s, bare.refresh_min_healthy_percent, bare.capacity_rebalance, bare.drain,
            bare.head_replacement) == (None, None, False, None, None)
    assert plan_lifecycle(ALL, ON_DEMAND, 0).capacity_rebalance is False, "nothing to rebalance without spot"
    assert plan_lifecycle(ALL, SPOT, 0).capacity_rebalance is True
