"""Names a stack sets or implies are checked by the rules of the cloud that holds them, with a name that passes."""

from __future__ import annotations

import pytest
from spec_cases import CLOUDS, only, plan_of, problems

from spec.names import cluster_name

BUCKET = "gpufleet:cluster.storage.checkpointBucket"


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
@pytest.mark.parametrize("bucket, reason", [
    ("*", "'*'"),
    ("ML_Checkpoints", "uppercase letters"),
    ("a" * 84, "84 characters, not 3 to 63"),
    ("ab", "2 characters"),
    ("-checkpoints", "starts or ends with a dash"),
    ("checkpoints-", "starts or ends with a dash"),
    ("gpu fleet", "' '"),
])
def test_bucket_names_refused_on_s3_and_oss(tmp_path, cloud, bucket, reason):
    problem = only(tmp_path, cloud, {"storage": {"checkpointBucket": bucket}})
    assert problem.path == BUCKET and "bucket name" in problem.message and reason in problem.message
    suggested = problem.fix.split("'")[1]
    plan_of(tmp_path, cloud, {"storage": {"checkpointBucket": suggested}})


@pytest.mark.parametrize("bucket, reason", [
    ("my..bucket", "two dots in a row"),
    ("192.168.5.4", "like an IP address"),
    ("xn--checkpoints", "'xn--'"),
    ("sthree-checkpoints", "'sthree-'"),
    ("amzn-s3-demo-checkpoints", "'amzn-s3-demo-'"),
    ("checkpoints-s3alias", "'-s3alias'"),
    ("checkpoints--ol-s3", "'--ol-s3'"),
    ("checkpoints.mrap", "'.mrap'"),
    ("checkpoints--x-s3", "'--x-s3'"),
    ("checkpoints--table-s3", "'--table-s3'"),
])
def test_s3_reserved_forms(tmp_path, bucket, reason):
    problem = only(tmp_path, "aws", {"storage": {"checkpointBucket": bucket}})
    assert problem.path == BUCKET and reason in problem.message


def test_dots_are_s3_only(tmp_path):
    plan_of(tmp_path, "aws", {"storage": {"checkpointBucket": "ml.checkpoints"}})
    problem = only(tmp_path, "alicloud", {"storage": {"checkpointBucket": "ml.checkpoints"}})
    assert "'.'" in problem.message and "OSS" in problem.message


@pytest.mark.parametrize("cloud", ["aws", "alicloud", "tencentcloud"])
@pytest.mark.parametrize("bucket", ["s3://my-bucket/checkpoints", "oss://my-bucket", "arn:aws:s3:::my-bucket",
                                    "my-bucket/checkpoints"])
def test_a_url_arn_or_path_asks_for_the_name_alone(tmp_path, cloud, bucket):
    found = [p for p in problems(tmp_path, cloud, {"storage": {"checkpointBucket": bucket}}) if p.path == BUCKET]
    assert any("bucket's name alone" in p.message and "'my-bucket" in p.fix for p in found), found


def test_cos_names_fit_the_domain_limit(tmp_path):
    long = "gpufleet-tencent-spot-1250000000"  # 62 characters as <name>.cos.ap-guangzhou.myqcloud.com
    problem = only(tmp_path, "tencentcloud", {"storage": {"checkpointBucket": long}})
    assert problem.path == BUCKET and "60 characters" in problem.message
    plan_of(tmp_path, "tencentcloud", {"storage": {"checkpointBucket": "gf-tencent-spot-1250000000"}})
    wildcard = problems(tmp_path, "tencentcloud", {"storage": {"checkpointBucket": "*"}})
    assert any(p.path == BUCKET and "'*'" in p.message for p in wildcard)


def test_a_local_cluster_has_no_bucket_to_name(tmp_path):
    problem = only(tmp_path, "local", {"storage": {"checkpointBucket": "my-bucket"}})
    assert problem.path == BUCKET and "own directory" in problem.message


@pytest.mark.parametrize("cloud", CLOUDS)
@pytest.mark.parametrize("key", ["gpufleet:cluster", "gpufleet:stack", "GPUFLEET:role", "managed-by", "Managed-By"])
def test_gpufleets_own_tags_are_refused(tmp_path, cloud, key):
    problem = only(tmp_path, cloud, {"tags": {key: "other-cluster"}})
    assert problem.path == f"gpufleet:cluster.tags.{key}" and "gpufleet sets itself" in problem.message


def test_user_tags_reach_the_plan_after_gpufleets(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"tags": {"team": "ml"}})
    assert plan.tag_map["gpufleet:cluster"] == plan.identity and plan.identity.startswith("test-")
    assert plan.tag_map["team"] == "ml"


@pytest.mark.parametrize("cloud, tags, reason", [
    ("aws", {"aws:team": "ml"}, "'aws:'"),
    ("aws", {"AWS:team": "ml"}, "'aws:'"),
    ("aws", {"team": "aws:ml"}, "value starts with 'aws:'"),
    ("aws", {"k" * 128: "v"}, "128 characters, more than 127"),
    ("aws", {"team": "v" * 257}, "257 characters, more than 256"),
    ("aws", {"cost center": "ml"}, "characters the cloud refuses"),
    ("aws", {"team/a": "ml"}, "characters the cloud refuses"),
    ("aws", {"_index": "ml"}, "not allowed as a key"),
    ("aws", {"Name": "mine"}, "gpufleet sets itself"),
    ("alicloud", {"aliyun-team": "ml"}, "'aliyun'"),
    ("alicloud", {"acs:team": "ml"}, "'acs:'"),
    ("alicloud", {"team": "acs:ml"}, "value starts with 'acs:'"),
    ("alicloud", {"site": "https://example.com"}, "'https://'"),
    ("alicloud", {"k" * 65: "v"}, "more than 64"),
    ("alicloud", {"team": "v" * 129}, "more than 128"),
    ("tencentcloud", {"qcs:team": "ml"}, "'qcs:'"),
    ("tencentcloud", {"project": "ml"}, "'project'"),
    ("tencentcloud", {"tencent-team": "ml"}, "'tencent'"),
    ("tencentcloud", {"team": ""}, "value is empty"),
    ("tencentcloud", {"team": "v" * 256}, "more than 255"),
    ("tencentcloud", {" team": "ml"}, "starts or ends with a space"),
])
def test_tags_by_the_clouds_rules(tmp_path, cloud, tags, reason):
    problem = only(tmp_path, cloud, {"tags": tags})
    assert problem.path.startswith("gpufleet:cluster.tags.") and reason in problem.message, problem


# Each cloud's per-resource tag limit less the most gpufleet sets on one resource: cluster, stack, managed-by and role,
# with AWS's Name, or on an Alibaba ESS worker its gpufleet:health and gpufleet:user-data tags.
@pytest.mark.parametrize("cloud, most", [("aws", 44), ("alicloud", 14), ("tencentcloud", 44)])
def test_tag_count_leaves_room_for_gpufleets(tmp_path, cloud, most):
    plan_of(tmp_path, cloud, {"tags": {f"t{i}": "v" for i in range(most)}})
    problem = only(tmp_path, cloud, {"tags": {f"t{i}": "v" for i in range(most + 1)}})
    assert problem.path == "gpufleet:cluster.tags" and f"keep at most {most}" in problem.fix


@pytest.mark.parametrize("stack", ["My_Stack", "prod.eu-west", "Prod_EU_2", "2024-run", "a", "x" * 100])
def test_any_pulumi_stack_name_gives_a_cluster_name(tmp_path, stack):
    spec, plan = plan_of(tmp_path, "aws", stack=stack)
    assert plan.name == cluster_name(stack) and len(plan.name) <= 31
    assert plan.name[0].isalpha() and plan.name == plan.name.lower() and not plan.name.endswith("-")
    assert plan.tag_map["gpufleet:stack"] == stack


def test_stack_names_that_differ_give_different_cluster_names():
    names = {cluster_name(s) for s in ("prod-eu", "Prod-EU", "prod_eu", "prod.eu", "PROD_EU")}
    assert len(names) == 5 and "prod-eu" in names


def test_a_written_name_is_checked_with_a_suggestion(tmp_path):
    problem = only(tmp_path, "aws", {"name": "My_Cluster"})
    assert problem.path == "gpufleet:cluster.name" and "not a cluster name" in problem.message
    suggested = problem.message.split("e.g. '")[1].split("'")[0]
    assert plan_of(tmp_path, "aws", {"name": suggested})[1].name == suggested


@pytest.mark.parametrize("cloud, written, ok", [
    ("aws", "cr-123", False),
    ("aws", "cr-0123456789ABCDEF0", False),
    ("aws", "0123456789abcdef0", False),
    ("aws", "cr-0123456789abcdef0", True),
    ("alicloud", "cr-0123456789abcdef0", False),
    ("alicloud", "crp-bp67acfmxazb4ph6xxxx", True),
    ("alicloud", "eap-bp67acfmxazb4ph6xxxx", True),
])
def test_reservation_ids_in_each_clouds_format(tmp_path, cloud, written, ok):
    changes = {"market": {"reservationId": written}}
    if ok:
        plan_of(tmp_path, cloud, changes)
    else:
        problem = only(tmp_path, cloud, changes)
        assert problem.path == "gpufleet:cluster.market.reservationId" and "look like" in problem.message
