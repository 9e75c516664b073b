"""Lifecycle of worker nodes: grace, rolling refresh, spot rebalance and warm standby, where the cloud has them."""

from __future__ import annotations

from components.plan.model import LifecyclePlan, MarketPlan

# Lifecycle settings a cloud's scaling groups may offer (CloudProfile.lifecycle); warm standby is a stack setting,
# refused by the spec where the cloud has none (WARM_POOL in CloudProfile.unsupported).
HEALTH_GRACE, REFRESH, REBALANCE = "health grace", "rolling refresh", "capacity rebalance"
# A new node fetches its bundle (components.bootstrap.BUNDLE_FETCH_TRIES x BUNDLE_FETCH_WAIT_S at worst), installs
# the driver stack on a plain image and runs its gate before the group may judge it; a failed gate reports at once.
HEALTH_GRACE_S = 900
# A rolling refresh replaces workers in batches, keeping this share of them training.
REFRESH_MIN_HEALTHY_PERCENT = 50
STANDBY_STATE = "stopped"


def plan_lifecycle(features: frozenset[str], market: MarketPlan, standby: int) -> LifecyclePlan:
    """Each setting the cloud's groups offer, decided here; the rest stay unset."""
    return LifecyclePlan(
        health_grace_s=HEALTH_GRACE_S if HEALTH_GRACE in features else None,
        refresh_min_healthy_percent=REFRESH_MIN_HEALTHY_PERCENT if REFRESH in features else None,
        capacity_rebalance=REBALANCE in features and market.uses_spot,
        standby=standby, standby_state=STANDBY_STATE if standby else None)
