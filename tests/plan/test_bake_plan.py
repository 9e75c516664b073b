"""The bake's own decisions (plan/bake.py): its name, its one-node spec on the base image, the image's name and the
matrix digest its tag carries. The bake's Pulumi program is tests/components/test_bake_program.py's."""

from __future__ import annotations

import pytest
from spec_cases import shipped_spec

from clouds.plans import bake_for
from plan.bake import MATRIX_TAG, bake_name, bake_spec, matrix_digest
from plan.facts import DeployFacts
from spec.names import CLUSTER_NAME


def spec(**cluster):
    """The shipped stack with `cluster`'s settings; without a name where `cluster` gives none (a spec the stack file
    did not name: the bake falls back on the stack's)."""
    validated = shipped_spec("tencent-spot", **cluster)
    return validated if "name" in cluster else validated.model_copy(update={"name": None})


def test_the_digest_is_the_matrixs_whatever_the_order_it_is_listed_in():
    matrix = (("cuda", "12.4"), ("driver", "550.90.07"), ("torch", "2.4.0"))
    digest = matrix_digest(matrix)
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert matrix_digest(tuple(reversed(matrix))) == digest
    assert matrix_digest((("cuda", "12.4"), ("driver", "550.90.07"), ("torch", "2.5.0"))) != digest


def test_the_bake_is_named_after_the_cluster_or_else_its_stack():
    assert bake_name(spec(name="train"), "prod") == "train-bake"
    assert bake_name(spec(), "prod") == "prod-bake"
    assert bake_name(spec(), "Prod_EU").endswith("-bake") and CLUSTER_NAME.match(bake_name(spec(), "Prod_EU"))
    # Cut to leave room for the suffix, and never with a dash before it.
    cut = bake_name(spec(name="a" * 25 + "-bcdef"), "prod")
    assert cut == "a" * 25 + "-bake" and CLUSTER_NAME.match(cut)


def test_the_bake_spec_is_one_node_on_the_base_image_under_its_own_name():
    baked = spec(image={"baked": "img-0123", "base": "img-base"})
    bake = bake_spec(baked, "prod")
    assert (bake.image, bake.nodes, bake.name) == ("img-base", 1, "prod-bake")


def test_the_bake_plan_pins_the_looked_up_image_and_tags_the_image_with_its_matrix():
    auto = spec(image="auto")
    with pytest.raises(ValueError, match="image look-up"):
        bake_for(auto, "prod")
    bake = bake_for(auto, "prod", DeployFacts(image_id="img-looked-up"))
    assert bake.cluster.image.ref == "img-looked-up" and bake.cluster.image.pinned
    assert bake.cluster.name == "prod-bake" and ("gpufleet:stack", "prod") in bake.cluster.tags
    assert bake.digest == matrix_digest(bake.matrix) and (MATRIX_TAG, bake.digest) in bake.tags
    assert bake.image_name == f"prod-{bake.digest[:16]}"


def test_the_image_name_is_cut_to_fit_every_clouds_limit():
    long_name = "n" * 31
    bake = bake_for(spec(name=long_name), "prod")
    assert bake.image_name == f"{long_name}-{bake.digest[:16]}"
    long_stack = "s" * 45
    assert bake_for(spec(), long_stack).image_name == f"{'s' * 38}-{bake_for(spec(), long_stack).digest[:16]}"
