"""AWS facts (docs/cloud-facts.md#aws): EFA, IMDSv2 spot notices, MTU 9001 in a VPC, S3, Session Manager access, and
how AWS places nodes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING

from plan import rollout
from plan.lifecycle import DRAIN, HEAD_REPLACED, HEALTH_GRACE, REBALANCE, REFRESH
from plan.limits import ON_CLOUDS, CloudLimits, TagRules
from plan.model import INSTANCES, ROLES, SCALING_GROUP, PlacementPlan
from plan.permissions import ANY, METRIC, OWN_GROUPS, OWN_INSTANCES, SESSION, api_call, store_calls
from plan.placement import PlacementAsk
from plan.profile import AutoImage, CloudProfile
from spec.clouds import REGION_KEYS
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY

if TYPE_CHECKING:
    from spec.cluster import ClusterSpec

# A (rack) spread placement group holds at most seven running instances per zone
# (docs/cloud-facts.md#aws-placement-groups).
SPREAD_MAX_PER_ZONE = 7

_TAG_VALUE = re.compile(r"^[\w\s+\-=.:/@]*$")
# Instance tags are in the instance metadata (the launch template enables it), which narrows keys further.
_TAG_KEY = re.compile(r"^[A-Za-z0-9+\-=._:@]+$")
# docs/cloud-facts.md#aws-limits, docs/cloud-facts.md#aws-names
LIMITS = CloudLimits(
    vpc_prefixes=(16, 28),
    subnet_prefixes=(16, 28),
    subnet_reserved=5,
    vpc_refused=ON_CLOUDS,
    tags=TagRules(max_tags=50, key_max=127, value_max=256, key_chars=_TAG_KEY, value_chars=_TAG_VALUE,
                  reserved_key_prefixes=("aws:",), reserved_value_prefixes=("aws:",), key_not=(".", "..", "_index"),
                  chars_hint="keys: letters, digits and + - = . _ : @ (no spaces or /, as instance tags in the "
                             "instance metadata need); values: letters, digits, spaces and + - = . _ : / @"),
    reservation_id=re.compile(r"^cr-[0-9a-f]{17}$"),
    reservation_example="cr-0123456789abcdef0",
    reservation_hint="`aws ec2 describe-capacity-reservations` lists them",
    bucket_dots=True,
    bucket_reserved_prefixes=("xn--", "sthree-", "amzn-s3-demo-"),
    bucket_reserved_suffixes=("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"),
    own_tag_keys=("name",),  # Name, set per resource
    group_rules_max=60,
)


def placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    """Every node in one cluster placement group (one network spine: EFA's lowest latency), or in one spread group
    when the stack asks for anti-affinity; none in a Capacity Block, which places its nodes itself."""
    if ask.anti_affinity:
        if ask.capacity_block or ask.reservation:
            return ("capacity reservations and Capacity Blocks hold no capacity in a spread placement group, so their "
                    "nodes cannot be spread.")
        if ask.nodes_max > SPREAD_MAX_PER_ZONE:
            return (f"a spread placement group holds at most {SPREAD_MAX_PER_ZONE} running instances per zone, and "
                    f"nodes.max is {ask.nodes_max}.")
        return (PlacementPlan("spread", "spread placement group", ROLES),)
    if ask.capacity_block:
        return ()
    return (PlacementPlan("cluster", "cluster placement group", ROLES),)


def no_ssh(spec: ClusterSpec, cloud: CloudProfile) -> Iterable[Problem]:
    """AWS nodes have no public address and no key pair: an SSH rule would open a port nobody can log in through.

    Session Manager reaches the nodes through the agent's own outbound HTTPS connection, so no port is opened at all
    (docs/cloud-facts.md#aws-session-manager).
    """
    if spec.network.ssh_cidrs:
        yield Problem(f"{CLUSTER_KEY}.network.sshCidrs", "AWS nodes have no public address and no key pair, so no "
                      "network can log in over SSH; they are reached through SSM Session Manager instead.",
                      "remove sshCidrs; log in with `aws ssm start-session --target INSTANCE_ID` (the nodes' role "
                      "allows Session Manager, no port is needed).")


# docs/cloud-facts.md#node-permissions: S3 through the AWS CLI; cloud-init/clouds/aws.sh's calls (gpufleet-discover,
# gpufleet-report, gpufleet-spot's drain, gpufleet-gpu-metric); SSM Agent's own calls for Session Manager
# (docs/cloud-facts.md#aws-session-manager).
NODE_CALLS = (
    *store_calls(ListObjectsV2="s3:ListBucket", HeadObject="s3:GetObject", GetObject="s3:GetObject",
                 PutObject="s3:PutObject", CreateMultipartUpload="s3:PutObject", UploadPart="s3:PutObject",
                 CompleteMultipartUpload="s3:PutObject", AbortMultipartUpload="s3:AbortMultipartUpload"),
    api_call("ec2:DescribeInstances", ANY),
    api_call("ec2:CreateTags", OWN_INSTANCES),
    api_call("autoscaling:SetInstanceHealth", OWN_GROUPS),
    api_call("autoscaling:DescribeAutoScalingInstances", ANY),
    api_call("autoscaling:CompleteLifecycleAction", OWN_GROUPS),
    api_call("cloudwatch:PutMetricData", METRIC),
    *(api_call(action, SESSION, documented_only=True)
      for action in ("ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel",
                     "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel",
                     "ssmmessages:OpenDataChannel")),
)

def instance_names(digits: str, private_ip: str, region: str) -> tuple[str, str]:
    """An EC2 instance id and its IP name (docs/cloud-facts.md#instance-names)."""
    domain = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
    return f"i-{digits[:17]}", f"ip-{private_ip.replace('.', '-')}.{domain}"


def store_hosts(region: str, bucket: str) -> tuple[str, ...]:
    """S3's regional endpoint and its legacy global one, each also virtual-hosted (docs/cloud-facts.md#aws-s3)."""
    regional = f"s3.{region}.amazonaws.com"
    return (regional, f"{bucket}.{regional}", "s3.amazonaws.com", f"{bucket}.s3.amazonaws.com")


AWS = CloudProfile(
    name="aws",
    title="AWS",
    region_key=REGION_KEYS["aws"],
    fabrics=frozenset({"efa", "tcp"}),
    mtu=MappingProxyType({"efa": 9001, "tcp": 9001}),
    bucket_scheme="s3",
    spot_notice_url="http://169.254.169.254/latest/meta-data/spot/instance-action",
    limits=LIMITS,
    metadata_url="http://169.254.169.254/latest/meta-data",
    imds_token_url="http://169.254.169.254/latest/api/token",
    imds_token_header="X-aws-ec2-metadata-token",
    imds_token_max_ttl_s=21600,  # docs/cloud-facts.md#aws-imds
    instance_names=instance_names,
    image_datasources="datasource_list: [ Ec2, None ]\n",  # docs/cloud-facts.md#image-datasources
    store_hosts=store_hosts,
    node_calls=NODE_CALLS,
    # Cost assumptions, documented in the README and overridable: typical spot and 1-year reservation savings.
    spot_discount=0.60,
    reserved_discount=0.35,
    spot_strategies=MappingProxyType({
        "price-capacity-optimized": "price-capacity-optimized",
        "capacity-optimized": "capacity-optimized",
        "lowest-price": "lowest-price",
    }),
    realizer="components.aws.cluster",
    pulumi_package="aws",
    validator="components.aws.validate",
    # The Deep Learning AMI through its SSM parameter: driver, CUDA, EFA and aws-ofi-nccl preinstalled, resolved by
    # EC2 at every launch (docs/cloud-facts.md#aws-images).
    auto_image=AutoImage(
        alias="resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
        has_drivers=True),
    placement=placement,
    # A head on a launch template is a new instance at each new template version
    # (docs/cloud-facts.md#aws-launch-template-versions); a group's termination hook holds a leaving worker until it
    # has checkpointed (docs/cloud-facts.md#aws-drain-hook).
    lifecycle=frozenset({HEALTH_GRACE, REFRESH, REBALANCE, HEAD_REPLACED, DRAIN}),
    # The head, on a pinned launch template version, is a new instance at each new version; the group's
    # instance_refresh rolls its workers when their launch template changes (docs/cloud-facts.md#rollout-aws).
    rollout=MappingProxyType({INSTANCES: rollout.REPLACE, SCALING_GROUP: rollout.REFRESH}),
    # A terminated instance reads as gone (docs/cloud-facts.md#heal-instance-states).
    dead_states=frozenset({"stopping", "stopped", "shutting-down"}),
    rules=(no_ssh,),
)
