"""Every bad stack a user can write is rejected before any resource, naming the field and the fix."""

from __future__ import annotations

import pytest

from fleet.stacks import spec_and_plan
from spec.errors import SpecError
from spec.stackfile import load_stack_file


def problems_of(path) -> list:
    with pytest.raises(SpecError) as caught:
        spec_and_plan(load_stack_file(path))
    return caught.value.problems


def only_problem(path):
    found = problems_of(path)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]


def test_valid_stack_passes(write_stack, aws_cluster):
    spec, plan = spec_and_plan(load_stack_file(write_stack(aws_cluster)))
    assert spec.counts.max == 8 and plan.instance.gpus == 8


def test_unknown_key_suggests_the_right_one(write_stack, aws_cluster):
    aws_cluster["instanceTyp"] = aws_cluster.pop("instanceType")
    found = problems_of(write_stack(aws_cluster))
    typo = next(p for p in found if p.path.endswith("instanceTyp"))
    assert "did you mean `instanceType`" in typo.message
    assert any(p.path.endswith("instanceType") and "required" in p.message.lower() for p in found)


def test_unknown_nested_key(write_stack, aws_cluster):
    aws_cluster["market"]["spotPrecent"] = 10
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.market.spotPrecent"
    assert "spotPercent" in problem.message


def test_wrong_type(write_stack, aws_cluster):
    aws_cluster["market"]["spotPercent"] = "half"
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.market.spotPercent" and "whole number" in problem.fix


@pytest.mark.parametrize(("section", "key"), [(None, "nodes"), ("market", "spotPercent"), ("storage", "rootVolumeGb")])
def test_true_or_false_where_a_number_belongs(write_stack, aws_cluster, section, key):
    (aws_cluster.setdefault(section, {}) if section else aws_cluster)[key] = True
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == ".".join(filter(None, ("gpufleet:cluster", section, key)))
    assert problem.message.startswith("got true, where a number belongs") and problem.fix == "write a number."


def test_flags_still_take_true_and_false(write_stack, aws_cluster):
    aws_cluster["network"] = {"allowInternet": True, "antiAffinity": False}
    spec, _ = spec_and_plan(load_stack_file(write_stack(aws_cluster)))
    assert spec.network.allow_internet is True


def test_unknown_cloud(write_stack, aws_cluster):
    aws_cluster["cloud"] = "gcp"
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.cloud" and "'aws'" in problem.message and "'gcp'" in problem.message


def test_unknown_instance_type_for_cloud(write_stack, aws_cluster):
    aws_cluster["instanceType"] = "p5.48xlarg"
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.instanceType"
    assert "Did you mean p5.48xlarge" in problem.message and "p4d.24xlarge" in problem.fix


def test_zone_outside_region(write_stack, aws_cluster):
    aws_cluster["zone"] = "eu-west-1a"
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.zone" and "us-east-1" in problem.message


def test_missing_region_names_the_provider_key(write_stack, aws_cluster):
    problem = only_problem(write_stack(aws_cluster, region=None))
    assert problem.path == "aws:region"


@pytest.mark.parametrize("nodes, expected", [
    (0, "greater than or equal to 1"),
    ({"min": 0, "desired": 1, "max": 2}, "greater than or equal to 1"),
    ({"min": 4, "desired": 2, "max": 8}, "min 4 <= desired 2 <= max 8"),
    ({"min": 1, "desired": 9, "max": 8}, "min 1 <= desired 9 <= max 8"),
])
def test_node_counts(write_stack, aws_cluster, nodes, expected):
    aws_cluster["nodes"] = nodes
    aws_cluster["market"] = {}
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path.startswith("gpufleet:cluster.nodes") and expected in problem.message


@pytest.mark.parametrize("share", [-5, 101])
def test_spot_share_outside_0_100(write_stack, aws_cluster, share):
    aws_cluster["market"]["spotPercent"] = share
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.market.spotPercent" and "0-100" in problem.message


def test_on_demand_base_above_node_count(write_stack, aws_cluster):
    aws_cluster["market"]["onDemandBase"] = 9
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.market.onDemandBase" and "at most 8" in problem.fix


def test_efa_on_a_type_without_it(write_stack, aws_cluster):
    aws_cluster.update(instanceType="g4dn.xlarge", network={"fabric": "efa"})
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.network.fabric" and "g4dn.xlarge has no efa" in problem.message


def test_erdma_on_aws(write_stack, aws_cluster):
    aws_cluster["network"] = {"fabric": "erdma"}
    problem = only_problem(write_stack(aws_cluster))
    assert "erdma is not offered on aws" in problem.message


@pytest.mark.parametrize("cidr, expected", [
    ("10.0.0.0/33", "not an IPv4 CIDR"),
    ("10.0.0.1/16", "not an IPv4 CIDR"),
    ("banana", "not an IPv4 CIDR"),
    ("10.0.0.0/28", "too few for 8 nodes"),
])
def test_vpc_cidr(write_stack, aws_cluster, cidr, expected):
    aws_cluster["network"] = {"vpcCidr": cidr}
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.network.vpcCidr" and expected in problem.message


@pytest.mark.parametrize("ports, expected", [
    ("51000-50000", 'reversed: write "50000-51000"'),
    ("50000:51000", "not a port range"),
    ("80-2000", "outside 1024-65535"),
    ("50000-50010", "fewer than 256 ports"),
    ("29000-30000", "contains the rendezvous port 29400"),
])
def test_nccl_port_range(write_stack, aws_cluster, ports, expected):
    aws_cluster["network"] = {"fabric": "tcp", "ncclPortRange": ports}
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.network.ncclPortRange" and expected in problem.message


def test_capacity_block_mixed_with_spot(write_stack, aws_cluster):
    aws_cluster["market"] = {"onDemandBase": 2, "spotPercent": 20, "capacityBlock": True,
                             "reservationId": "cr-0123456789abcdef0"}
    problem = only_problem(write_stack(aws_cluster))
    assert "cannot be mixed with spot" in problem.message


@pytest.mark.parametrize("autoscaling, nodes, expected", [
    ({"gpuUtilTarget": 0}, None, "not a percentage"),
    ({"gpuUtilTarget": 150}, None, "not a percentage"),
    ({"gpuUtilTarget": 80}, 4, "nothing can scale"),
    ({"standby": 10}, None, "exceed the 6"),
])
def test_impossible_autoscaling(write_stack, aws_cluster, autoscaling, nodes, expected):
    aws_cluster["market"] = {}
    aws_cluster["autoscaling"] = autoscaling
    if nodes is not None:
        aws_cluster["nodes"] = nodes
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path.startswith("gpufleet:cluster.autoscaling") and expected in problem.message


def test_warm_pool_with_spot(write_stack, aws_cluster):
    aws_cluster["autoscaling"] = {"standby": 1}
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.autoscaling.standby" and "spot" in problem.message


def test_yaml_that_does_not_parse_names_file_and_line(tmp_path):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text("config:\n  gpufleet:cluster:\n    cloud: aws\n   zone: [oops\n")
    with pytest.raises(SpecError) as caught:
        load_stack_file(path)
    text = caught.value.render()
    assert str(path) in text and "line 4" in text


def test_every_problem_is_listed_at_once(write_stack, aws_cluster):
    aws_cluster["market"]["spotPercent"] = 300
    aws_cluster["zone"] = "eu-west-1a"
    aws_cluster["network"] = {"ncclPortRange": "2-1"}
    found = problems_of(write_stack(aws_cluster))
    assert {p.path.rsplit(".", 1)[-1] for p in found} >= {"spotPercent", "zone", "ncclPortRange"}


def test_unknown_job_setting(write_stack, aws_cluster):
    aws_cluster["job"] = {"learningRate": 0.1}
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.job.learningRate" and problem.message.startswith("unknown key")


def test_more_ranks_than_gpus(write_stack, aws_cluster):
    aws_cluster.update(ranksPerNode=16, job={"microBatch": 1, "globalBatch": 1024})
    problem = only_problem(write_stack(aws_cluster))
    assert problem.path == "gpufleet:cluster.ranksPerNode" and "8 GPUs" in problem.message
