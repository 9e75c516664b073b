"""A running cluster keeps its place: per cloud, through the real program under mocks and each cloud's stand-ins
(GPUFLEET_RUNS_ON says where the cluster's instances run, GPUFLEET_SOLD_OUT which candidates have no capacity), the
candidate the cluster runs on is planned whatever its capacity now; a cluster that runs on none takes the first
available (docs/design.md, capacity; docs/cloud-facts.md#where-a-cluster-runs)."""

from __future__ import annotations

import pytest
import yaml

from components.alicloud import lookups as alicloud_lookups
from components.aws import lookups as aws_lookups
from components.local import lookups as local_places
from components.realizers.stock import RUNS_ON, SOLD_OUT
from components.tencentcloud import lookups as tencentcloud_lookups
from fleet.cli import main
from fleet.plan_command import capacity_line, capacity_of
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from here.local import cluster
from spec.stackfile import load_stack_file
from tests.fleet.test_candidates import CASES, STACKS

TYPE_KEYS = ("instanceType", "instanceTypes", "instanceTypeOverrides")


@pytest.fixture(params=sorted(CASES))
def stack(request, write_stack, monkeypatch):
    """The cloud's shipped stack with one more candidate, the second type in the same zone; no switch set."""
    monkeypatch.delenv(SOLD_OUT, raising=False)
    monkeypatch.delenv(RUNS_ON, raising=False)
    name, second = CASES[request.param]
    config = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]
    written = config.pop("gpufleet:cluster")
    written["candidates"] = [{"instanceType": second}]
    return load_stack_file(write_stack(written, region=None, extra=config)), written


def _planned_types(stack_file) -> set[str]:
    """The type each resource of the program launches first: its one type, or the first of its types in launch order
    (the later ones are the launch fallback's: plan/fallback.py)."""
    named = [r["inputs"].get(key) for r in run_program(stack_file).resources for key in TYPE_KEYS]
    firsts = [value if isinstance(value, str) else value[0] for value in named if value]
    return {item["instanceType"] if isinstance(item, dict) else item for item in firsts}


@pytest.mark.parametrize("sold_out", ["first", "both"])
def test_running_on_the_first_while_it_is_sold_out_stays(stack, monkeypatch, sold_out):
    """Neither moved to the second (only the first sold out) nor refused (both sold out): the update goes on."""
    stack_file, written = stack
    first, second, zone = written["instanceType"], written["candidates"][0]["instanceType"], written["zone"]
    monkeypatch.setenv(SOLD_OUT, first if sold_out == "first" else f"{first},{second}")
    monkeypatch.setenv(RUNS_ON, f"{zone}/{first}")
    spec, plan = spec_and_plan(stack_file)
    assert plan.instance.name == first and spec.instance_type == first and plan.zone == zone
    own, other = capacity_of(plan)
    assert own["chosen"] and own["running"] and not own["available"] and not other["chosen"]
    line = capacity_line(own)
    assert "the cluster runs here; capacity there now: sold out" in line and "new nodes may not launch" in line
    assert _planned_types(stack_file) & {first, second} == {first}, "every node stays of the type it runs"


def test_running_on_the_second_while_the_first_is_available_stays(stack, monkeypatch):
    stack_file, written = stack
    first, second, zone = written["instanceType"], written["candidates"][0]["instanceType"], written["zone"]
    monkeypatch.setenv(RUNS_ON, f"{zone}/{second}")
    _, plan = spec_and_plan(stack_file)
    assert plan.instance.name == second
    own, other = capacity_of(plan)
    assert own["available"] and not own["chosen"] and other["chosen"] and other["running"]
    assert capacity_line(other).endswith("chosen: the cluster runs here; capacity there now: available")
    assert _planned_types(stack_file) & {first, second} == {second}


@pytest.mark.parametrize("elsewhere", [False, True])
def test_a_cluster_running_on_no_candidate_takes_the_first_available(stack, monkeypatch, elsewhere):
    """Not running at all, or on a place that is none of the candidates (the stack was edited off it): the look-ups
    choose, as for a new cluster."""
    stack_file, written = stack
    first, second = written["instanceType"], written["candidates"][0]["instanceType"]
    if elsewhere:
        monkeypatch.setenv(RUNS_ON, f"{written['zone']}-elsewhere/{first}")
    assert spec_and_plan(stack_file)[1].instance.name == first
    monkeypatch.setenv(SOLD_OUT, first)
    _, plan = spec_and_plan(stack_file)
    assert plan.instance.name == second and not any(a["running"] for a in capacity_of(plan))


def test_the_instances_are_looked_up_by_the_clusters_own_tag(stack, write_stack):
    """The look-up asks for the instances tagged with the identity the plan tags every resource with (a cluster
    named apart from its stack: the identity is the name's, scoped by project, stack and region)."""
    stack_file, written = stack
    extra = {key: value for key, value in stack_file.config.items() if key != "gpufleet:cluster"}
    preview = run_program(load_stack_file(write_stack({**written, "name": "kept"}, region=None, extra=extra)))
    tag = dict(preview.plan.tags)["gpufleet:cluster"]
    tokens = {aws_lookups.INSTANCES, alicloud_lookups.INSTANCES, tencentcloud_lookups.INSTANCES}
    asked = [i["args"] for i in preview.invokes if i["token"] in tokens]
    assert asked and all((i.get("tags") or i.get("instanceTags")) == {"gpufleet:cluster": tag} for i in asked)
    assert tag == preview.plan.identity and tag.startswith("kept-")


@pytest.fixture
def local(monkeypatch):
    """The local stack (its record of where local clusters run is the test's own: tests/fleet/conftest.py)."""
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file = load_stack_file(STACKS / "Pulumi.local.yaml")
    written = stack_file.config["gpufleet:cluster"]
    (second,) = (c["instanceType"] for c in written["candidates"])
    return stack_file, written["instanceType"], second


def test_a_local_cluster_that_is_up_keeps_its_place_while_sold_out(local, monkeypatch):
    stack_file, first, second = local
    _, plan = spec_and_plan(stack_file)
    local_places.record(plan.identity, plan.zone, first)
    monkeypatch.setenv(SOLD_OUT, first)
    assert spec_and_plan(stack_file)[1].instance.name == first
    local_places.forget(plan.identity)
    assert spec_and_plan(stack_file)[1].instance.name == second


def test_a_local_cluster_that_is_up_on_its_candidate_stays_there(local):
    stack_file, first, second = local
    _, plan = spec_and_plan(stack_file)
    local_places.record(plan.identity, plan.zone, second)
    assert spec_and_plan(stack_file)[1].instance.name == second


def test_fleet_up_says_the_local_cluster_keeps_its_sold_out_place(local, monkeypatch, capsys):
    """`fleet up` on a local cluster that is up (new code: it rolls onto it) on a place now sold out: the plan keeps
    the place, and the capacity lines say so."""
    stack_file, first, _ = local
    plan = spec_and_plan(stack_file)[1]
    local_places.record(plan.identity, plan.zone, first)
    monkeypatch.setenv(SOLD_OUT, first)
    brought_up = []
    monkeypatch.setattr(cluster, "up", lambda plan, opts, reporter: brought_up.append(plan) or {"cluster": plan.name})
    assert main(["up", "--stack", "local", "--json"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert brought_up[0].instance.name == first
    kept = "chosen: the cluster runs here; capacity there now: sold out"
    assert f"capacity: {first} in {plan.zone} on demand: {kept}" in err
