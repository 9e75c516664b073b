"""Tencent Cloud facts (FACTS.md): HCC RDMA, spot notices at metadata.tencentyun.com, COS."""

from types import MappingProxyType

from components.clouds.base import CAPACITY_BLOCK, CloudProfile

TENCENTCLOUD = CloudProfile(
    name="tencentcloud",
    region_key="tencentcloud:region",
    fabrics=frozenset({"rdma", "tcp"}),
    mtu=MappingProxyType({"rdma": 1500, "tcp": 1500}),
    bucket_scheme="cos",
    spot_notice_url="http://metadata.tencentyun.com/latest/meta-data/spot/termination-time",
    spot_discount=0.60,
    reserved_discount=0.30,
    max_user_data_bytes=16384,
    unsupported=MappingProxyType({CAPACITY_BLOCK: "Tencent Cloud has no capacity blocks; use reservationId."}),
    pulumi_provider="tencentcloud_iac_pulumi",
)
