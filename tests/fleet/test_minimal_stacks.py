"""The five-line stack (cloud, region, zone, instanceType, nodes) plans clean on every cloud and every catalog type,
through the real `__main__.py` under mocks: `image: auto` is resolved (an alias, or a look-up the mocks answer), the
Tencent bucket is named after the account's APPID, and no policy finds anything."""

from __future__ import annotations

import json

import pytest
from stack_preview import shipped_where

from clouds import CLOUDS
from components.alicloud import lookups as alicloud_lookups
from components.aws import lookups as aws_lookups
from components.tencentcloud import lookups as tencent_lookups
from fleet.preview import run_program
from plan import catalog
from policy.rules import evaluate
from spec.stackfile import load_stack_file

TYPES = [(cloud, name) for cloud in CLOUDS for name in catalog.type_names(cloud)]
STAND_IN_APPID = "1250000000"
# The capacity look-up every stack makes of its own place (docs/cloud-facts.md#capacity-look-ups), per cloud.
CAPACITY = {"aws": aws_lookups.OFFERINGS, "alicloud": alicloud_lookups.TYPES, "tencentcloud": tencent_lookups.TYPES}
# And where the cluster's instances run now, by its tag (docs/cloud-facts.md#where-a-cluster-runs).
RUNNING = {"aws": aws_lookups.INSTANCES, "alicloud": alicloud_lookups.INSTANCES,
           "tencentcloud": tencent_lookups.INSTANCES}


def account_invokes(preview, cloud: str) -> list[dict]:
    """The look-ups besides the capacity ones, each asked once: of the stack's own zone and type, and of the
    cluster's instances by its identity."""
    capacity = [i for i in preview.invokes if i["token"] == CAPACITY[cloud]]
    assert len(capacity) == 1 and preview.plan.instance.name in json.dumps(capacity[0]["args"])
    running = [i for i in preview.invokes if i["token"] == RUNNING[cloud]]
    assert len(running) == 1 and preview.plan.identity in json.dumps(running[0]["args"])
    return [i for i in preview.invokes if i["token"] not in (CAPACITY[cloud], RUNNING[cloud])]


@pytest.fixture
def minimal(write_stack):
    """Write the five-line stack for a cloud and type; returns its stack file."""

    def write(cloud: str, instance_type: str, **extra):
        where = shipped_where(cloud)
        cluster = {"cloud": cloud, "instanceType": instance_type, "nodes": 2, **extra}
        if where["zone"]:
            cluster["zone"] = where["zone"]
        return load_stack_file(write_stack(cluster, region=None, extra=where["region"]))

    return write


def test_every_cloud_has_types_and_a_shipped_stack():
    assert {cloud for cloud, _ in TYPES} == set(CLOUDS)
    assert all(shipped_where(cloud) for cloud in CLOUDS)


@pytest.mark.parametrize(("cloud", "instance_type"), TYPES, ids=[f"{c}-{t}" for c, t in TYPES])
def test_five_line_stack_plans_clean(minimal, cloud, instance_type):
    preview = run_program(minimal(cloud, instance_type))
    assert evaluate(preview.resources) == []
    plan = preview.plan
    assert plan.instance.name == instance_type and plan.scaling.nodes_desired == 2
    assert plan.head.user_data.startswith("#cloud-config")


def _nodes(preview):
    """The resources that launch nodes: instances, launch templates, scaling configurations."""
    return [r for r in preview.resources
            if r["type"].rsplit(":", 1)[-1] in ("Instance", "LaunchTemplate", "ScalingConfiguration", "ScalingConfig")
            and "imageId" in r["inputs"]]


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_auto_image_is_looked_up_pinned_and_exported(minimal, cloud):
    instance_type = catalog.type_names(cloud)[0]
    preview = run_program(minimal(cloud, instance_type))
    images = [i for i in preview.invokes if "mage" in i["token"]]
    assert len(images) == 1
    assert images[0]["args"]["instanceType"] == instance_type, "an image the type can boot"
    assert "22" in json.dumps(images[0]["args"]) and "ubuntu" in json.dumps(images[0]["args"]).lower()
    image = preview.plan.image
    assert image.pinned and not image.has_drivers
    nodes = _nodes(preview)
    assert nodes and {n["inputs"]["imageId"] for n in nodes} == {image.ref}
    assert all(n["options"]["ignoreChanges"] == ["imageId"] for n in nodes), "a newer image must not roll nodes"
    assert preview.outputs["image"] == image.ref
    assert "GF_SOFTWARE_MODE='install'" in preview.plan.worker.user_data, "a plain OS image: install the driver"


def test_alibaba_looks_up_the_newest_system_image(minimal):
    preview = run_program(minimal("alicloud", "ecs.gn7i-c32g1.8xlarge"))
    (invoke,) = account_invokes(preview, "alicloud")
    assert invoke["token"] == "alicloud:ecs/getImages:getImages"
    assert {k: invoke["args"][k] for k in ("owners", "nameRegex", "mostRecent")} == {
        "owners": "system", "nameRegex": "^ubuntu_22_04_x64", "mostRecent": True}


def test_tencent_looks_up_a_public_image_and_the_appid(minimal):
    preview = run_program(minimal("tencentcloud", "GN7.2XLARGE32"))
    tokens = {i["token"]: i["args"] for i in preview.invokes}
    assert tokens["tencentcloud:Images/getInstance:getInstance"]["imageTypes"] == ["PUBLIC_IMAGE"]
    assert tokens["tencentcloud:Images/getInstance:getInstance"]["osName"] == "ubuntu server 22.04"
    assert "tencentcloud:User/getInfo:getInfo" in tokens


def test_a_named_image_is_neither_looked_up_nor_pinned(minimal):
    preview = run_program(minimal("alicloud", "ecs.gn7i-c32g1.8xlarge", image="m-mine"))
    assert account_invokes(preview, "alicloud") == []
    assert all("ignoreChanges" not in n["options"] for n in _nodes(preview))
    assert {n["inputs"]["imageId"] for n in _nodes(preview)} == {"m-mine"}


def test_aws_auto_is_the_deep_learning_ami_alias(minimal):
    preview = run_program(minimal("aws", "g5.48xlarge"))
    assert account_invokes(preview, "aws") == []
    image = preview.plan.image
    assert image.ref.startswith("resolve:ssm:/aws/service/deeplearning/") and image.has_drivers
    templates = [r for r in preview.resources if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert {t["inputs"]["imageId"] for t in templates} == {image.ref}
    assert "GF_SOFTWARE_MODE='check'" in preview.plan.worker.user_data


def test_tencent_bucket_defaults_to_one_named_after_the_appid(minimal):
    preview = run_program(minimal("tencentcloud", "GN7.2XLARGE32"))
    storage = preview.plan.storage
    assert storage.bucket.endswith(f"-{STAND_IN_APPID}") and storage.account_id == STAND_IN_APPID
    region = next(iter(shipped_where("tencentcloud")["region"].values()))
    assert len(f"{storage.bucket}.cos.{region}.myqcloud.com") <= 60, "COS's domain limit"
    assert storage.bucket[0].isalpha() and "--" not in storage.bucket
    bucket = next(r for r in preview.resources if r["type"] == "tencentcloud:Cos/bucket:Bucket")
    assert bucket["inputs"]["bucket"] == storage.bucket
    policy = next(r for r in preview.resources if r["type"] == "tencentcloud:Cam/policy:Policy")
    resources = {res for s in json.loads(policy["inputs"]["document"])["statement"] for res in s["resource"]}
    assert f"qcs::cos:{region}:uid/{STAND_IN_APPID}:{storage.bucket}/*" in resources
    assert f"cos://{storage.bucket}/checkpoints" in preview.plan.worker.user_data


def test_tencent_bucket_named_by_the_stack_keeps_its_appid(minimal):
    preview = run_program(minimal("tencentcloud", "GN7.2XLARGE32", image="img-mine",
                                  storage={"checkpointBucket": "ckpt-1300000001"}))
    assert account_invokes(preview, "tencentcloud") == [], "nothing to look up but its capacity"
    assert (preview.plan.storage.bucket, preview.plan.storage.account_id) == ("ckpt-1300000001", "1300000001")
