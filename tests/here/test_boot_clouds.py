"""What a booted machine is told about its cloud comes from the cloud's profile, and a cloud the harness does not
know is refused, named, instead of booting as another cloud (before issue 29 it booted as Tencent's)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from clouds import CLOUDS, booted_profile, profile
from here.boot import clouds
from here.metadata.state import Instance

ROOT = Path(__file__).resolve().parents[2]
SEEDED = dict(private_ip="10.0.3.17", mac="02:00:00:00:00:01", instance_type="t", region="eu-west-1", zone="z",
              image_id="img", role="head", role_name="c-node", user_data_b64="", spot=False)


def _instance(cloud, **changes) -> Instance:
    return clouds.instance(cloud, "run-0", **{**SEEDED, **changes})


@pytest.mark.parametrize("base", sorted(CLOUDS))
def test_an_unknown_cloud_is_refused_by_name(base):
    """Every fact of a known cloud but its name: the harness plays no machine for it, whatever it resembles."""
    stranger = replace(booted_profile(base), name="nimbus")
    known = _instance(booted_profile(base))
    for attempt in (lambda: _instance(stranger), lambda: clouds.dmi(stranger, known),
                    lambda: clouds.hypervisor(stranger)):
        with pytest.raises(clouds.UnknownCloud, match=r"'nimbus'.*here/boot/clouds\.py"):
            attempt()


@pytest.mark.parametrize(("missing", "named"), [({"instance_names": None}, "instance_names"),
                                                ({"image_datasources": ""}, "image_datasources")])
def test_a_cloud_without_a_fact_the_harness_reads_is_refused(missing, named):
    cloud = replace(profile("tencentcloud"), **missing)
    with pytest.raises(clouds.UnknownCloud, match=rf"'tencentcloud'.*{named}"):
        clouds.seed(cloud, _instance(profile("tencentcloud")), b"") if "image" in named else _instance(cloud)


def test_instances_are_named_as_each_cloud_names_them():
    """docs/cloud-facts.md#instance-names."""
    aws = profile("aws")
    in_ireland, in_virginia = _instance(aws), _instance(aws, region="us-east-1")
    assert re.fullmatch(r"i-[0-9a-f]{17}", in_ireland.instance_id)
    assert in_ireland.hostname == "ip-10-0-3-17.eu-west-1.compute.internal"
    assert in_virginia.hostname == "ip-10-0-3-17.ec2.internal"
    ecs = _instance(profile("alicloud"))
    assert re.fullmatch(r"i-[0-9a-z]{20}", ecs.instance_id) and ecs.hostname == f"iZ{ecs.instance_id[2:]}Z"
    cvm = _instance(profile("tencentcloud"))
    assert re.fullmatch(r"ins-[0-9a-z]{8}", cvm.instance_id) and cvm.hostname == "VM-3-17-ubuntu"
    assert _instance(aws).instance_id == in_ireland.instance_id != clouds.instance(aws, "run-1", **SEEDED).instance_id


def test_tokens_are_required_only_where_the_profile_names_a_token_and_the_realizer_asks_for_one():
    assert _instance(profile("aws"), role="worker").tokens_required
    assert _instance(profile("alicloud")).tokens_required
    assert not _instance(profile("alicloud"), role="worker").tokens_required
    without_tokens = replace(profile("aws"), imds_token_url="", imds_token_header="")
    assert not _instance(without_tokens).tokens_required


def test_an_image_alias_is_what_the_cloud_resolves_it_to():
    aws = profile("aws")
    assert _instance(aws, image_id=aws.auto_image.alias).image_id.startswith("ami-")
    assert _instance(aws, image_id="ami-0123456789abcdef0").image_id == "ami-0123456789abcdef0"


def test_user_data_comes_on_the_disk_the_images_first_datasource_reads():
    """Tencent's images list ConfigDrive first, the local machines NoCloud; AWS and Alibaba read metadata."""
    for name, cloud in (("tencentcloud", profile("tencentcloud")), ("local", booted_profile("local")),
                        ("aws", profile("aws")), ("alicloud", profile("alicloud"))):
        files = clouds.seed(cloud, _instance(cloud), b"#cloud-config\n")
        first = yaml.safe_load(cloud.image_datasources)["datasource_list"][0]
        seeded = {path.split("/")[5] for path in files}
        assert seeded == {"ConfigDrive": {"config_drive"}, "NoCloud": {"nocloud"}}.get(first, set()), name
    swapped = replace(profile("aws"), image_datasources="datasource_list: [ NoCloud, Ec2 ]\n")
    assert any("nocloud" in path for path in clouds.seed(swapped, _instance(swapped), b""))


@pytest.mark.parametrize(("cloud", "variable"), [("alicloud", "OSS_S3_ENDPOINT"), ("tencentcloud", "COS_S3_ENDPOINT")])
def test_the_store_host_the_harness_serves_is_the_one_the_node_adapter_calls(cloud, variable):
    """The profile's default store host (what the harness's store answers as) is the node adapter's endpoint."""
    adapter = ROOT / "cloud-init" / "clouds" / f"{cloud}.sh"
    region = "ap-somewhere-1"
    shown = subprocess.run(["bash", "-c", f'. "{adapter}"; printf %s "${variable}"'], capture_output=True, text=True,
                           env={"GF_REGION": region, "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert shown == f"https://{profile(cloud).store_hosts(region, 'bucket')[0]}"
