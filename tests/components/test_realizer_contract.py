"""Every target's realizer keeps one contract (components/realizers/contract.py): the registry refuses a module that
drifts from it, and every shipped stack's outputs have the same keys and name the resources the stack declares."""

from __future__ import annotations

import textwrap
from types import ModuleType

import pytest
from stack_preview import SHIPPED, preview_stack

from clouds import CLOUDS
from components.realizers import lookups_of, realizer_of
from components.realizers.contract import LookUps, Realizer, StackOutputs, checked_outputs, conforming
from plan.model import INSTANCES, SCALING_GROUP
from plan.paths import PROJECT_ROOT
from policy.clouds import alicloud, aws, tencentcloud

# The resource types each cloud's scaling groups and placement groups are, as its policy reader names them.
SCALING_GROUPS = {"aws": aws.ASG, "alicloud": alicloud.SCALING_GROUP,
                  "tencentcloud": "tencentcloud:As/scalingGroup:ScalingGroup"}
PLACEMENT_GROUPS = {"aws": {aws.PLACEMENT_GROUP}, "alicloud": {alicloud.DEPLOYMENT_SET},
                    "tencentcloud": {tencentcloud.HPC_CLUSTER, "tencentcloud:Placement/group:Group"}}


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_every_realizer_and_its_lookups_keep_the_contract(cloud):
    """The registry loads each cloud's realizer and look-ups through the contract; a look-ups module beside the
    realizer is found."""
    assert callable(realizer_of(cloud).realize)
    beside = PROJECT_ROOT / CLOUDS[cloud].realizer.rsplit(".", 1)[0].replace(".", "/") / "lookups.py"
    assert (lookups_of(cloud) is not None) == beside.is_file()


def _module(source: str) -> ModuleType:
    module = ModuleType("candidate")
    exec(textwrap.dedent("""\
        from __future__ import annotations
        from plan.facts import DeployFacts, Lookups
        from plan.model import ClusterPlan
        from components.realizers.contract import ClusterOutputs
        """) + textwrap.dedent(source), module.__dict__)
    return module


KEEPS = """
    COMPUTED = {}
    def realize(plan: ClusterPlan) -> ClusterOutputs: ...
"""


def test_a_module_that_keeps_the_contract_is_taken():
    module = _module(KEEPS)
    assert conforming(module, Realizer) is module


@pytest.mark.parametrize(("source", "named"), [
    ("def realize(plan: ClusterPlan) -> ClusterOutputs: ...", "COMPUTED"),
    ("COMPUTED = []\ndef realize(plan: ClusterPlan) -> ClusterOutputs: ...", "COMPUTED"),
    ("COMPUTED = {}", "no function realize"),
    ("COMPUTED = {}\nrealize = print", "no function realize"),
    ("COMPUTED = {}\ndef realize(plan: ClusterPlan) -> dict: ...",
     "-> 'dict' is not realize(plan: 'ClusterPlan') -> 'ClusterOutputs'"),
    ("COMPUTED = {}\ndef realize(cluster: ClusterPlan) -> ClusterOutputs: ...", "realize(cluster"),
    ("COMPUTED = {}\ndef realize(plan: ClusterPlan, extra=None) -> ClusterOutputs: ...", "extra"),
])
def test_a_realizer_off_the_contract_is_refused(source, named):
    with pytest.raises(TypeError, match="Realizer contract") as refused:
        conforming(_module(source), Realizer)
    assert named in str(refused.value)


def test_a_lookups_module_off_the_contract_is_refused():
    keeps = "STAND_INS = {}\ndef look_up(wanted: Lookups) -> DeployFacts: ..."
    assert conforming(_module(keeps), LookUps)
    with pytest.raises(TypeError, match="look_up"):
        conforming(_module("STAND_INS = {}\ndef look_up(wanted: Lookups) -> dict: ..."), LookUps)


@pytest.fixture(scope="module", params=SHIPPED, ids=lambda p: p.name.split(".")[1])
def shipped(request):
    spec, plan, preview = preview_stack(request.param)
    return plan, preview


def test_every_stack_has_the_same_output_keys(shipped):
    _, preview = shipped
    assert set(preview.outputs) == StackOutputs.__required_keys__


def _named(resources: list[dict], output_id: str) -> dict:
    """The resource an output's id names: the preview's mocks give each resource the id `<name>-id`, and some clouds
    know a resource by its name."""
    found = [r for r in resources if r["options"].get("custom") and output_id in (r["name"], f"{r['name']}-id")]
    assert len(found) == 1, output_id
    return found[0]


def test_the_outputs_name_what_the_stack_declares(shipped):
    """Each scaling group, placement group and fixed worker the plan asks for is in the outputs, by the id of the
    resource made for it, and no resource of those kinds is left out."""
    plan, preview = shipped
    outputs, resources = preview.outputs, preview.resources
    scaling = [(g.name, g.market) for g in plan.workers if g.form == SCALING_GROUP]
    assert [(g["name"], g["market"]) for g in outputs["workerGroups"]] == scaling
    assert sorted(g["kind"] for g in outputs["placementGroups"]) == sorted(p.kind for p in plan.placements)
    if not CLOUDS[plan.cloud].pulumi_package:
        assert outputs["bringUp"] and not resources
        assert outputs["workerInstanceIds"] == [] and outputs["headInstanceId"] is outputs["bucket"] is None
        return
    assert outputs["bringUp"] is None and outputs["bucket"] == plan.storage.bucket
    assert {_named(resources, g["id"])["name"] for g in outputs["workerGroups"]} == {
        r["name"] for r in resources if r["type"] == SCALING_GROUPS[plan.cloud]}
    assert {_named(resources, p["id"])["name"] for p in outputs["placementGroups"]} == {
        r["name"] for r in resources if r["type"] in PLACEMENT_GROUPS[plan.cloud]}
    head = _named(resources, outputs["headInstanceId"])
    assert head["name"] == f"{plan.name}-head"
    fixed = [_named(resources, i) for i in outputs["workerInstanceIds"]]
    assert len(fixed) == sum(g.desired for g in plan.workers if g.form == INSTANCES)
    assert all(r["type"] == head["type"] for r in fixed)
    _named(resources, outputs["securityGroupId"])


def test_outputs_of_another_shape_are_refused(shipped):
    """What the realizers exported before one shape (AWS's `workerGroup`) is refused, naming the keys."""
    _, preview = shipped
    realized = {key: value for key, value in preview.outputs.items() if key != "gpuHolders"}  # the registry's own
    before = {key: value for key, value in realized.items() if key != "workerGroups"} | {"workerGroup": None}
    with pytest.raises(TypeError, match=r"missing \['workerGroups'\], extra \['workerGroup'\]"):
        checked_outputs("components.example", before)
    assert checked_outputs("components.example", realized) == realized
