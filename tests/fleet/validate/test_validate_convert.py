"""Preview records -> Terraform JSON: names through the provider's schema, references as provider-format ids."""

from __future__ import annotations

import copy
import json
import re

from components.aws.validate.convert import camel, convert, terraform_type
from components.aws.validate.document import dump
from components.aws.validate.standins import ACCOUNT


def test_types_follow_the_bridge(schemas, previews):
    tokens = {r["type"] for _, preview in previews.values() for r in preview.resources if r["type"].startswith("aws:")}
    mapped = {token: terraform_type(token, schemas) for token in tokens}
    assert None not in mapped.values()
    assert mapped["aws:ec2/launchTemplate:LaunchTemplate"] == "aws_launch_template"
    assert mapped["aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"] == "aws_vpc_security_group_ingress_rule"
    assert mapped["aws:s3/bucketObjectv2:BucketObjectv2"] == "aws_s3_object"
    assert mapped["aws:autoscaling/group:Group"] == "aws_autoscaling_group"


def test_camel_is_the_bridge_naming():
    assert camel("enable_resource_name_dns_a_record_on_launch") == "enableResourceNameDnsARecordOnLaunch"
    assert camel("cidr_ipv4") == "cidrIpv4"


def _converted(previews, schemas, name="aws-p5"):
    plan, preview = previews[name]
    return convert(preview.resources, schemas, plan.region), plan


def test_fields_blocks_and_map_keys(previews, schemas):
    conversion, plan = _converted(previews, schemas)
    group = conversion.resources["aws_autoscaling_group"]["aws-p5-workers"]
    assert group["vpc_zone_identifier"][0].startswith("subnet-")
    assert {"key": "gpufleet:cluster", "value": plan.identity, "propagate_at_launch": True} in group["tag"]
    spec = group["mixed_instances_policy"][0]["launch_template"][0]["launch_template_specification"][0]
    assert re.fullmatch(r"lt-[0-9a-f]{17}", spec["launch_template_id"]) and spec["version"] == "1"
    template = conversion.resources["aws_launch_template"]["aws-p5-head-lt"]
    assert template["metadata_options"] == [{"http_tokens": "required", "http_endpoint": "enabled",
                                             "http_put_response_hop_limit": 2, "instance_metadata_tags": "enabled"}]
    assert template["tags"]["gpufleet:cluster"] == plan.identity, "map keys are kept as written"
    route = conversion.resources["aws_route_table"]["aws-p5-private-rt"]["route"][0]
    assert route["nat_gateway_id"].startswith("nat-") and route["gateway_id"] is None


def test_every_reference_is_a_known_provider_format_value(previews, schemas):
    conversion, plan = _converted(previews, schemas)
    _, preview = previews["aws-p5"]
    text = json.dumps(conversion.resources)
    assert "arn:mock" not in text and not any(f'"{r["name"]}-id"' in text for r in preview.resources)
    assert conversion.unresolved == []
    template = conversion.resources["aws_launch_template"]["aws-p5-worker-lt"]
    assert template["iam_instance_profile"][0]["arn"] == f"arn:aws:iam::{ACCOUNT}:instance-profile/aws-p5-node-profile"
    assert re.fullmatch(r"sg-[0-9a-f]{17}", template["network_interfaces"][0]["security_groups"][0])
    policy = conversion.resources["aws_iam_role_policy"]["aws-p5-node-policy"]
    assert policy["role"] == "aws-p5-node-role", "a role's id is its name"
    head = conversion.resources["aws_instance"]["aws-p5-head"]["launch_template"][0]
    assert re.fullmatch(r"lt-[0-9a-f]{17}", head["id"]) and head["version"] == "1"
    worker = conversion.resources["aws_autoscaling_group"]["aws-p5-workers"]["mixed_instances_policy"][0]
    assert worker["launch_template"][0]["launch_template_specification"][0]["launch_template_id"] != head["id"]


def test_a_reference_without_a_stand_in_is_reported(previews, schemas):
    plan, preview = previews["aws-p5"]
    records = copy.deepcopy(preview.resources)
    records.append({"type": "aws:ec2/keyPair:KeyPair", "name": "ops-key", "parent": None, "options": {"custom": True},
                    "inputs": {"publicKey": "ssh-ed25519 AAAA"}})
    head = next(r for r in records if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate")
    head["inputs"]["keyName"] = "ops-key-id"
    conversion = convert(records, schemas, plan.region)
    assert conversion.unresolved == [(head["name"], "keyName", "ops-key-id")]


def test_a_field_the_provider_lacks_is_skipped_and_named(previews, schemas):
    plan, preview = previews["aws-p5"]
    records = copy.deepcopy(preview.resources)
    vpc = next(r for r in records if r["type"] == "aws:ec2/vpc:Vpc")
    vpc["inputs"]["region"] = "us-east-1"  # pulumi-aws 7 has a region per resource; provider 5.100.0 does not
    conversion = convert(records, schemas, plan.region)
    assert [(s.resource, s.field) for s in conversion.skipped] == [(vpc["name"], "region")]
    assert "region" not in conversion.resources["aws_vpc"][vpc["name"]]


def test_dump_maps_each_line_to_its_path():
    text, lines = dump({"resource": {"aws_vpc": {"v": {"cidr_block": "10.0.0.0/16", "tags": {"a": "b"}}}}})
    numbered = dict(enumerate(text.splitlines(), start=1))
    line = next(n for n, content in numbered.items() if '"cidr_block"' in content)
    assert lines[line] == ("resource", "aws_vpc", "v", "cidr_block")
    assert json.loads(text) == {"resource": {"aws_vpc": {"v": {"cidr_block": "10.0.0.0/16", "tags": {"a": "b"}}}}}
