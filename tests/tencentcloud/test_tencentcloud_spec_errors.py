"""Combinations Tencent Cloud cannot build fail in the spec, naming the field and the fix; HCC spot splits."""

from __future__ import annotations

import copy

import pytest

from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from spec.errors import SpecError
from spec.stackfile import load_stack_file

REGION = "ap-shanghai"
HCC = {
    "cloud": "tencentcloud",
    "zone": "ap-shanghai-5",
    "instanceType": "HCCPNV4h.48XLARGE1536",
    "image": "img-487zeit5",
    "nodes": 2,
    "storage": {"checkpointBucket": "gpufleet-test-1250000000"},
    "job": {"globalBatch": 512, "microBatch": 32},
}


@pytest.fixture
def tencent(write_stack):
    def build(**changes):
        cluster = {**copy.deepcopy(HCC), **changes}
        return load_stack_file(write_stack(cluster, region=None, extra={"tencentcloud:region": REGION}))

    return build


def problems(stack_file):
    with pytest.raises(SpecError) as caught:
        spec_and_plan(stack_file)
    return {p.path: p for p in caught.value.problems}


def test_the_base_stack_is_valid(tencent):
    _, plan = spec_and_plan(tencent())
    assert plan.fabric.kind == "rdma"


def test_spot_on_an_international_account(tencent):
    found = problems(tencent(nodes=3, job={"globalBatch": 768, "microBatch": 32},
                             market={"spotPercent": 50, "maxSpotPrice": 20.0, "internationalAccount": True}))
    problem = found["gpufleet:cluster.market.spotPercent"]
    assert "international" in problem.message and "SPOTPAID" in problem.message
    assert "spotPercent to 0" in problem.fix


def test_spot_without_a_max_price(tencent):
    problem = problems(tencent(nodes=3, job={"globalBatch": 768, "microBatch": 32}, market={"spotPercent": 50}))[
        "gpufleet:cluster.market.maxSpotPrice"]
    assert "max price" in problem.message


def test_tcp_on_an_hcc_type(tencent):
    problem = problems(tencent(network={"fabric": "tcp"}))["gpufleet:cluster.network.fabric"]
    assert "HCC type" in problem.message and "non-HCC type" in problem.fix


def test_rdma_on_a_type_without_it(tencent):
    problem = problems(tencent(instanceType="GT4.41XLARGE948", network={"fabric": "rdma"}))[
        "gpufleet:cluster.network.fabric"]
    assert "has no rdma" in problem.message


def test_elastic_hcc_cluster(tencent):
    problem = problems(tencent(nodes={"min": 2, "desired": 2, "max": 4}, job={"globalBatch": 1024, "microBatch": 32}))[
        "gpufleet:cluster.nodes"]
    assert "HPC cluster" in problem.message and "one number" in problem.fix


def test_bucket_without_appid(tencent):
    found = problems(tencent(storage={"checkpointBucket": "gpufleet-ckpt"}))
    problem = found["gpufleet:cluster.storage.checkpointBucket"]
    assert "APPID" in problem.message and "remove it" in problem.fix


def test_zone_outside_the_region(tencent):
    assert "ap-shanghai" in problems(tencent(zone="ap-guangzhou-6"))["gpufleet:cluster.zone"].message


def test_gpu_util_scaling_is_unsupported(tencent):
    problem = problems(tencent(instanceType="GN7.2XLARGE32", nodes={"min": 2, "desired": 2, "max": 4},
                               job={"globalBatch": 128, "microBatch": 32}, autoscaling={"gpuUtilTarget": 80}))[
        "gpufleet:cluster.autoscaling.gpuUtilTarget"]
    assert "does not support scaling on GPU utilisation" in problem.message


def test_hcc_spot_workers_split_on_demand_first(tencent):
    stack_file = tencent(nodes=3, job={"globalBatch": 768, "microBatch": 32},
                         market={"spotPercent": 50, "maxSpotPrice": 20.0})
    resources = run_program(stack_file).resources
    nodes = [r["inputs"] for r in resources if r["type"] == "tencentcloud:Instance/instance:Instance"]
    charges = sorted((n["tags"]["gpufleet:role"], n["instanceChargeType"]) for n in nodes)
    assert charges == [("head", "POSTPAID_BY_HOUR"), ("worker", "POSTPAID_BY_HOUR"), ("worker", "SPOTPAID")]
    spot = [n for n in nodes if n["instanceChargeType"] == "SPOTPAID"][0]
    assert spot["spotInstanceType"] == "ONE-TIME" and spot["spotMaxPrice"] == "20.00" and spot["hpcClusterId"]
