"""The AWS EFA layout's findings in the words a user reads (what the type has, what the template asks for), and the
layout judged only on launch templates and instances."""

from __future__ import annotations

from plan.catalog import lookup
from policy.clouds import aws as aws_t
from policy.rules import evaluate

P4D = "p4d.24xlarge"


def messages(kind: str, inputs: dict) -> list[str]:
    resource = {"type": kind, "name": "r", "parent": None, "inputs": inputs, "options": {"custom": True}}
    return [f["message"] for f in evaluate([resource]) if f["policy"] == "fabric-layout"]


def efa(card: int, device: int = 0, kind: str = "efa-only") -> dict:
    return {"networkCardIndex": card, "deviceIndex": device, "interfaceType": kind}


def test_a_template_short_of_the_types_efa_cards_is_told_how_many_and_where():
    devices = lookup("aws", P4D).fabric_devices
    assert devices == 4
    short = [efa(0, kind="efa"), efa(1), efa(2)]
    assert messages(aws_t.LAUNCH_TEMPLATE, {"instanceType": P4D, "networkInterfaces": short}) == [
        "the type has 4 EFA interfaces, one per network card 0..3; the template has 3 on cards [0, 1, 2]."]
    assert messages(aws_t.LAUNCH_TEMPLATE, {"instanceType": P4D, "networkInterfaces": [*short, efa(3)]}) == []


def test_two_interfaces_on_one_card_and_device_are_named():
    nics = [efa(0, kind="efa"), efa(1), efa(2), efa(3), {"networkCardIndex": 3, "deviceIndex": 0}]
    assert messages(aws_t.INSTANCE, {"instanceType": P4D, "networkInterfaces": nics}) == [
        "two interfaces share a (network card, device) pair."]


def test_only_templates_and_instances_are_judged_on_their_interfaces():
    nics = [efa(0, kind="efa")]
    assert messages(aws_t.LAUNCH_TEMPLATE, {"instanceType": "g5.xlarge", "networkInterfaces": nics}) != []
    for kind in (aws_t.ASG, aws_t.EBS_VOLUME):
        assert messages(kind, {"instanceType": "g5.xlarge", "networkInterfaces": nics}) == [], kind


def test_an_s3_resource_names_its_bucket_before_any_key_however_deep_or_odd():
    reader = aws_t.READER
    assert reader.bucket_of("arn:aws:s3:::ckpt/runs/a/step-1") == "ckpt"
    assert reader.bucket_of("arn:aws:s3:::ckpt/odd:::key") == "ckpt"


def test_metadata_needs_tokens_unless_it_is_switched_off():
    def found(options: dict) -> list[str]:
        resource = {"type": aws_t.LAUNCH_TEMPLATE, "name": "r", "parent": None,
                    "inputs": {"metadataOptions": options}, "options": {"custom": True}}
        return [f["message"] for f in evaluate([resource]) if f["policy"] == "imdsv2-required"]

    refused = ["instance metadata must require IMDSv2 tokens (metadataOptions.httpTokens: required)."]
    assert found({"httpTokens": "optional"}) == refused
    assert found({"httpTokens": "optional", "httpEndpoint": "enabled"}) == refused
    assert found({"httpTokens": "optional", "httpEndpoint": "disabled"}) == []
    assert found({"httpTokens": "required"}) == []


def test_a_mapping_with_ebs_is_a_volume_even_beside_a_virtual_name():
    mapping = {"deviceName": "/dev/sdd", "virtualName": "ephemeral1", "ebs": {"encrypted": False}}
    resource = {"type": aws_t.LAUNCH_TEMPLATE, "name": "r", "parent": None,
                "inputs": {"blockDeviceMappings": [mapping]}, "options": {"custom": True}}
    assert [f["message"] for f in evaluate([resource]) if f["policy"] == "encrypted-volumes"] == [
        "/dev/sdd is not encrypted."]


def test_a_groups_inline_rule_is_judged_on_its_ipv6_ranges_too():
    group = {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "ipv6CidrBlocks": ["::/0"]}]}
    resource = {"type": aws_t.SG, "name": "r", "parent": None, "inputs": group, "options": {"custom": True}}
    found = [f["message"] for f in evaluate([resource]) if f["policy"] == "no-open-ingress"]
    assert [m.split(" (")[0] for m in found] == ["ingress tcp 22-22 is open to ::/0"]
