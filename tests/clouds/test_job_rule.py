"""The `job` rule: a stack runs at every node count between its bounds, and a batch error names what the user
wrote."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from fleet.stacks import spec_and_plan
from plan.planner import ranks_per_node
from spec.errors import SpecError
from spec.stackfile import load_stack_file
from training.batching import StepSplit

STACKS = sorted((Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml"))
FIVE_LINES = {"cloud": "aws", "zone": "us-east-1a", "instanceType": "p5.48xlarge",
              "nodes": {"min": 2, "desired": 4, "max": 8}}


def _at_each_count(config: dict, tmp_path: Path) -> list[int]:
    """Plan the stack standing at each node count its bounds allow (as an elastic group may), and check that the
    job takes each of those world sizes: the counts."""
    nodes = config["config"]["gpufleet:cluster"]["nodes"]
    low, high = (nodes, nodes) if isinstance(nodes, int) else (nodes["min"], nodes["max"])
    for count in range(low, high + 1):
        pinned = copy.deepcopy(config)
        if not isinstance(nodes, int):
            pinned["config"]["gpufleet:cluster"]["nodes"]["desired"] = count
        path = tmp_path / f"Pulumi.at{count}.yaml"
        path.write_text(yaml.safe_dump(pinned))
        spec, plan = spec_and_plan(load_stack_file(path))
        StepSplit(spec.job.global_batch, count * ranks_per_node(spec, plan.instance), spec.job.micro_batch or 1)
    return list(range(low, high + 1))


@pytest.mark.parametrize("stack", STACKS, ids=[p.name for p in STACKS])
def test_every_shipped_stack_plans_at_every_node_count_it_allows(stack, tmp_path):
    assert _at_each_count(yaml.safe_load(stack.read_text()), tmp_path)


def test_a_five_line_stack_plans_at_every_count_from_min_to_max(tmp_path):
    config = {"config": {"aws:region": "us-east-1", "gpufleet:cluster": FIVE_LINES}}
    assert _at_each_count(config, tmp_path) == list(range(2, 9))


def _problem(write_stack, cluster):
    with pytest.raises(SpecError) as caught:
        spec_and_plan(load_stack_file(write_stack(cluster)))
    (problem,) = caught.value.problems
    return problem


def test_more_ranks_than_sequences_names_the_global_batch_the_user_wrote(write_stack):
    problem = _problem(write_stack, {**FIVE_LINES, "job": {"globalBatch": 48}})
    assert problem.path == "gpufleet:cluster.job.globalBatch" and "64 ranks" in problem.message
    assert "at least 64" in problem.fix and "nodes.max to at most 6" in problem.fix


def test_more_ranks_than_the_default_batch_names_the_node_count(write_stack):
    problem = _problem(write_stack, {**FIVE_LINES, "nodes": {"min": 2, "desired": 4, "max": 65}})
    assert problem.path == "gpufleet:cluster.nodes.max" and "default job.globalBatch" in problem.message
