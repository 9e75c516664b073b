"""Combinations Alibaba Cloud cannot build fail in the spec, naming the field and the fix."""

from __future__ import annotations

import copy

import pytest

from fleet.stacks import spec_and_plan
from spec.errors import SpecError
from spec.stackfile import load_stack_file

REGION = "cn-wulanchabu"
ERDMA = {
    "cloud": "alicloud",
    "zone": "cn-wulanchabu-c",
    "instanceType": "ecs.ebmgn7ex.32xlarge",
    "image": "ubuntu_22_04_x64_20G_alibase_20240130.vhd",
    "nodes": 2,
    "network": {"fabric": "erdma"},
    "job": {"globalBatch": 512, "microBatch": 32},
}


@pytest.fixture
def ali(write_stack):
    def build(**changes):
        cluster = copy.deepcopy(ERDMA)
        for key, value in changes.items():
            cluster[key] = value
        path = write_stack(cluster, region=None, extra={"alicloud:region": REGION})
        return load_stack_file(path)

    return build


def problems(stack_file):
    with pytest.raises(SpecError) as caught:
        spec_and_plan(stack_file)
    return {p.path: p for p in caught.value.problems}


def test_the_base_stack_is_valid(ali):
    spec, plan = spec_and_plan(ali())
    assert plan.fabric.devices == 2


def test_erdma_on_a_type_without_eris(ali):
    found = problems(ali(instanceType="ecs.gn7i-c32g1.8xlarge", job={"globalBatch": 64, "microBatch": 32}))
    problem = found["gpufleet:cluster.network.fabric"]
    assert "has no erdma" in problem.message and "fabric auto or tcp" in problem.fix


def test_zone_outside_the_region(ali):
    problem = problems(ali(zone="cn-hangzhou-h"))["gpufleet:cluster.zone"]
    assert "not a zone of region 'cn-wulanchabu'" in problem.message


def test_capacity_block_is_unsupported(ali):
    problem = problems(ali(market={"onDemandBase": 2, "reservationId": "cr-1", "capacityBlock": True}))[
        "gpufleet:cluster.market.capacityBlock"]
    assert "alicloud does not support capacity block" in problem.message


def test_erdma_nodes_share_the_deployment_set_and_are_instances(ali):
    """ERIs need ECS instances (docs/cloud-facts.md#alibaba-ess): every node is in the deployment set, one instance
    group per market; spot workers are instances too, kept out of the set by the realizer."""
    _, plan = spec_and_plan(ali(nodes=3, market={"onDemandBase": 1, "spotPercent": 100, "maxSpotPrice": 9.5}))
    assert [(p.kind, p.roles) for p in plan.placements] == [("cluster", ("head", "worker"))]
    assert [(g.form, g.market, g.desired) for g in plan.workers] == [("instances", "spot", 2)]
    assert plan.worker.spot and not plan.head.spot


def test_tcp_types_keep_the_head_alone_in_the_set_and_workers_in_ess(ali):
    _, plan = spec_and_plan(ali(instanceType="ecs.gn7i-c32g1.8xlarge", network={"fabric": "tcp"},
                                nodes={"min": 2, "desired": 2, "max": 4}, job={"globalBatch": 64, "microBatch": 32}))
    assert [(p.kind, p.roles) for p in plan.placements] == [("cluster", ("head",))]
    assert [g.form for g in plan.workers] == ["scaling-group"]
    assert plan.network.mtu == 1500


def test_an_elastic_erdma_cluster_is_refused_with_the_fix(ali):
    problem = problems(ali(nodes={"min": 2, "desired": 2, "max": 4}))["gpufleet:cluster.nodes"]
    assert "cannot scale" in problem.message and "give nodes as one number" in problem.fix


def test_scaling_on_gpu_utilisation_is_refused(ali):
    problem = problems(ali(instanceType="ecs.gn7i-c32g1.8xlarge", network={"fabric": "tcp"},
                           nodes={"min": 2, "desired": 2, "max": 4}, job={"globalBatch": 64, "microBatch": 32},
                           autoscaling={"gpuUtilTarget": 80}))["gpufleet:cluster.autoscaling.gpuUtilTarget"]
    assert "no GPU utilisation metric" in problem.message


def test_anti_affinity_is_refused_with_the_reason(ali):
    problem = problems(ali(network={"fabric": "erdma", "antiAffinity": True}))["gpufleet:cluster.network.antiAffinity"]
    assert "LowLatency" in problem.message and "remove network.antiAffinity" in problem.fix


def test_a_bundle_domain_is_checked_as_a_domain(ali):
    problem = problems(ali(storage={"bundleDomain": "https://code.example.com"}))[
        "gpufleet:cluster.storage.bundleDomain"]
    assert "not a domain name" in problem.message


def test_a_bundle_domain_outside_the_mainland_is_refused(write_stack):
    cluster = {**copy.deepcopy(ERDMA), "zone": "ap-southeast-1a", "storage": {"bundleDomain": "code.example.com"}}
    path = write_stack(cluster, region=None, extra={"alicloud:region": "ap-southeast-1"})
    problem = problems(load_stack_file(path))["gpufleet:cluster.storage.bundleDomain"]
    assert "ap-southeast-1 needs no domain" in problem.message and problem.fix == "remove storage.bundleDomain."
