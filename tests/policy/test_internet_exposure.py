"""What the internet may reach is judged on parsed networks: every spelling of "everywhere", any range wider than a
/8, and sets of ranges that together admit more of the internet than a /8, on all three clouds."""

from __future__ import annotations

import json

import pytest
import yaml
from policy_helpers import fired, first

from fleet.cli import main
from policy.clouds import alicloud as ali_t
from policy.clouds import aws as aws_t
from policy.clouds import tencentcloud as tc_t
from policy.rules import evaluate
from spec.cidrs import exposing, parse_cidr

WIDE = ["0.0.0.0/0", "0.0.0.0/00", "0.0.0.0/0.0.0.0", "0.0.0.0/1", "128.0.0.0/1", "1.0.0.0/7", "::/0", "0::0/0",
        "::/1", "2000::/3"]
NARROW = ["10.0.0.0/8", "11.0.0.0/8", "203.0.113.0/24", "2001:db8::/32"]


def _aws(stack_of, cidr):
    resources = stack_of("aws-g4dn-dev")
    field = "cidrIpv6" if ":" in cidr else "cidrIpv4"
    inputs = first(resources, aws_t.SG_INGRESS, "ingress-0")["inputs"]
    inputs.pop("referencedSecurityGroupId")
    inputs.update({field: cidr, "description": "mine"})
    return resources


def _ali(stack_of, cidr):
    resources = stack_of("ali-erdma")
    inputs = first(resources, ali_t.SG_RULE, "ingress-2")["inputs"]
    inputs.pop("cidrIp", None)
    inputs["ipv6CidrIp" if ":" in cidr else "cidrIp"] = cidr
    return resources


def _tc(stack_of, cidr):
    resources = stack_of("tencent-hcc")
    first(resources, tc_t.SG_RULES)["inputs"]["ingresses"].append(
        {"protocol": "TCP", "port": "22", "action": "ACCEPT", ("ipv6CidrBlock" if ":" in cidr else "cidrBlock"): cidr})
    return resources


CLOUDS = (_aws, _ali, _tc)


@pytest.mark.parametrize("cidr", WIDE)
@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_spelling_of_the_internet_is_refused(stack_of, cloud, cidr):
    assert "no-open-ingress" in fired(cloud(stack_of, cidr))


@pytest.mark.parametrize("cidr", NARROW)
@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_named_network_is_not(stack_of, cloud, cidr):
    assert not {"no-open-ingress", "no-internet-by-parts"} & fired(cloud(stack_of, cidr))


def test_a_range_no_one_can_read_is_refused(stack_of):
    assert "no-open-ingress" in fired(_aws(stack_of, "banana"))


def test_inline_security_group_rules_count_too(stack_of):
    resources = stack_of("aws-g4dn-dev")
    first(resources, aws_t.SG)["inputs"]["ingress"] = [
        {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/1", "128.0.0.0/1"]}]
    assert "no-open-ingress" in fired(resources)


def _many(stack_of, cidrs):
    resources = stack_of("tencent-hcc")
    first(resources, tc_t.SG_RULES)["inputs"]["ingresses"] += [
        {"protocol": "TCP", "port": "22", "action": "ACCEPT", "cidrBlock": cidr} for cidr in cidrs]
    return resources


def test_halves_of_the_internet_are_the_internet(stack_of):
    found = [v for v in evaluate(_many(stack_of, ["0.0.0.0/1", "128.0.0.0/1"])) if v["policy"] == "no-open-ingress"]
    assert len(found) == 2 and {"0.0.0.0/1", "128.0.0.0/1"} <= {m for v in found for m in v["message"].split()}


def test_many_narrow_ranges_that_add_up_to_the_internet(stack_of):
    every_other = [f"{n}.0.0.0/8" for n in range(12, 224, 2)]
    assert "no-internet-by-parts" in fired(_many(stack_of, every_other))
    assert "no-internet-by-parts" in fired(_many(stack_of, ["11.0.0.0/8", "12.0.0.0/8"]))
    assert "no-internet-by-parts" not in fired(_many(stack_of, ["11.0.0.0/8"]))


def test_private_ranges_admit_no_one_from_the_internet(stack_of):
    assert not {"no-open-ingress", "no-internet-by-parts"} & fired(
        _many(stack_of, ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]))


def test_exposure_counts_internet_addresses_only():
    assert exposing([parse_cidr("10.0.0.0/8"), parse_cidr("172.16.0.0/12")]) == []
    halves = [parse_cidr("0.0.0.0/1"), parse_cidr("128.0.0.0/1")]
    assert exposing(halves) == halves


def _stack(tmp_path, network):
    cluster = {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge",
               "image": "ubuntu_22_04_x64_20G_alibase_20240130.vhd", "nodes": 2, "network": network}
    path = tmp_path / "Pulumi.open.yaml"
    path.write_text(yaml.safe_dump({"config": {"alicloud:region": "cn-hangzhou", "gpufleet:cluster": cluster}}))
    return str(path)


@pytest.mark.parametrize("ssh, policies", [
    (["0.0.0.0/1", "128.0.0.0/1"], ["no-open-ingress", "no-open-ingress"]),
    (["0.0.0.0/00"], ["no-open-ingress"]),
    ([f"{n}.0.0.0/8" for n in range(12, 224, 2)], ["no-internet-by-parts"] * 106),
])
def test_fleet_plan_fails_unless_the_stack_opts_in(tmp_path, capsys, ssh, policies):
    assert main(["plan", "--stack-file", _stack(tmp_path, {"sshCidrs": ssh}), "--json"]) == 1
    violations = json.loads(capsys.readouterr().out)["violations"]
    assert sorted(v["policy"] for v in violations) == policies
    assert main(["plan", "--stack-file", _stack(tmp_path, {"sshCidrs": ssh, "allowInternet": True}), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["violations"] == []
