"""What a rehearsal boots and when it counts as trained (the boot itself: tests/boot/test_fleet_up_boot.py)."""

from __future__ import annotations

from fleet.stacks import resolve, spec_and_plan
from here.boot import rehearsal
from spec.stackfile import CLUSTER_KEY


def test_the_tiny_job_replaces_the_job_and_nothing_else():
    stack = resolve("tencent-spot", None)
    tiny = rehearsal.with_job(stack, rehearsal.TINY_JOB)
    assert tiny.config[CLUSTER_KEY]["job"] == rehearsal.TINY_JOB
    assert stack.config[CLUSTER_KEY].get("job") != rehearsal.TINY_JOB  # the stack read is left as written
    rest = {k: v for k, v in tiny.config[CLUSTER_KEY].items() if k != "job"}
    assert rest == {k: v for k, v in stack.config[CLUSTER_KEY].items() if k != "job"}
    assert {k: v for k, v in tiny.config.items() if k != CLUSTER_KEY} == \
        {k: v for k, v in stack.config.items() if k != CLUSTER_KEY}
    before, after = spec_and_plan(stack)[1], spec_and_plan(tiny)[1]
    assert (after.instance, after.network, after.firewall, after.image) == \
        (before.instance, before.network, before.firewall, before.image)


def _result(outcomes, first_step):
    return {"nodes": {name: {"outcome": outcome} for name, outcome in outcomes.items()},
            "cluster_phases": {"first-step": first_step}}


def test_trained_needs_every_node_training_and_a_first_step():
    assert rehearsal.trained(_result({"head": "training", "worker-1": "training"}, 12.5))
    assert not rehearsal.trained(_result({"head": "training", "worker-1": "training"}, None))
    assert not rehearsal.trained(_result({"head": "training", "worker-1": "warming"}, 12.5))
    assert not rehearsal.trained(_result({"head": "failed: gate", "worker-1": "training"}, 12.5))
