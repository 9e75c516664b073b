"""Plan decisions, checked on the pure plan without Pulumi."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest

from clouds.plans import plan_for
from clouds.rules import validate
from fleet.stacks import spec_and_plan
from here.local.cloudconfig import document
from plan import catalog
from plan.bundle import bundle_bytes, bundle_sha256
from plan.cost import plan_cost
from plan.fabric import plan_fabric
from plan.facts import DeployFacts
from plan.firewall import plan_firewall
from plan.network import plan_network
from plan.prices import ListPrice
from spec.stackfile import load_stack_file

ROOT = Path(__file__).resolve().parents[2]


def plan_of(write_stack, cluster):
    return spec_and_plan(load_stack_file(write_stack(cluster)))[1]


def test_fabric_auto_picks_the_best_the_type_has(write_stack, aws_cluster):
    assert plan_of(write_stack, aws_cluster).fabric.kind == "efa"
    aws_cluster.update(instanceType="g4dn.xlarge", market={})
    assert plan_of(write_stack, aws_cluster).fabric.kind == "tcp"


@pytest.mark.parametrize("type_name", [name for name in catalog.type_names("aws")
                                       if catalog.lookup("aws", name).fabric == "efa"])
def test_efa_layout_per_type(type_name):
    row = catalog.lookup("aws", type_name)
    fabric = plan_fabric("auto", row)
    assert fabric.devices == row.fabric_devices == len(fabric.interfaces)
    assert fabric.interfaces[0].kind == "efa" and (fabric.interfaces[0].card, fabric.interfaces[0].device) == (0, 0)
    assert [i.card for i in fabric.interfaces] == list(range(row.fabric_devices))
    assert all(i.kind == "efa-only" for i in fabric.interfaces[1:])


@pytest.mark.parametrize("type_name", [name for name in catalog.type_names("alicloud")
                                       if catalog.lookup("alicloud", name).fabric == "erdma"])
def test_erdma_layout_per_type(type_name):
    """One ERI per network card where the type has as many cards (ebmgn7ex: 160 Gbit/s on two cards, 100 on one:
    docs/cloud-facts.md#alibaba-eri-cards); card 0 for every ERI where the catalog does not know the cards."""
    row = catalog.lookup("alicloud", type_name)
    fabric = plan_fabric("auto", row)
    primary, *eris = fabric.interfaces
    assert (primary.card, primary.device, primary.kind) == (0, 0, "interface")
    assert len(eris) == fabric.devices == row.fabric_devices and all(i.kind == "erdma" for i in eris)
    cards = [i.card for i in eris]
    if row.network_cards is None:
        assert set(cards) == {0}
    else:
        assert set(cards) == set(range(min(row.network_cards, len(eris))))
        assert max(cards.count(card) for card in set(cards)) == -(-len(eris) // row.network_cards)


def test_the_two_eris_of_ebmgn7ex_sit_on_its_two_cards():
    eris = plan_fabric("auto", catalog.lookup("alicloud", "ecs.ebmgn7ex.32xlarge")).interfaces[1:]
    assert sorted(i.card for i in eris) == [0, 1]


def test_network_split_and_head_address():
    net = plan_network("10.1.0.0/16", 9001, nat=True)
    private, public = ipaddress.ip_network(net.private.cidr), ipaddress.ip_network(net.public.cidr)
    assert private == ipaddress.ip_network("10.1.0.0/17") and not private.overlaps(public)
    assert ipaddress.ip_address(net.head_address) in private
    assert net.node_addresses(3) == ("10.1.0.10", "10.1.0.11", "10.1.0.12")


def test_firewall_all_from_self_both_ways_without_port_range():
    rules = plan_firewall("efa", None, 29400, (9100, 9400), ())
    inside = {(r.direction, r.protocol, r.peer) for r in rules if r.peer == "self"}
    assert inside == {("ingress", "all", "self"), ("egress", "all", "self")}
    assert not [r for r in rules if r.direction == "ingress" and r.peer != "self"]


def test_firewall_pinned_range_on_tcp():
    rules = plan_firewall("tcp", (50000, 51000), 29400, (9100, 9400), ("198.51.100.0/24",))
    ingress = [(r.protocol, r.from_port, r.to_port, r.peer) for r in rules if r.direction == "ingress"]
    assert ("tcp", 50000, 51000, "self") in ingress and ("tcp", 29400, 29400, "self") in ingress
    assert ("tcp", 22, 22, "198.51.100.0/24") in ingress
    assert not any(protocol == "all" for protocol, *_ in ingress)


def test_efa_ignores_a_port_range_and_stays_open_inside():
    rules = plan_firewall("efa", (50000, 51000), 29400, (9100,), ())
    assert any(r.protocol == "all" and r.direction == "egress" and r.peer == "self" for r in rules)


def test_head_never_spot_workers_follow_the_market(write_stack, aws_cluster):
    plan = plan_of(write_stack, aws_cluster)
    assert plan.head.spot is False and plan.worker.spot is True
    assert plan.market.on_demand_base == 1, "the head takes one of the on-demand base"
    assert (plan.scaling.workers_min, plan.scaling.workers_desired, plan.scaling.workers_max) == (1, 3, 7)
    assert [(g.name, g.form, g.market, g.min_size, g.desired, g.max_size) for g in plan.workers] == [
        ("workers", "scaling-group", "mixed", 1, 3, 7)]


def test_capacity_block_has_no_placement_group(write_stack, aws_cluster):
    aws_cluster["market"] = {"onDemandBase": 2, "capacityBlock": True, "reservationId": "cr-0123456789abcdef0"}
    plan = plan_of(write_stack, aws_cluster)
    assert plan.placements == () and plan.market.capacity_block


def test_cost_of_the_spot_mix(write_stack, aws_cluster):
    plan = plan_of(write_stack, aws_cluster)
    price = catalog.lookup("aws", "p5.48xlarge").price_usd_per_hour
    # 4 nodes: 2 on-demand base (head + 1 worker), 2 above base at 50% spot -> 1 spot node at 40% of list.
    assert plan.cost.on_demand_hourly == pytest.approx(4 * price)
    assert plan.cost.expected_hourly == pytest.approx(3 * price + 1 * price * 0.4)
    assert plan.cost.price_date == "2026-07-20"
    assert plan.cost.price_source == "karpenter-provider-aws zz_generated.pricing_aws.go (on-demand, us-east-1)"


@pytest.mark.parametrize(("market", "rate"), [
    ({"onDemandBase": 4, "reservationId": "cr-0123456789abcdef0"}, 1 - 0.35),  # AWS's reserved_discount
    ({"onDemandBase": 4, "reservationId": "cr-0123456789abcdef0", "capacityBlock": True}, 1.0)])
def test_cost_of_a_reservation_is_its_discounted_rate_and_a_capacity_blocks_its_list_price(write_stack, aws_cluster,
                                                                                           market, rate):
    aws_cluster["market"] = market
    plan = plan_of(write_stack, aws_cluster)
    price = catalog.lookup("aws", "p5.48xlarge").price_usd_per_hour
    assert plan.cost.on_demand_hourly == pytest.approx(4 * price)
    assert plan.cost.expected_hourly == pytest.approx(4 * price * rate)


def test_cost_unknown_price_is_none_not_zero():
    from clouds import profile
    from plan.model import MarketPlan, ScalingPlan

    cost = plan_cost(profile("aws"), ListPrice("USD", None), MarketPlan(0, 0, "x", None, None, False),
                     ScalingPlan(1, 1, 1, None))
    assert cost.expected_hourly is None and cost.on_demand_hourly is None


def test_bundle_is_deterministic_and_named_by_hash(write_stack, aws_cluster):
    assert bundle_bytes() == bundle_bytes.__wrapped__()
    plan = plan_of(write_stack, aws_cluster)
    assert plan.storage.code_uri.endswith(f"{bundle_sha256()}.tar.gz") and plan.storage.code_uri.startswith("s3://")


def test_user_data_differs_by_role_and_names_the_head(write_stack, aws_cluster):
    plan = plan_of(write_stack, aws_cluster)
    assert plan.head.user_data != plan.worker.user_data
    assert plan.head.user_data.startswith("#cloud-config")


def test_plan_is_deterministic(write_stack, aws_cluster):
    path = write_stack(aws_cluster)
    assert spec_and_plan(load_stack_file(path))[1] == spec_and_plan(load_stack_file(path))[1]


def test_nodes_install_the_job_packages_pyproject_pins():
    import tomllib

    from plan.userdata import JOB_PACKAGES

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["optional-dependencies"]["train"]) | {d for d in project["dependencies"] if "rich" in d}
    assert set(JOB_PACKAGES) == declared


def test_cloud_nodes_get_the_job_packages_local_nodes_use_the_host(write_stack, aws_cluster):
    assert "GF_PIP_PACKAGES=('torch==2.13.0'" in plan_of(write_stack, aws_cluster).worker.user_data
    local = spec_and_plan(load_stack_file(ROOT / "stacks" / "Pulumi.local.yaml"))[1]
    assert "GF_PIP_PACKAGES=()" in local.worker.user_data


def _settings(plan, role: str = "worker") -> str:
    return next(f["content"] for f in document(getattr(plan, role).user_data)["write_files"]
                if f["path"] == "/etc/gpufleet/node.env")


def test_the_registry_mirror_is_the_stacks_else_the_clouds(write_stack, aws_cluster):
    tencent = spec_and_plan(load_stack_file(ROOT / "stacks" / "Pulumi.tencent-spot.yaml"))[1]
    assert tencent.network.mirrors.registry == "https://mirror.ccs.tencentyun.com"
    assert "GF_MIRRORS_REGISTRY='https://mirror.ccs.tencentyun.com'" in _settings(tencent)
    aws = plan_of(write_stack, aws_cluster)
    assert aws.network.mirrors.registry == "" and "GF_MIRRORS_REGISTRY=''" in _settings(aws, "head")
    aws_cluster["network"] = {"registryMirror": "https://mirror.example.internal:5000"}
    assert plan_of(write_stack, aws_cluster).network.mirrors.registry == "https://mirror.example.internal:5000"


# cloud -> ((mainland region, zone), (a region abroad, zone), a type both offer, the mirror site inside the VPC)
MIRRORED = {"alicloud": (("cn-hangzhou", "cn-hangzhou-h"), ("ap-southeast-1", "ap-southeast-1a"),
                         "ecs.gn7i-c32g1.8xlarge", "http://mirrors.cloud.aliyuncs.com"),
            "tencentcloud": (("ap-guangzhou", "ap-guangzhou-6"), ("ap-hongkong", "ap-hongkong-2"), "GN7.2XLARGE32",
                             "http://mirrors.tencentyun.com")}


def _cloud_plan(write_stack, cloud: str, where: tuple[str, str], **network):
    region, zone = where
    cluster = {"cloud": cloud, "zone": zone, "instanceType": MIRRORED[cloud][2], "nodes": 2, "network": network}
    return spec_and_plan(load_stack_file(write_stack(cluster, region=None, extra={f"{cloud}:region": region})))[1]


@pytest.mark.parametrize("cloud", sorted(MIRRORED))
def test_a_mainland_stack_installs_from_the_clouds_in_vpc_mirror_unless_it_names_its_own(write_stack, cloud):
    """pip and apt come from the cloud's mirror site inside the VPC in a mainland region
    (docs/cloud-facts.md#package-mirrors), outside the mainland from the upstream hosts; a mirror the stack names wins
    for that thing alone."""
    mainland_zone, abroad_zone, _, site = MIRRORED[cloud]
    mainland = _cloud_plan(write_stack, cloud, mainland_zone)
    assert (mainland.network.mirrors.pip, mainland.network.mirrors.apt) == (f"{site}/pypi/simple/", site)
    assert f"GF_MIRRORS_PIP='{site}/pypi/simple/'" in _settings(mainland)
    assert f"GF_MIRRORS_APT='{site}'" in _settings(mainland, "head")
    abroad = _cloud_plan(write_stack, cloud, abroad_zone).network.mirrors
    assert (abroad.pip, abroad.apt) == ("", "")
    own = _cloud_plan(write_stack, cloud, mainland_zone, pipMirror="https://pypi.corp.example/simple",
                      cudaMirror="http://cuda.corp").network.mirrors
    assert (own.pip, own.apt, own.cuda) == ("https://pypi.corp.example/simple", site, "http://cuda.corp")


def test_nvcr_images_come_from_the_registry_the_stack_names(write_stack, aws_cluster):
    """No cloud mirrors nvcr.io: network.nvcrMirror re-homes the DCGM exporter's image, repository and tag kept."""
    image = plan_of(write_stack, aws_cluster).worker.node.dcgm_exporter_image
    assert image.startswith("nvcr.io/nvidia/k8s/dcgm-exporter:")
    aws_cluster["network"] = {"nvcrMirror": "registry.corp.example:5000/nvcr"}
    rehomed = plan_of(write_stack, aws_cluster).worker.node.dcgm_exporter_image
    assert rehomed == image.replace("nvcr.io/", "registry.corp.example:5000/nvcr/")
    assert f"GF_DCGM_EXPORTER_IMAGE='{rehomed}'" in _settings(plan_of(write_stack, aws_cluster))


@pytest.mark.parametrize(("field", "value"), [("pipMirror", "ftp://mirror.example/simple"), ("aptMirror", "mirrors"),
                                              ("cudaMirror", "http://a b"), ("nvcrMirror", "https://registry.example"),
                                              ("nvcrMirror", "registry.example/nvcr/")])
def test_a_mirror_that_is_no_url_of_its_kind_is_refused_with_the_field(tmp_path, write_stack, aws_cluster, field,
                                                                       value):
    aws_cluster["network"] = {field: value}
    result = subprocess.run([sys.executable, "-m", "fleet", "plan", "--stack-file", str(write_stack(aws_cluster))],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"gpufleet:cluster.network.{field}" in result.stderr and value in result.stderr


@pytest.mark.parametrize("mirror", ["http://mirror.example.internal", "mirror.example.internal", "https://a b"])
def test_a_registry_mirror_that_is_not_an_https_url_is_refused_with_the_field(tmp_path, write_stack, aws_cluster,
                                                                              mirror):
    aws_cluster["network"] = {"registryMirror": mirror}
    stack = write_stack(aws_cluster)
    result = subprocess.run([sys.executable, "-m", "fleet", "plan", "--stack-file", str(stack)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "gpufleet:cluster.network.registryMirror" in result.stderr and "https://" in result.stderr


def test_the_local_stack_booted_renders_cloud_mode_user_data_with_nothing_left_to_fill():
    """`fleet up --stack local --boot`: the nodes are machines that real cloud-init starts (runcmd enables the units),
    with the job's packages, a metadata address to reach and a bucket systemd does not empty at boot (/tmp)."""
    stack = load_stack_file(ROOT / "stacks" / "Pulumi.local.yaml")
    here, booted = spec_and_plan(stack)[1], spec_and_plan(stack, booted=True)[1]
    assert "GF_LOCAL=1" in _settings(here).splitlines() and "GF_LOCAL=0" in _settings(booted).splitlines()
    assert "runcmd" not in document(here.head.user_data) and "runcmd" in document(booted.head.user_data)
    assert "{metadata}" in here.head.user_data and "{metadata}" not in booted.head.user_data
    assert "torch==2.13.0" in booted.worker.user_data
    assert booted.storage.checkpoint_uri.startswith("file:///srv/")
    assert here.storage.checkpoint_uri.startswith("file:///tmp/")
    assert (booted.instance, booted.network, booted.firewall, booted.scaling) == \
        (here.instance, here.network, here.firewall, here.scaling)


@pytest.mark.parametrize("name", ["aws-g4dn-dev", "ali-spot", "tencent-spot"])
def test_a_cloud_stack_booted_is_the_plan_the_cloud_gets(name):
    stack = load_stack_file(ROOT / "stacks" / f"Pulumi.{name}.yaml")
    assert spec_and_plan(stack, booted=True)[1] == spec_and_plan(stack)[1]


def test_only_a_looked_up_image_is_pinned_and_only_autos_carry_drivers(write_stack, aws_cluster):
    """docs/design.md "Images": the look-up's id is pinned; a named image, the cloud's alias and a baked image are not.
    Drivers come with `auto` where the cloud's image has them (AWS's DLAMI) and with an image baked from it."""
    def image(cluster, region="us-east-1", stack="test", facts=None):
        return plan_for(validate(cluster, region, stack), stack, facts or DeployFacts()).image

    alias = image(aws_cluster)
    assert (alias.pinned, alias.has_drivers) == (False, True) and alias.ref.startswith("resolve:ssm:")
    named = image({**aws_cluster, "image": "ami-0123456789abcdef0"})
    assert (named.ref, named.pinned, named.has_drivers) == ("ami-0123456789abcdef0", False, False)
    baked = image({**aws_cluster, "image": {"baked": "ami-0fedcba9876543210", "base": "auto"}})
    assert (baked.ref, baked.pinned, baked.has_drivers, baked.baked) == ("ami-0fedcba9876543210", False, True, True)
    tencent = {"cloud": "tencentcloud", "zone": "ap-guangzhou-6", "instanceType": "GN7.2XLARGE32", "nodes": 2}
    looked_up = image(tencent, "ap-guangzhou", facts=DeployFacts(image_id="img-0123"))
    assert (looked_up.ref, looked_up.pinned, looked_up.has_drivers) == ("img-0123", True, False)
