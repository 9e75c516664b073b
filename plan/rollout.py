"""Rollout: how a change of code or settings (new user-data: the bundle's hash is in it) reaches the nodes already
running, per set of nodes (the head, each worker group), through the cloud's own mechanism.

A node's bootstrap (cloud-init's write_files and runcmd) runs once per instance, so user-data changed in place on a
running instance never re-runs it (docs/cloud-facts.md#rollout-user-data): a change reaches a node only when the node
is new. So every set of nodes is either replaced by `pulumi up` or refreshed by its group, and each leaving node
checkpoints first, as on a spot notice (a group's termination hook, or the shutdown of a replaced instance)."""

from __future__ import annotations

from dataclasses import dataclass

# The mechanisms. REPLACE: `pulumi up` replaces the instance (the provider's replace-on-user-data rule or Pulumi's
# replaceOnChanges). REFRESH: the group's own rolling instance refresh, started by the new launch settings.
# RESET_REFRESH: `fleet roll` has the group's refresh reinstall each node in place from the new launch settings (same
# instance id, fresh system disk, so cloud-init runs as on a first boot), after `pulumi up` changed them
# (plan/group_refresh.py).
REPLACE, REFRESH, RESET_REFRESH = "replace", "refresh", "reset-refresh"
# The local cluster (here/local/rollout.py). ROLL: `fleet up` run again takes the workers out of the running job
# REFRESH_BATCH at a time (each checkpoints on its leave notice), boots each anew from the new user-data and waits
# until it rejoins. HOLD: the head hosts the job's rendezvous store and decides its end, so it keeps the running
# job's bundle; the new one reaches it when the cluster is next brought up.
ROLL, HOLD = "roll", "hold"
# Fixed workers (instances no group holds, outside AWS): `fleet roll` replaces them REFRESH_BATCH at a time, each by its
# own targeted `pulumi up` (the replace-on-user-data rule of REPLACE fires there), and waits until the new node is back
# in service (its in-service mark, plan/heal.py) before the next goes; a plain `pulumi up` would replace them together.
FLEET_ROLL = "fleet-roll"
# A group whose launch settings `pulumi up` changes in place, which reach only the instances it launches next (Alibaba
# ESS: docs/cloud-facts.md#rollout-alibaba): for its members launched from older settings, REFRESH_BATCH at a time,
# `fleet roll` grows the group by one so that it launches a successor from the new settings, and removes the old
# member once the successor is in service (its mark, plan/group_roll.py), the group back at its size.
GROUP_ROLL = "group-roll"
# The tag a group's launch settings carry, which every instance it launches keeps: the hash of the user-data it was
# launched with, so `fleet roll` tells the members launched from older settings (plan/group_roll.py).
USER_DATA_TAG = "gpufleet:user-data"
# The mechanisms under which `pulumi up` replaces a node on a change of its user-data (the resource options are the
# same: components/realizers/rollout.py node_options); FLEET_ROLL only orders them.
REPLACED_BY_UP = (REPLACE, FLEET_ROLL)
# Workers a group refreshes (or `fleet up` rolls) at once: one, so the job keeps all but one node training.
REFRESH_BATCH = 1


@dataclass(frozen=True)
class RolloutPlan:
    """One set of nodes and what a change of its user-data does to them."""

    nodes: str  # "head", or a worker group's name ("workers", "on-demand", "spot")
    role: str
    form: str  # INSTANCES (the head, fixed workers) | SCALING_GROUP
    count: int  # its nodes at the desired size
    mechanism: str  # REPLACE | FLEET_ROLL | GROUP_ROLL | REFRESH | RESET_REFRESH | ROLL | HOLD
    delete_first: bool  # the old node goes before its successor is made (it holds the fixed address)
    min_healthy_percent: int | None  # REFRESH: the share of the group kept in service while it rolls

    @property
    def how(self) -> str:
        """What `fleet plan` says about this set when its user-data changes (the stack output `rollout`)."""
        what = f"{self.nodes} ({self.count} node{'s' * (self.count != 1)})"
        if self.mechanism == REFRESH:
            return (f"{what}: the group's instance refresh replaces them, keeping {self.min_healthy_percent}% in "
                    "service; each checkpoints at its termination hook before it goes")
        if self.mechanism == RESET_REFRESH:
            return (f"{what}: `pulumi up` changes the launch configuration in place, then `fleet roll` has the "
                    f"group's instance refresh reinstall them {REFRESH_BATCH} at a time from it; each checkpoints on "
                    "its shutdown before it goes; a plain `pulumi up` leaves them on their old settings")
        if self.mechanism == ROLL:
            return (f"{what}: `fleet up` rolls them {REFRESH_BATCH} at a time while the job goes on: each "
                    "checkpoints on its leave notice, boots anew with the new bundle and rejoins before the next goes")
        if self.mechanism == HOLD:
            return (f"{what}: not rolled: it hosts the running job's rendezvous, so it keeps its bundle until the "
                    "cluster is next brought up")
        if self.mechanism == FLEET_ROLL:
            return (f"{what}: `fleet roll` replaces them {REFRESH_BATCH} at a time while the job goes on: each "
                    "checkpoints on its shutdown, and the next goes once the new node passed its gate (its in-service "
                    "mark); a plain `pulumi up` would replace them together")
        if self.mechanism == GROUP_ROLL:
            return (f"{what}: `pulumi up` changes the group's configuration in place, then `fleet roll` replaces "
                    f"them {REFRESH_BATCH} at a time while the job goes on: the group grows by one to launch each "
                    "successor from the new configuration, and the old node goes (checkpointing on its shutdown) "
                    "once the successor passed its gate (its in-service mark)")
        order = ("deleted, then created anew (it holds the fixed address); the job stops with a checkpoint and "
                 "resumes on the new head" if self.delete_first else
                 "replaced together by `pulumi up`; each checkpoints on its shutdown before it goes")
        return f"{what}: {order}"


def rollout_of(rollout: tuple[RolloutPlan, ...], nodes: str) -> RolloutPlan:
    """The rollout of one set of nodes, by its name."""
    return next(r for r in rollout if r.nodes == nodes)
