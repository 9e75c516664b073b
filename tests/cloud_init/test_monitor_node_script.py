"""gpufleet-monitor on a node in cloud mode, against stub docker/apt/systemctl/ip: the containers come through the
plan's registry mirror, added to the image's own daemon settings (a DL image's NVIDIA runtime stays), with one docker
restart when the mirror changes and none when it is already set; an image whose registry does not answer fails the
monitor within the plan's pull timeout, with the image in its own status, and no container waits on it."""

from __future__ import annotations

import json
import time

from bootstrap_helpers import run
from node_cases import plan_of
from test_local_scripts import local_node  # noqa: F401  (the fixture)

MIRROR = "https://mirror.example.internal"
STUBS = {
    "ip": 'echo "10.0.0.1 via 10.0.0.254 dev eth0 src 10.0.0.5 uid 0"',
    # A pull of an image in GPUFLEET_TEST_UNREACHABLE hangs, as one from a registry the node cannot reach.
    "docker": 'echo "docker $*" >> "$GPUFLEET_TEST/calls"\n'
              'if [ "$1" = pull ] && [ "${*: -1}" = "${GPUFLEET_TEST_UNREACHABLE:-}" ]; then exec sleep 60; fi',
    "systemctl": 'echo "systemctl $*" >> "$GPUFLEET_TEST/calls"',
    "dpkg": "exit 0",
    "apt-get": 'echo "apt-get $*" >> "$GPUFLEET_TEST/calls"',
}


def _monitor(local_node, tmp_path, mirror, gpus=0, settings=""):  # noqa: F811
    root, _, env, _ = local_node(role="worker", gpus=gpus, mirrors_registry=mirror)
    with open(root / "etc/gpufleet/node.env", "a") as node_env:  # installed as a local node, now run as a cloud's
        node_env.write(f"GF_LOCAL='0'\n{settings}")
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


def test_an_image_no_registry_answers_for_fails_the_monitor_fast_in_its_own_status(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, "", gpus=1, settings="GF_IMAGE_PULL_TIMEOUT_S='1'\n")
    image = plan_of("local").head.node.dcgm_exporter_image  # nvcr.io's, which no cloud here mirrors
    started = time.monotonic()
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env | {"GPUFLEET_TEST_UNREACHABLE": image})
    assert result.returncode == 1 and time.monotonic() - started < 30, "the pull's timeout, not the registry's"
    status = (root / "var/lib/gpufleet/metrics/monitor.prom").read_text()
    assert status == f'gpufleet_monitor_up{{reason="pull:{image}"}} 0\n'
    assert f"could not pull {image} within 1s" in result.stderr
    assert not [line for line in calls.read_text().splitlines() if line.startswith("docker run")]
    assert not (root / "run/gpufleet/failure").exists(), "the gate's failure record is the gate's alone"
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env)
    assert result.returncode == 0, result.stderr
    assert not (root / "var/lib/gpufleet/metrics/monitor.prom").exists(), "a later good start clears the status"
