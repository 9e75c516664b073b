"""A real bake in the harness (`fleet image build --boot`'s): one machine boots the bake user-data on the stack's base
stand-in, installs and records the matrix, is sealed once cloud-init is done and powers off; the image kept from its
disk holds the matrix and nothing of that machine's own. A few minutes; boots a machine (root)."""

from __future__ import annotations

import json

import pytest

from clouds.plans import bake_for
from fleet.stacks import facts_for, resolve, spec_and_plan
from here.boot import baked, rehearsal
from here.boot.bake import build


@pytest.fixture(scope="module")
def image(needs_root):
    """The tree of a bake of tencent-spot with the tiny job (a plain base: the whole matrix is installed), as
    benchmarks/baked_boot.py bakes it. An image's id covers the bake user-data and the code bundle, so one found in the
    cache was baked by this very code."""
    stack = rehearsal.with_job(resolve("tencent-spot", None), rehearsal.TINY_JOB)
    spec, facts = facts_for(stack, spec_and_plan(stack, booted=True)[0])
    bake = bake_for(spec, stack.name, facts, booted=True)
    return baked.tree(build(bake, timeout=600)), bake


def test_the_image_records_the_matrix_it_was_baked_with(image):
    tree, bake = image
    assert json.loads((tree / "etc/gpufleet/image.json").read_text())["matrix"] == dict(bake.matrix)


def test_the_image_holds_no_instance_state_of_the_bake_machine(image):
    tree, _ = image
    cloud = tree / "var/lib/cloud"
    left = sorted(str(p.relative_to(cloud)) for p in cloud.rglob("*") if p.relative_to(cloud).parts[0] != "seed")
    assert left == [], "cloud-init's record of the bake instance (instance/, instances/, data/) is in the image"
    assert (tree / "etc/machine-id").read_bytes() == b"", "each node makes its own machine id"
    assert not (tree / "var/lib/systemd/random-seed").exists()
    assert not (tree / "var/lib/gpufleet").exists()
    assert not any((tree / "etc/gpufleet").glob("node.*"))
    assert not list((tree / "etc/systemd/system").glob("gpufleet-*"))


def test_the_image_holds_no_log_of_the_bake_boot(image):
    tree, _ = image
    assert not list((tree / "var/log").glob("cloud-init*.log"))
    assert list((tree / "var/log/journal").iterdir()) == [], "the bake boot's journal is in the image"
