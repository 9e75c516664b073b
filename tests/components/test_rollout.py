"""A change of the code bundle, planned and previewed twice per cloud: what each node resource will do (replace,
refresh or in place) under the provider rule that decides it (docs/cloud-facts.md#rollout). The mocks show no
diff, so each rule is written out with its source file and line, and applied to the two previews' inputs."""

from __future__ import annotations

import pytest

from fleet.preview import run_program
from plan import planner
from plan.bundle import bundle_sha256
from plan.model import INSTANCES, WORKER
from plan.paths import PROJECT_ROOT
from plan.rollout import FLEET_ROLL, GROUP_ROLL, REFRESH, REPLACE, REPLACED_BY_UP, RESET_REFRESH, USER_DATA_TAG
from spec.stackfile import load_stack_file

# Two real bundles of this checkout, without and with the fused-loss kernels: a change of the training code.
OLD, NEW = False, True


def preview(stack: str, kernels: bool, monkeypatch):
    """The stack's plan and its resources by name, its code bundle the one with or without the kernels."""
    monkeypatch.setattr(planner, "bundle_sha256", lambda **_: bundle_sha256(kernels))
    result = run_program(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    return result.plan, {r["name"]: r for r in result.resources}


def changed(old: dict, new: dict) -> set[str]:
    return {key for key in old["inputs"].keys() | new["inputs"].keys()
            if old["inputs"].get(key) != new["inputs"].get(key)}


def aws_action(name: str, old: dict[str, dict], new: dict[str, dict]) -> str:
    """terraform-provider-aws: a launch template update makes a new version, which `latest_version` reports and the
    nodes pin (website/docs/r/launch_template.html.markdown, `latest_version`); aws_instance's `launch_template` is
    ForceNew (internal/service/ec2/ec2_instance.go, ResourceInstance schema and CustomizeDiff); an ASG starts its
    instance_refresh on a change of `launch_template` or `mixed_instances_policy` (autoscaling_group.html.markdown,
    "instance_refresh"). The mocks answer `latest_version` 1 always, so a changed template stands for a new one."""
    resource = new[name]
    templates = {r["name"] for r in new.values() if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"
                 and changed(old[r["name"]], r)}
    uses_new_template = any(template in resource["options"].get("dependsOn", []) for template in templates)
    if resource["type"] == "aws:ec2/instance:Instance":
        return REPLACE if uses_new_template else "none"
    return REFRESH if uses_new_template and "instanceRefresh" in resource["inputs"] else "none"


ESS_GROUP, ESS_CONFIGURATION = ("alicloud:ess/scalingGroup:ScalingGroup",
                                 "alicloud:ess/scalingConfiguration:ScalingConfiguration")


def alicloud_action(name: str, old: dict[str, dict], new: dict[str, dict]) -> str:
    """alicloud `resource_alicloud_instance.go` L447-457 / L2909-2921 @ 81c43b6: user_data is no ForceNew field, its
    change an in-place ModifyInstanceAttribute plus reboot; Pulumi replaceOnChanges turns it into a replacement.
    A changed replacementTrigger replaces the resource whatever its inputs (Pulumi resource options).
    `resource_alicloud_ess_scaling_configuration.go` @ 81c43b6: user_data (L312-315) and tags (L333) are no ForceNew
    fields; Update sends a changed user_data (L1328-1341) and tags (L1445-1451) in one ModifyScalingConfiguration
    (L1059, L1501-1518), which reaches only the instances ESS launches next: a group whose configuration changed so,
    its own inputs unchanged, keeps its members until `fleet roll` has ESS replace them (GROUP_ROLL)."""
    resource, keys = new[name], changed(old[name], new[name])
    options = resource["options"]
    if options.get("replacementTrigger") != old[name]["options"].get("replacementTrigger"):
        return REPLACE
    if resource["type"] == ESS_GROUP:
        if keys:
            return f"the group's own inputs change: {sorted(keys)}"
        configured = {alicloud_action(n, old, new) for n, r in new.items()
                      if r["type"] == ESS_CONFIGURATION and name in r["options"].get("dependsOn", [])}
        return GROUP_ROLL if "in place" in configured else "none"
    if "userData" in keys:
        return REPLACE if "userData" in options.get("replaceOnChanges", []) else "in place"
    return "none"


def tencent_action(name: str, old: dict[str, dict], new: dict[str, dict]) -> str:
    """tencentcloud `resource_tc_instance.go` L486-505 and L648-657 @ f6970a9: user_data is updated in place
    (ModifyUserData, L2510-2520) unless user_data_replace_on_change sets ForceNewIf. `resource_tc_as_scaling_config.go`
    @ 1e2e568e: user_data is Optional and no ForceNew field, so a launch configuration's new user-data is an update in
    place, which reaches only the instances AS launches next: `fleet roll` then has AS refresh the group's members
    (RESET_REFRESH, plan/group_refresh.py); the stack declares no refresh resource."""
    resource, keys = new[name], changed(old[name], new[name])
    if resource["type"] == "tencentcloud:As/scalingConfig:ScalingConfig":
        return RESET_REFRESH if "userData" in keys else "none"
    if "userData" in keys:
        return REPLACE if resource["inputs"].get("userDataReplaceOnChange") else "in place"
    return "none"


NODES = {
    "aws-p5": (aws_action, {"aws-p5-head": REPLACE, "aws-p5-workers": REFRESH}),
    "ali-spot": (alicloud_action, {"ali-spot-head": REPLACE, "ali-spot-workers": GROUP_ROLL}),
    "ali-erdma": (alicloud_action, {"ali-erdma-head": REPLACE, "ali-erdma-worker-0": REPLACE}),
    "tencent-spot": (tencent_action, {"tencent-spot-head": REPLACE, "tencent-spot-on-demand-config": RESET_REFRESH,
                                      "tencent-spot-spot-config": RESET_REFRESH}),
    "tencent-hcc": (tencent_action, {"tencent-hcc-head": REPLACE, "tencent-hcc-worker-0": REPLACE}),
}


@pytest.mark.parametrize("stack", sorted(NODES))
def test_a_new_bundle_rolls_every_node_as_the_plan_says(stack, monkeypatch):
    action, expected = NODES[stack]
    (_, old), (plan, new) = preview(stack, OLD, monkeypatch), preview(stack, NEW, monkeypatch)
    assert plan.storage.code_sha256 == bundle_sha256(NEW)
    assert {name: action(name, old, new) for name in expected} == expected
    # What the preview says each set of nodes does is what the provider rules above make of the resources (`fleet
    # roll` orders replacements that `pulumi up` makes, one node per targeted up).
    assert {REPLACE if r.mechanism in REPLACED_BY_UP else r.mechanism for r in plan.rollout} == set(expected.values())
    # Fixed workers outside AWS are rolled one at a time by `fleet roll`, and the preview says so.
    fixed = [r for r in plan.rollout if r.role == WORKER and r.form == INSTANCES]
    assert all(r.mechanism == FLEET_ROLL and "`fleet roll`" in r.how for r in fixed)
    assert bool(fixed) == (stack in ("ali-erdma", "tencent-hcc"))
    # No refresh is a resource: `pulumi up` never starts one, so a group's first up refreshes nothing.
    assert not [r for r in new.values() if r["type"].endswith(":StartInstanceRefresh")]
    head = new[f"{stack}-head"]["options"]
    assert head.get("deleteBeforeReplace") is True, "the head holds the fixed address: it goes first"
    # An ESS configuration changed in place carries a new user-data tag, which the instances it launches keep: what
    # tells `fleet roll` the members launched from older settings (plan/group_roll.py).
    for name, resource in new.items():
        if resource["type"] == ESS_CONFIGURATION:
            tags = (old[name]["inputs"]["tags"][USER_DATA_TAG], resource["inputs"]["tags"][USER_DATA_TAG])
            assert tags[0] != tags[1], tags


@pytest.mark.parametrize("stack", sorted(NODES))
def test_the_same_bundle_rolls_nothing(stack, monkeypatch):
    action, expected = NODES[stack]
    (_, old), (_, new) = preview(stack, OLD, monkeypatch), preview(stack, OLD, monkeypatch)
    assert {name: action(name, old, new) for name in expected} == dict.fromkeys(expected, "none")
