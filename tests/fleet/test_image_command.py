"""`fleet image build`: a stack that cannot be baked is refused with exit 2 before any Pulumi step, and the bake is
seen finished only when the cloud's own state field of the bake machine says stopped (in `pulumi stack export`'s
deployment shape), not on another resource or another machine."""

from __future__ import annotations

import pytest

from components.bake_program import image_module
from fleet.cli import main
from fleet.image_command import stopped

CLOUDS = ("aws", "alicloud", "tencentcloud")


def test_the_local_stack_has_no_image_to_bake(capsys):
    assert main(["image", "build", "--stack", "local"]) == 2
    assert "no image to bake" in capsys.readouterr().err


def test_a_bad_stack_is_refused_naming_the_field(capsys, write_stack):
    path = write_stack({"cloud": "aws", "instanceType": "p5.48xlarge", "nodes": 2, "image": {"baked": ""}})
    assert main(["image", "build", "--stack-file", str(path)]) == 2
    assert "image.baked" in capsys.readouterr().err


def _deployment(cloud: str, machine: str, value: str, kind: str | None = None) -> dict:
    images = image_module(cloud)
    field = images.STATE[0]
    return {"resources": [{"type": kind or images.INSTANCE, "id": machine, "outputs": {field: value}}]}


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_bake_is_finished_when_its_machine_is_stopped(cloud):
    stopped_value = image_module(cloud).STATE[1]
    assert stopped(_deployment(cloud, "i-1", stopped_value), cloud, "i-1")
    assert not stopped(_deployment(cloud, "i-1", "running"), cloud, "i-1")
    assert not stopped(_deployment(cloud, "i-2", stopped_value), cloud, "i-1"), "another machine"
    assert not stopped(_deployment(cloud, "i-1", stopped_value, kind="other:type"), cloud, "i-1")
