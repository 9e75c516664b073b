"""Rolling a group whose launch settings change in place (plan/rollout.py GROUP_ROLL, Alibaba's ESS groups), and when
a replaced node's successor lets the next node go: pure decisions over what `fleet roll` saw of the group and the
bucket's marks.

A scaling configuration changed in place reaches only the instances the group launches next
(docs/cloud-facts.md#rollout-alibaba). Each instance keeps the USER_DATA_TAG its configuration carried when it was
launched, so the members whose tag is not the configuration's current one were launched from older settings. For
each of them, one at a time, the longest-serving first, `fleet roll` raises the group's expected number of instances
by one (and its maximum where that one would pass it): the group launches the successor from the current
configuration. Once the successor's mark says it passed its gate (plan/heal.py IN_SERVICE), the old member is removed
with the expected number lowered again, and the maximum goes back. Every step is one the ESS API documents; a failed
mark or the roll's timeout puts the group back at the stack's size and stops the roll, so no member of older settings
leaves the job before its successor serves."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from plan.heal import FAILED, IN_SERVICE, OVER_BUDGET
from plan.model import WORKER
from plan.rollout import GROUP_ROLL, RolloutPlan

# The lifecycle state of a group member that serves (ESS's word: docs/cloud-facts.md#rollout-alibaba); the others
# (Pending, Removing, Protected, Standby...) are joining, leaving or held by hand, and are not rolled.
SERVING = "InService"


@dataclass(frozen=True)
class Member:
    """One instance of a group, as the group's describe call and the instance's tags show it."""

    instance_id: str
    state: str  # the group's lifecycle state of it
    added: str  # when the group added it (ISO 8601 UTC, so it sorts as time)
    user_data: str | None  # its USER_DATA_TAG; None: it carries none (launched before the tag was set)


@dataclass(frozen=True)
class HeldGroup:
    """A scaling group the stack holds, as its state says: the USER_DATA_TAG its configuration carries now, and the
    expected and largest number of instances the stack gave it (what a roll returns the group to)."""

    name: str
    group_id: str
    user_data: str
    desired: int
    max_size: int


@dataclass(frozen=True)
class Size:
    """A group's expected and largest number of instances."""

    desired: int
    max_size: int


def surge(group: HeldGroup) -> Size:
    """One instance more than the stack's size, to launch a successor before a member goes: the maximum rises only
    where the expected number would pass it (ESS keeps MaxSize >= DesiredCapacity >= MinSize)."""
    return Size(group.desired + 1, max(group.max_size, group.desired + 1))


def settled(group: HeldGroup) -> Size:
    """The stack's own size, which the group holds again once a member's successor took its place (or failed)."""
    return Size(group.desired, group.max_size)


@dataclass(frozen=True)
class Successor:
    """What the marks of the instances the group launched since a node went say: `passed` (one is in service),
    else `failed` (one failed its gate: its id and mark), else neither (still booting)."""

    passed: str | None = None
    failed: tuple[str, str] | None = None


def rolls_groups(rollout: Iterable[RolloutPlan]) -> bool:
    """Whether the plan's worker groups are rolled by `fleet roll` (else a group refreshes itself, or there is none)."""
    return any(r.role == WORKER and r.mechanism == GROUP_ROLL for r in rollout)


def stale(members: Iterable[Member], user_data: str) -> tuple[Member, ...]:
    """The serving members launched from older settings (their tag is not `user_data`, the configuration's), the
    longest-serving first."""
    return tuple(sorted((m for m in members if m.state == SERVING and m.user_data != user_data),
                        key=lambda m: (m.added, m.instance_id)))


def successors(before: Collection[str], members: Iterable[Member]) -> tuple[str, ...]:
    """The members the group added since it held the instances `before` (a node went)."""
    return tuple(m.instance_id for m in members if m.instance_id not in before)


def successor(marks: Mapping[str, str | None]) -> Successor:
    """The outcome the marks of a node's successors give (instance id -> its mark, None where it wrote none yet): a
    failure stops the roll even where another successor passed, since the group then holds a failed node."""
    for instance_id, mark in marks.items():
        if mark and mark.startswith((FAILED, OVER_BUDGET)):
            return Successor(failed=(instance_id, mark))
    return Successor(passed=next((i for i, mark in marks.items() if mark == IN_SERVICE), None))
