"""`fleet plan --diagram`: a Mermaid topology per stack, drawn from the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.stackfile import load_stack_file
from fleet.cli import main
from fleet.diagram import mermaid
from fleet.stacks import spec_and_plan

STACKS = sorted((Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml"))


def _plan(name: str):
    return spec_and_plan(load_stack_file(Path(__file__).resolve().parents[2] / "stacks" / f"Pulumi.{name}.yaml"))[1]


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_every_stack_draws_network_nodes_bucket_and_fabric(path):
    plan = spec_and_plan(load_stack_file(path))[1]
    text = mermaid(plan)
    assert text.startswith("```mermaid\nflowchart LR\n") and text.endswith("```")
    for part in (plan.network.vpc_cidr, plan.network.private.cidr, plan.network.head_address, plan.instance.name,
                 f"desired {plan.scaling.workers_desired}", plan.storage.checkpoint_uri, plan.fabric.kind):
        assert part in text
    assert text.count("subgraph") == text.count("\n    end") + text.count("\n      end") + text.count("\n  end")


def test_market_mix_placement_and_ssh(write_stack):
    p5 = mermaid(_plan("aws-p5"))
    assert "2 on-demand + 1 spot" in p5 and "cluster placement group" in p5 and "efa x32 per node" in p5
    block = mermaid(_plan("aws-p4d-capacity-block"))
    assert "capacity block cr-" in block and "placement group" not in block
    assert "SSH" not in mermaid(_plan("aws-g4dn-dev")), "AWS nodes are reached through Session Manager"
    ali = {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge", "nodes": 2,
           "image": "ubuntu_22_04_x64_20G_alibase_20240130.vhd", "network": {"sshCidrs": ["203.0.113.0/24"]}}
    path = write_stack(ali, region=None, extra={"alicloud:region": "cn-hangzhou"})
    assert "SSH from 203.0.113.0/24" in mermaid(spec_and_plan(load_stack_file(path))[1])


def test_plan_diagram_flag(capsys):
    assert main(["plan", "--stack", "aws-p5", "--diagram"]) == 0
    assert capsys.readouterr().out.startswith("```mermaid")
