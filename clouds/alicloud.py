"""Alibaba Cloud facts (docs/cloud-facts.md#alibaba-cloud): eRDMA, spot notices, jumbo-frame MTU, OSS.

Workers of eRDMA types are ECS instances, not an ESS group: a scaling configuration cannot carry ERIs (the provider's
create path needs security_group_id(s), which the API refuses beside NetworkInterfaces, and the ECS launch template
takes one interface and no traffic mode: docs/cloud-facts.md#alibaba-provider-rules). So an eRDMA cluster has a
fixed size, and its head and on-demand workers share the LowLatency deployment set (spot instances cannot be created
in one). Other types' workers come from an ESS group, placed by zone, with the cluster's security group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from ipaddress import IPv4Network
from types import MappingProxyType
from typing import TYPE_CHECKING

from plan import catalog
from plan.limits import ON_CLOUDS, CloudLimits, TagRules
from plan.model import (
    HEAD,
    INSTANCES,
    REGION_RUNNER,
    ROLES,
    SCALING_GROUP,
    WORKER,
    CodeUpload,
    MarketPlan,
    PipelinePlan,
    PlacementPlan,
    ScalingPlan,
    StoreApi,
)
from plan.node import Mirrors
from plan.permissions import ANY, OWN_GROUPS, OWN_INSTANCES, api_call, store_calls
from plan.placement import PlacementAsk
from plan.profile import (
    ANYWHERE,
    CAPACITY_BLOCK,
    GPU_UTIL_SCALING,
    WARM_POOL,
    AutoImage,
    CloudProfile,
    ImageQuery,
    default_endpoint,
    no_mirrors,
)
from plan.rollout import FLEET_ROLL, GROUP_ROLL, REPLACE
from plan.workers import mixed_group, per_market
from spec.clouds import REGION_KEYS
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY

if TYPE_CHECKING:
    from spec.cluster import ClusterSpec

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
    group_rules_max=200,
    group_rules_together=True,
    root_volume_max_gb=2048,
)


def in_mainland(region: str) -> bool:
    """Mainland regions: China's (`cn-`) but Hong Kong (docs/cloud-facts.md#alibaba-oss-public-endpoint)."""
    return region.startswith("cn-") and region != "cn-hongkong"


# Where a mainland stack's pipeline reaches OSS (storage.endpoint): the region's internal endpoint, from inside its
# network, whatever the account; or the public one, which takes data calls only from accounts that activated OSS
# before 2025-03-20 (docs/cloud-facts.md#alibaba-oss-public-endpoint).
INTERNAL, PUBLIC = "internal", "public"
PIPELINE_KEY = ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN")


def _endpoint(region: str, endpoint: str | None) -> str:
    """The endpoint the pipeline's data calls go through: the stack's choice; in the mainland the internal one by
    default, which serves every account; elsewhere the public one."""
    return endpoint or (INTERNAL if in_mainland(region) else PUBLIC)


def code_upload(region: str, bucket: str, domain: str | None, endpoint: str | None) -> CodeUpload | str:
    """An account that activated OSS on or after 2025-03-20 makes no data call (the bundle's upload) on a mainland
    bucket through OSS's default public endpoint (docs/cloud-facts.md#alibaba-oss-public-endpoint). There the upload
    goes through the stack's custom domain, bound to the bucket, or else through the endpoint the pipeline uses:
    the region's internal one, which answers only inside Alibaba Cloud's network, or the public one for an account
    that activated OSS before that day. Nodes read the bundle through the internal S3 endpoint."""
    if not in_mainland(region):
        return default_endpoint(region, bucket, domain, endpoint)
    why = (f"accounts that activated OSS on or after 2025-03-20 may not write to a {region} bucket through OSS's "
           "public endpoint")
    if domain:
        bound = f"{bucket}.{domain}"
        return CodeUpload(endpoint=domain, bound_domain=bound, needs=(
            f"the code bundle is written through https://{bound} ({why}): {domain} needs an ICP filing and a CNAME "
            f"record {bound} -> {bucket}.oss-{region}.aliyuncs.com; `pulumi up` binds {bound} to the bucket (OSS "
            "may first ask for a `_dnsauth` TXT record proving the domain is yours) and stops at the bundle until "
            f"the binding has an HTTPS certificate for {bound} (OSS console, the bucket's domain names); then run "
            "`pulumi up` again."))
    if _endpoint(region, endpoint) == PUBLIC:
        return CodeUpload()
    internal = f"oss-{region}-internal.aliyuncs.com"
    return CodeUpload(endpoint=internal, needs=(
        f"the code bundle is written through OSS's internal endpoint {internal} ({why}), which answers only inside "
        f"Alibaba Cloud's {region} network: run `pulumi up` on an ECS instance in {region}, set storage.endpoint: "
        "public if the account activated OSS before 2025-03-20, or set storage.bundleDomain to a domain with an "
        "ICP filing to write it through that domain from anywhere."))


def pipeline(region: str, endpoint: str | None) -> PipelinePlan | str:
    """OSS's S3 API (docs/cloud-facts.md#oss-s3-api) with the stack's key, through the endpoint the stack's account
    may use: for a mainland bucket the internal one by default, so the pipeline runs in the region, or the public
    one where the account activated OSS before 2025-03-20 (docs/cloud-facts.md#heal-marks)."""
    if not in_mainland(region):
        return ANYWHERE if endpoint else PipelinePlan("", StoreApi(f"https://s3.oss-{region}.aliyuncs.com",
                                                                    PIPELINE_KEY))
    if _endpoint(region, endpoint) == PUBLIC:
        return PipelinePlan("", StoreApi(f"https://s3.oss-{region}.aliyuncs.com", PIPELINE_KEY))
    return PipelinePlan(region, StoreApi(f"https://s3.oss-{region}-internal.aliyuncs.com", PIPELINE_KEY), needs=(
        f"`pulumi up`, `fleet roll`, `fleet heal` and the drift check reach the bucket through OSS's internal "
        f"endpoints, which answer only inside Alibaba Cloud's {region} network: the deploy, heal and drift workflows "
        f"run on a self-hosted runner labelled {REGION_RUNNER.format(region=region)} (an ECS instance in {region}); "
        "storage.endpoint: public runs them on GitHub's runners where the account activated OSS before 2025-03-20."))


def placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    """A LowLatency deployment set: every node of an eRDMA type (all are ECS instances), else the head alone (an ESS
    scaling configuration takes no deployment set)."""
    if ask.anti_affinity:
        return "it spreads no nodes over hosts: its deployment sets here are LowLatency, which packs them."
    roles = ROLES if ask.instance.fabric == "erdma" else (HEAD,)
    return (PlacementPlan("cluster", "deployment set LowLatency", roles),)


def worker_groups(scaling: ScalingPlan, market: MarketPlan, placements: tuple[PlacementPlan, ...]):
    """ECS instances, one group per market, where workers join the deployment set (eRDMA types); else one ESS group
    with the whole market mix."""
    if any(WORKER in p.roles for p in placements):
        return per_market(scaling, market, INSTANCES)
    return mixed_group(scaling, market)


def erdma_fixed_size(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    row = catalog.lookup(spec.cloud, spec.instance_type)
    if row is not None and row.fabric == "erdma" and spec.counts.min != spec.counts.max:
        yield Problem(f"{CLUSTER_KEY}.nodes", f"{spec.instance_type} has eRDMA interfaces (ERIs), which an ESS scaling "
                      "configuration cannot carry, so its workers are ECS instances and the cluster cannot scale.",
                      "give nodes as one number, or use a type without eRDMA for an elastic cluster.")


# Alibaba Cloud's mirror site inside a VPC (docs/cloud-facts.md#package-mirrors): PyPI and the distributions' archives.
VPC_MIRROR = "http://mirrors.cloud.aliyuncs.com"


def mirrors(region: str) -> Mirrors:
    """The in-VPC mirror in mainland regions; no Docker Hub mirror for every account, no documented CUDA one."""
    if not in_mainland(region):
        return no_mirrors(region)
    return Mirrors(pip=f"{VPC_MIRROR}/pypi/simple/", apt=VPC_MIRROR, cuda="", registry="")


def hub_mirror_advice(region: str) -> str:
    """Alibaba's Docker Hub accelerator is per account (docs/cloud-facts.md#tencent-registry-mirror), so a stack in
    a mainland region (every cn-* but cn-hongkong) names its own."""
    if not in_mainland(region):
        return ""
    return "set it to your account's accelerator from the Container Registry console (https://<id>.mirror.aliyuncs.com)"


# docs/cloud-facts.md#node-permissions: OSS through its S3 API (docs/cloud-facts.md#oss-s3-api) and
# cloud-init/clouds/alicloud.sh's calls (gpufleet-discover, gpufleet-report).
NODE_CALLS = (
    *store_calls(ListObjectsV2="oss:ListObjects", HeadObject="oss:GetObject", GetObject="oss:GetObject",
                 PutObject="oss:PutObject", CreateMultipartUpload="oss:PutObject", UploadPart="oss:PutObject",
                 CompleteMultipartUpload="oss:PutObject", AbortMultipartUpload="oss:AbortMultipartUpload"),
    api_call("ecs:DescribeInstances", ANY),
    api_call("ecs:TagResources", OWN_INSTANCES),
    api_call("ess:SetInstanceHealth", OWN_GROUPS, grouped=True),
)

def instance_names(digits: str, private_ip: str, region: str) -> tuple[str, str]:
    """An ECS instance id and the hostname ECS derives from it (docs/cloud-facts.md#instance-names)."""
    instance_id = f"i-bp1{digits[:17]}"
    return instance_id, f"iZ{instance_id[2:]}Z"


def store_hosts(region: str, bucket: str) -> tuple[str, ...]:
    """OSS's S3-compatible VPC endpoint, virtual-hosted (docs/cloud-facts.md#oss-s3-api)."""
    internal = f"s3.oss-{region}-internal.aliyuncs.com"
    return (internal, f"{bucket}.{internal}")


ALICLOUD = CloudProfile(
    name="alicloud",
    title="Alibaba Cloud",
    region_key=REGION_KEYS["alicloud"],
    fabrics=frozenset({"erdma", "tcp"}),
    mtu=MappingProxyType({"erdma": 8500, "tcp": 1500}),
    bucket_scheme="oss",
    spot_notice_url="http://100.100.100.200/latest/meta-data/instance/spot/termination-time",
    limits=LIMITS,
    metadata_url="http://100.100.100.200/latest/meta-data",
    # Token GETs work on every ECS instance; the head's hardened metadata (http_tokens required) answers no other.
    imds_token_url="http://100.100.100.200/latest/api/token",
    imds_token_header="X-aliyun-ecs-metadata-token",
    imds_token_max_ttl_s=21600,  # docs/cloud-facts.md#alibaba-metadata
    instance_names=instance_names,
    image_datasources="datasource_list: [ AliYun ]\n",  # docs/cloud-facts.md#image-datasources
    store_hosts=store_hosts,
    api_client=("alibabacloud-tea-openapi==0.4.6",),  # docs/cloud-facts.md#alibaba-node-api
    node_calls=NODE_CALLS,
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
        GPU_UTIL_SCALING: "ESS target tracking follows CloudMonitor's ECS CPU and traffic metrics, and no GPU "
                          "utilisation metric of a node is published to it here.",
    }),
    realizer="components.alicloud.cluster",
    pulumi_package="alicloud",
    # No public image carries NVIDIA's driver: `auto` is the newest Ubuntu 22.04 system image, found at deploy time,
    # and the node installs the pinned driver stack.
    auto_image=AutoImage(lookup=ImageQuery(os="ubuntu", version="22.04")),
    code_upload=code_upload,
    pipeline=pipeline,
    placement=placement,
    worker_groups=worker_groups,
    # ECS instances are replaced when their user-data changes (Pulumi replaceOnChanges: the provider updates it in
    # place, which re-runs no bootstrap), the fixed workers one at a time by `fleet roll`; the ESS group's
    # configuration is changed in place (ModifyScalingConfiguration: ESS's instance refresh takes no cost-optimised
    # group nor a scaling configuration), and `fleet roll` has ESS replace its older members one at a time
    # (docs/cloud-facts.md#rollout-alibaba).
    rollout=MappingProxyType({HEAD: REPLACE, INSTANCES: FLEET_ROLL, SCALING_GROUP: GROUP_ROLL}),
    # A released instance reads as gone (docs/cloud-facts.md#heal-instance-states).
    dead_states=frozenset({"Stopping", "Stopped"}),
    rules=(erdma_fixed_size,),
    mirrors=mirrors,
    needs_mirrors=in_mainland,
    hub_mirror_advice=hub_mirror_advice,
)
