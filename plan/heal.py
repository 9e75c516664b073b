"""Healing the nodes no group replaces (every head; fixed workers: Alibaba eRDMA, Tencent HCC), and the order
`fleet roll` replaces fixed workers in: pure decisions over what `fleet heal` / `fleet roll` saw of each node.

A node outside a group is an instance the stack declares: when it fails its gate or dies, nothing replaces it by
itself (an instance whose inputs did not change has no diff: docs/cloud-facts.md#rollout-replacement). Each such node
writes its mark in the cluster's bucket (cloud-init/bin/gpufleet-mark, from gpufleet-report and gpufleet-health:
`<bucket>/<cluster>/nodes/<instance id>`); the cloud's describe call, through `pulumi refresh`, says whether the
instance still runs (on the local cluster: whether its machine does). `fleet heal` replaces the failed and the dead,
one `pulumi up` each, the head last; `fleet roll` waits for IN_SERVICE between fixed workers.

A node that hangs before its gate ends (a bootstrap or a gate that never returns) writes no mark and reads as booting.
So heal records, beside the marks, when it first saw each running node without one (unmarked_records, written by the
pipeline: nodes gain no permission), and replaces a node still unmarked past the plan's deadline (MARK_DEADLINE_S)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from plan.model import HEAD, INSTANCES, WORKER
from plan.rollout import FLEET_ROLL, HOLD, RolloutPlan
from plan.software import failure_records

# A node's mark, the whole content of its object under node_marks(): it passed its gate; it failed it (and asks for
# a replacement); it failed it for a permanent reason past the failure budget (and stays: a new node would fail too).
IN_SERVICE = "in-service"
FAILED = "failed:"
OVER_BUDGET = "stopped:"


def node_marks(checkpoint_uri: str) -> str:
    """Where the nodes write their marks: beside the failure records (gpufleet-mark finds the folder from
    GF_FAILURE_URI, user-data having no room for another setting), one object per instance id."""
    return failure_records(checkpoint_uri).rsplit("/", 1)[0] + "/nodes"


def unmarked_records(checkpoint_uri: str) -> str:
    """Where `fleet heal` records when it first saw a running node without a mark (the time, one object per instance
    id), beside the marks and outside their folder, which the nodes write."""
    return node_marks(checkpoint_uri) + "-unmarked"


@dataclass(frozen=True)
class NodeSeen:
    """One node the stack declares, as `pulumi refresh` and the bucket show it."""

    resource: str  # its Pulumi URN
    name: str  # its resource name (what the user sees in `pulumi stack`)
    role: str  # HEAD | WORKER (its gpufleet:role tag)
    instance_id: str
    state: str | None  # the cloud's instance state after the refresh; None: the instance is gone
    mark: str | None  # its mark in the bucket; None: none written (booting, or never reached the bucket)
    unmarked_s: float | None = None  # how long since heal first saw it without a mark; None: not timed
    # The user-data it was deployed with, where a replacement takes its user-data from the node's own resource (the
    # Alibaba and Tencent instances); None where it takes it from a launch template heal leaves as deployed (AWS).
    user_data: str | None = None


@dataclass(frozen=True)
class Replacement:
    node: NodeSeen
    why: str
    gone: bool  # the refresh dropped it from the state: `pulumi up` makes it anew (nothing to --replace)


@dataclass(frozen=True)
class HealPlan:
    """What `fleet heal` does: the replacements in order (the head last), the nodes it leaves and why, and the worker
    sets whose group replaces their own nodes."""

    replace: tuple[Replacement, ...]
    refused: tuple[tuple[NodeSeen, str], ...]
    groups: tuple[str, ...]


def permanent_reason(mark: str, permanent: Collection[str]) -> str | None:
    """The reason of a failure mark whose kind (the part before the first ':') the plan calls permanent."""
    reason = mark.removeprefix(FAILED).removeprefix(OVER_BUDGET)
    return reason if reason.partition(":")[0] in permanent else None


def _dead(node: NodeSeen, dead_states: Collection[str]) -> str | None:
    if node.state is None:
        return "its instance is gone"
    if node.state in dead_states:
        return f"its instance is {node.state}"
    return None


def awaiting_mark(node: NodeSeen, dead_states: Collection[str]) -> bool:
    """A node that runs (or is starting) and wrote no mark yet: booting, or hung; heal times it."""
    return node.mark is None and _dead(node, dead_states) is None


UNDEPLOYED = ("its replacement would boot this checkout's user-data, which is not what the cluster was deployed with "
              "(a change of code or settings not deployed yet): run heal at the commit of the stack's last update "
              "(`pulumi stack history` names it: the heal workflow does), or deploy the change (`fleet roll`), "
              "which replaces it too")


def undeployed(node: NodeSeen, planned: Mapping[str, str]) -> bool:
    """The checkout's user-data for the node's role is not what the node was deployed with: code or settings changed
    and not deployed yet. A targeted `pulumi up --replace` creates the replacement from the checkout's program (the
    engine checks a replacement's goal, not the state: docs/cloud-facts.md#heal-pulumi), and leaves the new bundle
    unuploaded, so the replacement would boot code the cluster does not run, or a bundle that does not exist."""
    return node.user_data is not None and node.role in planned and planned[node.role] != node.user_data


def decide_heal(rollout: Iterable[RolloutPlan], nodes: Iterable[NodeSeen], dead_states: Collection[str], *,
                budget: int, permanent: Collection[str], deadline_s: float,
                planned: Mapping[str, str] | None = None) -> HealPlan:
    """Replace each node that is dead (gone, or in one of the cloud's `dead_states`), marked failed, or still without
    a mark `deadline_s` after heal first saw it (hung: plan/lifecycle.py MARK_DEADLINE_S); refuse a node
    failed for a permanent reason once more than `budget` nodes carry that reason (its own node-side count, the
    OVER_BUDGET mark, or the marks seen here): a new node boots the same image and fails the same way; refuse a dead
    node the plan holds (the local head: HOLD); refuse one whose replacement would take other user-data than it was
    deployed with (`planned`, role -> the checkout's user-data: `undeployed`), so a healed node runs the code its
    cluster runs and no replacement fails for a bundle never uploaded. Workers in a scaling group are never seen
    here: their group replaces them, and the plan names those sets."""
    nodes, rollout = tuple(nodes), tuple(rollout)
    held = {r.role for r in rollout if r.mechanism == HOLD}
    seen = Counter(reason for n in nodes if n.mark and n.mark.startswith(FAILED)
                   and (reason := permanent_reason(n.mark, permanent)))
    replace: list[Replacement] = []
    refused: list[tuple[NodeSeen, str]] = []
    for node in nodes:
        dead = _dead(node, dead_states)
        mark = node.mark or ""
        reason = permanent_reason(mark, permanent) if mark.startswith((FAILED, OVER_BUDGET)) else None
        if dead and node.role in held:
            refused.append((node, f"{dead}, and it hosts the running job's rendezvous and decides its end: no "
                                  "replacement joins that job; bring the cluster up again"))
        elif dead:
            replace.append(Replacement(node, dead, node.state is None))
        elif mark.startswith(OVER_BUDGET):
            refused.append((node, f"more than {budget} nodes failed with {reason or mark.removeprefix(OVER_BUDGET)}"
                                  " (its own count in the bucket's failure records): a new node boots the same image; "
                                  "change the stack's image or software"))
        elif reason and seen[reason] > budget:
            refused.append((node, f"{seen[reason]} nodes failed with {reason}, past the failure budget of {budget}: "
                                  "a new node boots the same image; change the stack's image or software"))
        elif mark.startswith(FAILED):
            replace.append(Replacement(node, f"it failed its gate ({mark.removeprefix(FAILED)})", False))
        elif not mark and node.unmarked_s is not None and node.unmarked_s > deadline_s:
            replace.append(Replacement(node, f"no mark {node.unmarked_s:.0f} s after it was first seen (its "
                                             f"bootstrap and gate end within {deadline_s:.0f} s)", False))
    refused += [(r.node, UNDEPLOYED) for r in replace if undeployed(r.node, planned or {})]
    replace = [r for r in replace if not undeployed(r.node, planned or {})]
    replace.sort(key=lambda r: r.node.role == HEAD)
    groups = tuple(r.how for r in rollout if r.role == WORKER and r.form != INSTANCES)
    return HealPlan(tuple(replace), tuple(refused), groups)


def roll_order(rollout: Iterable[RolloutPlan], nodes: Iterable[NodeSeen]) -> tuple[NodeSeen, ...]:
    """The fixed workers `fleet roll` replaces one at a time, in their resource order; () where the plan rolls no
    fixed workers (its workers are in groups, or it has none)."""
    if not any(r.role == WORKER and r.mechanism == FLEET_ROLL for r in rollout):
        return ()
    return tuple(sorted((n for n in nodes if n.role == WORKER), key=lambda n: _index(n.name)))


def _index(name: str) -> tuple[int, str]:
    """`<cluster>-worker-<n>` sorts by n (worker-10 after worker-9)."""
    tail = name.rpartition("-")[2]
    return (int(tail), name) if tail.isdigit() else (-1, name)
