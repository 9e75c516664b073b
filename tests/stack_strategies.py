"""Hypothesis strategies for valid stacks on every cloud and catalog row, checked by the real rules and planned by the
real planner with each cloud's deploy-time stand-ins (what `fleet plan` offline answers look-ups with).

Stacks are drawn valid by construction where a rule is simple (a cloud's unsupported features, fixed sizes of RDMA
types, the batch per rank); what is left to the rules (VPC sizes, port clashes) is filtered with `assume` on the
rules' own verdict, so a stack the rules accept is never skipped.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from hypothesis import assume
from hypothesis import strategies as st

from clouds import CLOUDS, profile
from clouds.plans import lookups_for, plan_for
from clouds.rules import validate
from clouds.tencentcloud import is_hcc
from components.alicloud.lookups import IMAGES as ALI_IMAGES
from components.alicloud.lookups import STAND_INS as ALI_STAND_INS
from components.aws.lookups import STAND_IN_BLOCK
from components.tencentcloud.lookups import IMAGES as TC_IMAGES
from components.tencentcloud.lookups import STAND_INS as TC_STAND_INS
from components.tencentcloud.lookups import USER
from plan import catalog
from plan.facts import DeployFacts
from plan.limits import NOT_UNICAST, CloudLimits
from plan.model import ClusterPlan
from plan.profile import GPU_UTIL_SCALING, RESERVATION, WARM_POOL
from spec.cluster import ClusterSpec
from spec.errors import SpecError
from training.config import TrainConfig

STACK = "props"
DEFAULT_BATCH = TrainConfig().global_batch
# Private blocks VPCs are drawn from (every cloud accepts some prefix inside each; the rules judge the rest).
VPC_BLOCKS = tuple(ipaddress.IPv4Network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


@dataclass(frozen=True)
class Planned:
    """One drawn stack as the tools see it: what was written, the spec the rules accepted, and its plan."""

    raw: dict
    spec: ClusterSpec
    plan: ClusterPlan


def stand_in_facts(spec: ClusterSpec) -> DeployFacts:
    """The answers each cloud's look-ups give, from the stand-ins the offline preview uses."""
    wanted = lookups_for(spec)
    image = {"alicloud": lambda: ALI_STAND_INS[ALI_IMAGES]["images"][0]["id"],
             "tencentcloud": lambda: TC_STAND_INS[TC_IMAGES]["images"][0]["imageId"]}.get(spec.cloud)
    return DeployFacts(
        image_id=image() if wanted.image and image else None,
        account_id=TC_STAND_INS[USER]["appId"] if wanted.account_id else None,
        reservation_id=STAND_IN_BLOCK if spec.market.capacity_block and not spec.market.reservation_id else None)


def _zones(cloud: str, region: str) -> list[str]:
    """The zones the catalog knows in the region, else names the cloud's zone pattern accepts."""
    known = list(catalog.regions(cloud)[region])
    guesses = [f"{region}{sep}{suffix}" for sep in ("", "-") for suffix in ("a", "b", "1", "3")]
    return known or [zone for zone in guesses if catalog.zone_in_region(cloud, region, zone)]


@st.composite
def vpc_cidrs(draw, limits: CloudLimits) -> str:
    """A private range of a size the cloud's published limits allow for a VPC and its subnets (the rules judge the
    rest: the nodes' room, ranges the cloud refuses)."""
    block = draw(st.sampled_from(tuple(b for b, _ in limits.vpc_within) or VPC_BLOCKS))
    widest = max(block.prefixlen, limits.vpc_prefixes[0], limits.subnet_prefixes[0] - 1)
    narrowest = min(limits.vpc_prefixes[1], limits.subnet_prefixes[1] - 1, 27)
    # Half the draws among the narrowest sizes, where the nodes' addresses are tight.
    prefix = draw(st.integers(max(widest, narrowest - 3), narrowest) | st.integers(widest, narrowest))
    index = draw(st.integers(0, 2 ** (prefix - block.prefixlen) - 1))
    return str(ipaddress.IPv4Network((int(block.network_address) + index * 2 ** (32 - prefix), prefix)))


@st.composite
def ssh_cidrs(draw) -> tuple[str, ...]:
    """Up to three distinct IPv4 ranges a client can be in: anywhere from one address to the whole internet."""
    found: list[ipaddress.IPv4Network] = []
    for _ in range(draw(st.integers(1, 3))):
        prefix = draw(st.sampled_from((0, 1, 4, 7, 8, 12, 16, 24, 28, 32)))
        address = draw(st.integers(0, 2 ** 32 - 1))
        network = ipaddress.IPv4Network((address, prefix), strict=False)
        if network.prefixlen and any(network.subnet_of(block) for block, _ in NOT_UNICAST):
            continue
        if network not in found:
            found.append(network)
    assume(found)
    return tuple(str(n) for n in found)


@st.composite
def stacks(draw, *, open_to: bool | None = None, clouds: tuple[str, ...] = ()) -> tuple[dict, str]:
    """A `gpufleet:cluster` object and its region, on any cloud and row. open_to: False draws no sshCidrs and no
    allowInternet, True always some sshCidrs, None either."""
    cloud_name = draw(st.sampled_from(clouds or tuple(CLOUDS)))
    # A fabric first, so the cloud's few RDMA rows are drawn as often as its many TCP ones.
    rows = [catalog.lookup(cloud_name, name) for name in catalog.type_names(cloud_name)]
    fabric = draw(st.sampled_from(sorted({r.fabric for r in rows})))
    row_name = draw(st.sampled_from([r.name for r in rows if r.fabric == fabric]))
    cloud, row = profile(cloud_name), catalog.lookup(cloud_name, row_name)
    raw: dict = {"cloud": cloud_name, "instanceType": row_name}
    region = ""
    if cloud.region_key:
        region = draw(st.sampled_from(sorted(r for r in catalog.regions(cloud_name) if _zones(cloud_name, r))))
        raw["zone"] = draw(st.sampled_from(_zones(cloud_name, region)))

    # RDMA types whose nodes join a group a scaling group cannot carry have a fixed size (clouds).
    fixed = (cloud_name == "alicloud" and row.fabric == "erdma") or (cloud_name == "tencentcloud" and is_hcc(row))
    anti_affinity = cloud_name in ("aws", "tencentcloud") and draw(st.booleans())
    high = draw(st.integers(1, 7 if anti_affinity and cloud_name == "aws" else 24))
    low = high if fixed else draw(st.integers(1, high))
    desired = draw(st.integers(low, high))
    raw["nodes"] = high if low == high and draw(st.booleans()) else {"min": low, "desired": desired, "max": high}
    if anti_affinity:
        raw["network"] = {"antiAffinity": True}

    ranks = row.gpus or 2
    if row.gpus and draw(st.booleans()):
        ranks = draw(st.integers(1, row.gpus))
        raw["ranksPerNode"] = ranks
    if high * ranks > DEFAULT_BATCH or draw(st.booleans()):
        # Down to half the ranks at the most nodes: the rules refuse those below one sequence per rank.
        raw["job"] = {"globalBatch": draw(st.integers(max(high * ranks // 2, 1), high * ranks * 3))}

    market: dict = {}
    block = cloud_name == "aws" and not anti_affinity and draw(st.booleans())
    spot = 0 if block else draw(st.sampled_from((0, 0, 100)) | st.integers(0, 100))
    international = cloud_name == "tencentcloud" and spot == 0 and draw(st.booleans())
    if spot:
        market["spotPercent"] = spot
        market["spotStrategy"] = draw(st.sampled_from(sorted(cloud.spot_strategies or ["price-capacity-optimized"])))
        if cloud_name == "tencentcloud" or draw(st.booleans()):
            market["maxSpotPrice"] = draw(st.floats(0.01, 100.0))
    market["onDemandBase"] = draw(st.integers(1 if spot else 0, high))
    if block:
        market["capacityBlock"] = True
        if draw(st.booleans()):
            market["reservationId"] = "cr-" + draw(st.text("0123456789abcdef", min_size=17, max_size=17))
    elif RESERVATION not in cloud.unsupported and not anti_affinity and draw(st.booleans()):
        market["reservationId"] = {"aws": "cr-0123456789abcdef0", "alicloud": "crp-bp67acfmxazb4ph6xxxx"}[cloud_name]
    if international:
        market["internationalAccount"] = True
    raw["market"] = market

    autoscaling: dict = {}
    if GPU_UTIL_SCALING not in cloud.unsupported and low < high and draw(st.booleans()):
        autoscaling["gpuUtilTarget"] = draw(st.floats(1.0, 100.0))
    if WARM_POOL not in cloud.unsupported and not spot and low < high and draw(st.booleans()):
        autoscaling["standby"] = draw(st.integers(0, high - low))
    raw["autoscaling"] = autoscaling

    network = raw.setdefault("network", {})
    network["vpcCidr"] = draw(vpc_cidrs(cloud.limits))
    fabrics = sorted({"auto", "tcp", row.fabric} & (cloud.fabrics | {"auto"}))
    if cloud_name == "tencentcloud" and is_hcc(row):
        fabrics.remove("tcp")
    network["fabric"] = draw(st.sampled_from(fabrics))
    if (network["fabric"] == "tcp" or row.fabric == "tcp") and draw(st.booleans()):
        start = draw(st.integers(30000, 64000))
        network["ncclPortRange"] = f"{start}-{min(start + draw(st.integers(255, 4000)), 65535)}"
    if draw(st.booleans()):
        network["rendezvousPort"] = draw(st.integers(1024, 65535))
    wants_ssh = open_to if open_to is not None else draw(st.booleans())
    if wants_ssh and cloud_name != "aws":  # AWS nodes are reached through Session Manager, never SSH
        network["sshCidrs"] = list(draw(ssh_cidrs()))
        network["allowInternet"] = draw(st.booleans())

    if cloud_name in ("alicloud", "tencentcloud") and draw(st.booleans()):
        raw["image"] = {"alicloud": "ubuntu_22_04_x64_20G_alibase_20240130.vhd", "tencentcloud": "img-487zeit5"}[
            cloud_name]
    if cloud_name == "tencentcloud" and draw(st.booleans()):
        raw["storage"] = {"checkpointBucket": "gf-ckpt-1250000000"}
    raw["gate"] = draw(st.sampled_from(("light", "deep")))
    return raw, region


def accepted(raw: dict, region: str) -> ClusterSpec:
    """The spec the rules make of a drawn stack; a stack they refuse is no example (hypothesis draws another)."""
    try:
        return validate(raw, region, STACK)
    except SpecError:
        assume(False)
        raise


def planned(drawn: tuple[dict, str]) -> Planned:
    raw, region = drawn
    spec = accepted(raw, region)
    return Planned(raw=raw, spec=spec, plan=plan_for(spec, STACK, stand_in_facts(spec)))
