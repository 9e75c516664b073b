"""Which boots run the monitor for real, and what Docker in a harness machine gets (here.boot.cluster `monitor`,
here.boot.docker), checked without booting: a plain-image boot keeps today's apt mirror (no Docker: its monitor stops
at apt at once, so the other boot tests do not start installing Docker and pulling images), a baked image's boot
and a bake get the monitor's packages and the registry stand-in under the plan's names; the runtime wrapper cuts an
OCI spec's capabilities to the caller's bounding set and hands the rest to runc as it came."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fleet.stacks import resolve, spec_and_plan
from here.boot import apt, docker, rehearsal
from here.boot.cluster import Boot, apt_packages, node_settings

MONITOR = ("docker.io", "prometheus-node-exporter")


def _plans():
    stack = resolve("tencent-spot", None)
    spec, plain = spec_and_plan(stack, booted=True)
    baked = spec_and_plan(rehearsal.with_setting(stack, "image", {"baked": "boot-x", "base": spec.image_base}),
                          booted=True)[1]
    return plain, baked


def test_only_a_bake_and_a_baked_images_boot_run_the_monitor_for_real():
    plain, baked = _plans()
    settings = node_settings(plain.head.user_data)
    assert Boot(plain).monitor is False
    assert apt_packages(settings, Boot(plain).monitor) == tuple(apt.NODE_PACKAGES), "today's mirror: no Docker"
    assert Boot(baked).monitor is True
    assert apt_packages(node_settings(baked.head.user_data), True) == (*apt.NODE_PACKAGES, *MONITOR)
    assert Boot(plain, monitor=True).monitor is True  # what here.boot.bake.build asks for


def test_the_registry_stand_in_answers_under_the_plans_names():
    _, baked = _plans()
    settings = node_settings(baked.head.user_data)
    assert Boot(baked)._registries(settings) == ("nvcr.io", "registry-1.docker.io", "mirror.ccs.tencentyun.com")
    assert Boot(baked, internet=False)._registries(settings) == ("mirror.ccs.tencentyun.com",), \
        "with the internet blocked only the cloud's mirror answers"


def test_the_daemon_settings_name_the_wrapper_as_the_default_runtime():
    files = docker.files()
    daemon = json.loads(files["/etc/docker/daemon.json"][0])
    assert daemon["storage-driver"] == "vfs" and daemon["default-runtime"] == "gpufleet-boot"
    assert daemon["runtimes"]["gpufleet-boot"]["path"] == docker.RUNTIME and files[docker.RUNTIME][1] == 0o755


def test_the_wrapper_drops_what_the_bounding_set_lacks_and_runs_runc(tmp_path):
    wrapper = tmp_path / "gpufleet-boot-runc"
    wrapper.write_bytes(docker.files()[docker.RUNTIME][0])
    wrapper.chmod(0o755)
    runc = tmp_path / "bin" / "runc"
    runc.parent.mkdir()
    runc.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/runc-args\n')
    runc.chmod(0o755)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    caps = ["CAP_CHOWN", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SYS_ADMIN"]
    spec = {"process": {"capabilities": {key: caps for key in ("bounding", "effective", "permitted")}}, "root": {}}
    (bundle / "config.json").write_text(json.dumps(spec))
    argv = ["--root", "/run/x", "create", "--bundle", str(bundle), "--pid-file", "p", "id1"]
    env = {**os.environ, "PATH": f"{runc.parent}:{os.environ['PATH']}"}
    subprocess.run(["setpriv", "--bounding-set=-mknod,-sys_admin", sys.executable, str(wrapper), *argv], env=env,
                   check=True)
    cut = json.loads((bundle / "config.json").read_text())["process"]["capabilities"]
    assert cut == {key: ["CAP_CHOWN", "CAP_NET_RAW"] for key in ("bounding", "effective", "permitted")}
    assert (tmp_path / "runc-args").read_text().split() == argv, "runc gets the arguments as they came"
    subprocess.run([sys.executable, str(wrapper), "state", "id1"], env=env, check=True)
    assert (tmp_path / "runc-args").read_text().split() == ["state", "id1"]
