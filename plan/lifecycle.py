"""Lifecycle of nodes: grace, rolling refresh, spot rebalance, warm standby, draining and how the head is replaced,
where the cloud has them."""

from __future__ import annotations

from plan.model import DrainPlan, LifecyclePlan, MarketPlan

# Lifecycle settings a cloud's scaling groups may offer (CloudProfile.lifecycle); warm standby is a stack setting,
# refused by the spec where the cloud has none (WARM_POOL in CloudProfile.unsupported).
HEALTH_GRACE, REFRESH, REBALANCE = "health grace", "rolling refresh", "capacity rebalance"
# A termination hook on the worker groups, and a head the cloud replaces (not updates) when its launch settings change.
DRAIN, HEAD_REPLACED = "termination hook", "head replaced on change"
# A new node fetches its bundle (plan.userdata.BUNDLE_FETCH_TRIES x BUNDLE_FETCH_WAIT_S at worst), installs
# the driver stack on a plain image and runs its gate before the group may judge it; a failed gate reports at once.
HEALTH_GRACE_S = 900
# A rolling refresh replaces workers in batches, keeping this share of them training.
REFRESH_MIN_HEALTHY_PERCENT = 50
STANDBY_STATE = "stopped"
# The termination hook's name (gpufleet-spot completes it by this name) and how long a leaving worker may take to
# checkpoint and push before the group goes on anyway.
DRAIN_HOOK = "gpufleet-drain"
DRAIN_TIMEOUT_S = 600
# The launching hook a warm pool's workers complete once their bootstrap is done (gpufleet-node), and how long a
# bootstrap may take: the bundle fetch, the driver stack on a plain image, the gate (HEALTH_GRACE_S).
LAUNCH_HOOK = "gpufleet-launch"
LAUNCH_TIMEOUT_S = HEALTH_GRACE_S
# The longest the node's gate runs: systemd stops gpufleet-gate.service after its TimeoutStartSec, and a gate stopped
# so writes no mark (cloud-init/systemd/gpufleet-gate.service; tests/plan/test_heal.py holds the two equal).
GATE_TIMEOUT_S = 3600
# A node that wrote no mark this long after `fleet heal` first saw it never will: its bootstrap's grace (the bundle
# fetch and the driver stack, HEALTH_GRACE_S) and its whole gate (GATE_TIMEOUT_S) are over, so heal replaces it.
MARK_DEADLINE_S = HEALTH_GRACE_S + GATE_TIMEOUT_S
HEAD_REPLACEMENT = ("the head is replaced (deleted first, so its fixed address is free) whenever its launch template "
                    "gets a new version; the job stops with a checkpoint and resumes from it on the new head")


def plan_lifecycle(features: frozenset[str], market: MarketPlan, standby: int) -> LifecyclePlan:
    """Each setting the cloud's groups offer, decided here; the rest stay unset."""
    return LifecyclePlan(
        health_grace_s=HEALTH_GRACE_S if HEALTH_GRACE in features else None,
        refresh_min_healthy_percent=REFRESH_MIN_HEALTHY_PERCENT if REFRESH in features else None,
        capacity_rebalance=REBALANCE in features and market.uses_spot,
        standby=standby, standby_state=STANDBY_STATE if standby else None,
        drain=DrainPlan(DRAIN_HOOK, DRAIN_TIMEOUT_S) if DRAIN in features else None,
        launch_hook=DrainPlan(LAUNCH_HOOK, LAUNCH_TIMEOUT_S) if standby else None,
        head_replacement=HEAD_REPLACEMENT if HEAD_REPLACED in features else None)
