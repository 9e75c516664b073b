"""What each cloud's reader takes from the fields the providers leave optional, and what its findings say: a rule
without Alibaba's `policy` is an accept rule (the provider's default), a message names the protocol, ports and disk
the stack wrote, an ASG without an on-demand share above base is all on-demand (AWS's default, 100)."""

from __future__ import annotations

from policy_helpers import messages, stack

from policy.base import Reader
from policy.clouds import alicloud as ali_t
from policy.clouds import aws as aws_t
from policy.clouds import tencentcloud as tc_t
from policy.internet import INTERNET_OPT_IN
from policy.readers import reader_for


def test_an_alibaba_rule_without_a_policy_accepts_and_its_finding_names_protocol_and_ports():
    rule = {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22", "cidrIp": "0.0.0.0/0"}
    found = messages(ali_t.SG_RULE, rule, "no-open-ingress")
    assert len(found) == 1 and found[0].startswith("ingress tcp 22/22 is open to 0.0.0.0/0"), found
    assert messages(ali_t.SG_RULE, rule | {"policy": "drop"}, "no-open-ingress") == []
    assert messages(ali_t.SG_RULE, rule | {"description": INTERNET_OPT_IN}, "no-open-ingress") == []


def test_a_tencent_accept_rule_is_judged_by_its_own_protocol_port_and_description():
    entry = {"action": "ACCEPT", "protocol": "TCP", "port": "22", "cidrBlock": "0.0.0.0/0"}
    found = messages(tc_t.SG_RULES, {"ingresses": [entry]}, "no-open-ingress")
    assert len(found) == 1 and found[0].startswith("ingress TCP 22 is open to 0.0.0.0/0"), found
    assert messages(tc_t.SG_RULES, {"ingresses": [entry | {"action": "DROP"}]}, "no-open-ingress") == []
    opted = entry | {"description": INTERNET_OPT_IN}
    assert messages(tc_t.SG_RULES, {"ingresses": [opted]}, "no-open-ingress") == []


def test_a_tencent_data_disk_is_named_in_its_finding_and_an_encrypted_one_passes():
    disks = [{"dataDiskName": "scratch", "encrypt": False}, {"encrypt": False}, {"dataDiskName": "ok", "encrypt": True}]
    assert messages(tc_t.INSTANCE, {"dataDisks": disks}, "encrypted-volumes") == [
        "scratch is not encrypted.", "a data disk is not encrypted."]


def test_a_tencent_bucket_with_an_unknown_algorithm_waits_for_the_engine():
    assert messages(tc_t.BUCKET, {"encryptionAlgorithm": "[unknown]"}, "encrypted-buckets") == []
    assert messages(tc_t.BUCKET, {}, "encrypted-buckets") == [
        "the bucket is not encrypted (encryptionAlgorithm: KMS or AES256)."]


def test_a_tencent_bucket_resource_names_the_bucket_before_the_key():
    reader = reader_for(tc_t.BUCKET)
    assert reader.bucket_of("qcs::cos:ap-guangzhou:uid/1250000000:ckpt-1250000000/runs/a/b") == "ckpt-1250000000"
    assert reader.policy_documents(tc_t.INSTANCE, {"document": "{}"}) == []


def test_spot_is_read_from_the_market_fields_each_cloud_defines():
    aws = reader_for(aws_t.ASG)

    def group(distribution: dict | None) -> dict:
        policy = {"instancesDistribution": distribution} if distribution is not None else {}
        return {"type": aws_t.ASG, "inputs": {"mixedInstancesPolicy": policy}}

    assert not aws.spot(group({"spotAllocationStrategy": "price-capacity-optimized"})), "AWS's default share: 100"
    assert not aws.spot(group({"onDemandPercentageAboveBaseCapacity": 100}))
    assert aws.spot(group({"onDemandPercentageAboveBaseCapacity": 0}))
    assert not aws.spot(group(None))
    tencent = reader_for(tc_t.INSTANCE)
    assert tencent.spot({"type": tc_t.INSTANCE, "inputs": {"instanceChargeType": "SPOTPAID"}})
    assert not tencent.spot({"type": tc_t.INSTANCE, "inputs": {"instanceChargeType": "POSTPAID_BY_HOUR"}})
    assert not tencent.spot({"type": tc_t.BUCKET, "inputs": {"instanceChargeType": "SPOTPAID"}})


def test_spot_on_aws_instances_and_templates_and_alibaba_nodes():
    """A launch template or an instance asks for spot through its market options, an Alibaba node through its spot
    strategy; the same fields on another resource, or an on-demand value, launch nothing on spot."""
    aws = reader_for(aws_t.LAUNCH_TEMPLATE)
    for kind in (aws_t.LAUNCH_TEMPLATE, aws_t.INSTANCE):
        assert aws.spot({"type": kind, "inputs": {"instanceMarketOptions": {"marketType": "spot"}}})
        assert not aws.spot({"type": kind, "inputs": {"instanceMarketOptions": {"marketType": "capacity-block"}}})
        assert not aws.spot({"type": kind, "inputs": {}})
    assert not aws.spot({"type": aws_t.BUCKETS[0], "inputs": {"instanceMarketOptions": {"marketType": "spot"}}})
    ali = reader_for(ali_t.INSTANCE)
    for kind in ali_t.NODES:
        assert ali.spot({"type": kind, "inputs": {"spotStrategy": "SpotAsPriceGo"}})
        assert not ali.spot({"type": kind, "inputs": {"spotStrategy": "NoSpot"}})
    assert not ali.spot({"type": ali_t.BUCKET, "inputs": {"spotStrategy": "SpotAsPriceGo"}})


def test_an_efa_template_needs_its_primary_at_card_0_device_0():
    """g4dn.12xlarge has one EFA: on card 0 but at device 1 it leaves no primary interface."""
    nic = {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa"}
    found = messages(aws_t.LAUNCH_TEMPLATE, {"instanceType": "g4dn.12xlarge", "networkInterfaces": [nic]},
                     "fabric-layout")
    assert found == ["the primary interface (card 0, device 0) must exist and must not be efa-only."], found
    assert messages(aws_t.LAUNCH_TEMPLATE, {"instanceType": "g4dn.12xlarge",
                                            "networkInterfaces": [nic | {"deviceIndex": 0}]}, "fabric-layout") == []


def test_an_alibaba_instance_from_a_launch_template_is_judged_by_the_template():
    """Its metadata mode is the template's (judged on the template itself); a plain instance carries its own."""
    assert messages(ali_t.INSTANCE, {"launchTemplateId": "lt-1"}, "imdsv2-required") == []
    assert messages(ali_t.INSTANCE, {}, "imdsv2-required") == [
        "instance metadata must run in security-hardened mode (httpTokens: required)."]
    assert messages(ali_t.INSTANCE, {"httpTokens": "required"}, "imdsv2-required") == []


def stack_findings(resources: list[tuple[str, dict]], rule: str) -> list[str]:
    return [message for _, message in stack(resources, rule)]


def test_a_placement_group_sees_the_subnet_of_every_template_interface_instance_and_group():
    """Each place a node's subnet can be written - a template's or an instance's interface, an instance's own
    subnetId, the group's vpcZoneIdentifiers - counts; one subnet anywhere else splits the placement group."""
    group = (aws_t.ASG, {"vpcZoneIdentifiers": ["subnet-a"]})
    placed = (aws_t.PLACEMENT_GROUP, {"strategy": "cluster"})
    others = [(aws_t.LAUNCH_TEMPLATE, {"networkInterfaces": [{"subnetId": "subnet-b"}]}),
              (aws_t.INSTANCE, {"networkInterfaces": [{"subnetId": "subnet-b"}]}),
              (aws_t.INSTANCE, {"subnetId": "subnet-b"})]
    split = ["nodes use 2 subnets; a placement group needs one."]
    for other in others:
        assert stack_findings([placed, group, other], "placement-one-zone") == split, other
        assert stack_findings([group, other], "placement-one-zone") == [], "no placement group, nothing to split"
        same = (other[0], {k: [{"subnetId": "subnet-a"}] if isinstance(v, list) else "subnet-a"
                           for k, v in other[1].items()})
        assert stack_findings([placed, group, same], "placement-one-zone") == [], same


def test_an_efa_interface_on_a_type_without_efa_is_named_with_the_fix():
    found = messages(aws_t.LAUNCH_TEMPLATE, {"instanceType": "g5.xlarge", "networkInterfaces": [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}]}, "fabric-layout")
    assert found == ["the type has no EFA, but interfaces ask for it; use a type with EFA or plain interfaces."]


def test_each_reader_is_its_clouds_and_reads_no_spot_where_its_cloud_has_no_reading():
    for token in (aws_t.ASG, ali_t.INSTANCE, tc_t.INSTANCE):
        reader = reader_for(token)
        assert token.startswith(f"{reader.package}:"), (token, reader.package)
    plain = Reader("aws")
    assert (plain.cloud, plain.package) == ("aws", "aws")
    assert plain.spot({"type": aws_t.INSTANCE, "inputs": {"instanceMarketOptions": {"marketType": "spot"}}}) is False


def test_aws_volumes_are_named_where_each_resource_writes_them_and_instance_store_is_not_a_volume():
    template = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": False}},
                                        {"deviceName": "/dev/sdb", "ebs": {"encrypted": "true"}},
                                        {"deviceName": "/dev/sdc", "virtualName": "ephemeral0"}, {}]}
    assert messages(aws_t.LAUNCH_TEMPLATE, template, "encrypted-volumes") == [
        "/dev/xvda is not encrypted.", "a volume is not encrypted."]
    instance = {"rootBlockDevice": {"encrypted": False},
                "ebsBlockDevices": [{"deviceName": "/dev/sdf", "encrypted": False}, {"encrypted": None},
                                    {"deviceName": "/dev/sdg", "encrypted": True}]}
    assert messages(aws_t.INSTANCE, instance, "encrypted-volumes") == [
        "the root volume is not encrypted.", "/dev/sdf is not encrypted.", "a volume is not encrypted."]
    assert messages(aws_t.INSTANCE, instance | {"rootBlockDevice": {"encrypted": True}}, "encrypted-volumes") == [
        "/dev/sdf is not encrypted.", "a volume is not encrypted."]
    assert messages(aws_t.INSTANCE, instance | {"launchTemplate": {"id": "lt-1"}}, "encrypted-volumes") == [], \
        "an instance from a template is judged on the template"
    assert messages(aws_t.EBS_VOLUME, {"encrypted": False}, "encrypted-volumes") == ["the volume is not encrypted."]
    assert messages(aws_t.EBS_VOLUME, {"encrypted": True}, "encrypted-volumes") == []


def test_an_aws_public_ip_is_refused_only_beside_a_second_interface_wherever_it_is_asked():
    refused = ["a public IP cannot go with several interfaces (EC2 rejects it); use the NAT gateway."]
    for kind in (aws_t.LAUNCH_TEMPLATE, aws_t.INSTANCE):
        two = [{"deviceIndex": 0}, {"deviceIndex": 1}]
        on_nic = [two[0] | {"associatePublicIpAddress": "true"}, two[1]]
        assert messages(kind, {"networkInterfaces": on_nic}, "no-public-ip-multi-nic") == refused
        assert messages(kind, {"networkInterfaces": two, "associatePublicIpAddress": True},
                        "no-public-ip-multi-nic") == refused
        assert messages(kind, {"networkInterfaces": two}, "no-public-ip-multi-nic") == []
        assert messages(kind, {"networkInterfaces": on_nic[:1]}, "no-public-ip-multi-nic") == []
    assert messages(aws_t.EBS_VOLUME, {"networkInterfaces": [{"associatePublicIpAddress": True}, {}]},
                    "no-public-ip-multi-nic") == []


def test_aws_ingress_is_read_from_each_of_its_three_resources_every_range_with_its_protocol_and_ports():
    """A standalone ingress rule (one IPv4 and one IPv6 range, ports defaulting to all), a classic
    SecurityGroupRule of type ingress, and a group's inline rules: each range is judged and named."""
    def heads(found: list[str]) -> list[str]:
        return [m.split(" (")[0] for m in found]

    found = messages(aws_t.SG_INGRESS, {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv4": "0.0.0.0/0",
                                        "cidrIpv6": "::/0"}, "no-open-ingress")
    assert heads(found) == ["ingress tcp 22-22 is open to 0.0.0.0/0", "ingress tcp 22-22 is open to ::/0"]
    assert heads(messages(aws_t.SG_INGRESS, {"ipProtocol": "-1", "cidrIpv4": "0.0.0.0/0"}, "no-open-ingress")) == [
        "ingress -1 all-all is open to 0.0.0.0/0"]
    assert messages(aws_t.SG_INGRESS, {"ipProtocol": "-1", "cidrIpv4": "0.0.0.0/0", "description": INTERNET_OPT_IN},
                    "no-open-ingress") == []
    rule = {"type": "ingress", "protocol": "udp", "fromPort": 1, "toPort": 9,
            "cidrBlocks": ["10.0.0.0/16", "1.0.0.0/4"], "ipv6CidrBlocks": ["::/1"]}
    found = messages(aws_t.SG_RULE, rule, "no-open-ingress")
    assert heads(found) == ["ingress udp 1-9 is open to 0.0.0.0/4", "ingress udp 1-9 is open to ::/1"]
    assert messages(aws_t.SG_RULE, rule | {"type": "egress"}, "no-open-ingress") == []
    assert messages(aws_t.SG_RULE, rule | {"description": INTERNET_OPT_IN}, "no-open-ingress") == []
    group = {"ingress": [{"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
                         {"protocol": "tcp", "fromPort": 80, "toPort": 80, "ipv6CidrBlocks": ["::/0"],
                          "description": INTERNET_OPT_IN}]}
    found = messages(aws_t.SG, group, "no-open-ingress")
    assert heads(found) == ["ingress tcp 443-443 is open to 0.0.0.0/0"]
