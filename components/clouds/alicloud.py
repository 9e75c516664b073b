"""Alibaba Cloud facts (FACTS.md): eRDMA, spot notices at 100.100.100.200, jumbo-frame MTU, OSS."""

from types import MappingProxyType

from components.clouds.base import CAPACITY_BLOCK, CloudProfile

ALICLOUD = CloudProfile(
    name="alicloud",
    region_key="alicloud:region",
    fabrics=frozenset({"erdma", "tcp"}),
    mtu=MappingProxyType({"erdma": 8500, "tcp": 1500}),
    bucket_scheme="oss",
    spot_notice_url="http://100.100.100.200/latest/meta-data/instance/spot/termination-time",
    spot_discount=0.60,
    reserved_discount=0.30,
    spot_strategies=MappingProxyType({
        "price-capacity-optimized": "COST_OPTIMIZED",
        "capacity-optimized": "COST_OPTIMIZED",
        "lowest-price": "COST_OPTIMIZED",
    }),
    unsupported=MappingProxyType({CAPACITY_BLOCK: "Alibaba Cloud has no capacity blocks; use reservationId."}),
    pulumi_provider="pulumi_alicloud",
)
