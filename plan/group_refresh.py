"""When `fleet roll` refreshes a group whose refresh reinstalls its members from the launch settings (plan/rollout.py
RESET_REFRESH, Tencent's AS groups), and what a refresh activity's status means: pure decisions over the stack's
state before and after `pulumi up` and the pipeline's record of what each group was last refreshed to.

The refresh is no resource of the stack: the provider's create retries StartInstanceRefresh for its write timeout (5
minutes) and then waits for SUCCESSFUL alone, so a refresh that fails or pauses holds `pulumi up` to its create
timeout while AS keeps the group disabled (docs/cloud-facts.md#rollout-tencent). So `fleet roll` starts it after the
up, only where the group's members run older launch settings: never for a group that up created (its members launch
from the current settings), never without a change of the settings' user-data, and again after one that did not
succeed (the record moves only on SUCCESSFUL)."""

from __future__ import annotations

from collections.abc import Iterable

from plan.model import WORKER
from plan.rollout import RESET_REFRESH, RolloutPlan

# A refresh activity's statuses (AS DescribeRefreshActivities, RefreshActivity.Status): still going, done, and held.
# Held ones keep the group disabled until they are cancelled (CancelInstanceRefresh).
RUNNING = frozenset({"INIT", "RUNNING"})
SUCCESSFUL = "SUCCESSFUL"
ENDED = frozenset({"CANCELLED", "FAILED"})
PAUSED = frozenset({"FAILED_PAUSE", "AUTO_PAUSE", "MANUAL_PAUSE"})


def refreshes_groups(rollout: Iterable[RolloutPlan]) -> bool:
    """Whether `fleet roll` refreshes the plan's worker groups (Tencent's reinstall refresh)."""
    return any(r.role == WORKER and r.mechanism == RESET_REFRESH for r in rollout)


def refreshed_to(recorded: str | None, before: str | None, now: str) -> str:
    """The launch settings (a hash of their user-data) a group's members run: what the pipeline recorded after the
    group's last successful refresh; else, for a group held before this `pulumi up`, the settings it had then (its
    members launched or were refreshed from them); else, for a group this up made, the settings it has now."""
    if recorded is not None:
        return recorded
    return before if before is not None else now

