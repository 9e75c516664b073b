"""gpufleet-monitor on a node in cloud mode, against stub docker/apt/dpkg/systemctl/ip: the containers come through
the plan's registry mirror, added to the image's own daemon settings (a DL image's NVIDIA runtime stays), with one
docker restart when the mirror changes and none when it is already set; an image whose registry does not answer fails
the monitor within the plan's pull timeout, with the image in its own status, and no container waits on it. On a
baked image the monitor installs and pulls nothing: what the image lacks fails it as `baked:<what>`; `install` (the
bake's) installs the packages and pulls every role's images."""

from __future__ import annotations

import json
import time

from bootstrap_helpers import run
from node_cases import plan_of
from test_local_scripts import local_node  # noqa: F401  (the fixture)

MIRROR = "https://mirror.example.internal"
STUBS = {
    "ip": 'echo "10.0.0.1 via 10.0.0.254 dev eth0 src 10.0.0.5 uid 0"',
    # A pull of the image in GPUFLEET_TEST_UNREACHABLE hangs, as one from a registry the node cannot reach; the image
    # or package in GPUFLEET_TEST_ABSENT is not on the machine; GPUFLEET_TEST_DOCKER_DOWN: the daemon does not answer;
    # the container named in GPUFLEET_TEST_NO_START does not start (runc's error).
    "docker": 'echo "docker $*" >> "$GPUFLEET_TEST/calls"\n'
              'case "$1" in\n'
              '  pull) [ "${*: -1}" != "${GPUFLEET_TEST_UNREACHABLE:-}" ] || exec sleep 60 ;;\n'
              '  info) [ -z "${GPUFLEET_TEST_DOCKER_DOWN:-}" ] || exit 1 ;;\n'
              '  image) [ "${*: -1}" != "${GPUFLEET_TEST_ABSENT:-}" ] || exit 1 ;;\n'
              '  run) [[ " $* " != *" --name ${GPUFLEET_TEST_NO_START:-} "* ]] || exit 125 ;;\n'
              'esac',
    "systemctl": 'echo "systemctl $*" >> "$GPUFLEET_TEST/calls"',
    "dpkg": '[ "${*: -1}" != "${GPUFLEET_TEST_ABSENT:-}" ]',
    "apt-get": 'echo "apt-get $*" >> "$GPUFLEET_TEST/calls"',
}


PACKAGES = ("docker.io", "prometheus-node-exporter")
IMAGES = ("nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04", "prom/prometheus:v3.5.0",
          "grafana/grafana-oss:11.6.0")


def _monitor(local_node, tmp_path, mirror, gpus=0, settings="", role="worker", **plan):  # noqa: F811
    root, _, env, _ = local_node(role=role, gpus=gpus, mirrors_registry=mirror, monitor_packages=PACKAGES,
                                 monitor_images=IMAGES, **plan)
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
    assert _status(root) == "gpufleet_monitor_up 1\n", "a later good start clears the reason"


def _status(root) -> str:
    return (root / "var/lib/gpufleet/metrics/monitor.prom").read_text()


def _calls(calls) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_plain_image_installs_what_it_lacks_and_pulls_its_roles_images(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, MIRROR, gpus=1)
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env | {"GPUFLEET_TEST_ABSENT": PACKAGES[1]})
    assert result.returncode == 0, result.stderr
    installs = [line for line in _calls(calls) if line.startswith("apt-get") and " install " in line]
    assert len(installs) == 1 and installs[0].endswith(f" {PACKAGES[1]}"), "only what the image lacks"
    assert [line.split()[-1] for line in _calls(calls) if line.startswith("docker pull")] == [IMAGES[0]], \
        "a worker pulls its own image (the DCGM exporter), not the head's"
    assert _status(root) == "gpufleet_monitor_up 1\n"


def test_a_baked_node_installs_and_pulls_nothing_and_comes_up(local_node, tmp_path):  # noqa: F811
    root, env, daemon, calls = _monitor(local_node, tmp_path, MIRROR, gpus=1, role="head", software_mode="baked")
    before = daemon.read_text()
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env)
    assert result.returncode == 0, result.stderr
    assert not [line for line in _calls(calls) if line.startswith(("apt-get", "docker pull"))]
    assert [line.split()[-1] for line in _calls(calls) if line.startswith("docker image inspect")] == \
        [IMAGES[0], IMAGES[1], IMAGES[2]], "every image this role runs is checked on the image"
    assert sum(line.startswith("docker run") for line in _calls(calls)) == 3
    assert daemon.read_text() == before, "no pull: the mirror is the bake's business"
    assert _status(root) == "gpufleet_monitor_up 1\n"


def test_a_baked_image_without_a_package_fails_the_monitor_without_installing_it(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, MIRROR, software_mode="baked")
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env | {"GPUFLEET_TEST_ABSENT": PACKAGES[1]})
    assert result.returncode == 1
    assert _status(root) == f'gpufleet_monitor_up{{reason="baked:{PACKAGES[1]}"}} 0\n'
    assert "FATAL: the baked image lacks prometheus-node-exporter" in result.stderr
    assert not [line for line in _calls(calls) if line.startswith(("apt-get", "docker"))]
    assert not (root / "run/gpufleet/failure").exists(), "the gate's failure record is the gate's alone"


def test_a_baked_image_without_an_image_fails_the_monitor_without_pulling_it(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, MIRROR, gpus=1, software_mode="baked")
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env | {"GPUFLEET_TEST_ABSENT": IMAGES[0]})
    assert result.returncode == 1
    assert _status(root) == f'gpufleet_monitor_up{{reason="baked:{IMAGES[0]}"}} 0\n'
    assert not [line for line in _calls(calls) if line.startswith(("apt-get", "docker pull", "docker run"))]


def test_a_docker_daemon_that_does_not_answer_is_the_monitors_reason(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, MIRROR, gpus=1, software_mode="baked")
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env | {"GPUFLEET_TEST_DOCKER_DOWN": "1"})
    assert result.returncode == 1
    assert _status(root) == 'gpufleet_monitor_up{reason="docker:down"} 0\n'
    assert "systemctl start docker" in _calls(calls), "a daemon still starting is waited for first"
    assert not [line for line in _calls(calls) if line.startswith("docker run")]


def test_the_bakes_install_takes_every_roles_images_and_starts_nothing(local_node, tmp_path):  # noqa: F811
    root, env, daemon, calls = _monitor(local_node, tmp_path, MIRROR, software_mode="baked")
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor", "install"], root,
                 env | {"GPUFLEET_TEST_ABSENT": PACKAGES[1]})
    assert result.returncode == 0, result.stderr
    assert [line.split()[-1] for line in _calls(calls) if line.startswith("docker pull")] == list(IMAGES), \
        "a CPU worker's bake still takes the head's and the GPU nodes' images: one image serves every role"
    assert any(line.startswith("apt-get") and line.endswith(PACKAGES[1]) for line in _calls(calls))
    assert json.loads(daemon.read_text())["registry-mirrors"] == [MIRROR]
    assert not [line for line in _calls(calls) if line.startswith(("docker run", "systemctl restart prometheus"))]


def test_the_heads_monitor_survives_a_failed_discovery(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, MIRROR, role="head")
    discover = root / "opt/gpufleet/bin/gpufleet-discover"
    discover.write_text("#!/bin/sh\nexit 1\n")  # the cloud's API out of reach
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env)
    assert result.returncode == 0, result.stderr
    assert "gpufleet-discover.timer retries" in result.stderr
    assert [line.split()[4] for line in _calls(calls) if line.startswith("docker run")] == ["prometheus", "grafana"]
    assert _status(root) == "gpufleet_monitor_up 1\n"


def test_a_container_that_does_not_start_is_the_monitors_reason(local_node, tmp_path):  # noqa: F811
    root, env, _, calls = _monitor(local_node, tmp_path, MIRROR, role="head")
    result = run([root / "opt/gpufleet/bin/gpufleet-monitor"], root, env | {"GPUFLEET_TEST_NO_START": "prometheus"})
    assert result.returncode == 1
    assert _status(root) == 'gpufleet_monitor_up{reason="run:prometheus"} 0\n'
    assert not [line for line in _calls(calls) if line.startswith("docker run") and "grafana" in line]
