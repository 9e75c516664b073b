"""Alibaba Cloud facts (FACTS.md): eRDMA, spot notices at 100.100.100.200, jumbo-frame MTU, OSS.

Spot and deployment sets: spot instances cannot be created in a deployment set, and an ESS scaling configuration
(pulumi_alicloud 4.0.0) takes no deployment set or HPC cluster at all. So only the on-demand head joins the
LowLatency deployment set; workers, spot or not, are placed by zone (one vSwitch), which eRDMA spans.
"""

from collections.abc import Iterable
from types import MappingProxyType

from components.clouds.base import CAPACITY_BLOCK, WARM_POOL, CloudProfile
from components.errors import Problem
from components.spec import ClusterSpec
from components.stackfile import CLUSTER_KEY


def explicit_image(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """No deep-learning image alias is known here: the stack names an image and the node installs the driver."""
    if spec.image == "auto":
        yield Problem(f"{CLUSTER_KEY}.image", f"`auto` names no deep-learning image on {spec.cloud}.",
                      "set image to an OS image id of the region, e.g. ubuntu_22_04_x64_20G_alibase_20240130.vhd on "
                      "Alibaba Cloud or img-487zeit5 on Tencent Cloud; the node installs the driver.")

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
    pulumi_provider="pulumi_alicloud",
    rules=(explicit_image,),
)
