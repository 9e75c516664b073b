"""Every shipped Tencent Cloud stack, run through the real program under mocks, meets the invariants
docs/cloud-facts.md#tencent-cloud states."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest
from stack_preview import preview_stack

from components.tencentcloud.lookups import STAND_INS, USER

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted(ROOT.joinpath("stacks").glob("Pulumi.tencent-*.yaml"))
INSTANCE = "tencentcloud:Instance/instance:Instance"
CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def stack(request):
    spec, plan, preview = preview_stack(request.param)
    return spec, plan, preview.resources


def inputs_of(resources, token):
    return [r["inputs"] for r in resources if r["type"] == token]


def one(resources, token):
    found = inputs_of(resources, token)
    assert len(found) == 1, token
    return found[0]


def test_the_example_stacks_ship():
    assert {p.stem.removeprefix("Pulumi.") for p in STACKS} == set(WORKERS)


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_the_bucket_ends_in_the_looked_up_appid(path):
    """No shipped stack names a bucket with an APPID written in (COS's example, 1250000000, is nobody's account):
    the default bucket's name ends in the APPID the program looks up from the account."""
    _, plan, preview = preview_stack(path)
    (asked,) = [call for call in preview.invokes if call["token"] == USER]
    appid = STAND_INS[USER]["appId"]
    assert asked["args"] == {} and plan.storage.account_id == appid and plan.storage.bucket.endswith(f"-{appid}")
    assert one(preview.resources, "tencentcloud:Cos/bucket:Bucket")["bucket"] == plan.storage.bucket


def test_hcc_nodes_all_in_the_hpc_cluster_others_never(stack):
    spec, plan, resources = stack
    clusters = inputs_of(resources, "tencentcloud:Cvm/hpcCluster:HpcCluster")
    instances = inputs_of(resources, INSTANCE)
    if spec.instance_type.startswith("HCC"):
        assert len(clusters) == 1 and clusters[0]["zone"] == plan.zone
        assert len(instances) == plan.scaling.nodes_desired
        assert all(i.get("hpcClusterId") for i in instances)
        assert not inputs_of(resources, CONFIG)
    else:
        assert not clusters and not any(i.get("hpcClusterId") for i in instances)


def test_spot_is_spotpaid_one_time_with_a_max_price(stack):
    _, plan, resources = stack
    price = f"{plan.market.max_spot_price:.2f}" if plan.market.uses_spot else None
    for node in inputs_of(resources, INSTANCE):
        if node["instanceChargeType"] == "SPOTPAID":
            assert node["spotInstanceType"] == "ONE-TIME" and node["spotMaxPrice"] == price
        else:
            assert node["instanceChargeType"] == "POSTPAID_BY_HOUR" and "spotMaxPrice" not in node
    for config in inputs_of(resources, CONFIG):
        if config["instanceChargeType"] == "SPOTPAID":
            assert config["spotInstanceType"] == "one-time" and config["spotMaxPrice"] == price


# What each shipped stack's workers are, worked out by hand from its file: HCC workers are on-demand instances in
# the HPC cluster; tencent-spot has workers 1-5 (desired 3), 60% of them on spot rounded down.
WORKERS = {"tencent-hcc": {"instances": [("POSTPAID_BY_HOUR", True)]},
           "tencent-spot": {"groups": {"tencent-spot-on-demand": (1, 2, 2, "POSTPAID_BY_HOUR"),
                                       "tencent-spot-spot": (0, 1, 3, "SPOTPAID")}}}


def test_workers_are_the_ones_the_stack_describes(stack):
    spec, _, resources = stack
    expected = WORKERS[spec.name]
    workers = [i for i in inputs_of(resources, INSTANCE) if i["tags"]["gpufleet:role"] == "worker"]
    assert [(w["instanceChargeType"], bool(w.get("hpcClusterId"))) for w in workers] == expected.get("instances", [])
    charges = {c["configurationName"]: c["instanceChargeType"] for c in inputs_of(resources, CONFIG)}
    groups = {g["scalingGroupName"]: (g["minSize"], g["desiredCapacity"], g["maxSize"],
                                      charges[g["scalingGroupName"]]) for g in inputs_of(resources, GROUP)}
    assert groups == expected.get("groups", {})


def test_head_is_on_demand_at_the_fixed_address(stack):
    _, plan, resources = stack
    heads = [i for i in inputs_of(resources, INSTANCE) if i["tags"]["gpufleet:role"] == "head"]
    assert len(heads) == 1
    assert heads[0]["privateIp"] == plan.network.head_address
    assert heads[0]["instanceChargeType"] == "POSTPAID_BY_HOUR"
    assert heads[0]["allocatePublicIp"] is False


def test_spread_group_only_for_anti_affinity(stack):
    spec, _, resources = stack
    groups = inputs_of(resources, "tencentcloud:Placement/group:Group")
    assert [g["type"] for g in groups] == (["HOST"] if spec.network.anti_affinity else [])
    nodes = inputs_of(resources, INSTANCE) + inputs_of(resources, CONFIG)
    for node in nodes:
        spread = node.get("placementGroupId") or (node.get("disasterRecoverGroupIds") or [None])[0]
        assert spread == (f"{spec.name}-spread-id" if spec.network.anti_affinity else None)


def test_members_reach_each_other_both_ways_and_only_ssh_from_outside(stack):
    spec, _, resources = stack
    rules = one(resources, "tencentcloud:Security/groupRuleSet:GroupRuleSet")
    for direction in ("ingresses", "egresses"):
        assert any(e["protocol"] == "ALL" and e["port"] == "all" and e.get("sourceSecurityId")
                   and e["action"] == "ACCEPT" for e in rules[direction]), direction
    outside = [e for e in rules["ingresses"] if not e.get("sourceSecurityId")]
    assert sorted(e["cidrBlock"] for e in outside) == sorted(spec.network.ssh_cidrs)
    assert all(e["protocol"] == "TCP" and e["port"] == "22" for e in outside)


def test_user_data_is_the_plans(stack):
    _, plan, resources = stack
    for node in inputs_of(resources, INSTANCE):
        role = plan.head if node["tags"]["gpufleet:role"] == "head" else plan.worker
        assert gzip.decompress(base64.b64decode(node["userData"])).decode() == role.user_data
    for config in inputs_of(resources, CONFIG):
        assert gzip.decompress(base64.b64decode(config["userData"])).decode() == plan.worker.user_data


def test_bucket_private_encrypted_versioned_with_the_code(stack):
    _, plan, resources = stack
    bucket = one(resources, "tencentcloud:Cos/bucket:Bucket")
    assert bucket["bucket"] == plan.storage.bucket
    assert bucket["acl"] == "private" and bucket["encryptionAlgorithm"] == "AES256"
    assert bucket["versioningEnable"] is True
    assert one(resources, "tencentcloud:Cos/bucketObject:BucketObject")["key"] == plan.storage.code_key


def test_role_limited_to_the_bucket_and_on_every_node(stack):
    _, plan, resources = stack
    document = json.loads(one(resources, "tencentcloud:Cam/policy:Policy")["document"])
    cos = [s for s in document["statement"] if any(a.startswith("name/cos:") for a in s["action"])]
    assert all(res.split(":")[-1].startswith(plan.storage.bucket) for s in cos for res in s["resource"])
    role = one(resources, "tencentcloud:Cam/role:Role")["name"]
    for node in inputs_of(resources, INSTANCE) + inputs_of(resources, CONFIG):
        assert node["camRoleName"] == role


def test_egress_through_nat(stack):
    _, plan, resources = stack
    entry = one(resources, "tencentcloud:Route/tableEntry:TableEntry")
    assert entry["nextType"] == "NAT" and entry["destinationCidrBlock"] == "0.0.0.0/0"
    assert one(resources, "tencentcloud:Subnet/instance:Instance")["availabilityZone"] == plan.zone


def test_tags_everywhere(stack):
    _, plan, resources = stack
    tagged = [r for r in resources if "tags" in r["inputs"]]
    assert len(tagged) >= 10
    for r in tagged:
        assert r["inputs"]["tags"]["gpufleet:cluster"] == plan.identity, r["name"]


def test_egress_allows_dns_and_ntp_and_nothing_wider(stack):
    """A custom group denies egress no rule accepts (docs/cloud-facts.md#tencent-security-groups): the node needs UDP 53
    and 123 out; beyond the cluster, only those, 443 and 80 leave."""
    _, _, resources = stack
    rules = one(resources, "tencentcloud:Security/groupRuleSet:GroupRuleSet")
    outside = {(e["protocol"], e["port"]) for e in rules["egresses"] if not e.get("sourceSecurityId")}
    assert outside == {("UDP", "53"), ("UDP", "123"), ("TCP", "443"), ("TCP", "80")}
    assert all(e["action"] == "ACCEPT" for e in rules["egresses"])


def test_only_list_actions_on_every_resource_and_removal_bound_to_the_cluster_tag(stack):
    _, plan, resources = stack
    document = json.loads(one(resources, "tencentcloud:Cam/policy:Policy")["document"])
    by_action = {a: s for s in document["statement"] for a in s["action"]}
    unconditioned = sorted(a for a, s in by_action.items() if s["resource"] == ["*"] and "condition" not in s)
    if not inputs_of(resources, GROUP):  # no node is in an AS group, so none calls AS
        assert not [a for a in by_action if a.startswith("name/as:")]
        assert unconditioned == ["name/cvm:DescribeInstances"]
        return
    remove = by_action["name/as:RemoveInstances"]
    assert remove["condition"] == {"for_any_value:string_equal": {"qcs:resource_tag": [
        f"gpufleet:cluster&{plan.identity}"]}}
    assert unconditioned == ["name/as:DescribeAutoScalingInstances", "name/cvm:DescribeInstances"]
    for group in inputs_of(resources, GROUP):
        assert group["tags"]["gpufleet:cluster"] == plan.identity


def test_hcc_nccl_uses_the_rdma_devices_the_node_probe_counts(stack):
    """NCCL_IB_HCA is a device-name prefix (NCCL's docs); the plan's must be the one gpufleet-probe counts as the
    node's fabric, or the gate passes on devices NCCL never uses (docs/cloud-facts.md#tencent-hcc)."""
    _, plan, _ = stack
    if plan.fabric.kind != "rdma":
        return
    probe = (ROOT / "cloud-init" / "bin" / "gpufleet-probe").read_text()
    (counted,) = re.findall(r"^\s*rdma\) ib_active (\S+) ;;", probe, re.M)
    assert dict(plan.fabric.nccl_env)["NCCL_IB_HCA"] == counted
