"""Every catalog row plans clean from a five-line stack (cloud, region, zone, instanceType, nodes), through the same
loader and planner the tools use; one row per family also runs the whole program under mocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fleet.stacks import spec_and_plan
from plan import catalog
from spec.stackfile import load_stack_file
from tests.stack_preview import preview_stack

# Where the minimal stacks run: a region and zone of each cloud from the catalog's own lists.
PLACE = {"aws": ("us-east-1", "us-east-1a"), "alicloud": ("cn-hangzhou", "cn-hangzhou-h"),
         "tencentcloud": ("ap-shanghai", "ap-shanghai-5")}
ROWS = [(cloud, row) for cloud in PLACE for row in catalog.catalog(cloud).types.values()]


def _family(cloud: str, name: str) -> str:
    return name.removeprefix("ecs.").replace("-", ".").split(".")[0] if cloud == "alicloud" else name.split(".")[0]


ONE_PER_FAMILY = list({(cloud, _family(cloud, row.name)): (cloud, row) for cloud, row in ROWS}.values())


def minimal_stack(tmp_path: Path, cloud: str, row: catalog.InstanceType) -> Path:
    region, zone = PLACE[cloud]
    cluster = {"cloud": cloud, "zone": zone, "instanceType": row.name, "nodes": 2}
    path = tmp_path / "Pulumi.catalog-row.yaml"
    path.write_text(yaml.safe_dump({"config": {f"{cloud}:region": region, "gpufleet:cluster": cluster}}))
    return path


@pytest.mark.parametrize(("cloud", "row"), ROWS, ids=[row.name for _, row in ROWS])
def test_every_row_plans_clean(tmp_path, cloud, row):
    spec, plan = spec_and_plan(load_stack_file(minimal_stack(tmp_path, cloud, row)))
    assert (plan.instance.name, plan.cloud, plan.zone) == (row.name, cloud, PLACE[cloud][1])
    assert plan.fabric.kind == row.fabric
    assert plan.fabric.devices == row.fabric_devices


@pytest.mark.parametrize(("cloud", "row"), ONE_PER_FAMILY, ids=[row.name for _, row in ONE_PER_FAMILY])
def test_one_row_per_family_runs_the_program(tmp_path, cloud, row):
    _, plan, preview = preview_stack(minimal_stack(tmp_path, cloud, row))
    launched = [resource for resource in preview.resources if row.name in json.dumps(resource, default=str)]
    assert launched, f"no resource of the preview launches {row.name}"
    assert plan.instance.name == row.name
