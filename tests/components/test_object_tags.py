"""Every resource a stack declares takes the tags it is given, with the most tags the spec allows a stack: the
cloud's per-resource limit for every resource, and for objects in the bucket (the code bundle) S3's and COS's 10
(docs/cloud-facts.md#object-tags), which carry gpufleet's own tags only. A stack with 8 or more tags of its own once
failed at the code bundle's upload."""

from __future__ import annotations

import copy

import pytest
import yaml
from stack_preview import SHIPPED

from clouds import CLOUDS
from fleet.preview import run_program
from plan.limits import OBJECT_TAGS_MAX, OWN_TAG_COUNT, own_tag
from spec.stackfile import CLUSTER_KEY, load_stack_file

TAGGED = sorted(name for name, cloud in CLOUDS.items() if cloud.limits.tags)


def _most_tags(cloud: str, tmp_path):
    """The cloud's first shipped stack with as many tags of its own as the spec lets it have."""
    path = next(p for p in SHIPPED if load_stack_file(p).config[CLUSTER_KEY]["cloud"] == cloud)
    config = copy.deepcopy(load_stack_file(path).config)
    room = CLOUDS[cloud].limits.tags.max_tags - OWN_TAG_COUNT
    config[CLUSTER_KEY]["tags"] = {f"team{index:02d}": f"value{index}" for index in range(room)}
    stack = tmp_path / f"Pulumi.{cloud}-tags.yaml"
    stack.write_text(yaml.safe_dump({"config": config}))
    return run_program(load_stack_file(stack))


@pytest.mark.parametrize("cloud", TAGGED)
def test_every_resource_takes_its_tags_with_the_most_a_stack_may_write(cloud, tmp_path):
    preview = _most_tags(cloud, tmp_path)
    limit = CLOUDS[cloud].limits.tags.max_tags
    tagged = [r for r in preview.resources if isinstance(r["inputs"].get("tags"), dict)]
    objects = [r for r in tagged if "ucketobject" in r["type"].lower()]
    assert tagged and (objects or cloud == "alicloud")  # OSS objects take no tags from the realizer
    for resource in tagged:
        allowed = OBJECT_TAGS_MAX if resource in objects else limit
        assert len(resource["inputs"]["tags"]) <= allowed, (resource["type"], len(resource["inputs"]["tags"]))
    for resource in objects:
        assert all(own_tag(key) for key in resource["inputs"]["tags"]), "objects carry gpufleet's own tags"
        assert resource["inputs"]["tags"]["gpufleet:cluster"] == preview.plan.identity
