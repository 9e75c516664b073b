"""`fleet image build`: a stack that cannot be baked is refused with exit 2 before any Pulumi step, and the bake is
seen finished only when the cloud's own state field of the bake machine says stopped (in `pulumi stack export`'s
deployment shape), not on another resource or another machine."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from pulumi import automation

from components.bake_program import image_module
from fleet.cli import main
from fleet.image_command import stopped
from fleet.preview import run_program
from plan.paths import PROJECT_ROOT
from spec.configkeys import BAKE_KEY
from spec.stackfile import StackFile

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


class _Workspace:
    """Pulumi's Automation API as `fleet image build` drives it, standing in for the CLI: a stack's settings go where
    the CLI writes them (the workspace's directory, under the `stackConfigDir` of a Pulumi.yaml there), and `up`
    runs the stack's program (the one it was made with, or the one `up` names) under the preview's mocks."""

    def __init__(self) -> None:
        self.settings: list[Path] = []
        self.config: dict[str, str] = {}
        self.previews: list = []
        self.destroyed = False

    def create_or_select_stack(self, stack_name, project_name=None, program=None, work_dir=None, opts=None):
        where = Path(opts.work_dir if program is not None and opts and opts.work_dir else work_dir or "/nonexistent")
        project = where / "Pulumi.yaml"
        config_dir = yaml.safe_load(project.read_text()).get("stackConfigDir", "") if project.is_file() else ""
        self.settings.append(where / config_dir / f"Pulumi.{stack_name}.yaml")
        self.stack_name, self.program = stack_name, program
        return self

    def set_config(self, key, value):
        self.config[key] = value.value

    def set_all_config(self, config):
        self.config |= {key: value.value for key, value in config.items()}

    def up(self, on_output=None, program=None):
        stack = StackFile(name=self.stack_name, path=self.settings[-1], config=dict(self.config))
        preview = run_program(stack, program=program or self.program)
        self.previews.append(preview)
        return SimpleNamespace(outputs={key: SimpleNamespace(value=value) for key, value in preview.outputs.items()})

    def refresh(self):
        pass

    def export_stack(self):
        machine = self.previews[-1].outputs["bakeInstanceId"]
        return SimpleNamespace(deployment=_deployment("aws", machine, image_module("aws").STATE[1]))

    def destroy(self, on_output=None):
        self.destroyed = True


def test_the_bake_runs_its_own_program_and_leaves_no_stack_file_in_stacks(monkeypatch, capsys):
    """The bake stack's settings never land in stacks/ (where a file holding the bake would be a stack that `pulumi
    up` turns into a bake), and its program is the bake's in each phase, not a key in a stack's config."""
    workspace = _Workspace()
    monkeypatch.setattr(automation, "create_or_select_stack", workspace.create_or_select_stack)
    before = sorted((PROJECT_ROOT / "stacks").iterdir())
    assert main(["image", "build", "--stack", "aws-p5"]) == 0, capsys.readouterr().err
    assert sorted((PROJECT_ROOT / "stacks").iterdir()) == before
    assert workspace.settings and not any(p.is_relative_to(PROJECT_ROOT / "stacks") for p in workspace.settings)
    assert BAKE_KEY not in workspace.config and workspace.config["aws:region"] == "us-east-1"
    machine, image = workspace.previews
    ami = "aws:ec2/amiFromInstance:AmiFromInstance"
    assert not [r for r in machine.resources if r["type"] == ami], "phase instance makes no image"
    assert [r for r in image.resources if r["type"] == ami], "phase image makes it"
    assert workspace.destroyed
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["image"] == image.outputs["bakedImage"]
