"""The rules of tencentcloudstack/terraform-provider-tencentcloud (f6970a90038400958503a0edab62c6c463baa7b0, read
2026-12-01) that the Tencent realizer depends on, checked on every shipped Tencent stack's preview; the provider
binary is not here, so each rule is written out with the source file and line it comes from
(docs/cloud-facts.md#tencent-provider-rules)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from stack_preview import preview_stack

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted(ROOT.joinpath("stacks").glob("Pulumi.tencent-*.yaml"))
RULE_SET = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
RULE_SET_SOURCE = "tencentcloud/services/vpc/resource_tc_security_group_rule_set.go"
PEERS = ("cidrBlock", "ipv6CidrBlock", "sourceSecurityId", "addressTemplateId", "addressTemplateGroup")
# tencentcloud/services/as/extension_as.go:15-25 (SYSTEM_DISK_ALLOW_TYPE).
SYSTEM_DISKS = ("LOCAL_BASIC", "LOCAL_SSD", "CLOUD_BASIC", "CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_HSSD", "CLOUD_TSSD",
                "CLOUD_BSSD", "LOCAL_NVME")


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: p.stem.removeprefix("Pulumi."))
def resources(request):
    return preview_stack(request.param)[2].resources


def inputs_of(resources, token):
    return [r["inputs"] for r in resources if r["type"] == token]


def rule_problem(entry: dict) -> str | None:
    """What the provider and the API refuse in one ingress/egress entry (RULE_SET_SOURCE): action ACCEPT or DROP
    (:21-26); exactly one of cidr_block, ipv6_cidr_block, source_security_id, address_template_* (:32-56); protocol
    TCP, UDP, ICMP, ICMPv6 or ALL (:67-72); port `all`, one port, `a,b` or `a-b`, and `all` with ALL (:73-78)."""
    if str(entry.get("action", "")).upper() not in ("ACCEPT", "DROP"):
        return "action"
    if sum(1 for key in PEERS if entry.get(key)) != 1:
        return "peer"
    protocol, port = entry.get("protocol", "ALL"), str(entry.get("port", "all"))
    if protocol.upper() not in ("TCP", "UDP", "ICMP", "ICMPV6", "ALL"):
        return "protocol"
    if protocol.upper() == "ALL" and port != "all":
        return "port"
    if port != "all" and not re.fullmatch(r"\d+((,\d+)*|-\d+)", port):
        return "port"
    return None


def test_the_rule_check_can_fail():
    good = {"action": "ACCEPT", "protocol": "UDP", "port": "53", "cidrBlock": "0.0.0.0/0"}
    assert rule_problem(good) is None
    assert rule_problem(good | {"action": "ALLOW"}) == "action"
    assert rule_problem(good | {"sourceSecurityId": "sg-1"}) == "peer"
    assert rule_problem(good | {"protocol": "ALL"}) == "port"
    assert rule_problem(good | {"port": "53/53"}) == "port"


def test_every_rule_entry_is_one_the_provider_takes(resources):
    for rules in inputs_of(resources, RULE_SET):
        for direction in ("ingresses", "egresses"):
            for entry in rules[direction]:
                assert rule_problem(entry) is None, entry


def test_scaling_configs_use_values_the_provider_takes(resources):
    """tencentcloud/services/as/resource_tc_as_scaling_config.go: instance_types 1-10 (:55-62); system_disk_type in
    SYSTEM_DISK_ALLOW_TYPE (:63-69); spot_instance_type only `one-time` (:128-133); disaster_recover_group_ids "Only
    one is allowed" (:290-294)."""
    for config in inputs_of(resources, CONFIG):
        assert 1 <= len(config["instanceTypes"]) <= 10
        assert config["systemDiskType"] in SYSTEM_DISKS
        if config.get("instanceChargeType") == "SPOTPAID":
            assert config["spotInstanceType"] == "one-time" and config["spotMaxPrice"]
        assert len(config.get("disasterRecoverGroupIds") or []) <= 1
