"""Every shipped Alibaba Cloud stack, run through the real program under mocks, meets the invariants
docs/cloud-facts.md#alibaba-cloud states."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
from stack_preview import preview_stack

from components.clouds import CLOUDS

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted(ROOT.joinpath("stacks").glob("Pulumi.ali-*.yaml"))
HIGH_PERFORMANCE = "HighPerformance"


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def stack(request):
    spec, plan, preview = preview_stack(request.param)
    return spec, plan, preview.resources


def of_type(resources, token):
    return [r for r in resources if r["type"] == token]


def one(resources, token):
    found = of_type(resources, token)
    assert len(found) == 1, token
    return found[0]["inputs"]


def test_the_example_stacks_ship():
    assert {p.stem for p in STACKS} >= {"Pulumi.ali-erdma", "Pulumi.ali-spot"}


def test_high_performance_interfaces_match_the_eri_count(stack):
    _, plan, resources = stack
    eris = plan.instance.fabric_devices if plan.fabric.kind == "erdma" else 0
    head_eris = [r for r in of_type(resources, "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface")
                 if r["inputs"]["networkInterfaceTrafficMode"] == HIGH_PERFORMANCE]
    assert len(head_eris) == eris
    assert len(of_type(resources, "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment")) == eris
    nics = one(resources, "alicloud:ess/scalingConfiguration:ScalingConfiguration")["networkInterfaces"]
    assert [n["networkInterfaceTrafficMode"] for n in nics].count(HIGH_PERFORMANCE) == eris
    assert [n["instanceType"] for n in nics].count("Primary") == 1


def test_jumbo_frames_follow_the_plan_mtu(stack):
    _, plan, resources = stack
    head = one(resources, "alicloud:ecs/instance:Instance")
    assert head["enableJumboFrame"] is (plan.network.mtu > 1500)
    assert plan.network.mtu == (8500 if plan.fabric.kind == "erdma" else 1500)


def test_no_spot_in_a_deployment_set(stack):
    _, _, resources = stack
    for r in resources:
        if r["inputs"].get("deploymentSetId"):
            assert r["inputs"].get("spotStrategy", "NoSpot") == "NoSpot", r["name"]
    assert "deploymentSetId" not in one(resources, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    for ds in of_type(resources, "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"):
        assert ds["inputs"]["strategy"] == "LowLatency"


def test_head_is_on_demand_at_the_fixed_address(stack):
    _, plan, resources = stack
    head = one(resources, "alicloud:ecs/instance:Instance")
    assert head["privateIp"] == plan.network.head_address
    assert head["instanceChargeType"] == "PostPaid" and head["spotStrategy"] == "NoSpot"
    assert head["availabilityZone"] == plan.zone


def test_workers_carry_the_spot_mix(stack):
    _, plan, resources = stack
    group = one(resources, "alicloud:ess/scalingGroup:ScalingGroup")
    config = one(resources, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    market, scaling = plan.market, plan.scaling
    assert (group["minSize"], group["desiredCapacity"], group["maxSize"]) == (
        scaling.workers_min, scaling.workers_desired, scaling.workers_max)
    assert group["multiAzPolicy"] == "COST_OPTIMIZED"
    assert group["onDemandBaseCapacity"] == market.on_demand_base
    assert group["onDemandPercentageAboveBaseCapacity"] == 100 - market.spot_percent
    if not market.uses_spot:
        assert config["spotStrategy"] == "NoSpot"
    elif market.max_spot_price is None:
        assert config["spotStrategy"] == "SpotAsPriceGo"
    else:
        assert config["spotStrategy"] == "SpotWithPriceLimit"
        assert config["spotPriceLimits"] == [{"instanceType": plan.instance.name,
                                              "priceLimit": market.max_spot_price}]
    rules = of_type(resources, "alicloud:ess/scalingRule:ScalingRule")
    assert len(rules) == (plan.scaling.gpu_util_target is not None)
    for rule in rules:
        assert rule["inputs"]["scalingRuleType"] == "TargetTrackingScalingRule"
        assert rule["inputs"]["targetValue"] == plan.scaling.gpu_util_target


def test_members_reach_each_other_both_ways_and_only_ssh_from_outside(stack):
    spec, _, resources = stack
    group = one(resources, "alicloud:ecs/securityGroup:SecurityGroup")
    assert group["innerAccessPolicy"] == "Drop"
    rules = [r["inputs"] for r in of_type(resources, "alicloud:ecs/securityGroupRule:SecurityGroupRule")]
    for direction in ("ingress", "egress"):
        assert any(r["type"] == direction and r["ipProtocol"] == "all" and r["portRange"] == "-1/-1"
                   and r.get("sourceSecurityGroupId") and r["nicType"] == "intranet" for r in rules), direction
    outside = [r for r in rules if r["type"] == "ingress" and not r.get("sourceSecurityGroupId")]
    assert sorted(r["cidrIp"] for r in outside) == sorted(spec.network.ssh_cidrs)
    assert all(r["ipProtocol"] == "tcp" and r["portRange"] == "22/22" for r in outside)


def test_metadata_hardened_and_disks_encrypted(stack):
    _, _, resources = stack
    head = one(resources, "alicloud:ecs/instance:Instance")
    assert head["httpTokens"] == "required" and head["httpEndpoint"] == "enabled"
    config = one(resources, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    for node in (head, config):
        assert node["systemDiskEncrypted"] is True
        assert node.get("internetMaxBandwidthOut", 0) == 0


def test_user_data_is_the_plans(stack):
    _, plan, resources = stack
    head = one(resources, "alicloud:ecs/instance:Instance")
    config = one(resources, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    for node, role in ((head, plan.head), (config, plan.worker)):
        assert gzip.decompress(base64.b64decode(node["userData"])).decode() == role.user_data
        assert len(node["userData"]) <= CLOUDS["alicloud"].max_user_data_bytes


def test_bucket_private_encrypted_versioned_with_the_code(stack):
    _, plan, resources = stack
    bucket = one(resources, "alicloud:oss/bucket:Bucket")
    assert bucket["bucket"] == plan.storage.bucket
    assert bucket["serverSideEncryptionRule"]["sseAlgorithm"] == "KMS"
    assert one(resources, "alicloud:oss/bucketAcl:BucketAcl")["acl"] == "private"
    assert one(resources, "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock")["blockPublicAccess"]
    assert one(resources, "alicloud:oss/bucketVersioning:BucketVersioning")["status"] == "Enabled"
    assert one(resources, "alicloud:oss/bucketObject:BucketObject")["key"] == plan.storage.code_key


def test_role_limited_to_the_bucket_and_attached(stack):
    _, plan, resources = stack
    document = json.loads(one(resources, "alicloud:ram/policy:Policy")["policyDocument"])
    oss = [s for s in document["Statement"] if any(a.startswith("oss:") for a in s["Action"])]
    assert {res for s in oss for res in s["Resource"]} == {f"acs:oss:*:*:{plan.storage.bucket}",
                                                          f"acs:oss:*:*:{plan.storage.bucket}/*"}
    role = one(resources, "alicloud:ram/role:Role")["roleName"]
    assert one(resources, "alicloud:ecs/ramRoleAttachment:RamRoleAttachment")["ramRoleName"] == role
    assert one(resources, "alicloud:ess/scalingConfiguration:ScalingConfiguration")["roleName"] == role


def test_egress_through_nat(stack):
    _, plan, resources = stack
    nat = one(resources, "alicloud:vpc/natGateway:NatGateway")
    assert nat["natType"] == "Enhanced"
    assert one(resources, "alicloud:ecs/eipAssociation:EipAssociation")["instanceType"] == "Nat"
    assert one(resources, "alicloud:vpc/snatEntry:SnatEntry")["sourceVswitchId"]
    zones = {r["inputs"]["zoneId"] for r in of_type(resources, "alicloud:vpc/switch:Switch")}
    assert zones == {plan.zone}


def test_tags_everywhere(stack):
    _, plan, resources = stack
    tagged = [r for r in resources if "tags" in r["inputs"]]
    assert len(tagged) >= 10
    for r in tagged:
        assert r["inputs"]["tags"]["gpufleet:cluster"] == plan.name, r["name"]
