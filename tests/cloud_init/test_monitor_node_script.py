"""gpufleet-monitor on a node in cloud mode, against stub docker/apt/systemctl/ip: the containers come through the
plan's registry mirror, added to the image's own daemon settings (a DL image's NVIDIA runtime stays), with one docker
restart when the mirror changes and none when it is already set."""

from __future__ import annotations

import json

from bootstrap_helpers import run
from test_local_scripts import local_node  # noqa: F401  (the fixture)

MIRROR = "https://mirror.example.internal"
STUBS = {
    "ip": 'echo "10.0.0.1 via 10.0.0.254 dev eth0 src 10.0.0.5 uid 0"',
    "docker": 'echo "docker $*" >> "$GPUFLEET_TEST/calls"',
    "systemctl": 'echo "systemctl $*" >> "$GPUFLEET_TEST/calls"',
    "dpkg": "exit 0",
    "apt-get": 'echo "apt-get $*" >> "$GPUFLEET_TEST/calls"',
}


def _monitor(local_node, tmp_path, mirror):  # noqa: F811
    root, _, env, _ = local_node(role="worker", gpus=0, registry_mirror=mirror)
    with open(root / "etc/gpufleet/node.env", "a") as node_env:  # installed as a local node, now run as a cloud's
        node_env.write("GF_LOCAL='0'\n")
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    for name, body in STUBS.items():
        (stubs / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (stubs / name).chmod(0o755)
    daemon = root / "etc/docker/daemon.json"
    daemon.parent.mkdir(parents=True, exist_ok=True)
    daemon.write_text('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}\n')
    env = env | {"PATH": f"{stubs}:{env['PATH']}", "GPUFLEET_TEST": str(tmp_path)}
    return root, env, daemon, tmp_path / "calls"


def test_the_containers_come_through_the_mirror_beside_the_images_runtime(local_node, tmp_path):  # noqa: F811
    root, env, daemon, calls = _monitor(local_node, tmp_path, MIRROR)
    monitor = root / "opt/gpufleet/bin/gpufleet-monitor"
    result = run([monitor], root, env)
    assert result.returncode == 0, result.stderr
    assert json.loads(daemon.read_text()) == {"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},
                                              "registry-mirrors": [MIRROR]}
    assert calls.read_text().splitlines().count("systemctl restart docker") == 1
    calls.unlink()
    assert run([monitor], root, env).returncode == 0
    assert "systemctl restart docker" not in calls.read_text().splitlines(), "already set: no restart"


def test_without_a_mirror_the_daemon_settings_are_left_alone(local_node, tmp_path):  # noqa: F811
    root, env, daemon, calls = _monitor(local_node, tmp_path, "")
    before = daemon.read_text()
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env)
    assert result.returncode == 0, result.stderr
    assert daemon.read_text() == before and "restart docker" not in calls.read_text()
