"""Lifecycle of workers: what the plan sets where the cloud's groups have the setting, and the AWS group built
from it."""

from __future__ import annotations

from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file


def shipped(name: str):
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml"))[1]


def asg_record(name: str) -> dict:
    preview = run_program(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml"))
    return next(r for r in preview.resources if r["type"] == "aws:autoscaling/group:Group")


def asg(name: str) -> dict:
    return asg_record(name)["inputs"]


def test_a_new_node_has_time_to_fetch_its_bundle_before_health_checks_count():
    plan = shipped("aws-p5")
    grace, node = plan.lifecycle.health_grace_s, plan.worker.node
    assert grace > node.bundle_fetch_tries * node.bundle_fetch_wait_s
    assert asg("aws-p5")["healthCheckGracePeriod"] == grace


def test_aws_workers_roll_half_at_a_time_and_rebalance_only_with_spot():
    p5 = shipped("aws-p5").lifecycle
    assert (p5.refresh_min_healthy_percent, p5.capacity_rebalance) == (50, True)
    group = asg("aws-p5")
    assert group["instanceRefresh"] == {"strategy": "Rolling", "preferences": {"minHealthyPercentage": 50}}
    assert group["capacityRebalance"] is True
    assert shipped("aws-p4d-capacity-block").lifecycle.capacity_rebalance is False
    assert "capacityRebalance" not in asg("aws-p4d-capacity-block")


def test_warm_standby_is_stopped_nodes():
    dev = shipped("aws-g4dn-dev").lifecycle
    assert (dev.standby, dev.standby_state) == (1, "stopped")
    assert asg("aws-g4dn-dev")["warmPool"] == {"poolState": "Stopped", "minSize": 1}
    assert "warmPool" not in asg("aws-p5")


def test_clouds_without_the_settings_get_none():
    for name in ("ali-spot", "tencent-spot", "local"):
        lifecycle = shipped(name).lifecycle
        assert (lifecycle.health_grace_s, lifecycle.refresh_min_healthy_percent, lifecycle.capacity_rebalance) == (
            None, None, False), name


def test_a_scaling_policy_owns_the_aws_group_size_once_made_and_never_scales_in():
    """With a GPU-utilisation target, the group is made at the desired size (without one it would start at its min),
    `pulumi up` ignores the size after that (it would put back what the policy chose), the policy never takes a rank
    from the running job, and the plan prices the max it grows to (docs/cloud-facts.md#rollout-gpu-target)."""
    preview = run_program(load_stack_file(PROJECT_ROOT / "stacks" / "Pulumi.aws-p5.yaml"))
    group = next(r for r in preview.resources if r["type"] == "aws:autoscaling/group:Group")
    policies = [r["inputs"] for r in preview.resources if r["type"] == "aws:autoscaling/policy:Policy"]
    assert policies and all(p["targetTrackingConfiguration"]["disableScaleIn"] is True for p in policies)
    assert group["inputs"]["desiredCapacity"] == shipped("aws-p5").workers[0].desired == 3
    assert group["options"]["ignoreChanges"] == ["desiredCapacity"]
    assert (preview.outputs["nodes"], preview.outputs["nodesCeiling"]) == (4, 8)
    assert preview.outputs["ceilingHourlyCostUsd"] > preview.outputs["hourlyCostUsd"]
    fixed = asg_record("aws-p4d-capacity-block")
    assert fixed["inputs"]["desiredCapacity"] == shipped("aws-p4d-capacity-block").workers[0].desired
    assert "ignoreChanges" not in fixed["options"]


def test_a_warm_pool_holds_each_worker_at_a_launching_hook_its_node_completes():
    plan = shipped("aws-g4dn-dev")
    hook = plan.lifecycle.launch_hook
    assert asg("aws-g4dn-dev")["initialLifecycleHooks"] == [{
        "name": hook.hook, "lifecycleTransition": "autoscaling:EC2_INSTANCE_LAUNCHING",
        "heartbeatTimeout": hook.timeout_s, "defaultResult": "ABANDON"}]
    assert f"GF_LAUNCH_HOOK='{hook.hook}'" in plan.worker.user_data
    assert shipped("aws-p5").lifecycle.launch_hook is None and "initialLifecycleHooks" not in asg("aws-p5")
