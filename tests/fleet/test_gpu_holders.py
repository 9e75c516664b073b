"""No orphaned GPUs: on every shipped cloud stack, the `gpuHolders` output names every instance and every scaling
group the program declares, and nothing else (docs/cloud-facts.md#no-orphaned-gpus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.preview import run_program
from spec.stackfile import load_stack_file

STACKS = sorted(p for p in (Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml")
                if p.stem != "Pulumi.local")
# What holds GPU nodes, by resource type: every instance the clusters declare is a node; every group holds nodes.
INSTANCES = ("aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance", "tencentcloud:Instance/instance:Instance")
GROUPS = ("aws:autoscaling/group:Group", "alicloud:ess/scalingGroup:ScalingGroup",
          "tencentcloud:As/scalingGroup:ScalingGroup")


def _declared(resources, types) -> list[str]:
    return sorted(r["name"] for r in resources if r["type"] in types)


def _named(holders, kind) -> list[str]:
    """The holders of a kind by resource name: the mocks' id is the name plus `-id` (an AWS group's id is its name)."""
    return sorted(h["id"].removesuffix("-id") for h in holders if h["kind"] == kind)


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_instance_and_group_is_a_listed_gpu_holder(path):
    preview = run_program(load_stack_file(path))
    holders = preview.outputs["gpuHolders"]
    assert _named(holders, "instance") == _declared(preview.resources, INSTANCES)
    assert _named(holders, "scaling-group") == _declared(preview.resources, GROUPS)
    assert {h["kind"] for h in holders} <= {"instance", "scaling-group"}


def test_the_local_cluster_holds_none_through_pulumi():
    preview = run_program(load_stack_file(STACKS[0].with_name("Pulumi.local.yaml")))
    assert preview.outputs["gpuHolders"] == []
