"""A stack that names a baked image (`image: {baked: ID, base: ...}`): its nodes are planned in baked mode, and the
matrix they check is exactly the one the bake of the same stack records, whether the bake started from `auto` (a
deep-learning image that brings its driver, or a plain one that installs the pin) or from a plain image the stack
named; a malformed baked image is refused naming the field."""

from __future__ import annotations

import copy

import pytest
import yaml

from fleet.stacks import spec_and_plan
from plan.paths import PROJECT_ROOT
from spec.errors import SpecError
from spec.stackfile import CLUSTER_KEY, load_stack_file, stack_name_of

STACKS = sorted({stack_name_of(p) for p in (PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml")} - {"local"})


def _plan_with_image(stack: str, image, tmp_path):
    """The shipped stack with its `image` replaced, planned as the tools plan it."""
    shipped = load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    config = copy.deepcopy(shipped.config)
    config[CLUSTER_KEY]["image"] = image
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return spec_and_plan(load_stack_file(path))[1]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("base", ["auto", "img-plain-0123"])
def test_a_baked_stack_checks_the_matrix_its_bake_records(stack, base, tmp_path):
    baked = _plan_with_image(stack, {"baked": "img-baked-0123", "base": base}, tmp_path)
    bake = _plan_with_image(stack, base, tmp_path)
    for role in ("head", "worker"):
        node = getattr(baked, role).node
        assert node.software.mode == "baked"
        assert node.image_matrix == getattr(bake, role).node.image_matrix
    assert baked.image.ref == "img-baked-0123" and baked.image.baked


def test_the_driver_part_follows_the_base(tmp_path):
    """AWS's `auto` brings its driver (held to the branch); a plain base had the pin installed."""
    from_auto = dict(_plan_with_image("aws-p5", {"baked": "ami-1"}, tmp_path).head.node.image_matrix)
    from_plain = dict(_plan_with_image("aws-p5", {"baked": "ami-1", "base": "ami-plain"}, tmp_path).head.node
                      .image_matrix)
    assert from_auto["driver"].startswith(">=")
    assert from_plain["driver"][0].isdigit()


@pytest.mark.parametrize(("image", "field"), [({"baked": ""}, "image.baked"), ({"bakd": "ami-1"}, "image.bakd"),
                                              ({"base": "auto"}, "image.baked")])
def test_a_malformed_baked_image_names_the_field(image, field, tmp_path):
    with pytest.raises(SpecError) as raised:
        _plan_with_image("aws-p5", image, tmp_path)
    assert field in raised.value.render()
