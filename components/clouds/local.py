"""The local cloud: network namespaces on this machine; spot notices come from a fake metadata endpoint."""

from types import MappingProxyType

from components.clouds.base import CAPACITY_BLOCK, GPU_UTIL_SCALING, RESERVATION, WARM_POOL, AutoImage, CloudProfile

LOCAL = CloudProfile(
    name="local",
    region_key=None,
    fabrics=frozenset({"tcp"}),
    mtu=MappingProxyType({"tcp": 1500}),
    bucket_scheme="file",
    spot_notice_url="http://{metadata}/latest/meta-data/spot/instance-action",
    metadata_url="http://{metadata}/latest/meta-data",
    spot_strategies=MappingProxyType({"price-capacity-optimized": "emulated"}),
    unsupported=MappingProxyType({
        CAPACITY_BLOCK: "a local cluster has no capacity to reserve.",
        RESERVATION: "a local cluster has no capacity to reserve.",
        WARM_POOL: "a local cluster keeps no standby nodes.",
        GPU_UTIL_SCALING: "a local cluster does not autoscale.",
    }),
    # Local nodes are this machine: no image, and no driver stack to install.
    auto_image=AutoImage(alias="local", has_drivers=True),
)
