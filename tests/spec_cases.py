"""Five-line stacks for every cloud, written to a stack file and checked the way `fleet` checks them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from clouds.rules import validate
from components.program import region_key
from fleet.stacks import spec_and_plan
from plan.model import ClusterPlan
from plan.paths import PROJECT_ROOT
from spec.cluster import ClusterSpec
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY, load_stack_file

REGION_KEYS = {"aws": "aws:region", "alicloud": "alicloud:region", "tencentcloud": "tencentcloud:region"}
FIVE_LINES = {
    "aws": ("us-east-1", {"cloud": "aws", "zone": "us-east-1a", "instanceType": "g4dn.xlarge", "nodes": 2}),
    "alicloud": ("cn-hangzhou", {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge",
                                 "image": "ubuntu_22_04_x64_20G_alibase_20240130.vhd", "nodes": 2}),
    "tencentcloud": ("ap-guangzhou", {"cloud": "tencentcloud", "zone": "ap-guangzhou-6",
                                      "instanceType": "GN7.2XLARGE32", "image": "img-487zeit5", "nodes": 2,
                                      "storage": {"checkpointBucket": "gf-test-1250000000"}}),
    "local": ("", {"cloud": "local", "instanceType": "cpu", "nodes": 2}),
}
CLOUDS = tuple(FIVE_LINES)


def merged(cluster: dict, changes: dict) -> dict:
    """The cluster with `changes` merged in one level deep; a change to None removes the key."""
    result = dict(cluster)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = {**result[key], **value}
        else:
            result[key] = value
    return result


def shipped_cluster(stack: str, **changes) -> tuple[dict, str, str]:
    """A shipped stack's cluster with `changes` merged in (`merged`), its region and its stack name."""
    stack_file = load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    cluster = merged(stack_file.config[CLUSTER_KEY], changes)
    key = region_key(cluster)
    return cluster, str(stack_file.config.get(key, "")) if key else "", stack_file.name


def shipped_spec(stack: str, **changes) -> ClusterSpec:
    """A shipped stack's cluster with `changes`, validated as the program validates it."""
    return validate(*shipped_cluster(stack, **changes))


def write(directory: Path, cloud: str, changes: dict | None = None, region: str | None = None,
          stack: str = "test") -> Path:
    """A stack file holding the cloud's five-line cluster with `changes` merged in (one level deep)."""
    default_region, cluster = copy.deepcopy(FIVE_LINES[cloud])
    cluster = merged(cluster, changes or {})
    config: dict = {"gpufleet:cluster": cluster}
    if cloud in REGION_KEYS:
        config[REGION_KEYS[cloud]] = default_region if region is None else region
    path = directory / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
    return path


def plan_of(directory: Path, cloud: str, changes: dict | None = None, **kwargs) -> tuple[ClusterSpec, ClusterPlan]:
    return spec_and_plan(load_stack_file(write(directory, cloud, changes, **kwargs)))


def problems(directory: Path, cloud: str, changes: dict | None = None, **kwargs) -> list[Problem]:
    with pytest.raises(SpecError) as caught:
        plan_of(directory, cloud, changes, **kwargs)
    return caught.value.problems


def only(directory: Path, cloud: str, changes: dict | None = None, **kwargs) -> Problem:
    found = problems(directory, cloud, changes, **kwargs)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]
