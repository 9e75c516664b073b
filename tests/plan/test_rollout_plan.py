"""What a change of the nodes' user-data does to each set of nodes (plan/planner.py `plan_rollout`), on the shipped
stacks of each rollout mechanism: the head is replaced with its fixed address freed first (held, where `fleet up`
rolls the workers around the running job), and each worker group rolls at its desired size by the mechanism its
cloud names for its form; only an instance refresh keeps a share of the group in service."""

from __future__ import annotations

import pytest

from fleet.stacks import resolve, spec_and_plan

FIELDS = ("nodes", "role", "form", "count", "mechanism", "delete_first", "min_healthy_percent")
EXPECTED = {
    "aws-p5": [("head", "head", "instances", 1, "replace", True, None),
               ("workers", "worker", "scaling-group", 3, "refresh", False, 50)],
    "ali-erdma": [("head", "head", "instances", 1, "replace", True, None),
                  ("on-demand", "worker", "instances", 1, "fleet-roll", False, None)],
    "ali-spot": [("head", "head", "instances", 1, "replace", True, None),
                 ("workers", "worker", "scaling-group", 3, "group-roll", False, None)],
    "tencent-spot": [("head", "head", "instances", 1, "replace", True, None),
                     ("on-demand", "worker", "scaling-group", 2, "reset-refresh", False, None),
                     ("spot", "worker", "scaling-group", 1, "reset-refresh", False, None)],
    "local": [("head", "head", "instances", 1, "hold", False, None),
              ("on-demand", "worker", "instances", 1, "roll", False, None)],
}


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_each_set_of_nodes_rolls_by_its_clouds_mechanism_at_its_size(stack):
    plan = spec_and_plan(resolve(stack, None))[1]
    assert [tuple(getattr(r, field) for field in FIELDS) for r in plan.rollout] == EXPECTED[stack]


def test_what_fleet_plan_says_of_a_refresh_names_the_share_kept_in_service():
    how = [r.how for r in spec_and_plan(resolve("aws-p5", None))[1].rollout]
    assert how == [
        "head (1 node): deleted, then created anew (it holds the fixed address); the job stops with a checkpoint and "
        "resumes on the new head",
        "workers (3 nodes): the group's instance refresh replaces them, keeping 50% in service; each checkpoints at "
        "its termination hook before it goes"]
