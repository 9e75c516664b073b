"""`fleet heal`'s decision, per cloud, on the shipped stacks' plans: a failed or dead node outside a group is
replaced (the head last), a group's workers are left to their group, a permanent failure past the failure budget is
refused with the reason. Instance states are each cloud's own words, written from
docs/cloud-facts.md#heal-instance-states, not read from the profiles."""

from __future__ import annotations

import pytest

from clouds import CLOUDS
from fleet.stacks import spec_and_plan
from plan.heal import NodeSeen as Node
from plan.heal import awaiting_mark, decide_heal, node_marks, permanent_reason, roll_order, unmarked_records
from plan.lifecycle import GATE_TIMEOUT_S, HEALTH_GRACE_S, MARK_DEADLINE_S
from plan.model import HEAD, WORKER
from plan.paths import PROJECT_ROOT
from plan.software import FAILURE_BUDGET, PERMANENT_FAILURES
from spec.stackfile import load_stack_file

# Per cloud: a stack whose workers are fixed instances, one whose workers are in groups, and the instance states
# its describe call reports for a running and for a powered-off instance.
CLOUD_CASES = {
    "alicloud": ("ali-erdma", "ali-spot", "Running", "Stopped"),
    "tencentcloud": ("tencent-hcc", "tencent-spot", "RUNNING", "STOPPED"),
    "aws": (None, "aws-p5", "running", "stopped"),
}


def plan(stack: str):
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))[1]


def node(name: str, role: str = WORKER, state: str | None = "running", mark: str | None = None,
         unmarked_s: float | None = None) -> Node:
    return Node(f"urn:pulumi:s::gpufleet::t::{name}", name, role, f"i-{name}", state, mark, unmarked_s)


def heal(stack: str, cloud: str, nodes: list[Node]):
    return decide_heal(plan(stack).rollout, nodes, CLOUDS[cloud].dead_states, budget=FAILURE_BUDGET,
                       permanent=PERMANENT_FAILURES, deadline_s=MARK_DEADLINE_S)


def names(decision) -> list[str]:
    return [r.node.name for r in decision.replace]


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_a_failed_worker_outside_a_group_is_replaced(cloud):
    fixed, _, running, _ = CLOUD_CASES[cloud]
    nodes = [node("head", HEAD, running, "in-service"), node("worker-0", state=running, mark="in-service"),
             node("worker-1", state=running, mark="failed:gpus:7/8")]
    decision = heal(fixed, cloud, nodes)
    assert names(decision) == ["worker-1"]
    assert decision.replace[0].why == "it failed its gate (gpus:7/8)" and decision.replace[0].gone is False
    assert decision.groups == (), "every worker of this stack is an instance the stack declares"


@pytest.mark.parametrize("cloud", sorted(CLOUD_CASES))
def test_workers_in_a_group_are_left_to_it(cloud):
    _, grouped, running, _ = CLOUD_CASES[cloud]
    the_plan = plan(grouped)
    # The stack declares the head only: its group's members are no resources of it.
    decision = heal(grouped, cloud, [node("head", HEAD, running, "in-service")])
    assert decision.replace == () and decision.refused == ()
    groups = [r for r in the_plan.rollout if r.role == WORKER]
    assert groups and decision.groups == tuple(r.how for r in groups)


@pytest.mark.parametrize("cloud", sorted(CLOUD_CASES))
def test_a_dead_head_is_replaced_last(cloud):
    fixed, grouped, running, off = CLOUD_CASES[cloud]
    stack = fixed or grouped
    nodes = [node("head", HEAD, off, "in-service"), node("worker-0", state=running, mark="in-service")]
    if fixed:
        nodes.append(node("worker-1", state=None, mark="in-service"))
    decision = heal(stack, cloud, nodes)
    assert names(decision) == (["worker-1", "head"] if fixed else ["head"])
    assert decision.replace[-1].why == f"its instance is {off}"
    assert [r.gone for r in decision.replace] == ([True, False] if fixed else [False])
    if fixed:
        assert decision.replace[0].why == "its instance is gone"
    # A running head with no mark yet is booting: left alone.
    assert heal(stack, cloud, [node("head", HEAD, running, None)]).replace == ()


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_a_permanent_failure_past_the_budget_is_refused_with_the_reason(cloud):
    fixed, _, running, _ = CLOUD_CASES[cloud]
    reason = "driver:570.133.20:min=580"
    within = [node(f"worker-{i}", state=running, mark=f"failed:{reason}") for i in range(FAILURE_BUDGET)]
    assert names(heal(fixed, cloud, within)) == [n.name for n in within]
    past = [*within, node("worker-9", state=running, mark=f"failed:{reason}")]
    decision = heal(fixed, cloud, past)
    assert decision.replace == ()
    assert [n.name for n, _ in decision.refused] == [n.name for n in past]
    assert all(f"past the failure budget of {FAILURE_BUDGET}" in why and reason in why for _, why in decision.refused)
    # The node's own count (every node that ever failed so, in the bucket's records) stopped it: refused too.
    stopped = heal(fixed, cloud, [node("worker-0", state=running, mark=f"stopped:{reason}")])
    assert stopped.replace == ()
    assert stopped.refused[0][1] == (f"more than {FAILURE_BUDGET} nodes failed with {reason} (its own count in the "
                                     "bucket's failure records): a new node boots the same image; change the stack's "
                                     "image or software")
    assert decision.refused[0][1] == (f"{FAILURE_BUDGET + 1} nodes failed with {reason}, past the failure budget of "
                                      f"{FAILURE_BUDGET}: a new node boots the same image; change the stack's image or "
                                      "software")
    # A node stops on its own count of a reason this plan does not call permanent: told with that reason.
    own = heal(fixed, cloud, [node("worker-0", state=running, mark="stopped:gpus:7/8")])
    assert own.refused[0][1].startswith(f"more than {FAILURE_BUDGET} nodes failed with gpus:7/8 (its own count")
    # A reason a new node may fix is no budget's: every such node is replaced.
    flaky = [node(f"worker-{i}", state=running, mark="failed:gpus:7/8") for i in range(FAILURE_BUDGET + 2)]
    assert len(heal(fixed, cloud, flaky).replace) == FAILURE_BUDGET + 2


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_fleet_roll_takes_the_fixed_workers_in_their_order(cloud):
    fixed, grouped, running, _ = CLOUD_CASES[cloud]
    nodes = [node("c-worker-10"), node("c-head", HEAD), node("c-worker-2"), node("c-worker-0")]
    assert [n.name for n in roll_order(plan(fixed).rollout, nodes)] == ["c-worker-0", "c-worker-2", "c-worker-10"]
    # A name without a number (renamed by hand) goes first, before worker-0.
    odd = [node("c-worker-2"), node("c-worker-spare"), node("c-worker-0")]
    assert [n.name for n in roll_order(plan(fixed).rollout, odd)] == ["c-worker-spare", "c-worker-0", "c-worker-2"]
    assert roll_order(plan(grouped).rollout, [node("c-head", HEAD), node("c-worker-0")]) == (), \
        "a group's workers are its refresh's"


def test_a_permanent_reason_is_read_from_a_failed_and_from_a_stopped_mark():
    permanent = {"driver"}
    assert permanent_reason("failed:driver:570:min=580", permanent) == "driver:570:min=580"
    assert permanent_reason("stopped:driver:570:min=580", permanent) == "driver:570:min=580"
    assert permanent_reason("failed:gpus:7/8", permanent) is None


def test_marks_sit_beside_the_checkpoints_and_heals_records_beside_them():
    marks = node_marks("oss://bucket-1/cluster/checkpoints")
    assert marks == "oss://bucket-1/cluster/nodes"
    records = unmarked_records("oss://bucket-1/cluster/checkpoints")
    assert records.startswith("oss://bucket-1/cluster/") and not records.startswith(marks + "/"), \
        "outside the folder the nodes write"


@pytest.mark.parametrize("cloud", sorted(CLOUD_CASES))
def test_a_node_without_a_mark_past_the_deadline_is_replaced_as_hung(cloud):
    fixed, grouped, running, off = CLOUD_CASES[cloud]
    stack = fixed or grouped
    booting = node("head", HEAD, running, None, unmarked_s=MARK_DEADLINE_S - 60)
    hung = node("head", HEAD, running, None, unmarked_s=MARK_DEADLINE_S + 60)
    at_deadline = node("head", HEAD, running, None, unmarked_s=MARK_DEADLINE_S)
    assert heal(stack, cloud, [at_deadline]).replace == (), "replaced only past the deadline"
    assert awaiting_mark(booting, CLOUDS[cloud].dead_states)
    assert heal(stack, cloud, [booting]).replace == (), "still within its bootstrap and gate"
    decision = heal(stack, cloud, [hung])
    assert names(decision) == ["head"] and decision.replace[0].gone is False
    assert decision.replace[0].why == (f"no mark {MARK_DEADLINE_S + 60} s after it was first seen (its bootstrap and "
                                       f"gate end within {MARK_DEADLINE_S} s)")
    # Heal times only nodes awaiting a mark: one first seen now, one that marked itself, one dead, are not hung.
    assert heal(stack, cloud, [node("head", HEAD, running, None, unmarked_s=0)]).replace == ()
    marked = node("head", HEAD, running, "in-service", unmarked_s=MARK_DEADLINE_S + 60)
    assert not awaiting_mark(marked, CLOUDS[cloud].dead_states) and heal(stack, cloud, [marked]).replace == ()
    dead = node("head", HEAD, off, None)
    assert not awaiting_mark(dead, CLOUDS[cloud].dead_states)
    assert heal(stack, cloud, [dead]).replace[0].why == f"its instance is {off}"


def test_the_deadline_covers_the_gate_systemd_runs():
    unit = (PROJECT_ROOT / "cloud-init/systemd/gpufleet-gate.service").read_text()
    assert f"TimeoutStartSec={GATE_TIMEOUT_S}\n" in unit
    assert MARK_DEADLINE_S == HEALTH_GRACE_S + GATE_TIMEOUT_S


def test_on_the_local_cluster_an_ended_worker_is_booted_anew_and_the_head_is_held():
    decision = heal("local", "local", [node("head", HEAD, "ended"), node("worker-1", state="ended"),
                                       node("worker-2", state="running")])
    assert names(decision) == ["worker-1"]
    assert [n.name for n, _ in decision.refused] == ["head"]
    assert decision.refused[0][1] == ("its instance is ended, and it hosts the running job's rendezvous and decides "
                                      "its end: no replacement joins that job; bring the cluster up again")


def test_a_node_whose_replacement_would_boot_other_user_data_is_refused_and_only_that_one():
    """A replacement is made from the checkout's program: where its user-data is not what the node was deployed with
    (a change not deployed yet), heal refuses the node; a node whose user-data comes from a launch template heal
    does not touch (None) and one deployed with the checkout's are replaced."""
    planned = {HEAD: "head v2", WORKER: "worker v2"}
    nodes = [Node("u0", "w-0", WORKER, "i-0", None, None, user_data="worker v1"),
             Node("u1", "w-1", WORKER, "i-1", None, None, user_data="worker v2"),
             Node("u2", "w-2", WORKER, "i-2", "running", "failed:nccl:allreduce", user_data="worker v1"),
             Node("uh", "head", HEAD, "i-h", None, None)]
    decision = decide_heal((), nodes, ("stopped",), budget=FAILURE_BUDGET, permanent=PERMANENT_FAILURES,
                           deadline_s=MARK_DEADLINE_S, planned=planned)
    assert [r.node.name for r in decision.replace] == ["w-1", "head"]
    assert [(node.name, "not what the cluster was deployed with" in why) for node, why in decision.refused] == [
        ("w-0", True), ("w-2", True)]
    healthy = Node("u3", "w-3", WORKER, "i-3", "running", "in-service", user_data="worker v1")
    assert decide_heal((), [healthy], ("stopped",), budget=FAILURE_BUDGET, permanent=PERMANENT_FAILURES,
                       deadline_s=MARK_DEADLINE_S, planned=planned).refused == (), "a node needing nothing: no concern"
