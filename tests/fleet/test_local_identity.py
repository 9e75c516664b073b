"""Two local stacks that choose one cluster `name` are two clusters: everything `fleet up` makes is named by the
cluster's identity (project, stack, region), so neither shares the other's directory, bucket, namespaces or links,
and `fleet down` of one leaves the other's checkpoints where they are."""

from __future__ import annotations

import yaml

from fleet.cli import main
from fleet.stacks import spec_and_plan
from here.local import layout as local_layout
from spec.stackfile import load_stack_file

CLUSTER = {"cloud": "local", "name": "shared", "instanceType": "cpu", "nodes": 2}


def _stack(tmp_path, stack: str):
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": CLUSTER}}))
    return path, spec_and_plan(load_stack_file(path))[1]


def test_two_local_stacks_with_one_name_share_nothing_and_down_leaves_the_other(tmp_path, monkeypatch):
    monkeypatch.setattr(local_layout, "STATE_ROOT", tmp_path / "state")
    (path_a, plan_a), (_, plan_b) = _stack(tmp_path, "team-a"), _stack(tmp_path, "team-b")
    assert plan_a.name == plan_b.name == "shared" and plan_a.identity != plan_b.identity
    assert plan_a.storage.checkpoint_uri != plan_b.storage.checkpoint_uri
    a, b = local_layout.layout(plan_a), local_layout.layout(plan_b)
    assert a.directory != b.directory and a.bridge_namespace != b.bridge_namespace
    assert not {n.namespace for n in a.nodes} & {n.namespace for n in b.nodes}
    assert not {n.veth for n in a.nodes} & {n.veth for n in b.nodes}
    for lay in (a, b):
        checkpoint = lay.bucket / "checkpoints" / "step-00000020" / "manifest.json"
        checkpoint.parent.mkdir(parents=True)
        checkpoint.write_text("{}")
    assert main(["down", "--stack-file", str(path_a)]) == 0
    assert not a.directory.exists()
    assert (b.bucket / "checkpoints" / "step-00000020" / "manifest.json").is_file(), "the other stack's checkpoints"
