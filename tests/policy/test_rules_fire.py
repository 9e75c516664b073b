"""Each rule fires on a shipped stack broken in one place, with camelCase inputs exactly as the SDKs send them."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

from policy_helpers import fired, first

from policy import types as t
from policy.rules import RESOURCE_RULES, STACK_RULES


def _user_data(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def test_open_ingress_on_each_cloud(stack_of):
    aws = stack_of("aws-g4dn-dev")
    first(aws, t.AWS_SG_INGRESS)["inputs"]["cidrIpv4"] = "0.0.0.0/0"
    ali = stack_of("ali-erdma")
    first(ali, t.ALI_SG_RULE, "ingress-2")["inputs"]["cidrIp"] = "0.0.0.0/0"
    tc = stack_of("tencent-hcc")
    first(tc, t.TC_SG_RULES)["inputs"]["ingresses"].append(
        {"protocol": "TCP", "port": "9100", "cidrBlock": "0.0.0.0/0", "action": "ACCEPT"})
    assert all("no-open-ingress" in fired(resources) for resources in (aws, ali, tc))


def test_fabric_group_open_to_itself_one_way_only(stack_of):
    aws = [r for r in stack_of("aws-p5") if not (r["type"] == t.AWS_SG_EGRESS and r["name"].endswith("egress-1"))]
    ali = [r for r in stack_of("ali-erdma") if not r["name"].endswith("egress-1")]
    tc = stack_of("tencent-hcc")
    first(tc, t.TC_SG_RULES)["inputs"]["egresses"] = []
    assert all("fabric-self-both-ways" in fired(resources) for resources in (aws, ali, tc))


def test_metadata_without_tokens(stack_of):
    aws = stack_of("aws-p5")
    first(aws, t.AWS_LAUNCH_TEMPLATE)["inputs"]["metadataOptions"]["httpTokens"] = "optional"
    ali = stack_of("ali-spot")
    del first(ali, t.ALI_INSTANCE)["inputs"]["httpTokens"]
    assert "imdsv2-required" in fired(aws) and "imdsv2-required" in fired(ali)


def test_unencrypted_disks(stack_of):
    aws = stack_of("aws-p5")
    first(aws, t.AWS_LAUNCH_TEMPLATE)["inputs"]["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
    ali = stack_of("ali-spot")
    first(ali, t.ALI_SCALING_CONFIG)["inputs"]["systemDiskEncrypted"] = False
    tc = stack_of("tencent-hcc")
    first(tc, t.TC_INSTANCE)["inputs"]["dataDisks"] = [{"dataDiskType": "CLOUD_SSD", "dataDiskSize": 100}]
    assert all("encrypted-volumes" in fired(resources) for resources in (aws, ali, tc))


def test_unencrypted_buckets(stack_of):
    aws = [r for r in stack_of("aws-p5") if r["type"] != t.AWS_BUCKET_SSE]
    ali = stack_of("ali-erdma")
    del first(ali, t.ALI_BUCKET)["inputs"]["serverSideEncryptionRule"]
    tc = stack_of("tencent-spot")
    del first(tc, t.TC_BUCKET)["inputs"]["encryptionAlgorithm"]
    assert "encrypted-s3-buckets" in fired(aws)
    assert "encrypted-buckets" in fired(ali) and "encrypted-buckets" in fired(tc)


def test_fabric_layout_against_the_catalog(stack_of):
    aws = stack_of("aws-p5")
    first(aws, t.AWS_LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"].pop()
    gap = stack_of("aws-p4d-capacity-block")
    first(gap, t.AWS_LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"][1]["networkCardIndex"] = 7
    primary = stack_of("aws-p5")
    first(primary, t.AWS_LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"][0]["interfaceType"] = "efa-only"
    ali = stack_of("ali-erdma")
    first(ali, t.ALI_SCALING_CONFIG)["inputs"]["networkInterfaces"] = [
        {"networkInterfaceTrafficMode": "HighPerformance"}] * 3
    assert all("fabric-layout" in fired(resources) for resources in (aws, gap, primary, ali))


def test_public_ip_with_several_interfaces(stack_of):
    aws = stack_of("aws-p5")
    first(aws, t.AWS_LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"][0]["associatePublicIpAddress"] = "true"
    assert "no-public-ip-multi-nic" in fired(aws)


def test_user_data_too_large_or_with_secrets(stack_of):
    large = stack_of("aws-g4dn-dev")
    first(large, t.AWS_LAUNCH_TEMPLATE)["inputs"]["userData"] = base64.b64encode(b"x" * 20000).decode()
    assert "user-data-safe" in fired(large)
    for secret in ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "-----BEGIN RSA PRIVATE KEY-----",
                   "password: hunter22hunter", "HF_TOKEN=hf_abcdefghij0123456789klmnop"):
        aws = stack_of("aws-g4dn-dev")
        first(aws, t.AWS_LAUNCH_TEMPLATE)["inputs"]["userData"] = _user_data(f"#cloud-config\n# {secret}\n")
        assert "user-data-safe" in fired(aws), secret
    tc = stack_of("tencent-hcc")
    first(tc, t.TC_INSTANCE)["inputs"]["userData"] = base64.b64encode(b"#!/bin/sh\nDB_PASSWORD=s3cretpass\n").decode()
    assert "user-data-safe" in fired(tc)


def test_placement_group_across_subnets_and_zones(stack_of):
    aws = stack_of("aws-p5")
    first(aws, t.AWS_ASG)["inputs"]["vpcZoneIdentifiers"] = ["subnet-a", "subnet-b"]
    ali = stack_of("ali-erdma")
    first(ali, t.ALI_SCALING_GROUP)["inputs"]["vswitchIds"] = ["vsw-a", "vsw-b"]
    tc = stack_of("tencent-hcc")
    first(tc, t.TC_INSTANCE, "worker")["inputs"]["availabilityZone"] = "ap-shanghai-2"
    assert all("placement-one-zone" in fired(resources) for resources in (aws, ali, tc))


def test_spot_without_a_checkpoint_bucket(stack_of):
    for name in ("aws-g5-spot", "ali-spot", "tencent-spot"):
        resources = [r for r in stack_of(name) if r["type"] not in t.BUCKETS]
        assert "spot-needs-checkpoint-bucket" in fired(resources), name


def test_capacity_block_with_placement_group_or_spot(stack_of):
    with_group = stack_of("aws-p4d-capacity-block") + [first(stack_of("aws-p5"), t.AWS_PLACEMENT_GROUP)]
    with_spot = stack_of("aws-p4d-capacity-block") + [first(stack_of("aws-g5-spot"), t.AWS_ASG)]
    assert "capacity-block-alone" in fired(with_group) and "capacity-block-alone" in fired(with_spot)


def test_spot_inside_a_deployment_set_is_advisory(stack_of):
    ali = stack_of("ali-erdma")
    head = first(ali, t.ALI_INSTANCE)["inputs"]
    head.update(spotStrategy="SpotAsPriceGo", deploymentSetId="ali-erdma-ds-id")
    assert "spot-outside-deployment-set" in fired(ali)


def test_hcc_instance_outside_an_hpc_cluster_and_the_reverse(stack_of):
    tc = stack_of("tencent-hcc")
    del first(tc, t.TC_INSTANCE)["inputs"]["hpcClusterId"]
    spot = stack_of("tencent-spot")
    first(spot, t.TC_INSTANCE)["inputs"]["hpcClusterId"] = "hpc-123"
    assert "hcc-in-hpc-cluster" in fired(tc) and "hcc-in-hpc-cluster" in fired(spot)


def test_internet_by_parts_and_wildcard_buckets(stack_of):
    """More in test_internet_exposure.py and test_bucket_access.py."""
    tc = stack_of("tencent-hcc")
    first(tc, t.TC_SG_RULES)["inputs"]["ingresses"] += [
        {"protocol": "TCP", "port": "22", "cidrBlock": f"{n}.0.0.0/8", "action": "ACCEPT"} for n in (11, 12)]
    aws = stack_of("aws-g4dn-dev")
    policy = first(aws, t.AWS_ROLE_POLICY)["inputs"]
    policy["policy"] = policy["policy"].replace("arn:aws:s3:::gpufleet-", "arn:aws:s3:::*-")
    assert "no-internet-by-parts" in fired(tc) and "no-wildcard-bucket-access" in fired(aws)


def test_every_rule_has_a_test_above():
    names = {rule.name for rule in (*RESOURCE_RULES, *STACK_RULES)}
    source = Path(__file__).read_text(encoding="utf-8")
    assert {name for name in names if f'"{name}"' not in source} == set()
