"""Tencent Cloud facts (docs/cloud-facts.md#tencent-cloud): HCC RDMA, spot notices at metadata.tencentyun.com, COS.

HCC rules: on Tencent Cloud RDMA comes only with HCC types, and every HCC instance joins an HPC cluster in the zone.
An AS scaling config (tencentcloud_iac_pulumi 0.2.3) takes no HPC cluster, so HCC workers are plain instances and an
HCC cluster has a fixed size. `fabric: tcp` on an HCC type is rejected: it pays for RDMA NICs it never uses.
Spot mix: the AS group has no spot-mix field, so non-HCC workers come in two AS groups, on-demand and spot, sized
from the plan's market split; HCC workers are split the same way into on-demand and spot instances.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from ipaddress import IPv4Network
from types import MappingProxyType
from typing import TYPE_CHECKING

from plan import catalog
from plan.catalog import InstanceType
from plan.limits import ON_CLOUDS, CloudLimits, TagRules
from plan.model import (
    HEAD,
    INSTANCES,
    ROLES,
    SCALING_GROUP,
    WORKER,
    FirewallRule,
    MarketPlan,
    PipelinePlan,
    PlacementPlan,
    ScalingPlan,
    StoreApi,
)
from plan.node import Mirrors
from plan.permissions import ANY, OWN_GROUPS, api_call, store_calls
from plan.placement import PlacementAsk
from plan.prices import spot_ceiling
from plan.profile import (
    ANYWHERE,
    CAPACITY_BLOCK,
    GPU_UTIL_SCALING,
    RESERVATION,
    WARM_POOL,
    AutoImage,
    CloudProfile,
    ImageQuery,
)
from plan.rollout import FLEET_ROLL, REPLACE, RESET_REFRESH
from plan.workers import per_market
from spec.clouds import REGION_KEYS
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY

if TYPE_CHECKING:
    from spec.cluster import ClusterSpec

# COS bucket names end in the account's APPID: <name>-<appid>.
BUCKET_WITH_APPID = re.compile(r"^[a-z0-9-]+-(\d{6,})$")
_TAG = re.compile(r"^[\w +\-=.:/@]*$")
# docs/cloud-facts.md#tencent-limits, docs/cloud-facts.md#tencent-names
LIMITS = CloudLimits(
    vpc_prefixes=(12, 28),
    subnet_prefixes=(12, 28),
    # Not stated by Tencent Cloud: AWS's five, the most any of the three clouds keeps, to be safe.
    subnet_reserved=5,
    vpc_within=((IPv4Network("10.0.0.0/12"), 12), (IPv4Network("172.16.0.0/12"), 12),
                (IPv4Network("192.168.0.0/16"), 16)),
    vpc_refused=ON_CLOUDS,
    group_max=2000,
    tags=TagRules(max_tags=50, key_max=127, value_max=255, key_chars=_TAG, value_chars=_TAG,
                  reserved_key_prefixes=("qcs:", "qcloud", "tencent", "project"), value_required=True,
                  chars_hint="letters, digits, spaces and + - = . _ : / @ (COS bucket tags allow no others)"),
    # <name>-<appid>.cos.<region>.myqcloud.com is at most 60 characters.
    bucket_domain="{bucket}.cos.{region}.myqcloud.com",
    bucket_domain_max=60,
    group_rules_max=100,
)


# A custom security group denies all egress no rule accepts, and the node resolves names (UDP 53) and keeps time
# (UDP 123) through Tencent's servers, which publish no address block: these two ports, nothing else
# (docs/cloud-facts.md#tencent-security-groups).
SERVICE_EGRESS = (FirewallRule("egress", "udp", 53, 53, "0.0.0.0/0", "DNS: the VPC's resolvers"),
                  FirewallRule("egress", "udp", 123, 123, "0.0.0.0/0", "NTP: Tencent's time servers"))


# Tencent Cloud's Docker Hub mirror and its software mirror site, both answering inside Tencent Cloud
# (docs/cloud-facts.md#tencent-registry-mirror, docs/cloud-facts.md#package-mirrors).
HUB_MIRROR = "https://mirror.ccs.tencentyun.com"
VPC_MIRROR = "http://mirrors.tencentyun.com"
# Region ids are ap-<city>[-...]: the mainland cities among the catalog regions (docs/cloud-facts.md#package-mirrors).
MAINLAND_CITIES = frozenset({"beijing", "shanghai", "guangzhou", "chengdu", "chongqing", "nanjing"})


def in_mainland(region: str) -> bool:
    parts = region.split("-")
    return len(parts) >= 2 and parts[0] == "ap" and parts[1] in MAINLAND_CITIES


def mirrors(region: str) -> Mirrors:
    """The Docker Hub mirror everywhere (as before); the mirror site's PyPI and archives where the region needs them.
    No NVIDIA CUDA mirror of Tencent's was found."""
    if not in_mainland(region):
        return Mirrors(pip="", apt="", cuda="", registry=HUB_MIRROR)
    return Mirrors(pip=f"{VPC_MIRROR}/pypi/simple/", apt=VPC_MIRROR, cuda="", registry=HUB_MIRROR)


def is_hcc(row: InstanceType) -> bool:
    """HCC (Hyper Computing Cluster) types are the Tencent types with an RDMA fabric."""
    return row.fabric == "rdma"


def bucket_appid(bucket: str) -> str | None:
    """The APPID a COS bucket name ends with."""
    match = BUCKET_WITH_APPID.fullmatch(bucket)
    return match[1] if match else None


def cos_bucket(name: str, digest: str, region: str, appid: str | None) -> str:
    """The default bucket, <name>-<hash>-<APPID>: the cluster's name cut to what COS's domain limit leaves (six
    characters or more in every region)."""
    room = LIMITS.bucket_domain_max - len(LIMITS.bucket_domain.format(bucket=f"-{digest}-{appid}", region=region))
    return f"{name[:room].rstrip('-')}-{digest}-{appid}"


def pipeline(region: str, endpoint: str | None) -> PipelinePlan | str:
    """Anywhere: COS's S3 API with the stack's SecretId and SecretKey (docs/cloud-facts.md#tencent-cos,
    #heal-marks)."""
    return ANYWHERE if endpoint else PipelinePlan("", StoreApi(
        f"https://cos.{region}.myqcloud.com",
        ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN")))


def placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    """HCC nodes in one HPC cluster (their RDMA domain); every node in a spread (HOST) group when asked."""
    groups = []
    if is_hcc(ask.instance):
        groups.append(PlacementPlan("hpc-cluster", "HPC cluster", ROLES))
    if ask.anti_affinity:
        groups.append(PlacementPlan("spread", "spread placement group", ROLES))
    return tuple(groups)


def worker_groups(scaling: ScalingPlan, market: MarketPlan, placements: tuple[PlacementPlan, ...]):
    """An on-demand and a spot group (the AS group has no spot mix); plain instances where workers must join an
    HPC cluster, which AS scaling configs cannot set."""
    in_hpc = any(p.kind == "hpc-cluster" and WORKER in p.roles for p in placements)
    return per_market(scaling, market, INSTANCES if in_hpc else SCALING_GROUP)


def _at(path: str) -> str:
    return f"{CLUSTER_KEY}.{path}"


def international_spot(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    if spec.market.international_account and spec.market.spot_percent > 0:
        yield Problem(_at("market.spotPercent"), "international Tencent Cloud accounts cannot buy SPOTPAID "
                      "instances (only POSTPAID_BY_HOUR and CDHPAID).",
                      "set market.spotPercent to 0, or use a China-site account (internationalAccount: false).")


def spot_price(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """SPOTPAID needs a max price: the stack's, else the type's China-site list price (spot is China-site only, and
    that site bills in CNY: docs/cloud-facts.md#list-prices); refused only where neither is known."""
    row = catalog.lookup(spec.cloud, spec.instance_type)
    if spec.market.spot_percent > 0 and row is not None and spot_ceiling(
            spec.market.max_spot_price, row, cloud.spot_bid_currency) is None:
        yield Problem(_at("market.maxSpotPrice"), f"SPOTPAID instances and AS configs need a max price, and "
                      f"{spec.instance_type} has no published {cloud.spot_bid_currency} list price to default to.",
                      f"set market.maxSpotPrice (per node-hour, in {cloud.spot_bid_currency}), or use a type with a "
                      "list price in the catalog.")


def hcc(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    row = catalog.lookup(spec.cloud, spec.instance_type)
    if row is None or not is_hcc(row):
        return
    if spec.network.fabric == "tcp":
        yield Problem(_at("network.fabric"), f"{spec.instance_type} is an HCC type: it is sold for its RDMA network "
                      "and launches into an HPC cluster.", "use fabric auto or rdma, or a non-HCC type for TCP.")
    counts = spec.counts
    if counts.min != counts.max:
        yield Problem(_at("nodes"), f"{spec.instance_type} is an HCC type: its nodes must join an HPC cluster, which "
                      "AS scaling configs (tencentcloud_iac_pulumi 0.2.3) cannot set, so it cannot scale.",
                      "give nodes as one number, or use a non-HCC type for an elastic cluster.")


def bucket_name(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """A bucket the stack names must end in the APPID; without one, the default is named after the account's."""
    key = "existingBucket" if spec.storage.existing_bucket is not None else "checkpointBucket"
    bucket = spec.storage.existing_bucket or spec.storage.checkpoint_bucket
    if bucket is not None and not BUCKET_WITH_APPID.fullmatch(bucket):
        yield Problem(_at(f"storage.{key}"), f"{bucket!r} does not end in the account's APPID; COS bucket "
                      "names are <name>-<APPID>.", "set it like gpufleet-ckpt-1250000000 (your APPID), or remove "
                      "it for a bucket named after the cluster and the account.")


# docs/cloud-facts.md#node-permissions: COS through its S3 API, where each multipart operation is authorised by an
# action of its own, and cloud-init/clouds/tencentcloud.sh's calls (gpufleet-discover, gpufleet-report).
NODE_CALLS = (
    *store_calls(ListObjectsV2="name/cos:GetBucket", HeadObject="name/cos:HeadObject", GetObject="name/cos:GetObject",
                 PutObject="name/cos:PutObject", CreateMultipartUpload="name/cos:InitiateMultipartUpload",
                 UploadPart="name/cos:UploadPart", CompleteMultipartUpload="name/cos:CompleteMultipartUpload",
                 AbortMultipartUpload="name/cos:AbortMultipartUpload"),
    api_call("name/cvm:DescribeInstances", ANY),
    api_call("name/as:DescribeAutoScalingInstances", ANY, grouped=True),
    api_call("name/as:RemoveInstances", OWN_GROUPS, grouped=True),
)

# Tencent's images read the config drive in local mode, then its metadata service
# (docs/cloud-facts.md#image-datasources).
IMAGE_DATASOURCES = ("datasource_list: [ ConfigDrive, TencentCloud ]\ndatasource:\n  ConfigDrive:\n    dsmode: local\n"
                     "  TencentCloud:\n    metadata_urls: ['http://169.254.0.23', 'http://metadata.tencentyun.com']\n")


def instance_names(digits: str, private_ip: str, region: str) -> tuple[str, str]:
    """A CVM instance id and the hostname an Ubuntu image gets (docs/cloud-facts.md#instance-names)."""
    return f"ins-{digits[:8]}", "VM-{}-{}-ubuntu".format(*private_ip.split(".")[2:])


def store_hosts(region: str, bucket: str) -> tuple[str, ...]:
    """COS's regional endpoint, virtual-hosted (docs/cloud-facts.md#tencent-cos)."""
    regional = f"cos.{region}.myqcloud.com"
    return (regional, f"{bucket}.{regional}")


TENCENTCLOUD = CloudProfile(
    name="tencentcloud",
    title="Tencent Cloud",
    region_key=REGION_KEYS["tencentcloud"],
    fabrics=frozenset({"rdma", "tcp"}),
    mtu=MappingProxyType({"rdma": 1500, "tcp": 1500}),
    bucket_scheme="cos",
    spot_notice_url="http://metadata.tencentyun.com/latest/meta-data/spot/termination-time",
    limits=LIMITS,
    metadata_url="http://metadata.tencentyun.com/latest/meta-data",
    # The metadata host's address: docs/cloud-facts.md#tencent-metadata.
    metadata_hosts=MappingProxyType({"metadata.tencentyun.com": "169.254.0.23"}),
    instance_names=instance_names,
    image_datasources=IMAGE_DATASOURCES,
    store_hosts=store_hosts,
    api_client=("tencentcloud-sdk-python-common==3.1.195",),  # docs/cloud-facts.md#tencent-node-api
    node_calls=NODE_CALLS,
    spot_bid_currency="CNY",
    spot_discount=0.60,
    reserved_discount=0.30,
    unsupported=MappingProxyType({
        CAPACITY_BLOCK: "Tencent Cloud has no capacity blocks.",
        RESERVATION: "tencentcloud_iac_pulumi 0.2.3 instances and AS configs take no reserved-capacity target.",
        WARM_POOL: "the AS group of tencentcloud_iac_pulumi 0.2.3 keeps no stopped standby instances.",
        GPU_UTIL_SCALING: "AS scaling policies only track CPU, memory and traffic metrics, not GPU utilisation.",
    }),
    realizer="components.tencentcloud.cluster",
    pulumi_package="tencentcloud",
    # No public image carries NVIDIA's driver: `auto` is the newest Ubuntu 22.04 public image, found at deploy time,
    # and the node installs the pinned driver stack.
    auto_image=AutoImage(lookup=ImageQuery(os="ubuntu", version="22.04")),
    bucket_name=cos_bucket,
    pipeline=pipeline,
    bucket_account=bucket_appid,
    account_in_bucket=True,
    placement=placement,
    worker_groups=worker_groups,
    # CVM instances are replaced when their user-data changes (the provider's user_data_replace_on_change), the fixed
    # workers one at a time by `fleet roll`; an AS group's instance refresh reinstalls its workers one at a time from
    # the new configuration (docs/cloud-facts.md#rollout-tencent).
    rollout=MappingProxyType({HEAD: REPLACE, INSTANCES: FLEET_ROLL, SCALING_GROUP: RESET_REFRESH}),
    # A released or LAUNCH_FAILED instance reads as gone (docs/cloud-facts.md#heal-instance-states).
    dead_states=frozenset({"STOPPING", "STOPPED", "SHUTDOWN", "TERMINATING"}),
    rules=(international_spot, spot_price, hcc, bucket_name),
    service_egress=SERVICE_EGRESS,
    mirrors=mirrors,
    needs_mirrors=in_mainland,
)
