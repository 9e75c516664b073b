"""Fallback at launch per cloud, through the real program under mocks and the capacity stand-ins: a worker scaling
group gets the planned type, then each later available candidate's type that launches from the same template and
user-data (same zone, market and node shape), in the stack's order, with the cloud's priority policy
(docs/cloud-facts.md#launch-fallback)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.realizers.stock import SOLD_OUT
from fleet.plan_command import report
from fleet.preview import run_program
from spec.stackfile import load_stack_file

STACKS = Path(__file__).resolve().parents[2] / "stacks"
# Per cloud: a shipped stack, two types of its node shape, a type of another shape (more GPUs), another zone.
CASES = {
    "aws": ("aws-g4dn-dev", "g4dn.2xlarge", "g4dn.4xlarge", "g4dn.12xlarge", "eu-west-1b"),
    "alicloud": ("ali-spot", "ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c16g1.4xlarge", "ecs.gn7i-2x.8xlarge",
                 "cn-hangzhou-i"),
    "tencentcloud": ("tencent-spot", "GN7.5XLARGE80", "GN7.8XLARGE128", "GN7.10XLARGE160", "ap-guangzhou-7"),
}
ON_DEMAND = {"onDemandBase": 1, "spotPercent": 0}


def _stack(write_stack, cloud: str, market: dict | None, candidates: bool = True):
    name, same, later, other_shape, other_zone = CASES[cloud]
    config = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]
    cluster = config.pop("gpufleet:cluster")
    if market is not None:
        cluster["market"] = market
    cluster.pop("autoscaling", None)  # aws-g4dn-dev's warm pool: see test_a_warm_pool_keeps_one_type
    if candidates:
        # The other zone's candidate comes before `same`: taken, it would put `later` first.
        cluster["candidates"] = [{"instanceType": other_shape}, {"zone": other_zone, "instanceType": later},
                                 {"instanceType": same}, {"instanceType": later}]
    return load_stack_file(write_stack(cluster, region=None, extra=config)), cluster


def _of(resources, suffix):
    return [r["inputs"] for r in resources if r["type"].endswith(suffix)]


def launch_order(cloud: str, resources) -> list[list[str]]:
    """Per worker scaling group, the types it launches in priority order, checked against the cloud's priority
    policy: AWS overrides under `prioritized`, ESS's and Tencent AS's type lists under their PRIORITY policies."""
    if cloud == "aws":
        orders = []
        for group in _of(resources, "autoscaling/group:Group"):
            policy = group.get("mixedInstancesPolicy")
            overrides = (policy or {}).get("launchTemplate", {}).get("overrides")
            if not overrides:
                orders.append([])
                continue
            assert policy["instancesDistribution"]["onDemandAllocationStrategy"] == "prioritized"
            orders.append([o["instanceType"] for o in overrides])
        return orders
    if cloud == "alicloud":
        groups = _of(resources, "ess/scalingGroup:ScalingGroup")
        configs = _of(resources, "ess/scalingConfiguration:ScalingConfiguration")
        if any(c.get("instanceTypes") for c in configs):
            assert all(g["multiAzPolicy"] == "PRIORITY" for g in groups)
        return [c.get("instanceTypes") or [c["instanceType"]] for c in configs]
    groups = _of(resources, "As/scalingGroup:ScalingGroup")
    assert all(g["multiZoneSubnetPolicy"] == "PRIORITY" for g in groups)
    return [c["instanceTypes"] for c in _of(resources, "As/scalingConfig:ScalingConfig")]


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_later_candidates_of_the_same_shape_zone_and_market_are_fallbacks_in_order(cloud, write_stack, monkeypatch):
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file, cluster = _stack(write_stack, cloud, ON_DEMAND)
    _, same, later, _, _ = CASES[cloud]
    orders = launch_order(cloud, run_program(stack_file).resources)
    assert orders and all(order == [cluster["instanceType"], same, later] for order in orders)


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_a_sold_out_candidate_is_no_fallback(cloud, write_stack, monkeypatch):
    _, same, later, _, _ = CASES[cloud]
    monkeypatch.setenv(SOLD_OUT, same)
    stack_file, cluster = _stack(write_stack, cloud, ON_DEMAND)
    orders = launch_order(cloud, run_program(stack_file).resources)
    assert orders and all(order == [cluster["instanceType"], later] for order in orders)


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_without_candidates_a_group_launches_its_one_type(cloud, write_stack, monkeypatch):
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file, cluster = _stack(write_stack, cloud, ON_DEMAND, candidates=False)
    resources = run_program(stack_file).resources
    expected = [] if cloud == "aws" else [cluster["instanceType"]]  # AWS: the launch template's type, no overrides
    assert all(order == expected for order in launch_order(cloud, resources))
    if cloud == "alicloud":
        assert all(g["multiAzPolicy"] == "COST_OPTIMIZED" for g in _of(resources, "ess/scalingGroup:ScalingGroup"))


def test_an_ess_spot_mix_keeps_cost_optimized_and_caps_every_type(write_stack, monkeypatch):
    """ESS's base and spot share need the cost-optimized policy, which tries the listed types cheapest first."""
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file, cluster = _stack(write_stack, "alicloud", None)
    resources = run_program(stack_file).resources
    (group,) = _of(resources, "ess/scalingGroup:ScalingGroup")
    (config,) = _of(resources, "ess/scalingConfiguration:ScalingConfiguration")
    _, same, later, _, _ = CASES["alicloud"]
    assert group["multiAzPolicy"] == "COST_OPTIMIZED"
    assert config["instanceTypes"] == [cluster["instanceType"], same, later]
    limits = {limit["instanceType"]: limit["priceLimit"] for limit in config["spotPriceLimits"]}
    assert limits == dict.fromkeys(config["instanceTypes"], cluster["market"]["maxSpotPrice"])


def test_an_aws_spot_mix_lists_the_types_under_its_distribution(write_stack, monkeypatch):
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file, cluster = _stack(write_stack, "aws", {"onDemandBase": 1, "spotPercent": 50})
    _, same, later, _, _ = CASES["aws"]
    (group,) = _of(run_program(stack_file).resources, "autoscaling/group:Group")
    distribution = group["mixedInstancesPolicy"]["instancesDistribution"]
    assert distribution["onDemandPercentageAboveBaseCapacity"] == 50
    assert launch_order("aws", [{"type": "aws:autoscaling/group:Group", "inputs": group}]) == [
        [cluster["instanceType"], same, later]]


def test_a_warm_pool_keeps_one_type(write_stack, monkeypatch):
    """PutWarmPool refuses a group with a mixed instances policy: a group with standby gets no overrides."""
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file, cluster = _stack(write_stack, "aws", ON_DEMAND)
    cluster = {**cluster, "autoscaling": {"standby": 1}}
    config = {k: v for k, v in stack_file.config.items() if k != "gpufleet:cluster"}
    resources = run_program(load_stack_file(write_stack(cluster, region=None, extra=config))).resources
    (group,) = _of(resources, "autoscaling/group:Group")
    assert group["warmPool"]["minSize"] == 1 and "mixedInstancesPolicy" not in group


def _said(stack_file) -> tuple[list, tuple[str, str]]:
    """The resources and what `fleet plan` says of the fallback at launch, for the workers and the head."""
    preview = run_program(stack_file)
    return preview.resources, report(preview, preview.plan)["launchFallback"]


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_the_preview_says_the_groups_fallback_order(cloud, write_stack, monkeypatch):
    monkeypatch.delenv(SOLD_OUT, raising=False)
    stack_file, _ = _stack(write_stack, cloud, ON_DEMAND)
    resources, (workers, head) = _said(stack_file)
    (order,) = {tuple(order) for order in launch_order(cloud, resources)}
    assert workers == f"workers: their scaling groups launch {', then '.join(order)}, in that order"
    assert head.startswith("head: none")


@pytest.mark.parametrize("name", ["ali-erdma", "tencent-hcc"])
def test_erdma_and_hcc_workers_are_said_to_have_no_fallback_at_launch(name, monkeypatch):
    """Their workers are instances the cloud's scaling service cannot launch: the preview says they have none."""
    monkeypatch.delenv(SOLD_OUT, raising=False)
    resources, (workers, _) = _said(load_stack_file(STACKS / f"Pulumi.{name}.yaml"))
    assert not [r for r in resources if r["type"].endswith(("ess/scalingGroup:ScalingGroup",
                                                            "As/scalingGroup:ScalingGroup"))]
    kind = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]["gpufleet:cluster"]["instanceType"]
    assert workers.startswith("workers: none (instances in no scaling group") and f"finds {kind} sold out" in workers
