"""Regions and zones are checked against the catalog's regions and each cloud's zone naming, with the fix named."""

from __future__ import annotations

import pytest
from spec_cases import only, plan_of, problems

ZONE = "gpufleet:cluster.zone"


@pytest.mark.parametrize("cloud, region, zone", [
    ("aws", "eu-west-1", "eu-west-1"),
    ("alicloud", "cn-hangzhou", "cn-hangzhou"),
    ("tencentcloud", "ap-guangzhou", "ap-guangzhou"),
])
def test_a_region_given_as_the_zone(tmp_path, cloud, region, zone):
    problem = only(tmp_path, cloud, {"zone": zone}, region=region)
    assert problem.path == ZONE and "is a region, not a zone" in problem.message and region in problem.fix


@pytest.mark.parametrize("cloud, region, key, close", [
    ("aws", "eu-west", "aws:region", "eu-west-1"),
    ("aws", "US-EAST-1", "aws:region", "us-east-1"),
    ("alicloud", "cn-hangzhu", "alicloud:region", "cn-hangzhou"),
    ("tencentcloud", "ap-guangzou", "tencentcloud:region", "ap-guangzhou"),
])
def test_a_region_the_cloud_does_not_have(tmp_path, cloud, region, key, close):
    problem = only(tmp_path, cloud, region=region)
    assert problem.path == key and "is not a region of" in problem.message and close in problem.message


def test_a_zone_of_another_region_names_both_fixes(tmp_path):
    problem = only(tmp_path, "aws", {"zone": "eu-west-1a"}, region="us-east-1")
    assert problem.path == ZONE and "but of eu-west-1" in problem.message
    assert "aws:region: eu-west-1" in problem.fix


@pytest.mark.parametrize("cloud, region, zone", [
    ("aws", "us-east-1", "us-east-1-a"),
    ("aws", "us-east-1", "us-east-11"),
    ("alicloud", "cn-hangzhou", "cn-hangzhou-hh"),
    ("tencentcloud", "ap-guangzhou", "ap-guangzhou-x"),
])
def test_a_zone_not_named_like_the_clouds(tmp_path, cloud, region, zone):
    problem = only(tmp_path, cloud, {"zone": zone}, region=region)
    assert problem.path == ZONE and "is not a zone of region" in problem.message


def test_a_missing_region_names_the_provider_key(tmp_path):
    problem = only(tmp_path, "alicloud", region="")
    assert problem.path == "alicloud:region" and "alicloud:region: <region>" in problem.fix


@pytest.mark.parametrize("cloud, region, zone", [
    ("aws", "ap-southeast-7", "ap-southeast-7c"),
    ("alicloud", "cn-wulanchabu", "cn-wulanchabu-c"),
    ("tencentcloud", "ap-singapore", "ap-singapore-4"),
])
def test_zones_of_each_region_pass(tmp_path, cloud, region, zone):
    assert plan_of(tmp_path, cloud, {"zone": zone}, region=region)[1].zone == zone


def test_zone_names_are_lowercase(tmp_path):
    problem = only(tmp_path, "aws", {"zone": "US-EAST-1A"})
    assert problem.path == ZONE and "lowercase" in problem.message and problem.fix == "write us-east-1a."


def test_a_local_cluster_has_no_zone(tmp_path):
    problem = only(tmp_path, "local", {"zone": "us-east-1a"})
    assert problem.path == ZONE and "remove zone" in problem.fix


@pytest.mark.parametrize("cloud", ["aws", "alicloud", "tencentcloud", "local"])
def test_a_region_written_in_the_cluster_is_not_silently_dropped(tmp_path, cloud):
    problem = only(tmp_path, cloud, {"region": "eu-west-1"})
    assert problem.path == "gpufleet:cluster.region" and "would be ignored" in problem.message


@pytest.mark.parametrize(("cloud", "key"), [("aws", "aws:region"), ("alicloud", "alicloud:region"),
                                            ("tencentcloud", "tencentcloud:region")])
def test_the_misplaced_region_names_the_clouds_own_key_even_beside_a_refused_job_setting(tmp_path, cloud, key):
    found = {p.path: p for p in problems(tmp_path, cloud, {"region": "eu-west-1", "job": {"resume": True}})}
    assert set(found) == {"gpufleet:cluster.region", "gpufleet:cluster.job.resume"}
    assert found["gpufleet:cluster.region"].fix == f"move it to config as {key} and remove it here."
