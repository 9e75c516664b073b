"""A real bake in the harness (`fleet image build --boot`'s): one machine boots the bake user-data on the stack's base
stand-in, installs and records the matrix (the monitor's packages and every role's container images with it, from the
harness's mirror and registry stand-in), is sealed once cloud-init is done and powers off; the image kept from its
disk holds the matrix and nothing of that machine's own. Then one boot from it: the head as baked brings its monitor
up (Docker, the node exporter, the stand-in containers) fetching nothing from outside; the worker, as a node of an
image baked before the matrix held the monitor, fails its gate for good. A few minutes; boots machines (root)."""

from __future__ import annotations

import json
import time

import pytest

from clouds.plans import bake_for
from fleet.stacks import facts_for, resolve, spec_and_plan
from here.boot import baked, rehearsal
from here.boot.bake import build
from here.boot.cluster import Boot

MONITOR_UP = "gpufleet_monitor_up 1\n"


@pytest.fixture(scope="module")
def image(needs_root):
    """The tree of a bake of tencent-spot with the tiny job (a plain base: the whole matrix is installed), as
    benchmarks/baked_boot.py bakes it. An image's id covers the bake user-data and the code bundle, so one found in the
    cache was baked by this very code."""
    stack = rehearsal.with_job(resolve("tencent-spot", None), rehearsal.TINY_JOB)
    spec, facts = facts_for(stack, spec_and_plan(stack, booted=True)[0])
    bake = bake_for(spec, stack.name, facts, booted=True)
    return baked.tree(build(bake, timeout=600)), bake, stack, spec


def test_the_image_records_the_matrix_it_was_baked_with(image):
    tree, bake, _, _ = image
    assert json.loads((tree / "etc/gpufleet/image.json").read_text())["matrix"] == dict(bake.matrix)


def test_the_image_holds_no_instance_state_of_the_bake_machine(image):
    tree, _, _, _ = image
    cloud = tree / "var/lib/cloud"
    left = sorted(str(p.relative_to(cloud)) for p in cloud.rglob("*") if p.relative_to(cloud).parts[0] != "seed")
    assert left == [], "cloud-init's record of the bake instance (instance/, instances/, data/) is in the image"
    assert (tree / "etc/machine-id").read_bytes() == b"", "each node makes its own machine id"
    assert not (tree / "etc/docker/key.json").exists(), "each node makes its own Docker engine key"
    assert not (tree / "var/lib/systemd/random-seed").exists()
    assert not (tree / "var/lib/gpufleet").exists()
    assert not any((tree / "etc/gpufleet").glob("node.*"))
    assert not list((tree / "etc/systemd/system").glob("gpufleet-*"))


def test_the_image_holds_no_log_of_the_bake_boot(image):
    tree, _, _, _ = image
    assert not list((tree / "var/log").glob("cloud-init*.log"))
    assert list((tree / "var/log/journal").iterdir()) == [], "the bake boot's journal is in the image"


def test_the_image_holds_the_monitors_packages_and_every_roles_images(image):
    tree, bake, _, _ = image
    status = (tree / "var/lib/dpkg/status").read_text()
    for package in dict(bake.matrix)["monitor-packages"].split():
        assert f"Package: {package}\nStatus: install ok installed\n" in status
    repositories = json.loads((tree / "var/lib/docker/image/vfs/repositories.json").read_text())["Repositories"]
    held = {tag for tags in repositories.values() for tag in tags if "@" not in tag}
    assert held == set(dict(bake.matrix)["monitor-images"].split())


@pytest.fixture(scope="module")
def booted(image):
    """The stack booted from the image: the head as baked; the worker with the image.json an image baked before the
    matrix held the monitor would carry. Until both monitors have written their status (at most 240 s)."""
    tree, _, stack, spec = image
    ref = tree.parent.name
    plan = spec_and_plan(rehearsal.with_setting(stack, "image", {"baked": ref, "base": spec.image_base}),
                         booted=True)[1]
    matrix = json.loads((tree / "etc/gpufleet/image.json").read_text())
    older = {"matrix": {part: value for part, value in matrix["matrix"].items() if not part.startswith("monitor-")}}
    files = {"/etc/gpufleet/image.json": (json.dumps(older).encode(), 0o644)}
    with Boot(plan, keep=False, files={"worker-1": files}) as boot:
        status, deadline = {}, time.monotonic() + 240
        while len(status) < len(boot.nodes) and time.monotonic() < deadline:
            for node in boot.nodes:
                if node.name not in status and (text := node.machine.read("/var/lib/gpufleet/metrics/monitor.prom")):
                    status[node.name] = (text.decode(), time.monotonic() - node.machine.started)
            time.sleep(1)
        yield boot, status


def test_a_node_of_the_image_brings_its_monitor_up_fetching_nothing(booted):
    boot, status = booted
    head = boot.node("head").machine
    assert status["head"][0] == MONITOR_UP, head.run("journalctl", "-u", "gpufleet-monitor", "--no-pager").stdout
    print(f"head monitor up {status['head'][1]:.1f} s after power-on")
    names = head.run("docker", "ps", "--format", "{{.Names}}").stdout.split()
    assert sorted(names) == ["dcgm-exporter", "grafana", "prometheus"], "the stand-in containers run"
    assert boot.fetched_outside()["head"] == 0, "nothing from the mirrors or the registries"


def test_an_image_baked_before_the_monitor_was_in_the_matrix_fails_the_gate_for_good(booted):
    boot, status = booted
    worker = boot.node("worker-1").machine
    reason = worker.read("/run/gpufleet/failure")
    assert reason is not None and reason.decode().startswith(
        "image:monitor-packages:baked=-:planned=docker.io prometheus-node-exporter"), reason
    metrics = (worker.read("/var/lib/gpufleet/metrics/health.prom") or b"").decode()
    assert 'gpufleet_permanent_failures{reason="image:monitor-packages:' in metrics
