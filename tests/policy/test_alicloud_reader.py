"""What the Alibaba Cloud reader takes from each resource it knows, judged through the rules `fleet plan` runs:
which kinds carry which field, what each default means, and what a finding says (the field and the fix)."""

from __future__ import annotations

import base64

from policy_helpers import messages, stack

from plan.catalog import lookup
from policy.clouds import alicloud as ali_t
from policy.readers import reader_for

ERDMA_TYPE = "ecs.ebmgn7ex.32xlarge"  # eRDMA in the catalog
TCP_TYPE = "ecs.gn6v-c8g1.2xlarge"  # no eRDMA in the catalog
ERI = {"networkInterfaceTrafficMode": ali_t.ERDMA_MODE}


def test_an_ingress_rule_is_judged_on_both_its_ranges_only_when_it_is_an_accepting_ingress_rule():
    rule = {"type": "ingress", "ipProtocol": "all", "portRange": "-1/-1", "ipv6CidrIp": "::/0"}
    found = messages(ali_t.SG_RULE, rule, "no-open-ingress")
    assert [m.split(" (")[0] for m in found] == ["ingress all -1/-1 is open to ::/0"], found
    both = rule | {"cidrIp": "0.0.0.0/0"}
    assert len(messages(ali_t.SG_RULE, both, "no-open-ingress")) == 2
    assert len(messages(ali_t.SG_RULE, both | {"policy": "accept"}, "no-open-ingress")) == 2
    assert messages(ali_t.SG_RULE, both | {"type": "egress"}, "no-open-ingress") == []
    assert messages(ali_t.SG, both, "no-open-ingress") == [], "only a rule resource admits anything"


def test_a_ram_policy_document_is_judged_and_names_its_bucket():
    document = '{"Statement": [{"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": ["acs:oss:*:*:*/k"]}]}'
    found = messages(ali_t.RAM_POLICY, {"policyDocument": document}, "no-wildcard-bucket-access")
    assert found == ["statement 0 grants oss:getobject on acs:oss:*:*:*/k, every bucket that matches. "
                     "Name the cluster's own bucket (storage.checkpointBucket) instead."], found
    assert messages(ali_t.SG, {"policyDocument": document}, "no-wildcard-bucket-access") == []
    everything = '{"Statement": [{"Effect": "Allow", "Action": "oss:*", "Resource": "*"}]}'
    assert messages(ali_t.RAM_POLICY, {"policyDocument": everything}, "no-wildcard-bucket-access") == [
        "statement 0 grants oss:* on every resource, every bucket included. "
        "Name the cluster's own bucket (storage.checkpointBucket) instead."]


def test_an_oss_resource_names_its_bucket_only_with_all_five_parts():
    reader = reader_for(ali_t.BUCKET)
    assert reader.bucket_of("acs:oss:cn-hangzhou:123:ckpt/runs/a") == "ckpt"
    assert reader.bucket_of("acs:oss:cn-hangzhou:123:ckpt") == "ckpt"
    assert reader.bucket_of("acs:oss:cn-hangzhou:123") is None
    assert reader.bucket_of("acs:ossx:cn-hangzhou:123:ckpt") is None


def test_metadata_must_be_hardened_or_off_on_instances_and_templates_not_on_scaling_configs():
    required = ["instance metadata must run in security-hardened mode (httpTokens: required)."]
    for kind in (ali_t.INSTANCE, ali_t.LAUNCH_TEMPLATE):
        assert messages(kind, {"httpTokens": "optional"}, "imdsv2-required") == required, kind
        assert messages(kind, {"httpTokens": "required"}, "imdsv2-required") == [], kind
        assert messages(kind, {"httpEndpoint": "disabled"}, "imdsv2-required") == [], kind
        assert messages(kind, {"httpEndpoint": "enabled"}, "imdsv2-required") == required, kind
    assert messages(ali_t.SCALING_CONFIG, {}, "imdsv2-required") == []


def test_every_node_disk_is_named_where_its_resource_writes_it():
    data = [{"name": "scratch", "device": "/dev/xvdb", "encrypted": False}, {"device": "/dev/xvdc", "encrypted": False},
            {"encrypted": "false"}, {"name": "ok", "encrypted": True}]
    named = ["scratch is not encrypted.", "/dev/xvdc is not encrypted.", "a data disk is not encrypted."]
    for kind in (ali_t.INSTANCE, ali_t.SCALING_CONFIG):
        assert messages(kind, {"systemDiskEncrypted": False, "dataDisks": data}, "encrypted-volumes") == [
            "the system disk is not encrypted.", *named], kind
        assert messages(kind, {"systemDiskEncrypted": True, "dataDisks": data}, "encrypted-volumes") == named, kind
        assert messages(kind, {"launchTemplateId": "lt-1", "dataDisks": data}, "encrypted-volumes") == named, \
            "the system disk of a templated node is the template's"
    template = {"systemDisk": {"encrypted": False}, "dataDisks": data}
    assert messages(ali_t.LAUNCH_TEMPLATE, template, "encrypted-volumes") == ["the system disk is not encrypted.",
                                                                              *named]
    assert messages(ali_t.LAUNCH_TEMPLATE, template | {"systemDisk": {"encrypted": True}}, "encrypted-volumes") == named
    assert messages(ali_t.SG, template | {"systemDiskEncrypted": False}, "encrypted-volumes") == []


def test_a_bucket_is_encrypted_with_any_of_oss_algorithms_or_waits_for_an_unknown_one():
    unencrypted = ["the bucket is not encrypted (serverSideEncryptionRule.sseAlgorithm: KMS or AES256)."]
    for algorithm in ("AES256", "KMS", "SM4", "[unknown]"):
        assert messages(ali_t.BUCKET, {"serverSideEncryptionRule": {"sseAlgorithm": algorithm}},
                        "encrypted-buckets") == [], algorithm
    assert messages(ali_t.BUCKET, {"serverSideEncryptionRule": {"sseAlgorithm": "none"}},
                    "encrypted-buckets") == unencrypted
    assert messages(ali_t.BUCKET, {}, "encrypted-buckets") == unencrypted
    assert messages(ali_t.INSTANCE, {}, "encrypted-buckets") == []


def test_user_data_is_read_on_every_node_kind_in_either_form():
    text = "#cloud-config\npassword: hunter22\n"
    secret = ["userData contains what looks like a password; fetch it at boot from a secret store instead."]
    for kind in ali_t.NODES:
        for form in (text, base64.b64encode(text.encode()).decode()):
            assert messages(kind, {"userData": form}, "user-data-safe") == secret, (kind, form)
    assert messages(ali_t.BUCKET, {"userData": text}, "user-data-safe") == []


def test_a_public_ip_is_refused_only_on_a_node_with_interfaces():
    refused = ["a public IP (internetMaxBandwidthOut > 0) cannot go with secondary interfaces; "
               "leave through the NAT gateway."]
    for kind in ali_t.NODES:
        assert messages(kind, {"networkInterfaces": [{}], "internetMaxBandwidthOut": "10"},
                        "no-public-ip-multi-nic") == refused, kind
        assert messages(kind, {"networkInterfaces": [{}], "internetMaxBandwidthOut": 0},
                        "no-public-ip-multi-nic") == [], kind
        assert messages(kind, {"networkInterfaces": [{}]}, "no-public-ip-multi-nic") == [], kind
        assert messages(kind, {"internetMaxBandwidthOut": 10}, "no-public-ip-multi-nic") == [], kind
    assert messages(ali_t.NIC, {"networkInterfaces": [{}], "internetMaxBandwidthOut": 10},
                    "no-public-ip-multi-nic") == []


def test_a_nodes_eris_number_the_types_erdma_interfaces():
    devices = lookup("alicloud", ERDMA_TYPE).fabric_devices
    assert devices > 1
    for kind in ali_t.NODES:
        exact = {"instanceType": ERDMA_TYPE, "networkInterfaces": [ERI] * devices + [{}]}
        assert messages(kind, exact, "fabric-layout") == [], kind
        assert messages(kind, {"instanceType": ERDMA_TYPE, "networkInterfaces": [{}]}, "fabric-layout") == [], kind
        assert messages(kind, exact | {"networkInterfaces": [ERI]}, "fabric-layout") == [
            f"the type has {devices} eRDMA interfaces (ERIs); the node asks for 1."], kind
        assert messages(kind, {"instanceType": TCP_TYPE, "networkInterfaces": [ERI]}, "fabric-layout") == [
            "the type has 0 eRDMA interfaces (ERIs); the node asks for 1."], kind
        assert messages(kind, {"instanceType": "ecs.unknown", "networkInterfaces": [ERI]}, "fabric-layout") == []
    assert messages(ali_t.NIC, {"instanceType": TCP_TYPE, "networkInterfaces": [ERI]}, "fabric-layout") == []


def test_both_spot_strategies_are_spot_and_need_a_bucket():
    needs = [("r0", "spot capacity without a checkpoint bucket in the stack; add storage for checkpoints.")]
    for strategy in ali_t.SPOT_STRATEGIES:
        node = (ali_t.INSTANCE, {"spotStrategy": strategy})
        assert stack([node], "spot-needs-checkpoint-bucket") == needs, strategy
        assert stack([node, (ali_t.BUCKET, {})], "spot-needs-checkpoint-bucket") == [], strategy
    assert stack([(ali_t.INSTANCE, {"spotStrategy": "NoSpot"})], "spot-needs-checkpoint-bucket") == []


def test_erdma_needs_the_group_open_to_itself_both_ways():
    def rule(direction: str, **extra) -> tuple[str, dict]:
        return ali_t.SG_RULE, {"type": direction, "ipProtocol": "all", "sourceSecurityGroupId": "sg-1"} | extra

    def lacks(direction: str) -> tuple[str, str]:
        return "security group", (f"eRDMA needs the group open to itself: innerAccessPolicy Accept, or an "
                                  f"{direction} rule for all protocols with sourceSecurityGroupId = the group.")

    for erdma in ((ali_t.LAUNCH_TEMPLATE, {"networkInterfaces": [ERI]}), (ali_t.NIC, ERI)):
        assert stack([erdma], "fabric-self-both-ways") == [lacks("ingress"), lacks("egress")], erdma
        assert stack([erdma, rule("ingress"), rule("egress")], "fabric-self-both-ways") == []
        assert stack([erdma, rule("ingress")], "fabric-self-both-ways") == [lacks("egress")]
        assert stack([erdma, rule("egress")], "fabric-self-both-ways") == [lacks("ingress")]
        assert stack([erdma, rule("ingress", ipProtocol="tcp"), rule("egress")], "fabric-self-both-ways") == [
            lacks("ingress")]
        assert stack([erdma, rule("ingress", sourceSecurityGroupId=""), rule("egress")],
                     "fabric-self-both-ways") == [lacks("ingress")]
        assert stack([erdma, (ali_t.SG, {"innerAccessPolicy": "Accept"})], "fabric-self-both-ways") == []
        assert len(stack([erdma, (ali_t.SG, {"innerAccessPolicy": "Drop"})], "fabric-self-both-ways")) == 2
    assert stack([(ali_t.LAUNCH_TEMPLATE, {"networkInterfaces": [{}]}), (ali_t.NIC, {})],
                 "fabric-self-both-ways") == [], "no eRDMA, nothing to open"


def test_a_deployment_set_holds_nodes_of_one_vswitch_and_one_zone():
    dset = (ali_t.DEPLOYMENT_SET, {})
    a = (ali_t.INSTANCE, {"vswitchId": "vsw-a", "availabilityZone": "cn-hangzhou-h"})
    b = (ali_t.INSTANCE, {"vswitchId": "vsw-b", "availabilityZone": "cn-hangzhou-i"})
    assert stack([dset, a, b], "placement-one-zone") == [
        ("deployment set", "nodes use 2 vSwitches; a LowLatency deployment set needs one."),
        ("deployment set", "nodes span zones ['cn-hangzhou-h', 'cn-hangzhou-i']; use one.")]
    assert stack([a, b], "placement-one-zone") == [], "no deployment set, nothing to split"
    group = (ali_t.SCALING_GROUP, {"vswitchIds": ["vsw-a", "vsw-c"]})
    assert stack([dset, a, group], "placement-one-zone") == [
        ("deployment set", "nodes use 2 vSwitches; a LowLatency deployment set needs one.")]
    unknown = (ali_t.INSTANCE, {"vswitchId": "[unknown]", "availabilityZone": "[unknown]"})
    assert stack([dset, a, unknown, (ali_t.SCALING_GROUP, {"vswitchIds": ["vsw-a"]})], "placement-one-zone") == []


def test_spot_inside_a_deployment_set_is_advised_against_on_instances_and_templates():
    advice = ["spot instances may fail to launch inside a deployment set; use on-demand or drop the set."]
    for kind in (ali_t.INSTANCE, ali_t.LAUNCH_TEMPLATE):
        for strategy in ali_t.SPOT_STRATEGIES:
            inside = {"spotStrategy": strategy, "deploymentSetId": "ds-1"}
            assert messages(kind, inside, "spot-outside-deployment-set") == advice, (kind, strategy)
            assert messages(kind, inside | {"deploymentSetId": ""}, "spot-outside-deployment-set") == []
        assert messages(kind, {"spotStrategy": "NoSpot", "deploymentSetId": "ds-1"},
                        "spot-outside-deployment-set") == []
    assert messages(ali_t.SCALING_CONFIG, {"spotStrategy": "SpotAsPriceGo", "deploymentSetId": "ds-1"},
                    "spot-outside-deployment-set") == []
