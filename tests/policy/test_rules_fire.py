"""Each rule fires on shipped stacks broken in one place, with camelCase inputs exactly as the SDKs send them; every
rule has broken stacks here, on each cloud it covers."""

from __future__ import annotations

import base64
import copy
import gzip
from collections.abc import Callable

import pytest
from policy_helpers import fired, first

from policy.clouds import alicloud as ali_t
from policy.clouds import aws as aws_t
from policy.clouds import tencentcloud as tc_t
from policy.rules import RESOURCE_RULES, STACK_RULES

BROKEN: dict[str, Callable] = {}


def breaks(rule: str):
    """Register a function that returns stacks each broken so that `rule` must fire."""

    def register(build: Callable) -> Callable:
        BROKEN[rule] = build
        return build

    return register


def _user_data(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


@breaks("no-open-ingress")
def _open_ingress(stack_of):
    aws = stack_of("aws-g4dn-dev")
    first(aws, aws_t.SG_INGRESS)["inputs"]["cidrIpv4"] = "0.0.0.0/0"
    ali = stack_of("ali-erdma")
    first(ali, ali_t.SG_RULE, "ingress-2")["inputs"]["cidrIp"] = "0.0.0.0/0"
    tc = stack_of("tencent-hcc")
    first(tc, tc_t.SG_RULES)["inputs"]["ingresses"].append(
        {"protocol": "TCP", "port": "9100", "cidrBlock": "0.0.0.0/0", "action": "ACCEPT"})
    return [aws, ali, tc]


@breaks("fabric-self-both-ways")
def _one_way(stack_of):
    aws = [r for r in stack_of("aws-p5") if not (r["type"] == aws_t.SG_EGRESS and r["name"].endswith("egress-1"))]
    ali = [r for r in stack_of("ali-erdma") if not r["name"].endswith("egress-1")]
    tc = stack_of("tencent-hcc")
    first(tc, tc_t.SG_RULES)["inputs"]["egresses"] = []
    return [aws, ali, tc]


@breaks("imdsv2-required")
def _metadata_without_tokens(stack_of):
    aws = stack_of("aws-p5")
    first(aws, aws_t.LAUNCH_TEMPLATE)["inputs"]["metadataOptions"]["httpTokens"] = "optional"
    ali = stack_of("ali-spot")
    del first(ali, ali_t.INSTANCE)["inputs"]["httpTokens"]
    return [aws, ali]


@breaks("encrypted-volumes")
def _unencrypted_disks(stack_of):
    aws = stack_of("aws-p5")
    first(aws, aws_t.LAUNCH_TEMPLATE)["inputs"]["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
    ali = stack_of("ali-spot")
    first(ali, ali_t.SCALING_CONFIG)["inputs"]["systemDiskEncrypted"] = False
    tc = stack_of("tencent-hcc")
    first(tc, tc_t.INSTANCE)["inputs"]["dataDisks"] = [{"dataDiskType": "CLOUD_SSD", "dataDiskSize": 100}]
    return [aws, ali, tc]


@breaks("encrypted-s3-buckets")
def _s3_without_encryption(stack_of):
    return [[r for r in stack_of("aws-p5") if r["type"] != aws_t.BUCKET_SSE]]


@breaks("encrypted-buckets")
def _unencrypted_buckets(stack_of):
    ali = stack_of("ali-erdma")
    del first(ali, ali_t.BUCKET)["inputs"]["serverSideEncryptionRule"]
    tc = stack_of("tencent-spot")
    del first(tc, tc_t.BUCKET)["inputs"]["encryptionAlgorithm"]
    return [ali, tc]


@breaks("fabric-layout")
def _fabric_layout(stack_of):
    aws = stack_of("aws-p5")
    first(aws, aws_t.LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"].pop()
    gap = stack_of("aws-p4d-capacity-block")
    first(gap, aws_t.LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"][1]["networkCardIndex"] = 7
    primary = stack_of("aws-p5")
    first(primary, aws_t.LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"][0]["interfaceType"] = "efa-only"
    ali = stack_of("ali-spot")
    first(ali, ali_t.SCALING_CONFIG)["inputs"]["networkInterfaces"] = [
        {"networkInterfaceTrafficMode": "HighPerformance"}] * 3
    return [aws, gap, primary, ali]


@breaks("no-public-ip-multi-nic")
def _public_ip(stack_of):
    aws = stack_of("aws-p5")
    first(aws, aws_t.LAUNCH_TEMPLATE)["inputs"]["networkInterfaces"][0]["associatePublicIpAddress"] = "true"
    ali = stack_of("ali-spot")
    first(ali, ali_t.SCALING_CONFIG)["inputs"].update(internetMaxBandwidthOut=10, networkInterfaces=[
        {"instanceType": "Primary"}, {"instanceType": "Secondary"}])
    return [aws, ali]


@breaks("user-data-safe")
def _user_data_unsafe(stack_of):
    large = stack_of("aws-g4dn-dev")
    first(large, aws_t.LAUNCH_TEMPLATE)["inputs"]["userData"] = base64.b64encode(b"x" * 20000).decode()
    broken = [large]
    for secret in ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "-----BEGIN RSA PRIVATE KEY-----",
                   "password: hunter22hunter", "HF_TOKEN=hf_abcdefghij0123456789klmnop"):
        aws = stack_of("aws-g4dn-dev")
        first(aws, aws_t.LAUNCH_TEMPLATE)["inputs"]["userData"] = _user_data(f"#cloud-config\n# {secret}\n")
        broken.append(aws)
    tc = stack_of("tencent-hcc")
    first(tc, tc_t.INSTANCE)["inputs"]["userData"] = base64.b64encode(b"#!/bin/sh\nDB_PASSWORD=s3cretpass\n").decode()
    return [*broken, tc]


@breaks("placement-one-zone")
def _placement_across_zones(stack_of):
    aws = stack_of("aws-p5")
    first(aws, aws_t.ASG)["inputs"]["vpcZoneIdentifiers"] = ["subnet-a", "subnet-b"]
    ali = stack_of("ali-spot")
    first(ali, ali_t.SCALING_GROUP)["inputs"]["vswitchIds"] = ["vsw-a", "vsw-b"]
    tc = stack_of("tencent-hcc")
    first(tc, tc_t.INSTANCE, "worker")["inputs"]["availabilityZone"] = "ap-shanghai-2"
    return [aws, ali, tc]


@breaks("spot-needs-checkpoint-bucket")
def _spot_without_bucket(stack_of):
    """No bucket of the stack's own, and no grant to write into one it uses as it finds it (existingBucket)."""
    buckets = (*aws_t.BUCKETS, ali_t.BUCKET, tc_t.BUCKET)
    return [[r for r in stack_of(name) if r["type"] not in buckets and not r["name"].endswith("-node-policy")]
            for name in ("aws-g5-spot", "ali-spot", "tencent-spot")]


@breaks("capacity-block-alone")
def _capacity_block_with_group_or_spot(stack_of):
    return [stack_of("aws-p4d-capacity-block") + [first(stack_of("aws-p5"), aws_t.PLACEMENT_GROUP)],
            stack_of("aws-p4d-capacity-block") + [first(stack_of("aws-g5-spot"), aws_t.ASG)]]


@breaks("spot-outside-deployment-set")
def _spot_in_deployment_set(stack_of):
    ali = stack_of("ali-erdma")
    first(ali, ali_t.INSTANCE)["inputs"].update(spotStrategy="SpotAsPriceGo", deploymentSetId="ali-erdma-ds-id")
    return [ali]


@breaks("hcc-in-hpc-cluster")
def _hcc_outside_hpc_cluster(stack_of):
    tc = stack_of("tencent-hcc")
    del first(tc, tc_t.INSTANCE)["inputs"]["hpcClusterId"]
    spot = stack_of("tencent-spot")
    first(spot, tc_t.INSTANCE)["inputs"]["hpcClusterId"] = "hpc-123"
    return [tc, spot]


@breaks("known-cloud")
def _resource_of_an_unknown_cloud(stack_of):
    unknown = copy.deepcopy(first(stack_of("aws-p5"), aws_t.INSTANCE))
    unknown["type"] = "gcp:compute/instance:Instance"
    return [stack_of("aws-p5") + [unknown]]


@breaks("no-internet-by-parts")
def _internet_by_parts(stack_of):
    """More in test_internet_exposure.py."""
    tc = stack_of("tencent-hcc")
    first(tc, tc_t.SG_RULES)["inputs"]["ingresses"] += [
        {"protocol": "TCP", "port": "22", "cidrBlock": f"{n}.0.0.0/8", "action": "ACCEPT"} for n in (11, 12)]
    return [tc]


@breaks("no-wildcard-bucket-access")
def _wildcard_bucket(stack_of):
    """More in test_bucket_access.py."""
    aws = stack_of("aws-g4dn-dev")
    policy = first(aws, aws_t.ROLE_POLICY)["inputs"]
    policy["policy"] = policy["policy"].replace("arn:aws:s3:::gpufleet-", "arn:aws:s3:::*-")
    return [aws]


@pytest.mark.parametrize("rule", BROKEN)
def test_rule_fires_on_each_broken_stack(rule, stack_of):
    for index, resources in enumerate(BROKEN[rule](stack_of)):
        assert rule in fired(resources), (rule, index)


def test_every_rule_has_broken_stacks():
    assert set(BROKEN) == {rule.name for rule in (*RESOURCE_RULES, *STACK_RULES)}


def test_the_spot_inside_a_deployment_set_rule_is_advisory():
    assert {rule.name: rule.level for rule in RESOURCE_RULES}["spot-outside-deployment-set"] == "advisory"
