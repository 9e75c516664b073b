"""Alibaba Cloud facts (docs/cloud-facts.md#alibaba-cloud): eRDMA, spot notices, jumbo-frame MTU, OSS.

Spot and deployment sets: spot instances cannot be created in a deployment set, and an ESS scaling configuration
(pulumi_alicloud 4.0.0) takes no deployment set or HPC cluster at all. So only the on-demand head joins the
LowLatency deployment set; workers, spot or not, are placed by zone (one vSwitch), which eRDMA spans.
"""

from __future__ import annotations

from types import MappingProxyType

from components.clouds.base import CAPACITY_BLOCK, WARM_POOL, AutoImage, CloudProfile, ImageQuery
from components.plan.model import HEAD, PlacementPlan
from components.plan.placement import PlacementAsk


def placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    """The head in a LowLatency deployment set; workers come from an ESS scaling configuration, which takes none."""
    if ask.anti_affinity:
        return ("workers come from an ESS scaling configuration, which takes no deployment set (pulumi_alicloud "
                "4.0.0), so they cannot be spread over hosts.")
    return (PlacementPlan("cluster", "deployment set LowLatency", (HEAD,)),)


ALICLOUD = CloudProfile(
    name="alicloud",
    region_key="alicloud:region",
    fabrics=frozenset({"erdma", "tcp"}),
    mtu=MappingProxyType({"erdma": 8500, "tcp": 1500}),
    bucket_scheme="oss",
    spot_notice_url="http://100.100.100.200/latest/meta-data/instance/spot/termination-time",
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
