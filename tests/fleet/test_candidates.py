"""Candidates per cloud, through the real program under mocks and each cloud's capacity stand-ins: the first
candidate sold out -> the next one is planned and built; none available -> refused before any resource, naming every
candidate and why; a candidate the cloud cannot build is refused like the stack
(docs/cloud-facts.md#capacity-look-ups)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.realizers.stock import SOLD_OUT
from fleet.cli import main
from fleet.plan_command import capacity_of
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from here.local import cluster
from spec.errors import SpecError
from spec.stackfile import load_stack_file

STACKS = Path(__file__).resolve().parents[2] / "stacks"
# A shipped stack per cloud and a second type of the same family for its candidate list.
CASES = {"aws": ("aws-g4dn-dev", "g4dn.2xlarge"), "alicloud": ("ali-spot", "ecs.gn7i-c16g1.4xlarge"),
         "tencentcloud": ("tencent-spot", "GN7.5XLARGE80")}


@pytest.fixture(params=sorted(CASES))
def stack(request, write_stack):
    """The cloud's shipped stack with one more candidate: the second type, in the same zone."""
    name, second = CASES[request.param]
    config = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]
    cluster = config.pop("gpufleet:cluster")
    cluster["candidates"] = [{"instanceType": second}]
    return load_stack_file(write_stack(cluster, region=None, extra=config)), cluster


def test_the_first_candidate_sold_out_the_second_is_built(stack, monkeypatch):
    stack_file, cluster = stack
    first, second = cluster["instanceType"], cluster["candidates"][0]["instanceType"]
    monkeypatch.setenv(SOLD_OUT, first)
    spec, plan = spec_and_plan(stack_file)
    assert plan.instance.name == second and spec.instance_type == second
    shown = capacity_of(plan)
    assert [a["available"] for a in shown] == [False, True] and shown[1]["chosen"]
    assert "sold out" in shown[0]["reason"] or "does not offer" in shown[0]["reason"]
    text = repr([r["inputs"].get(key) for r in run_program(stack_file).resources
                 for key in ("instanceType", "instanceTypes", "instanceTypeOverrides")])
    assert second in text and first not in text, "every node is of the chosen candidate's type"


def test_the_stacks_own_place_is_taken_when_it_has_capacity(stack, monkeypatch):
    stack_file, cluster = stack
    monkeypatch.delenv(SOLD_OUT, raising=False)
    _, plan = spec_and_plan(stack_file)
    assert plan.instance.name == cluster["instanceType"] and capacity_of(plan)[0]["chosen"]


def test_none_available_is_refused_before_any_resource(stack, monkeypatch):
    stack_file, cluster = stack
    monkeypatch.setenv(SOLD_OUT, f"{cluster['instanceType']},{cluster['candidates'][0]['instanceType']}")
    with pytest.raises(SpecError) as caught:
        run_program(stack_file)
    (problem,) = caught.value.problems
    assert problem.path.endswith(".candidates") and "nothing was created" in problem.message
    for kind in (cluster["instanceType"], cluster["candidates"][0]["instanceType"]):
        assert f"{kind} in {cluster['zone']}" in problem.message


def test_a_candidate_the_cloud_cannot_build_is_refused(stack, write_stack):
    stack_file, cluster = stack
    cluster = {**cluster, "candidates": [{"instanceType": "no-such-type"}]}
    config = {k: v for k, v in stack_file.config.items() if k != "gpufleet:cluster"}
    with pytest.raises(SpecError) as caught:
        spec_and_plan(load_stack_file(write_stack(cluster, region=None, extra=config)))
    assert any(p.path.endswith("candidates[0]") and "no-such-type" in p.message for p in caught.value.problems)


@pytest.fixture(params=sorted(CASES))
def plain_stack(request):
    """The cloud's shipped stack as it is: no `candidates`, so its own zone, type and market are its one candidate."""
    name, _ = CASES[request.param]
    stack_file = load_stack_file(STACKS / f"Pulumi.{name}.yaml")
    assert "candidates" not in stack_file.config["gpufleet:cluster"]
    return stack_file


def test_a_stack_without_candidates_has_its_own_place_looked_up_and_shown(plain_stack, monkeypatch):
    monkeypatch.delenv(SOLD_OUT, raising=False)
    _, plan = spec_and_plan(plain_stack)
    (shown,) = capacity_of(plan)
    assert shown["chosen"] and shown["candidate"].startswith(f"{plan.instance.name} in {plan.zone}")


def test_a_stack_without_candidates_sold_out_is_refused_before_any_resource(plain_stack, monkeypatch):
    kind = plain_stack.config["gpufleet:cluster"]["instanceType"]
    monkeypatch.setenv(SOLD_OUT, kind)
    with pytest.raises(SpecError) as caught:
        run_program(plain_stack)
    (problem,) = caught.value.problems
    assert problem.path.endswith(".instanceType") and "nothing was created" in problem.message
    assert f"{kind} in {plain_stack.config['gpufleet:cluster']['zone']}" in problem.message


def test_the_local_stack_sold_out_is_planned_on_its_candidate(monkeypatch):
    """The local cloud answers its own look-up from the switch: the stock-out drill's plan (tests/local runs it)."""
    stack_file = load_stack_file(STACKS / "Pulumi.local.yaml")
    first = stack_file.config["gpufleet:cluster"]["instanceType"]
    (second,) = (c["instanceType"] for c in stack_file.config["gpufleet:cluster"]["candidates"])
    monkeypatch.setenv(SOLD_OUT, first)
    _, plan = spec_and_plan(stack_file)
    assert plan.instance.name == second
    assert [(a["available"], a["chosen"]) for a in capacity_of(plan)] == [(False, False), (True, True)]
    monkeypatch.delenv(SOLD_OUT)
    assert spec_and_plan(stack_file)[1].instance.name == first


@pytest.mark.parametrize("sold_out", ["cpu", ""])
def test_fleet_up_says_where_the_local_stack_came_up_when_not_its_own_place(sold_out, monkeypatch, capsys):
    """`fleet up` on the plan the look-ups made (the cluster itself is tests/local's); the capacity lines only where
    the stack's own place had none."""
    monkeypatch.setenv(SOLD_OUT, sold_out)
    brought_up = []
    monkeypatch.setattr(cluster, "up", lambda plan, opts, reporter: brought_up.append(plan) or {"cluster": plan.name})
    assert main(["up", "--stack", "local", "--json"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    if sold_out:
        assert brought_up[0].instance.name == "cpu-b"
        assert "capacity: cpu in local on demand: no: cpu is sold out in local (GPUFLEET_SOLD_OUT)" in err
        assert "capacity: cpu-b in local on demand: chosen" in err
    else:
        assert brought_up[0].instance.name == "cpu" and "capacity:" not in err
