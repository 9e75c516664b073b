"""Resource options that carry a set of nodes' rollout (plan/rollout.py) to Pulumi: which input change
replaces a node and whether the old one goes first, and the hash a group's launch settings carry."""

from __future__ import annotations

import hashlib

import pulumi

from plan.rollout import REPLACED_BY_UP, RolloutPlan


def user_data_trigger(user_data: str) -> str:
    """A short hash of a role's user-data: it changes exactly when the user-data does (code hash, settings)."""
    return hashlib.sha256(user_data.encode()).hexdigest()[:16]


def node_options(rollout: RolloutPlan, user_data_input: str | None) -> pulumi.ResourceOptions:
    """A node `pulumi up` replaces: on a change of `user_data_input` (Pulumi's replaceOnChanges, where the provider
    would update it in place; None where the provider's own rule replaces it), deleted first if it must be; under
    FLEET_ROLL the same, one node per `pulumi up` (fleet/roll_command.py)."""
    if rollout.mechanism not in REPLACED_BY_UP:
        raise ValueError(f"{rollout.nodes} is not replaced by `pulumi up` but by {rollout.mechanism}")
    return pulumi.ResourceOptions(replace_on_changes=[user_data_input] if user_data_input else None,
                                  delete_before_replace=rollout.delete_first)
