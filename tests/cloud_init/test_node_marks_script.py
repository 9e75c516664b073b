"""The marks `fleet heal` and `fleet roll` read (plan/heal.py), written by the node scripts themselves: a node outside
any group marks a failed gate (with its reason, or `stopped:` past the failure budget) through gpufleet-report, and a
passed one through gpufleet-mark; the object sits where plan/heal.py node_marks says, under the instance id its
metadata gives. A group's node marks too (`fleet roll` waits for the successor of a group node it rolled); a local node
marks nothing. Nodes run from the local stack's user-data under a node root, on a cloud's metadata (its instance id),
with the bucket a directory."""

from __future__ import annotations

import pytest
from bootstrap_helpers import run
from test_local_scripts import INSTANCE_ID, local_node, metadata  # noqa: F401  (the fixtures)

from plan.heal import node_marks
from plan.software import FAILURE_BUDGET

CHECKPOINTS = "bucket/cluster/checkpoints"


def _node(local_node, metadata, tmp_path, metadata_of: str, local: bool = False, **settings):  # noqa: F811
    """A local-stack node on `metadata_of`'s metadata, outside any group, its bucket under tmp_path; installed in local
    mode, then (unless `local`) told it is not local, as a cloud node is."""
    uri = f"file://{tmp_path}/{CHECKPOINTS}"
    node = local_node(**metadata(metadata_of), **({"in_scaling_group": False, "checkpoint_uri": uri,
                                                   "failure_uri": f"file://{tmp_path}/bucket/cluster/failures"}
                                                  | settings))
    if not local:
        with open(node[0] / "etc/gpufleet/node.env", "a") as env:
            env.write("GF_LOCAL=0\n")
    return node


def _mark(tmp_path):
    path = node_marks(f"file://{tmp_path}/{CHECKPOINTS}").removeprefix("file://") + f"/{INSTANCE_ID}"
    with open(path) as mark:
        return mark.read().strip()


@pytest.mark.parametrize("cloud", ["aws", "alicloud", "tencentcloud"])
def test_a_node_outside_groups_marks_its_failed_gate_with_the_reason(local_node, metadata, tmp_path, cloud):  # noqa: F811
    root, _, env, _ = _node(local_node, metadata, tmp_path, cloud)
    result = run([root / "opt/gpufleet/bin/gpufleet-report", "gpus:7/8"], root, env)
    assert result.returncode == 0, result.stderr
    assert _mark(tmp_path) == "failed:gpus:7/8"
    result = run([root / "opt/gpufleet/bin/gpufleet-mark", "in-service"], root, env)
    assert result.returncode == 0, result.stderr
    assert _mark(tmp_path) == "in-service", "a node's mark is its latest word"


def test_past_the_failure_budget_the_mark_says_stopped(local_node, metadata, tmp_path):  # noqa: F811
    reason = "driver:570.133.20:min=580"
    for _ in range(FAILURE_BUDGET + 1):
        root, _, env, _ = _node(local_node, metadata, tmp_path, "aws")
        (root / "var/lib/gpufleet/node-id").unlink(missing_ok=True)
        assert run([root / "opt/gpufleet/bin/gpufleet-report", reason], root, env).returncode == 0
    assert _mark(tmp_path) == f"stopped:{reason}"


def test_a_group_node_marks_its_passed_gate(local_node, metadata, tmp_path):  # noqa: F811
    root, _, env, _ = _node(local_node, metadata, tmp_path, "alicloud", in_scaling_group=True)
    result = run([root / "opt/gpufleet/bin/gpufleet-mark", "in-service"], root, env)
    assert result.returncode == 0, result.stderr
    assert _mark(tmp_path) == "in-service"


def test_a_local_node_marks_nothing(local_node, metadata, tmp_path):  # noqa: F811
    root, _, env, _ = _node(local_node, metadata, tmp_path, "aws", local=True)
    assert run([root / "opt/gpufleet/bin/gpufleet-mark", "in-service"], root, env).returncode == 0
    assert not (tmp_path / "bucket/cluster/nodes").exists()


RECORDER = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$GPUFLEET_TEST/marks"
"""


@pytest.mark.parametrize(("settings", "marks"), [({}, ["in-service"]), ({"gpus": 8}, ["failed:gpus:0/8"])])
def test_the_gate_marks_its_outcome(local_node, tmp_path, settings, marks):  # noqa: F811
    """The gate's own steps call gpufleet-mark (a recorder here): in service once its last step passed, failed with
    the reason otherwise (the local node's gate: no GPU unless the plan promises some)."""
    root, entry, env, _ = local_node(**settings)
    (root / "opt/gpufleet/bin/gpufleet-mark").write_text(RECORDER)
    result = run([entry, "gate"], root, env)
    assert result.returncode == (0 if marks == ["in-service"] else 1), result.stderr
    assert (tmp_path / "test/marks").read_text().splitlines() == marks
