"""Placement decided per cloud by its profile: which groups, which roles join them, and anti-affinity a cloud cannot
give refused with its reason (never dropped); realizers build exactly the plan's groups."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fleet.diagram import mermaid
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan import catalog
from plan.placement import PlacementAsk
from plan.profile import no_placement
from spec.errors import SpecError
from spec.stackfile import load_stack_file

P5 = {"cloud": "aws", "zone": "us-east-1a", "instanceType": "p5.48xlarge", "nodes": {"min": 2, "desired": 4, "max": 7}}
REGIONS = {"aws": "aws:region", "alicloud": "alicloud:region", "tencentcloud": "tencentcloud:region"}


@pytest.fixture
def stack(write_stack):
    def build(cluster: dict, region: str = "us-east-1"):
        key = REGIONS.get(cluster["cloud"])
        return load_stack_file(write_stack(cluster, region=None, extra={key: region} if key else {}))

    return build


def placements(stack_file) -> list[tuple[str, tuple[str, ...]]]:
    return [(p.kind, p.roles) for p in spec_and_plan(stack_file)[1].placements]


def refusal(stack_file):
    with pytest.raises(SpecError) as caught:
        spec_and_plan(stack_file)
    return {p.path: p for p in caught.value.problems}["gpufleet:cluster.network.antiAffinity"]


def test_aws_efa_nodes_share_a_cluster_placement_group(stack):
    assert placements(stack(P5)) == [("cluster", ("head", "worker"))]


def test_aws_anti_affinity_on_efa_is_a_spread_group_that_every_node_joins(stack):
    """The reproduced bug: anti-affinity on an EFA stack gave no placement group at all."""
    stack_file = stack({**P5, "network": {"antiAffinity": True}})
    assert placements(stack_file) == [("spread", ("head", "worker"))]
    preview = run_program(stack_file)
    groups = [r["inputs"] for r in preview.resources if r["type"] == "aws:ec2/placementGroup:PlacementGroup"]
    assert [g["strategy"] for g in groups] == ["spread"]
    templates = [r["inputs"] for r in preview.resources if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert [t["placement"]["groupName"] for t in templates] == ["test-pg", "test-pg"]
    assert '"spread placement group"' in mermaid(preview.plan), "the diagram draws what is built"


def test_aws_spread_group_holds_seven_nodes(stack):
    problem = refusal(stack({**P5, "nodes": {"min": 2, "desired": 4, "max": 8}, "network": {"antiAffinity": True}}))
    assert "at most 7 running instances per zone" in problem.message and "nodes.max is 8" in problem.message
    assert "remove network.antiAffinity" in problem.fix


def test_aws_capacity_block_places_its_own_nodes_and_cannot_spread(stack):
    block = {**P5, "nodes": 4, "market": {"onDemandBase": 4, "capacityBlock": True,
                                           "reservationId": "cr-0123456789abcdef0"}}
    assert placements(stack(block)) == []
    assert "Capacity Blocks" in refusal(stack({**block, "network": {"antiAffinity": True}})).message


def test_alibaba_erdma_nodes_share_the_deployment_set_and_tcp_workers_stay_out(stack):
    """eRDMA workers are ECS instances and join the head's set; ESS workers take no deployment set."""
    ali = {"cloud": "alicloud", "zone": "cn-wulanchabu-c", "instanceType": "ecs.ebmgn7ex.32xlarge", "nodes": 3}
    assert placements(stack(ali, "cn-wulanchabu")) == [("cluster", ("head", "worker"))]
    resources = run_program(stack(ali, "cn-wulanchabu")).resources
    in_set = sorted(r["name"] for r in resources if r["inputs"].get("deploymentSetId"))
    assert in_set == ["test-head", "test-worker-0", "test-worker-1"]
    tcp = {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge", "nodes": 3}
    resources = run_program(stack(tcp, "cn-hangzhou")).resources
    assert [r["name"] for r in resources if r["inputs"].get("deploymentSetId")] == ["test-head"]


def test_tencent_hcc_nodes_share_an_hpc_cluster_and_spread_when_asked(stack):
    hcc = {"cloud": "tencentcloud", "zone": "ap-shanghai-5", "instanceType": "HCCPNV4h.48XLARGE1536", "nodes": 2}
    assert placements(stack(hcc, "ap-shanghai")) == [("hpc-cluster", ("head", "worker"))]
    both = stack({**hcc, "network": {"antiAffinity": True}}, "ap-shanghai")
    assert placements(both) == [("hpc-cluster", ("head", "worker")), ("spread", ("head", "worker"))]
    nodes = [r["inputs"] for r in run_program(both).resources if r["type"] == "tencentcloud:Instance/instance:Instance"]
    assert len(nodes) == 2
    assert {(n["hpcClusterId"], n["placementGroupId"]) for n in nodes} == {("test-hpc-id", "test-spread-id")}


def test_tencent_plain_types_need_no_placement(stack):
    plain = {"cloud": "tencentcloud", "zone": "ap-shanghai-5", "instanceType": "GN7.2XLARGE32", "nodes": 2}
    assert placements(stack(plain, "ap-shanghai")) == []


def test_local_nodes_cannot_spread(stack):
    local = {"cloud": "local", "instanceType": "cpu", "nodes": 2, "network": {"antiAffinity": True}}
    assert "this machine" in refusal(stack(local)).message


def test_a_profile_without_placement_of_its_own_places_nothing_and_refuses_a_spread():
    ask = PlacementAsk(anti_affinity=False, capacity_block=False, reservation=False, nodes_max=2,
                       instance=catalog.lookup("aws", "g5.xlarge"))
    assert no_placement(ask) == ()
    assert no_placement(replace(ask, anti_affinity=True)) == "it has no spread placement for nodes."


def test_aws_capacity_reservation_cannot_spread_either(stack):
    reserved = {**P5, "market": {"onDemandBase": 4, "reservationId": "cr-0123456789abcdef0"}}
    assert "capacity reservations and Capacity Blocks hold no capacity in a spread placement group" in \
        refusal(stack({**reserved, "network": {"antiAffinity": True}})).message
