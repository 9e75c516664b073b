"""The rules of aliyun/terraform-provider-alicloud (81c43b6727a09e9da37b3d88818c3ba5fa17fa14, read 2026-12-01) that
the Alibaba realizer depends on, checked on every shipped Alibaba stack's preview; the provider binary is not here, so
each rule is written out with the source file and line it comes from (docs/cloud-facts.md#alibaba-provider-rules)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from stack_preview import preview_stack

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted(ROOT.joinpath("stacks").glob("Pulumi.ali-*.yaml"))
ESS_CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
INSTANCE = "alicloud:ecs/instance:Instance"
LAUNCH_TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
NIC = "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface"
EIP = "alicloud:ecs/eipAddress:EipAddress"
BUCKET = "alicloud:oss/bucket:Bucket"
RAM_POLICY = "alicloud:ram/policy:Policy"


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def resources(request):
    return preview_stack(request.param)[2].resources


def inputs_of(resources, token):
    return [r["inputs"] for r in resources if r["type"] == token]


def scaling_configuration_create(config: dict) -> str | None:
    """resourceAliyunEssScalingConfigurationCreate's own checks, in its order
    (alicloud/resource_alicloud_ess_scaling_configuration.go:600-609), then the API's refusal of a primary ENI set
    both ways (website/docs/r/ess_scaling_configuration.html.markdown:219, "You cannot specify SecurityGroupId or
    SecurityGroupIds.N"; ModifyScalingConfiguration: "If you use both methods, the call fails")."""
    if not config.get("securityGroupId") and not config.get("securityGroupIds"):
        return "security_group_id or security_group_ids must be assigned"
    if not (config.get("instanceType") or config.get("instanceTypes") or config.get("instanceTypeOverrides")):
        return "instance_type or instance_types or instance_type_override must be assigned"
    if config.get("networkInterfaces"):
        return "NetworkInterfaces.N excludes SecurityGroupId and SecurityGroupIds.N"
    return None


def test_the_create_path_refuses_what_the_old_configuration_sent():
    """The rule can fail: interfaces alone (the old shape), or interfaces beside group ids, are both refused."""
    old = {"instanceType": "ecs.ebmgn7ex.32xlarge",
           "networkInterfaces": [{"instanceType": "Primary", "securityGroupIds": ["sg-1"]}]}
    assert scaling_configuration_create(old) == "security_group_id or security_group_ids must be assigned"
    assert scaling_configuration_create(old | {"securityGroupIds": ["sg-1"]}) is not None
    assert scaling_configuration_create({"instanceType": "ecs.gn7i-c32g1.8xlarge", "securityGroupIds": ["sg-1"]}) is (
        None)


def test_scaling_configurations_pass_the_create_path(resources):
    for config in inputs_of(resources, ESS_CONFIG):
        assert scaling_configuration_create(config) is None
        # security_group_ids: MaxItems 16, conflicts with security_group_id (:103-115).
        assert len(config["securityGroupIds"]) <= 16 and "securityGroupId" not in config
        # instance_type: `^ecs\..*` (:79-83); internet_max_bandwidth_out IntBetween(0, 1024) (:190-194);
        # system_disk_category in the list (:203-208); system_disk_size IntBetween(20, 500) (:215-219).
        assert re.match(r"^ecs\..*", config["instanceType"])
        assert 0 <= config["internetMaxBandwidthOut"] <= 1024
        assert config["systemDiskCategory"] in ("cloud", "ephemeral_ssd", "cloud_ssd", "cloud_essd",
                                                "cloud_efficiency", "cloud_essd_xc1")
        assert 20 <= config["systemDiskSize"] <= 500


def test_eris_ride_on_ecs_instances_only(resources):
    """ERIs exist only as ecs.EcsNetworkInterface (network_interface_traffic_mode,
    alicloud/resource_alicloud_ecs_network_interface.go:171-176) bound to an instance: an ESS configuration cannot carry
    them beside its groups (above), and the launch template's network_interfaces is MaxItems 1 with no traffic mode
    (alicloud/resource_alicloud_ecs_launch_template.go:178-212)."""
    assert not inputs_of(resources, LAUNCH_TEMPLATE)
    for nic in inputs_of(resources, NIC):
        assert nic["networkInterfaceTrafficMode"] in ("Standard", "HighPerformance")
        assert nic["securityGroupIds"]


def test_instances_use_the_values_the_provider_accepts(resources):
    """alicloud/resource_alicloud_instance.go: spot_strategy NoSpot/SpotAsPriceGo/SpotWithPriceLimit (:463-470),
    spot_price_limit a float (:471-477), http_tokens optional/required (:604-609), http_endpoint enabled/disabled
    (:610-615), enable_jumbo_frame a bool on the instance (:680-684)."""
    for node in inputs_of(resources, INSTANCE):
        assert node["spotStrategy"] in ("NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit")
        if node["spotStrategy"] == "SpotWithPriceLimit":
            assert isinstance(node["spotPriceLimit"], float)
        assert node["httpTokens"] in ("optional", "required") and node["httpEndpoint"] in ("enabled", "disabled")
        assert isinstance(node["enableJumboFrame"], bool)


def test_the_nat_address_has_an_explicit_bandwidth_in_range(resources):
    """bandwidth is an optional computed string (alicloud/resource_alicloud_eip_address.go:50-54), 1-200 Mbit/s for
    PayAsYouGo + PayByTraffic, 5 when unset (pulumi_alicloud 4.0.0 ecs/eip_address.py `bandwidth` docstring)."""
    (eip,) = inputs_of(resources, EIP)
    assert (eip["paymentType"], eip["internetChargeType"]) == ("PayAsYouGo", "PayByTraffic")
    assert isinstance(eip["bandwidth"], str) and 1 <= int(eip["bandwidth"]) <= 200


def test_bucket_encryption_is_one_the_provider_takes_and_needs_no_kms_grant(resources):
    """sse_algorithm AES256, KMS or SM4 (alicloud/resource_alicloud_oss_bucket.go:401-413); AES256 (SSE-OSS) uses
    OSS's own keys, so the node policy, which grants no kms: action, still reads and writes the bucket."""
    (bucket,) = inputs_of(resources, BUCKET)
    assert bucket["serverSideEncryptionRule"]["sseAlgorithm"] == "AES256"
    (policy,) = inputs_of(resources, RAM_POLICY)
    actions = [a for s in json.loads(policy["policyDocument"])["Statement"] for a in s["Action"]]
    assert not [a for a in actions if a.startswith("kms:")]
