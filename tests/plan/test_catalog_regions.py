"""Regions and zones per cloud: well-formed, sourced, and the naming rule tells a zone from a region or a typo."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clouds import CLOUDS
from plan import catalog

REGION_CLOUDS = [name for name in CLOUDS if CLOUDS[name].region_key]


def _cloud_stacks() -> list[tuple[str, str, str]]:
    """(cloud, region, zone) of every shipped stack on a cloud with regions."""
    found = []
    for path in sorted((Path(__file__).parents[2] / "stacks").glob("Pulumi.*.yaml")):
        config = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]
        cluster = config["gpufleet:cluster"]
        if key := CLOUDS[cluster["cloud"]].region_key:
            found.append((cluster["cloud"], config[key], cluster["zone"]))
    return found


@pytest.mark.parametrize("cloud", REGION_CLOUDS)
def test_regions_are_sourced_and_zones_belong_to_their_region(cloud):
    table = catalog.catalog(cloud)
    assert table.regions.sources and set(table.regions.sources) <= table.sources.keys()
    known = catalog.regions(cloud)
    assert len(known) >= 10
    for region, zones in known.items():
        assert region == region.lower() and region.count("-") >= 1, region
        assert len(set(zones)) == len(zones), region
        assert all(zone.startswith(region) and zone != region for zone in zones), region
        assert all(catalog.zone_in_region(cloud, region, zone) for zone in zones), region


def test_local_has_no_regions():
    assert dict(catalog.regions("local")) == {}
    assert not catalog.zone_in_region("local", "", "")


@pytest.mark.parametrize(("cloud", "region", "zone", "belongs"), [
    ("aws", "eu-west-1", "eu-west-1a", True),
    ("aws", "us-east-1", "us-east-1f", True),
    ("aws", "eu-west-1", "eu-west-1", False),
    ("aws", "eu-west-1", "eu-west-2a", False),
    ("aws", "eu-west", "eu-west-1a", False),
    ("aws", "us-east-1", "us-east-1-a", False),
    ("alicloud", "cn-hangzhou", "cn-hangzhou-h", True),
    ("alicloud", "ap-southeast-1", "ap-southeast-1a", True),
    ("alicloud", "ap-southeast-1", "ap-southeast-1-a", False),
    ("alicloud", "cn-hangzhou", "cn-hangzhouh", False),
    ("alicloud", "cn-hangzhou", "cn-shanghai-b", False),
    ("tencentcloud", "ap-shanghai", "ap-shanghai-5", True),
    ("tencentcloud", "ap-shanghai", "ap-shanghai", False),
    ("tencentcloud", "ap-shanghai", "ap-shanghai-a", False),
    ("tencentcloud", "ap-guangzhou", "ap-shanghai-5", False),
])
def test_zone_naming_rule(cloud, region, zone, belongs):
    assert catalog.zone_in_region(cloud, region, zone) is belongs


def test_the_regions_users_run_gpus_in_are_listed():
    assert {"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1"} <= catalog.regions("aws").keys()
    assert "us-east-2a" in catalog.regions("aws")["us-east-2"]
    assert {"cn-hangzhou", "cn-wulanchabu", "ap-southeast-1"} <= catalog.regions("alicloud").keys()
    assert "ap-shanghai-5" in catalog.regions("tencentcloud")["ap-shanghai"]


@pytest.mark.parametrize(("cloud", "region", "zone"), _cloud_stacks(), ids=lambda value: str(value))
def test_shipped_stacks_name_a_catalog_region_and_zone(cloud, region, zone):
    assert catalog.zone_in_region(cloud, region, zone)
