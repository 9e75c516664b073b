"""Alibaba Cloud facts (docs/cloud-facts.md#alibaba-cloud): eRDMA, spot notices, jumbo-frame MTU, OSS.

Spot and deployment sets: spot instances cannot be created in a deployment set, and an ESS scaling configuration
(pulumi_alicloud 4.0.0) takes no deployment set or HPC cluster at all. So only the on-demand head joins the
LowLatency deployment set; workers, spot or not, are placed by zone (one vSwitch), which eRDMA spans.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Network
from types import MappingProxyType

from components.clouds.base import CAPACITY_BLOCK, WARM_POOL, AutoImage, CloudProfile, ImageQuery
from components.limits import ON_CLOUDS, CloudLimits, TagRules
from components.plan.model import HEAD, PlacementPlan
from components.plan.placement import PlacementAsk

_OSS_TAG = re.compile(r"^[A-Za-z0-9 +\-=._:/]*$")
# docs/cloud-facts.md#alibaba-limits, docs/cloud-facts.md#alibaba-names
LIMITS = CloudLimits(
    vpc_prefixes=(8, 28),
    subnet_prefixes=(16, 29),
    subnet_reserved=4,
    vpc_refused=(*ON_CLOUDS,
                 (IPv4Network("100.64.0.0/10"), "100.64.0.0/10, which Alibaba Cloud keeps for its own services (the "
                                                "metadata service 100.100.100.200 is in it)")),
    group_max=2000,
    vpc_instances_max=15000,
    tags=TagRules(max_tags=20, key_max=64, value_max=128, key_chars=_OSS_TAG, value_chars=_OSS_TAG,
                  reserved_key_prefixes=("aliyun", "acs:"), reserved_value_prefixes=("acs:",),
                  forbidden_substrings=("http://", "https://"),
                  chars_hint="letters, digits, spaces and + - = . _ : / (OSS bucket tags allow no others)"),
    reservation_id=re.compile(r"^(crp|eap)-[a-z0-9]+$"),
    reservation_example="crp-bp67acfmxazb4ph6xxxx",
    reservation_hint="the elasticity assurance or capacity reservation id the ECS console shows",
    subnet_word="vSwitch",
)


def placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    """The head in a LowLatency deployment set; workers come from an ESS scaling configuration, which takes none."""
    if ask.anti_affinity:
        return ("workers come from an ESS scaling configuration, which takes no deployment set (pulumi_alicloud "
                "4.0.0), so they cannot be spread over hosts.")
    return (PlacementPlan("cluster", "deployment set LowLatency", (HEAD,)),)


ALICLOUD = CloudProfile(
    name="alicloud",
    title="Alibaba Cloud",
    region_key="alicloud:region",
    fabrics=frozenset({"erdma", "tcp"}),
    mtu=MappingProxyType({"erdma": 8500, "tcp": 1500}),
    bucket_scheme="oss",
    spot_notice_url="http://100.100.100.200/latest/meta-data/instance/spot/termination-time",
    limits=LIMITS,
    metadata_url="http://100.100.100.200/latest/meta-data",
    # Token GETs work on every ECS instance; the head's hardened metadata (http_tokens required) answers no other.
    imds_token_url="http://100.100.100.200/latest/api/token",
    imds_token_header="X-aliyun-ecs-metadata-token",
    spot_discount=0.60,
    reserved_discount=0.30,
    spot_strategies=MappingProxyType({
        "price-capacity-optimized": "COST_OPTIMIZED",
        "capacity-optimized": "COST_OPTIMIZED",
        "lowest-price": "COST_OPTIMIZED",
    }),
    unsupported=MappingProxyType({
        CAPACITY_BLOCK: "Alibaba Cloud has no capacity blocks; use reservationId (an ECS private pool id).",
        WARM_POOL: "ESS standby instances are not exposed by pulumi_alicloud 4.0.0's scaling group.",
    }),
    realizer="components.alicloud.cluster",
    pulumi_package="alicloud",
    # No public image carries NVIDIA's driver: `auto` is the newest Ubuntu 22.04 system image, found at deploy time,
    # and the node installs the pinned driver stack.
    auto_image=AutoImage(lookup=ImageQuery(os="ubuntu", version="22.04")),
    placement=placement,
)
