"""No node permission names a wildcard bucket: a stack's bucket name is checked before any plan, and the policy
refuses IAM, RAM and CAM documents that grant storage actions on a wildcard or on every resource."""

from __future__ import annotations

import json

import pytest
import yaml
from policy_helpers import fired, first

from fleet.cli import main
from policy.clouds import alicloud as ali_t
from policy.clouds import aws as aws_t
from policy.clouds import tencentcloud as tc_t

RULE = "no-wildcard-bucket-access"


def _aws(stack_of, resources_of_statement, actions=("s3:GetObject",)):
    resources = stack_of("aws-g4dn-dev")
    policy = first(resources, aws_t.ROLE_POLICY)["inputs"]
    document = json.loads(policy["policy"])
    document["Statement"].append({"Effect": "Allow", "Action": list(actions), "Resource": resources_of_statement})
    policy["policy"] = json.dumps(document)
    return resources


@pytest.mark.parametrize("resource", ["arn:aws:s3:::*/*", "arn:aws:s3:::*", "arn:aws:s3:::gpufleet-*/*",
                                      "arn:aws:s3:::ckpt-?/*"])
def test_aws_wildcard_buckets(stack_of, resource):
    assert RULE in fired(_aws(stack_of, [resource]))


def test_aws_storage_actions_on_everything(stack_of):
    assert RULE in fired(_aws(stack_of, "*"))
    assert RULE in fired(_aws(stack_of, ["*"], actions=("s3:*",)))
    assert RULE not in fired(_aws(stack_of, ["*"], actions=("ec2:DescribeInstances",)))


def test_alibaba_wildcard_bucket(stack_of):
    resources = stack_of("ali-erdma")
    policy = first(resources, ali_t.RAM_POLICY)["inputs"]
    document = json.loads(policy["policyDocument"])
    document["Statement"][1]["Resource"] = ["acs:oss:*:*:*/*"]
    policy["policyDocument"] = json.dumps(document)
    assert RULE in fired(resources)


@pytest.mark.parametrize("resource", ["qcs::cos:ap-guangzhou:uid/1250000000:*/*",
                                      "qcs::cos:ap-guangzhou:uid/*:gf-tencent-spot-1250000000/*"])
def test_tencent_wildcard_bucket(stack_of, resource):
    resources = stack_of("tencent-spot")
    policy = first(resources, tc_t.CAM_POLICY)["inputs"]
    document = json.loads(policy["document"])
    document["statement"][1]["resource"] = [resource]
    policy["document"] = json.dumps(document)
    assert RULE in fired(resources)


def test_the_shipped_stacks_name_their_buckets(stack_of):
    for name in ("aws-g4dn-dev", "ali-erdma", "tencent-spot"):
        assert RULE not in fired(stack_of(name))


@pytest.mark.parametrize("reader, resource, bucket", [
    (aws_t.READER, "arn:aws:s3:::ckpt/*", "ckpt"), (aws_t.READER, "arn:aws-cn:s3:::ckpt", "ckpt"),
    (aws_t.READER, "arn:aws:ec2:*:*:instance/*", None), (ali_t.READER, "acs:oss:*:*:ckpt/*", "ckpt"),
    (ali_t.READER, "acs:ecs:*:*:instance/*", None),
    (tc_t.READER, "qcs::cos:ap-guangzhou:uid/1250000000:ckpt-1250000000/", "ckpt-1250000000"),
    (tc_t.READER, "qcs::cos:ap-guangzhou:uid/*:ckpt-1250000000/*", "*"), (tc_t.READER, "qcs::cvm:::*", None),
])
def test_bucket_of_each_clouds_resource_names(reader, resource, bucket):
    assert reader.bucket_of(resource) == bucket


@pytest.mark.parametrize("cloud, region", [("aws", "us-east-1"), ("alicloud", "cn-hangzhou")])
def test_a_wildcard_bucket_in_a_stack_never_reaches_a_plan(tmp_path, capsys, cloud, region):
    cluster = {"cloud": cloud, "zone": "us-east-1a" if cloud == "aws" else "cn-hangzhou-h",
               "instanceType": "g4dn.xlarge" if cloud == "aws" else "ecs.gn7i-c32g1.8xlarge",
               "image": "auto" if cloud == "aws" else "ubuntu_22_04_x64_20G_alibase_20240130.vhd", "nodes": 2,
               "storage": {"checkpointBucket": "*"}}
    path = tmp_path / "Pulumi.star.yaml"
    path.write_text(yaml.safe_dump({"config": {f"{cloud}:region": region, "gpufleet:cluster": cluster}}))
    assert main(["plan", "--stack-file", str(path)]) == 2
    assert "checkpointBucket: '*' is not a valid" in capsys.readouterr().err
