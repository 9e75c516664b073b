"""A baked image on the node, run for real: a node booted from the planner's user-data records the matrix its plan
asks for (`gpufleet-image record`, what the bake runs last) and a node in baked mode checks it first in its gate:
the same matrix passes and installs nothing, a differing part fails the gate for good naming the part, and an image
that was never baked fails as well."""

from __future__ import annotations

import json

from bootstrap_helpers import run
from test_local_scripts import local_node  # noqa: F401  (the fixture)


def _baked_node(local_node, **settings):  # noqa: F811
    root, entry, env, plan = local_node(software_mode="baked", **settings)
    return root, entry, env, root / "opt/gpufleet/bin/gpufleet-image"


def _planned(root) -> dict[str, str]:
    return dict(json.loads((root / "etc/gpufleet/node.json").read_text())["image_matrix"])


def test_an_image_holding_the_plans_matrix_passes(local_node):  # noqa: F811
    root, _, env, image = _baked_node(local_node)
    assert run([image, "record"], root, env).returncode == 0
    assert json.loads((root / "etc/gpufleet/image.json").read_text())["matrix"] == _planned(root)
    result = run([image, "check"], root, env)
    assert result.returncode == 0, result.stderr
    assert "holds the plan's matrix" in result.stderr


def test_a_part_that_differs_fails_naming_it_and_the_gate_stops_there(local_node, tmp_path):  # noqa: F811
    root, entry, env, image = _baked_node(local_node, failure_uri=f"file://{tmp_path}/bucket/failures")
    assert run([image, "record"], root, env).returncode == 0
    recorded = root / "etc/gpufleet/image.json"
    matrix = json.loads(recorded.read_text())["matrix"]
    planned_tools = matrix["tools"].split()
    matrix["tools"] = " ".join(["awscli==0.0.1", *planned_tools[1:]])
    recorded.write_text(json.dumps({"matrix": matrix}))
    result = run([entry, "gate"], root, env)
    assert result.returncode == 1
    reason = f"image:tools:baked=awscli==0.0.1:planned={planned_tools[0]}"
    assert (root / "run/gpufleet/failure").read_text() == f"{reason}\n"
    metrics = (root / "var/lib/gpufleet/metrics/health.prom").read_text()
    assert f'gpufleet_permanent_failures{{reason="{reason}"}} 1' in metrics, "a replacement boots the same image"


def test_an_image_never_baked_fails_for_good(local_node):  # noqa: F811
    root, _, env, image = _baked_node(local_node)
    result = run([image, "check"], root, env)
    assert result.returncode == 1
    assert (root / "run/gpufleet/failure").read_text().startswith("image:unbaked:")


def test_other_images_have_nothing_to_check(local_node):  # noqa: F811
    root, _, env, _ = local_node(software_mode="install")
    result = run([root / "opt/gpufleet/bin/gpufleet-image", "check"], root, env)
    assert result.returncode == 0, result.stderr
    assert not (root / "etc/gpufleet/image.json").exists()


def test_a_baked_node_installs_no_python_packages(local_node):  # noqa: F811
    """Local nodes skip the venv anyway, so this runs as a cloud node would: GF_LOCAL=0 with packages to install."""
    root, _, env, _ = local_node(software_mode="baked", pip_packages=("torch==2.13.0",))
    with open(root / "etc/gpufleet/node.env", "a") as node_env:  # installed as a local node, now run as a cloud's
        node_env.write("GF_LOCAL='0'\n")
    result = run([root / "opt/gpufleet/bin/gpufleet-python"], root, env)
    assert result.returncode == 0, result.stderr
    assert not (root / "opt/gpufleet/venv").exists(), "the venv is the image's"


def test_a_bake_that_did_not_finish_is_not_sealed(local_node, tmp_path):  # noqa: F811
    """The seal is the bake's power_state condition (exit 1: not met, the machine is not powered off and imaged).
    The tools it would run on the machine (cloud-init, journalctl, systemctl) are stand-ins here that record their
    call (never this host's)."""
    root, _, env, _ = _baked_node(local_node)
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("cloud-init", "journalctl", "systemctl"):
        (tools / tool).write_text(f"#!/bin/sh\necho {tool} >> {tmp_path}/called\n")
        (tools / tool).chmod(0o755)
    env = {**env, "PATH": f"{tools}:{env.get('PATH', '/usr/bin:/bin')}"}
    result = run([root / "opt/gpufleet/bin/gpufleet-bake", "seal"], root, env)
    assert result.returncode == 1
    assert "the bake did not finish" in result.stderr
    assert not (tmp_path / "called").exists()
    assert (root / "etc/gpufleet/node.env").exists(), "nothing removed"
