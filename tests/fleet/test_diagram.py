"""`fleet plan --diagram`: a Mermaid topology per stack, drawn from the plan: each worker group, and each placement
group around exactly the roles that join it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet.cli import main
from fleet.diagram import mermaid
from fleet.stacks import spec_and_plan
from spec.stackfile import load_stack_file

STACKS = sorted((Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml"))


def _plan(name: str):
    return spec_and_plan(load_stack_file(Path(__file__).resolve().parents[2] / "stacks" / f"Pulumi.{name}.yaml"))[1]


def placed(text: str) -> dict[str, set[str]]:
    """Placement subgraph label -> the node ids drawn inside it."""
    found, current = {}, None
    for line in text.splitlines():
        if match := re.match(r'\s*subgraph placement\d*\["(.*)"\]', line):
            current = found.setdefault(match[1], set())
        elif line.strip() == "end":
            current = None
        elif current is not None and (node := re.match(r"\s*(\w+)\[", line)):
            current.add(node[1])
    return found


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_every_stack_draws_network_nodes_bucket_and_fabric(path):
    plan = spec_and_plan(load_stack_file(path))[1]
    text = mermaid(plan)
    assert text.startswith("```mermaid\nflowchart LR\n") and text.endswith("```")
    for part in (plan.network.vpc_cidr, plan.network.private.cidr, plan.network.head_address, plan.instance.name,
                 plan.storage.checkpoint_uri, plan.fabric.kind):
        assert part in text
    for group in plan.workers:
        assert (f"desired {group.desired} " if group.form == "scaling-group" else f"x{group.desired}") in text
    assert text.count("subgraph") == text.count("\n    end") + text.count("\n      end") + text.count("\n  end")
    assert ("NAT gateway" in text) == (plan.cloud != "local")


def test_market_mix_placement_and_ssh(write_stack):
    p5 = mermaid(_plan("aws-p5"))
    assert "2 on-demand + 1 spot" in p5 and "efa x32 per node on 32 network cards" in p5
    assert "erdma x2 per node on 2 network cards, MTU 8500" in mermaid(_plan("ali-erdma"))
    assert placed(p5) == {"cluster placement group": {"head", "workers"}}
    block = mermaid(_plan("aws-p4d-capacity-block"))
    assert "capacity block cr-" in block and placed(block) == {}
    assert "SSH" not in mermaid(_plan("aws-g4dn-dev")), "AWS nodes are reached through Session Manager"
    ali = {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge", "nodes": 2,
           "network": {"sshCidrs": ["203.0.113.0/24"]}}
    path = write_stack(ali, region=None, extra={"alicloud:region": "cn-hangzhou"})
    assert "SSH from 203.0.113.0/24" in mermaid(spec_and_plan(load_stack_file(path))[1])


def test_placement_surrounds_only_the_roles_that_join_it():
    assert placed(mermaid(_plan("ali-erdma"))) == {"deployment set LowLatency": {"head", "workers"}}
    assert placed(mermaid(_plan("ali-spot"))) == {"deployment set LowLatency": {"head"}}
    assert placed(mermaid(_plan("tencent-hcc"))) == {"HPC cluster": {"head", "workers"}}
    spot = mermaid(_plan("tencent-spot"))
    assert placed(spot) == {"spread placement group": {"head", "workers", "workers1"}}
    assert "workers on-demand" in spot and "workers spot" in spot and "max 3" in spot


def test_plan_diagram_flag(capsys):
    assert main(["plan", "--stack", "aws-p5", "--diagram"]) == 0
    assert capsys.readouterr().out.startswith("```mermaid")
