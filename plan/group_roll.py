"""Rolling a group whose launch settings change in place (plan/rollout.py GROUP_ROLL, Alibaba's ESS groups), and when
a replaced node's successor lets the next node go: pure decisions over what `fleet roll` saw of the group and the
bucket's marks.

A scaling configuration changed in place reaches only the instances the group launches next
(docs/cloud-facts.md#rollout-alibaba). Each instance keeps the USER_DATA_TAG its configuration carried when it was
launched, so the members whose tag is not the configuration's current one were launched from older settings: those
`fleet roll` reports unhealthy, one at a time, and the group launches a successor from the current configuration to
keep its size. The next goes once a successor's mark says it passed its gate (plan/heal.py IN_SERVICE); a failed mark
or the roll's timeout stops the roll, so no second node leaves the job."""

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
