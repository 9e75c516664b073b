"""What the Tencent Cloud reader takes from each resource it knows, judged through the rules `fleet plan` runs:
which kinds carry which field, what each default means, and what a finding says (the field and the fix)."""

from __future__ import annotations

import base64

import pytest
from policy_helpers import messages, stack

from plan.catalog import lookup
from policy.clouds import tencentcloud as tc_t
from policy.readers import reader_for

HCC_TYPE = "HCCPNV4h.48XLARGE1536"  # RDMA in the catalog
PLAIN_TYPE = "GN7.2XLARGE32"  # TCP only in the catalog
SECRET_TEXT = "#cloud-config\npassword: hunter22\n"


def test_an_accepting_entry_is_judged_on_both_its_ranges_in_any_case_of_its_action():
    entry = {"action": "accept", "protocol": "UDP", "port": "ALL", "ipv6CidrBlock": "::/0"}
    found = messages(tc_t.SG_RULES, {"ingresses": [entry]}, "no-open-ingress")
    assert [m.split(" (")[0] for m in found] == ["ingress UDP ALL is open to ::/0"], found
    both = entry | {"cidrBlock": "0.0.0.0/0"}
    assert len(messages(tc_t.SG_RULES, {"ingresses": [both]}, "no-open-ingress")) == 2
    assert messages(tc_t.SG_RULES, {"ingresses": [both | {"action": ""}]}, "no-open-ingress") == []
    assert messages(tc_t.SG_RULES, {"egresses": [both]}, "no-open-ingress") == [], "egress admits no one"
    assert messages(tc_t.INSTANCE, {"ingresses": [both]}, "no-open-ingress") == []


def test_a_cam_policy_document_is_judged():
    document = {"statement": [{"effect": "allow", "action": ["name/cos:GetObject"],
                               "resource": ["qcs::cos:ap-guangzhou:uid/1250000000:*/k"]}]}
    found = messages(tc_t.CAM_POLICY, {"document": document}, "no-wildcard-bucket-access")
    assert found == ["statement 0 grants name/cos:getobject on qcs::cos:ap-guangzhou:uid/1250000000:*/k, every "
                     "bucket that matches. Name the cluster's own bucket (storage.checkpointBucket) instead."], found
    assert messages(tc_t.BUCKET, {"document": document}, "no-wildcard-bucket-access") == []
    for action in ("name/cos:*", "cos:PutObject"):
        everything = {"statement": [{"effect": "allow", "action": action, "resource": "*"}]}
        assert len(messages(tc_t.CAM_POLICY, {"document": everything}, "no-wildcard-bucket-access")) == 1, action


def test_a_cos_resource_names_its_bucket_only_with_all_six_parts_and_a_wildcard_account_every_bucket():
    reader = reader_for(tc_t.BUCKET)
    assert reader.bucket_of("qcs::cos:ap-guangzhou:uid/1250000000:ckpt-1250000000") == "ckpt-1250000000"
    assert reader.bucket_of("qcs::cos:ap-guangzhou:uid/125000000?:ckpt-1250000000/k") == "*"
    assert reader.bucket_of("qcs::cos:ap-guangzhou:uid/1250000000") is None
    assert reader.bucket_of("qcs::cvm:ap-guangzhou:uid/1250000000:ckpt/k") is None


@pytest.mark.parametrize("kind, field, forms", [
    (tc_t.INSTANCE, "userData", "base64"), (tc_t.INSTANCE, "userDataRaw", "text"),
    (tc_t.SCALING_CONFIG, "userData", "base64")])
def test_user_data_is_read_in_the_form_each_field_holds(kind, field, forms):
    encoded = base64.b64encode(SECRET_TEXT.encode()).decode()
    secret = [f"{field} contains what looks like a password; fetch it at boot from a secret store instead."]
    assert messages(kind, {field: encoded if forms == "base64" else SECRET_TEXT}, "user-data-safe") == secret
    if forms == "text":
        assert messages(kind, {field: encoded}, "user-data-safe") == [], "raw text is not decoded"
    assert messages(tc_t.BUCKET, {field: SECRET_TEXT}, "user-data-safe") == []


def test_spot_needs_a_cos_bucket_in_the_stack():
    needs = [("r0", "spot capacity without a checkpoint bucket in the stack; add storage for checkpoints.")]
    for kind in (tc_t.INSTANCE, tc_t.SCALING_CONFIG):
        node = (kind, {"instanceChargeType": "SPOTPAID"})
        assert stack([node], "spot-needs-checkpoint-bucket") == needs, kind
        assert stack([node, (tc_t.BUCKET, {})], "spot-needs-checkpoint-bucket") == [], kind


def test_hcc_rdma_needs_the_group_open_to_itself_both_ways():
    member = (tc_t.INSTANCE, {"hpcClusterId": "hpc-1"})
    entry = {"protocol": "ALL", "action": "ACCEPT", "sourceSecurityId": "sg-1"}

    def lacks(direction: str) -> tuple[str, str]:
        return "security group", (f"HCC RDMA needs the group open to itself: an {direction} entry with "
                                  "protocol ALL, action ACCEPT and sourceSecurityId = the group.")

    def rules(**entries) -> tuple[str, dict]:
        return tc_t.SG_RULES, entries

    assert stack([member], "fabric-self-both-ways") == [lacks("ingress"), lacks("egress")]
    assert stack([member, rules(ingresses=[entry], egresses=[entry])], "fabric-self-both-ways") == []
    lower = entry | {"protocol": "all", "action": "accept"}
    assert stack([member, rules(ingresses=[lower]), rules(egresses=[lower])], "fabric-self-both-ways") == []
    assert stack([member, rules(ingresses=[entry])], "fabric-self-both-ways") == [lacks("egress")]
    assert stack([member, rules(egresses=[entry])], "fabric-self-both-ways") == [lacks("ingress")]
    for broken in ({"protocol": "TCP"}, {"action": "DROP"}, {"sourceSecurityId": ""}):
        assert stack([member, rules(ingresses=[entry | broken], egresses=[entry])], "fabric-self-both-ways") == [
            lacks("ingress")], broken
    assert stack([(tc_t.INSTANCE, {"hpcClusterId": ""})], "fabric-self-both-ways") == [], "no HCC, no RDMA"


def test_an_hpc_cluster_and_its_members_share_one_zone_and_one_subnet():
    cluster = (tc_t.HPC_CLUSTER, {"zone": "ap-guangzhou-6"})
    a = (tc_t.INSTANCE, {"hpcClusterId": "hpc-1", "availabilityZone": "ap-guangzhou-6", "subnetId": "subnet-a"})
    b = (tc_t.INSTANCE, {"hpcClusterId": "hpc-1", "availabilityZone": "ap-guangzhou-7", "subnetId": "subnet-b"})
    assert stack([cluster, a, b], "placement-one-zone") == [
        ("r0", "the HPC cluster and its nodes span zones ['ap-guangzhou-6', 'ap-guangzhou-7']; use one."),
        ("r0", "HCC nodes use 2 subnets; use one.")]
    assert stack([a, b], "placement-one-zone") == [], "no HPC cluster, nothing to split"
    outside = (tc_t.INSTANCE, {"availabilityZone": "ap-guangzhou-7", "subnetId": "subnet-b"})
    assert stack([cluster, a, outside], "placement-one-zone") == [], "a node outside the cluster does not count"
    assert stack([(tc_t.HPC_CLUSTER, {"zone": "ap-guangzhou-7"}), a], "placement-one-zone") == [
        ("r0", "the HPC cluster and its nodes span zones ['ap-guangzhou-6', 'ap-guangzhou-7']; use one.")]
    unknown = (tc_t.INSTANCE, {"hpcClusterId": "hpc-1", "availabilityZone": "[unknown]", "subnetId": "[unknown]"})
    assert stack([cluster, a, unknown], "placement-one-zone") == []


def test_hcc_types_and_only_they_sit_in_an_hpc_cluster():
    assert lookup("tencentcloud", HCC_TYPE).fabric == "rdma"
    assert messages(tc_t.INSTANCE, {"instanceType": HCC_TYPE}, "hcc-in-hpc-cluster") == [
        f"{HCC_TYPE} is an HCC type: set hpcClusterId to a cvm.HpcCluster in the same zone."]
    assert messages(tc_t.INSTANCE, {"instanceType": HCC_TYPE, "hpcClusterId": "hpc-1"}, "hcc-in-hpc-cluster") == []
    assert messages(tc_t.INSTANCE, {"instanceType": PLAIN_TYPE, "hpcClusterId": "hpc-1"}, "hcc-in-hpc-cluster") == [
        f"{PLAIN_TYPE} is not an HCC type and cannot join an HPC cluster; drop hpcClusterId."]
    assert messages(tc_t.INSTANCE, {"instanceType": PLAIN_TYPE}, "hcc-in-hpc-cluster") == []
    assert messages(tc_t.INSTANCE, {"instanceType": "hccnew.8xlarge"}, "hcc-in-hpc-cluster") == [
        "hccnew.8xlarge is an HCC type: set hpcClusterId to a cvm.HpcCluster in the same zone."], \
        "a type the catalog lacks is HCC by its family name"
    assert messages(tc_t.INSTANCE, {"instanceType": "GN99.X", "hpcClusterId": "hpc-1"}, "hcc-in-hpc-cluster") == [
        "GN99.X is not an HCC type and cannot join an HPC cluster; drop hpcClusterId."]
    assert messages(tc_t.INSTANCE, {"instanceType": "[unknown]", "hpcClusterId": "hpc-1"},
                    "hcc-in-hpc-cluster") == []
    assert messages(tc_t.SCALING_CONFIG, {"instanceType": HCC_TYPE}, "hcc-in-hpc-cluster") == []
