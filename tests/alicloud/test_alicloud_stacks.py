"""Every shipped Alibaba Cloud stack, run through the real program under mocks, meets the invariants
docs/cloud-facts.md#alibaba-cloud states."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
from stack_preview import preview_stack

from clouds import CLOUDS

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


INSTANCE = "alicloud:ecs/instance:Instance"
ESS_CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"


def head_of(plan, resources):
    (head,) = [r["inputs"] for r in of_type(resources, INSTANCE) if r["name"] == f"{plan.name}-head"]
    return head


def worker_nodes(plan, resources):
    return [r for r in of_type(resources, INSTANCE) if r["name"] != f"{plan.name}-head"]


def test_every_node_has_the_type_eri_count(stack):
    _, plan, resources = stack
    eris = plan.instance.fabric_devices if plan.fabric.kind == "erdma" else 0
    nodes = of_type(resources, INSTANCE)
    high = [r for r in of_type(resources, "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface")
            if r["inputs"]["networkInterfaceTrafficMode"] == HIGH_PERFORMANCE]
    attached = of_type(resources, "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment")
    assert len(high) == len(attached) == eris * len(nodes)
    for node in nodes:
        assert len([r for r in high if r["name"].startswith(f"{node['name']}-eri-")]) == eris, node["name"]


def test_each_node_has_one_eri_per_network_card(stack):
    """The ERIs of a node are attached one per network card index the type has (ebmgn7ex: two cards, 160 Gbit/s;
    both on one card top out at 100: docs/cloud-facts.md#alibaba-eri-cards)."""
    _, plan, resources = stack
    if plan.fabric.kind != "erdma":
        return
    cards = plan.instance.network_cards or 1
    attached = of_type(resources, "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment")
    for node in of_type(resources, INSTANCE):
        indexes = sorted(r["inputs"]["networkCardIndex"] for r in attached
                         if r["name"].startswith(f"{node['name']}-eri-"))
        assert len(indexes) == plan.instance.fabric_devices, node["name"]
        assert set(indexes) == set(range(min(cards, len(indexes)))), f"{node['name']}: ERIs off the type's cards"
        if len(indexes) <= cards:
            assert len(set(indexes)) == len(indexes), f"{node['name']}: two ERIs share a card"


def test_erdma_workers_are_instances_and_others_an_ess_group(stack):
    _, plan, resources = stack
    workers = worker_nodes(plan, resources)
    if plan.fabric.kind == "erdma":
        assert not of_type(resources, ESS_CONFIG)
        assert len(workers) == plan.scaling.workers_desired == plan.scaling.workers_max
    else:
        assert not workers
        (group,) = of_type(resources, "alicloud:ecs/securityGroup:SecurityGroup")
        config = one(resources, ESS_CONFIG)
        assert config["securityGroupIds"] == [f"{group['name']}-id"] and "networkInterfaces" not in config


def test_jumbo_frames_on_every_node_of_the_plan_mtu(stack):
    _, plan, resources = stack
    assert plan.network.mtu == (8500 if plan.fabric.kind == "erdma" else 1500)
    for node in of_type(resources, INSTANCE):
        assert node["inputs"]["enableJumboFrame"] is (plan.network.mtu > 1500), node["name"]
    if plan.network.mtu > 1500:
        # A scaling configuration has no enable_jumbo_frame: no ESS worker may be asked for 8500.
        assert not of_type(resources, ESS_CONFIG)


def test_no_spot_in_a_deployment_set(stack):
    _, plan, resources = stack
    for r in resources:
        if r["inputs"].get("deploymentSetId"):
            assert r["inputs"].get("spotStrategy", "NoSpot") == "NoSpot", r["name"]
    for config in of_type(resources, ESS_CONFIG):
        assert "deploymentSetId" not in config["inputs"]
    for ds in of_type(resources, "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"):
        assert ds["inputs"]["strategy"] == "LowLatency"
    on_demand = [r for r in of_type(resources, INSTANCE) if r["inputs"]["spotStrategy"] == "NoSpot"]
    joined = [r for r in on_demand if r["inputs"].get("deploymentSetId")]
    assert len(joined) == (len(on_demand) if plan.fabric.kind == "erdma" else 1)


def test_head_is_on_demand_at_the_fixed_address(stack):
    _, plan, resources = stack
    head = head_of(plan, resources)
    assert head["privateIp"] == plan.network.head_address
    assert head["instanceChargeType"] == "PostPaid" and head["spotStrategy"] == "NoSpot"
    assert head["availabilityZone"] == plan.zone


def test_workers_carry_the_spot_mix(stack):
    _, plan, resources = stack
    market, scaling = plan.market, plan.scaling
    configs = of_type(resources, ESS_CONFIG)
    if not configs:
        spot = [r for r in worker_nodes(plan, resources) if r["inputs"]["spotStrategy"] != "NoSpot"]
        assert len(spot) == market.split(scaling.workers_desired)[1]
        return
    group = one(resources, "alicloud:ess/scalingGroup:ScalingGroup")
    config = configs[0]["inputs"]
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
    assert not of_type(resources, "alicloud:ess/scalingRule:ScalingRule")


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
    instances = [r["inputs"] for r in of_type(resources, INSTANCE)]
    for node in instances:
        assert node["httpTokens"] == "required" and node["httpEndpoint"] == "enabled"
    for node in instances + [r["inputs"] for r in of_type(resources, ESS_CONFIG)]:
        assert node["systemDiskEncrypted"] is True
        assert node.get("internetMaxBandwidthOut", 0) == 0


def test_user_data_is_the_plans(stack):
    _, plan, resources = stack
    workers = [r["inputs"] for r in worker_nodes(plan, resources) + of_type(resources, ESS_CONFIG)]
    assert workers
    for node, role in ((head_of(plan, resources), plan.head), *((w, plan.worker) for w in workers)):
        assert gzip.decompress(base64.b64decode(node["userData"])).decode() == role.user_data
        assert len(node["userData"]) <= CLOUDS["alicloud"].max_user_data_bytes


def test_bucket_private_encrypted_versioned_with_the_code(stack):
    _, plan, resources = stack
    bucket = one(resources, "alicloud:oss/bucket:Bucket")
    assert bucket["bucket"] == plan.storage.bucket
    assert bucket["serverSideEncryptionRule"]["sseAlgorithm"] == "AES256"
    assert one(resources, "alicloud:oss/bucketAcl:BucketAcl")["acl"] == "private"
    assert one(resources, "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock")["blockPublicAccess"]
    assert one(resources, "alicloud:oss/bucketVersioning:BucketVersioning")["status"] == "Enabled"
    assert one(resources, "alicloud:oss/bucketObject:BucketObject")["key"] == plan.storage.code_key


def test_the_code_goes_through_the_regions_internal_endpoint(stack):
    """Both shipped stacks are in the mainland, where OSS's public endpoint refuses the upload from accounts that
    activated OSS on or after 2025-03-20 (docs/cloud-facts.md#alibaba-oss-public-endpoint)."""
    _, plan, resources = stack
    (code,) = of_type(resources, "alicloud:oss/bucketObject:BucketObject")
    (provider,) = [r for r in of_type(resources, "pulumi:providers:alicloud")
                   if r["name"] == code["options"]["provider"].split("::")[-2]]
    assert provider["inputs"]["region"] == plan.region
    assert json.loads(provider["inputs"]["endpoints"]) == [{"oss": f"oss-{plan.region}-internal.aliyuncs.com"}]


def test_role_limited_to_the_bucket_and_attached(stack):
    _, plan, resources = stack
    document = json.loads(one(resources, "alicloud:ram/policy:Policy")["policyDocument"])
    oss = [s for s in document["Statement"] if any(a.startswith("oss:") for a in s["Action"])]
    assert {res for s in oss for res in s["Resource"]} == {f"acs:oss:*:*:{plan.storage.bucket}",
                                                          f"acs:oss:*:*:{plan.storage.bucket}/*"}
    role = one(resources, "alicloud:ram/role:Role")["roleName"]
    attached = of_type(resources, "alicloud:ecs/ramRoleAttachment:RamRoleAttachment")
    assert len(attached) == len(of_type(resources, INSTANCE))
    assert {r["inputs"]["ramRoleName"] for r in attached} == {role}
    for config in of_type(resources, ESS_CONFIG):
        assert config["inputs"]["roleName"] == role


def test_node_actions_scoped_to_the_cluster(stack):
    _, plan, resources = stack
    document = json.loads(one(resources, "alicloud:ram/policy:Policy")["policyDocument"])
    by_action = {a: s for s in document["Statement"] for a in s["Action"]}
    tag = by_action["ecs:TagResources"]
    assert tag["Resource"] == [f"acs:ecs:{plan.region}:*:instance/*"]
    assert tag["Condition"] == {"StringEquals": {"acs:ResourceTag/gpufleet:cluster": [plan.identity]}}
    groups = of_type(resources, "alicloud:ess/scalingGroup:ScalingGroup")
    if groups:
        assert by_action["ess:SetInstanceHealth"]["Resource"] == [
            f"acs:ess:{plan.region}:*:scalinggroup/{g['name']}-id" for g in groups]
    else:
        assert "ess:SetInstanceHealth" not in by_action
    wide = [a for a, s in by_action.items() if s["Resource"] == ["*"]]
    assert wide == ["ecs:DescribeInstances"]


def test_egress_through_nat(stack):
    _, plan, resources = stack
    nat = one(resources, "alicloud:vpc/natGateway:NatGateway")
    assert one(resources, "alicloud:ecs/eipAddress:EipAddress")["bandwidth"] == "200"
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
        assert r["inputs"]["tags"]["gpufleet:cluster"] == plan.identity, r["name"]
