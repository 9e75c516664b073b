"""The harness's baked images (here.boot.baked): what the bake machine's disk becomes as an image, and a stack that
names an image not baked here. The merge mounts an overlay in a mount namespace of its own: root, no machine booted."""

from __future__ import annotations

import os
import stat

import pytest

from fleet.stacks import resolve, spec_and_plan
from here.boot import baked, cluster, rehearsal


@pytest.fixture
def images(tmp_path, monkeypatch):
    monkeypatch.setattr(baked, "BAKED", tmp_path / "baked")
    return tmp_path


def test_the_image_is_the_bake_disk_over_its_base_without_the_harness_files(images, needs_root):
    base, disk = images / "base", images / "disk"
    for path, text in {"etc/hosts": "base hosts\n", "opt/gone": "deleted by the bake\n", "opt/kept": "base\n"}.items():
        (base / path).parent.mkdir(parents=True, exist_ok=True)
        (base / path).write_text(text)
    (disk / "etc").mkdir(parents=True)
    (disk / "etc/hosts").write_text("the harness's hosts\n")  # put there by the harness before the boot
    (disk / "opt/venv").mkdir(parents=True)
    (disk / "opt/venv/torch").write_text("installed by the bake\n")
    os.mknod(disk / "opt/gone", stat.S_IFCHR | 0o000, os.makedev(0, 0))  # overlayfs's whiteout: the bake removed it

    assert baked.tree("boot-x") is None
    tree = baked.keep("boot-x", disk, base, ["/etc/hosts"], {"digest": "d"})

    assert baked.tree("boot-x") == tree
    assert (tree / "opt/venv/torch").read_text() == "installed by the bake\n"
    assert (tree / "opt/kept").read_text() == "base\n"
    assert not (tree / "opt/gone").exists()
    assert (tree / "etc/hosts").read_text() == "base hosts\n"


def test_a_stack_naming_an_image_not_baked_here_says_so_before_booting(images):
    stack = rehearsal.with_setting(resolve("tencent-spot", None), "image", {"baked": "boot-nothing"})
    plan = spec_and_plan(stack, booted=True)[1]
    with pytest.raises(ValueError, match=r"image.baked: boot-nothing is no image baked here; bake one with `fleet "
                                         r"image build --stack NAME --boot`"):
        cluster.lower(plan)
