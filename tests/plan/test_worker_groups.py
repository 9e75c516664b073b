"""Worker groups as the plan decides them per cloud: one mixed scaling group, or a group (or fixed instances) per
market with the spot share rounded down; none when the cluster is the head alone."""

from __future__ import annotations

import pytest
from stack_preview import shipped_where

from clouds import CLOUDS
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan import catalog
from plan.model import MarketPlan
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file

GROUP_TYPES = ("aws:autoscaling/group:Group", "alicloud:ess/scalingGroup:ScalingGroup",
               "tencentcloud:As/scalingGroup:ScalingGroup")


def shipped(name: str):
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml"))[1]


def groups(plan) -> list[tuple]:
    return [(g.name, g.form, g.market, g.min_size, g.desired, g.max_size) for g in plan.workers]


def test_the_spot_share_above_the_base_rounds_down():
    market = MarketPlan(on_demand_base=1, spot_percent=50, spot_strategy="x", max_spot_price=None,
                        reservation_id=None, capacity_block=False)
    assert [market.split(n) for n in (0, 1, 2, 4, 6)] == [(0, 0), (1, 0), (2, 0), (3, 1), (4, 2)]


def test_tencent_splits_its_workers_into_an_on_demand_and_a_spot_group():
    # 2-6 nodes, desired 4: workers 1-5, desired 3; 60% of them on spot, rounded down: 0, 1 and 3.
    plan = shipped("tencent-spot")
    assert groups(plan) == [("on-demand", "scaling-group", "on-demand", 1, 2, 2),
                            ("spot", "scaling-group", "spot", 0, 1, 3)]


def test_tencent_hcc_workers_are_fixed_instances():
    assert groups(shipped("tencent-hcc")) == [("on-demand", "instances", "on-demand", 1, 1, 1)]


def test_aws_and_alibaba_keep_the_mix_in_one_group():
    assert groups(shipped("aws-p5")) == [("workers", "scaling-group", "mixed", 1, 3, 7)]
    assert groups(shipped("ali-spot")) == [("workers", "scaling-group", "mixed", 1, 3, 5)]


def test_alibaba_erdma_workers_are_fixed_instances():
    """ERIs ride on ECS instances only (docs/cloud-facts.md#alibaba-ess)."""
    assert groups(shipped("ali-erdma")) == [("on-demand", "instances", "on-demand", 1, 1, 1)]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_one_node_cluster_has_no_worker_group(write_stack, cloud):
    where = shipped_where(cloud)
    cluster = {"cloud": cloud, "instanceType": catalog.type_names(cloud)[0], "nodes": 1,
               **({"zone": where["zone"]} if where["zone"] else {})}
    preview = run_program(load_stack_file(write_stack(cluster, region=None, extra=where["region"])))
    assert preview.plan.workers == ()
    assert not [r for r in preview.resources if r["type"] in GROUP_TYPES or "worker" in r["name"]]


def test_tencent_groups_are_realized_as_planned():
    preview = run_program(load_stack_file(PROJECT_ROOT / "stacks/Pulumi.tencent-spot.yaml"))
    built = {r["inputs"]["scalingGroupName"]: (r["inputs"]["minSize"], r["inputs"]["desiredCapacity"],
                                               r["inputs"]["maxSize"])
             for r in preview.resources if r["type"] == "tencentcloud:As/scalingGroup:ScalingGroup"}
    assert built == {"tencent-spot-on-demand": (1, 2, 2), "tencent-spot-spot": (0, 1, 3)}
    charges = {r["inputs"]["configurationName"]: r["inputs"]["instanceChargeType"]
               for r in preview.resources if r["type"] == "tencentcloud:As/scalingConfig:ScalingConfig"}
    assert charges == {"tencent-spot-on-demand": "POSTPAID_BY_HOUR", "tencent-spot-spot": "SPOTPAID"}


def test_local_workers_follow_the_split(write_stack):
    from here.local.layout import layout

    cluster = {"cloud": "local", "instanceType": "cpu", "nodes": 4, "market": {"onDemandBase": 2, "spotPercent": 50}}
    plan = spec_and_plan(load_stack_file(write_stack(cluster, region=None)))[1]
    # Workers: 3, one of them in the on-demand base; half of the other two on spot.
    assert [(node.name, node.spot) for node in layout(plan).nodes] == [
        ("head", False), ("worker-1", False), ("worker-2", False), ("worker-3", True)]
