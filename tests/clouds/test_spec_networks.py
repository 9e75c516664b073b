"""CIDRs are parsed and stored in one spelling, VPCs fit each cloud's limits and the nodes, SSH sources are ranges a
client can be in, and no cluster is larger than its cloud can hold."""

from __future__ import annotations

import ipaddress
import math

import pytest
from spec_cases import CLOUDS, only, plan_of, problems

VPC = "gpufleet:cluster.network.vpcCidr"


def even_job(*node_counts: int, ranks: int = 1) -> dict:
    """A job whose global batch gives every rank a sequence and splits evenly at each of these node counts."""
    return {"microBatch": 1, "globalBatch": math.lcm(*node_counts) * ranks}


@pytest.mark.parametrize("written, stored", [
    ("0.0.0.0/00", "0.0.0.0/0"),
    ("203.0.113.0/255.255.255.0", "203.0.113.0/24"),
    (" 203.0.113.0/24 ", "203.0.113.0/24"),
    ("203.0.113.7", "203.0.113.7/32"),
    ("::ffff:203.0.113.0/120", "203.0.113.0/24"),
])
def test_ssh_cidrs_are_stored_in_one_spelling(tmp_path, written, stored):
    spec, plan = plan_of(tmp_path, "alicloud", {"network": {"sshCidrs": [written], "allowInternet": True}})
    assert spec.network.ssh_cidrs == (stored,)
    assert [r.peer for r in plan.firewall if r.from_port == 22] == [stored]


def test_a_vpc_is_stored_in_one_spelling(tmp_path):
    spec, plan = plan_of(tmp_path, "aws", {"network": {"vpcCidr": "10.1.0.0/255.255.0.0"}})
    assert spec.network.vpc_cidr == plan.network.vpc_cidr == "10.1.0.0/16"


def test_host_bits_name_both_fixes(tmp_path):
    problem = only(tmp_path, "alicloud", {"network": {"sshCidrs": ["203.0.113.7/24"]}})
    assert problem.path == "gpufleet:cluster.network.sshCidrs.0"
    assert "203.0.113.0/24 for the whole range" in problem.message and "203.0.113.7/32" in problem.message


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud", "local"])
@pytest.mark.parametrize("cidr", ["2001:db8::/32", "::/0", "0::0/0", "2001:DB8:0:0::/64"])
def test_ipv6_ssh_sources_are_refused_where_the_network_is_ipv4(tmp_path, cloud, cidr):
    problem = only(tmp_path, cloud, {"network": {"sshCidrs": ["203.0.113.0/24", cidr], "allowInternet": True}})
    assert problem.path == "gpufleet:cluster.network.sshCidrs.1" and "IPv6" in problem.message
    assert "IPv4 only" in problem.message


def test_ipv6_ssh_on_aws_is_refused_too(tmp_path):
    found = problems(tmp_path, "aws", {"network": {"sshCidrs": ["2001:db8::/32"]}})
    assert any(p.path == "gpufleet:cluster.network.sshCidrs.0" and "IPv6" in p.message for p in found)


@pytest.mark.parametrize("first, second", [
    ("203.0.113.0/24", "203.0.113.0/24"),
    ("203.0.113.0/24", "203.0.113.0/255.255.255.0"),
    ("198.51.100.9", "198.51.100.9/32"),
])
def test_duplicate_ssh_sources_are_refused(tmp_path, first, second):
    problem = only(tmp_path, "alicloud", {"network": {"sshCidrs": [first, second]}})
    assert problem.path == "gpufleet:cluster.network.sshCidrs.1" and "listed twice" in problem.message


@pytest.mark.parametrize("cidr", ["127.0.0.1/32", "169.254.169.254/32", "224.0.0.0/8", "0.0.0.0/8"])
def test_ssh_sources_no_client_has_are_refused(tmp_path, cidr):
    problem = only(tmp_path, "alicloud", {"network": {"sshCidrs": [cidr]}})
    assert problem.path == "gpufleet:cluster.network.sshCidrs.0"
    assert "no range a client connects from" in problem.message


@pytest.mark.parametrize("cloud", ["aws", "alicloud", "tencentcloud"])
@pytest.mark.parametrize("cidr, reason", [
    ("169.254.0.0/16", "link-local"),
    ("127.0.0.0/16", "loopback"),
    ("224.0.0.0/16", "multicast"),
    ("240.0.0.0/16", "reserved"),
    ("172.17.0.0/16", "Docker"),
])
def test_vpcs_no_cloud_takes(tmp_path, cloud, cidr, reason):
    problem = only(tmp_path, cloud, {"network": {"vpcCidr": cidr}})
    assert problem.path == VPC and reason in problem.message


@pytest.mark.parametrize("cloud, cidr, reason", [
    ("aws", "10.0.0.0/8", "wider than /16"),
    ("aws", "10.0.0.0/15", "wider than /16"),
    ("alicloud", "100.100.0.0/16", "Alibaba Cloud keeps for its own services"),
    ("alicloud", "100.64.0.0/16", "Alibaba Cloud keeps for its own services"),
    ("alicloud", "10.0.0.0/7", "wider than /8"),
    ("alicloud", "10.0.0.0/8", "first half of the VPC, 10.0.0.0/9, wider than /16, the widest vSwitch"),
    ("tencentcloud", "10.16.0.0/16", "outside the ranges Tencent Cloud allows"),
    ("tencentcloud", "11.0.0.0/16", "outside the ranges Tencent Cloud allows"),
    ("tencentcloud", "192.168.0.0/15", "outside the ranges Tencent Cloud allows"),
    ("aws", "10.0.0.0/28", "too few for 2 nodes"),
    ("alicloud", "10.0.0.0/29", "narrower than /28"),
])
def test_vpcs_by_each_clouds_limits(tmp_path, cloud, cidr, reason):
    problem = only(tmp_path, cloud, {"network": {"vpcCidr": cidr}})
    assert problem.path == VPC and reason in problem.message, problem


@pytest.mark.parametrize("cloud, cidr", [
    ("aws", "10.0.0.0/16"), ("aws", "100.64.0.0/16"), ("aws", "10.0.0.0/27"), ("alicloud", "10.0.0.0/15"),
    ("alicloud", "172.16.0.0/16"), ("tencentcloud", "10.0.0.0/12"),
    ("tencentcloud", "192.168.0.0/16"), ("tencentcloud", "172.16.0.0/16"), ("local", "10.77.0.0/24"),
])
def test_vpcs_each_cloud_takes(tmp_path, cloud, cidr):
    plan_of(tmp_path, cloud, {"network": {"vpcCidr": cidr}})


def test_a_too_small_vpc_suggests_one_that_fits(tmp_path):
    problem = only(tmp_path, "aws", {"nodes": 300, "network": {"vpcCidr": "10.0.5.0/24"}, "job": even_job(300)})
    assert "too few for 300 nodes" in problem.message
    bigger = problem.fix.removeprefix("use a larger range such as ").rstrip(".")
    plan_of(tmp_path, "aws", {"nodes": 300, "network": {"vpcCidr": bigger}, "job": even_job(300)})


def test_local_nodes_fixed_addresses_fit_the_subnet(tmp_path):
    """Local nodes take the head's address and those after it (no DHCP): six nodes in a /27 VPC's /28 would end on
    its broadcast address, so the rule asks for a larger range, in which every node's address is a host of it."""
    six = {"nodes": 6, "network": {"vpcCidr": "10.77.0.0/27"}}
    problem = only(tmp_path, "local", six)
    assert problem.path == VPC and "too few for 6 nodes" in problem.message, problem
    bigger = problem.fix.removeprefix("use a larger range such as ").rstrip(".")
    _, plan = plan_of(tmp_path, "local", {**six, "network": {"vpcCidr": bigger}})
    subnet = ipaddress.IPv4Network(plan.network.private.cidr)
    assert all(ipaddress.IPv4Address(a) in list(subnet.hosts()) for a in plan.network.node_addresses(6))
    plan_of(tmp_path, "local", {"nodes": 4, "network": {"vpcCidr": "10.77.0.0/27"}})


def test_eri_addresses_count_against_the_vswitch(tmp_path):
    """ecs.ebmgn7ex.32xlarge nodes take three addresses each: the primary ENI and two ERIs."""
    erdma = {"instanceType": "ecs.ebmgn7ex.32xlarge", "zone": "cn-wulanchabu-c", "nodes": 42,
             "network": {"vpcCidr": "10.0.0.0/24"}, "job": even_job(42, ranks=8)}
    problem = only(tmp_path, "alicloud", erdma, region="cn-wulanchabu")
    assert "124 addresses" in problem.message and "too few for 42 nodes at 3 addresses each" in problem.message
    plan_of(tmp_path, "alicloud", {**erdma, "nodes": 41, "job": even_job(41, ranks=8)}, region="cn-wulanchabu")


def test_100000_nodes_are_refused_for_what_the_cloud_holds(tmp_path):
    huge = {"nodes": {"min": 2, "desired": 2, "max": 100000}, "job": even_job(2, 100000)}
    aws = {p.path: p for p in problems(tmp_path, "aws", {**huge, "network": {"vpcCidr": "10.0.0.0/8"}})}
    assert "wider than /16" in aws[VPC].message
    assert "32763" in aws["gpufleet:cluster.nodes.max"].message
    ali = {p.path: p for p in problems(tmp_path, "alicloud", {**huge, "network": {"vpcCidr": "10.0.0.0/8"}})}
    assert "2000 workers a scaling group holds" in ali["gpufleet:cluster.nodes.max"].message
    assert "vSwitch" in ali[VPC].message


@pytest.mark.parametrize("cloud, most", [("alicloud", 2001), ("tencentcloud", 2001), ("aws", 32763)])
def test_the_largest_cluster_each_cloud_holds(tmp_path, cloud, most):
    network = {"vpcCidr": "10.0.0.0/15" if cloud == "alicloud" else "10.0.0.0/12" if cloud == "tencentcloud"
               else "10.0.0.0/16"}
    plan_of(tmp_path, cloud, {"nodes": {"min": 2, "desired": 2, "max": most}, "network": network,
                              "job": even_job(2, most)})
    problem = only(tmp_path, cloud, {"nodes": {"min": 2, "desired": 2, "max": most + 1}, "network": network,
                                     "job": even_job(2, most + 1)})
    assert problem.path == "gpufleet:cluster.nodes.max" and f"at most {most}" in problem.fix


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_default_vpc_plans_everywhere(tmp_path, cloud):
    assert plan_of(tmp_path, cloud)[1].network.vpc_cidr == "10.0.0.0/16"


@pytest.mark.parametrize("changes, path, fix", [
    ({"network": {"vpcCidr": "10.0.0.0"}}, VPC, "10.0.0.0/16"),
    ({"network": {"vpcCidr": "2001:db8::/56"}}, VPC, "IPv4"),
    ({"network": {"sshCidrs": "203.0.113.0/24"}}, "gpufleet:cluster.network.sshCidrs", "write a list"),
])
def test_shapes_a_person_writes_by_mistake(tmp_path, changes, path, fix):
    problem = only(tmp_path, "alicloud", changes)
    assert problem.path == path and fix in f"{problem.message} {problem.fix}"
