"""`fleet image build`'s Pulumi program (components/bake_program.py, run inline), under Pulumi's mocks for each cloud:
the bake's one-node cluster comes from the cloud's own realizer with the head booting the bake user-data, the image is
made from that head only in phase `image`, through the cloud's own image service, kept on destroy and tagged with the
digest of the matrix the image records, which is the matrix a stack naming the image then checks."""

from __future__ import annotations

import copy

import pytest
import yaml

from clouds.plans import bake_for
from components.bake_program import IMAGE_PHASE, MACHINE_PHASE, bake, image_module
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan.bake import MATRIX_TAG, bake_name, matrix_digest
from plan.bootstrap import ENTRY
from plan.paths import PROJECT_ROOT
from spec.names import CLUSTER_NAME
from spec.stackfile import CLUSTER_KEY, load_stack_file

# One shipped stack per cloud, and the resource type of its image service.
CLOUDS = {"aws-p5": "aws:ec2/amiFromInstance:AmiFromInstance", "ali-erdma": "alicloud:ecs/image:Image",
          "tencent-hcc": "tencentcloud:Image/instance:Instance"}


def _stack(stack: str, tmp_path, image=None):
    config = copy.deepcopy(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml").config)
    if image is not None:
        config[CLUSTER_KEY]["image"] = image
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return load_stack_file(path)


@pytest.mark.parametrize("stack", sorted(CLOUDS))
def test_phase_image_makes_the_image_from_the_bake_head(stack, tmp_path):
    preview = run_program(_stack(stack, tmp_path), program=lambda: bake(IMAGE_PHASE))
    images = [r for r in preview.resources if r["type"] == CLOUDS[stack]]
    assert len(images) == 1
    (image,) = images
    source = image["inputs"].get("sourceInstanceId") or image["inputs"]["instanceId"]
    assert source == preview.outputs["bakeInstanceId"]
    assert image["options"].get("retainOnDelete"), "destroying the bake stack keeps the image"
    matrix = preview.outputs["imageMatrix"]
    assert image["inputs"]["tags"][MATRIX_TAG] == matrix_digest(tuple(matrix.items()))
    assert preview.outputs["bakedImage"] == f"{image['name']}-id"
    module = image_module(preview.plan.cloud)
    (machine,) = [r for r in preview.resources if r["type"] == module.INSTANCE]
    assert set(module.POWER_INPUTS) <= set(machine["options"].get("ignoreChanges", [])), "never powered on again"
    # A stack naming the image plans exactly the matrix the image records.
    baked = spec_and_plan(_stack(stack, tmp_path, image={"baked": preview.outputs["bakedImage"]}))[1]
    assert dict(baked.head.node.image_matrix) == matrix


@pytest.mark.parametrize("stack", sorted(CLOUDS))
def test_phase_instance_boots_the_bake_and_makes_no_image(stack, tmp_path):
    preview = run_program(_stack(stack, tmp_path), program=lambda: bake(MACHINE_PHASE))
    assert not [r for r in preview.resources if r["type"] == CLOUDS[stack]]
    assert "bakedImage" not in preview.outputs
    cluster = spec_and_plan(_stack(stack, tmp_path))[1].name
    named = [r["name"] for r in preview.resources if r["parent"] is None]
    assert named and all(name.startswith(f"{cluster}-bake") for name in named), "the bake's own, not the cluster's"


def test_a_bake_stack_reads_the_bake_user_data(tmp_path):
    """The head's user-data runs the bake; the seal and the poweroff are cloud-init's last module's, run once
    cloud-init's process ended (nothing of it writes into the image after the seal); the cluster's units are not
    enabled."""
    stack = _stack("aws-p5", tmp_path)
    spec = spec_and_plan(stack)[0]
    head = bake_for(spec, stack.name).cluster.head.user_data
    config = yaml.safe_load(head)
    assert config["runcmd"] == [[ENTRY, "bake"]]
    assert config["power_state"] == {"mode": "poweroff", "condition": [ENTRY, "seal"]}
    assert "gpufleet-train.service" not in head


@pytest.mark.parametrize("name", ["a" * 31, "ab", "abcdefghijklmnopqrstuvwxyz-abcd"])
def test_the_bake_is_named_within_a_cluster_names_rules(name, tmp_path):
    stack = _stack("aws-p5", tmp_path)
    spec = spec_and_plan(stack)[0].model_copy(update={"name": name})
    baked = bake_name(spec, stack.name)
    assert CLUSTER_NAME.match(baked) and baked.endswith("-bake") and baked != name
