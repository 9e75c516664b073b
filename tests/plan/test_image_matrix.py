"""The matrix a baked image records holds the monitor too (issue 32: a baked node installs nothing): its packages and
every role's container images, the same for the head and the workers (one image serves every role), the DCGM
exporter only where the nodes have GPUs, under the registry the stack names for nvcr.io. An image baked without those
parts differs from the plan, which the gate's image check fails for good (plan.software.PERMANENT_FAILURES)."""

from __future__ import annotations

import sys

import pytest

from fleet.stacks import spec_and_plan
from plan.matrix import image_matrix
from plan.node import SoftwarePlan
from plan.paths import PROJECT_ROOT
from plan.software import PERMANENT_FAILURES
from plan.userdata import IMAGES
from spec.stackfile import load_stack_file, stack_name_of

sys.path.insert(0, str(PROJECT_ROOT / "cloud-init"))
from health import image  # the node's own check (standard library only)

STACKS = sorted({stack_name_of(p) for p in (PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml")} - {"local"})


def _matrix(path, booted=False) -> tuple[dict[str, str], dict[str, str]]:
    plan = spec_and_plan(load_stack_file(path), booted=booted)[1]
    return dict(plan.head.node.image_matrix), dict(plan.worker.node.image_matrix)


@pytest.mark.parametrize("stack", STACKS)
def test_every_cloud_stack_bakes_the_monitors_packages_and_every_roles_images(stack):
    head, worker = _matrix(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    assert head == worker, "one baked image serves the head and the workers"
    assert head["monitor-packages"] == "docker.io prometheus-node-exporter"
    assert head["monitor-images"] == f"{IMAGES['dcgm_exporter']} {IMAGES['prometheus']} {IMAGES['grafana']}"


def test_cpu_nodes_bake_no_dcgm_exporter_and_local_nodes_no_monitor():
    local = PROJECT_ROOT / "stacks" / "Pulumi.local.yaml"
    booted, _ = _matrix(local, booted=True)  # the local stack as the boot harness's machines run it: CPU nodes
    assert booted["monitor-images"] == f"{IMAGES['prometheus']} {IMAGES['grafana']}"
    assert booted["monitor-packages"] == "docker.io prometheus-node-exporter"
    on_host, _ = _matrix(local)  # processes on this machine: no monitor starts there
    assert (on_host["monitor-packages"], on_host["monitor-images"]) == ("", "")


def test_the_images_part_names_the_registry_the_stack_names_for_nvcr(write_stack, aws_cluster):
    before = _matrix(write_stack(aws_cluster))[0]["monitor-images"]
    aws_cluster["network"] = {"nvcrMirror": "registry.corp.example:5000/nvcr"}
    after = _matrix(write_stack(aws_cluster))[0]["monitor-images"]
    assert after == before.replace("nvcr.io/", "registry.corp.example:5000/nvcr/"), "a re-homed image is another image"


def test_an_image_baked_without_the_monitor_differs_for_good_naming_what_it_lacks():
    planned = dict(image_matrix(_software(), ("torch==2.13.0",), ("awscli==1.46.3",), ("docker.io", "node-exp"),
                                ("prom/prometheus:v3.5.0",)))
    before_monitor = {part: value for part, value in planned.items() if not part.startswith("monitor-")}
    assert image.differences(before_monitor, planned) == [
        "image:monitor-packages:baked=-:planned=docker.io node-exp",
        "image:monitor-images:baked=-:planned=prom/prometheus:v3.5.0"]
    lacking_one = planned | {"monitor-packages": "node-exp"}
    assert image.differences(lacking_one, planned) == ["image:monitor-packages:baked=-:planned=docker.io"]
    assert "image" in PERMANENT_FAILURES


def _software() -> SoftwarePlan:
    return SoftwarePlan(mode="baked", driver="580.95.05", driver_min_branch=580, cuda="13.0", torch="torch==2.13.0",
                        torch_index="", nccl="2.29.7", fabricmanager="", fabric_stack="", nccl_net="Socket")
