"""Lifecycle of workers: what the plan sets where the cloud's groups have the setting, and the AWS group built
from it."""

from __future__ import annotations

from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file


def shipped(name: str):
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml"))[1]


def asg(name: str) -> dict:
    preview = run_program(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml"))
    return next(r["inputs"] for r in preview.resources if r["type"] == "aws:autoscaling/group:Group")


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
