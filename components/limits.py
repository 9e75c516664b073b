"""What each cloud accepts for the names, networks and sizes a stack sets, as the clouds document it.

Data only: the rules that read it live in components.names and components.networks. Every number here has its source
and date in docs/cloud-facts.md#aws-limits, #aws-names, #alibaba-limits, #alibaba-names, #tencent-limits,
#tencent-names and docs/cloud-facts.md#limits-on-every-cloud.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from types import MappingProxyType

IPv4 = ipaddress.IPv4Network


@dataclass(frozen=True)
class TagRules:
    """Tag keys and values a cloud takes on every resource type gpufleet tags (the strictest of them)."""

    max_tags: int
    key_max: int
    value_max: int
    key_chars: re.Pattern[str]
    value_chars: re.Pattern[str]
    reserved_key_prefixes: tuple[str, ...]  # compared case-insensitively
    reserved_value_prefixes: tuple[str, ...] = ()
    forbidden_substrings: tuple[str, ...] = ()
    key_not: tuple[str, ...] = ()  # whole keys the cloud refuses
    value_required: bool = False
    chars_hint: str = ""


@dataclass(frozen=True)
class CloudLimits:
    """One cloud's limits: VPC and subnet sizes, the ranges it refuses, group sizes, tags and id formats."""

    cloud: str
    vpc_prefixes: tuple[int, int]  # widest, narrowest VPC prefix length
    subnet_prefixes: tuple[int, int]  # widest, narrowest subnet prefix length
    subnet_reserved: int  # addresses the cloud keeps in every subnet
    vpc_within: tuple[tuple[IPv4, int], ...] = ()  # (allowed block, widest prefix inside it); empty: any
    vpc_refused: tuple[tuple[IPv4, str], ...] = ()  # ranges the cloud refuses for a VPC, with the reason
    group_max: int | None = None  # most instances in one scaling group
    vpc_instances_max: int | None = None  # most instances in one VPC
    tags: TagRules | None = None
    reservation_id: re.Pattern[str] | None = None
    reservation_example: str = ""
    subnet_word: str = "subnet"


# Tag keys gpufleet writes itself: discovery, IAM conditions and `fleet` commands rely on their values.
OWN_TAG_PREFIX = "gpufleet:"
OWN_TAG_KEYS = ("managed-by",)
# Tags gpufleet puts on a resource besides the stack's: gpufleet:cluster, gpufleet:stack, managed-by, the role tag
# and AWS's Name.
OWN_TAG_COUNT = 5

# Never a VPC on any cloud (docs/cloud-facts.md#limits-on-every-cloud): not unicast addresses a host can own, and the
# link-local range every cloud's metadata service answers in.
NOT_UNICAST = (
    (IPv4("0.0.0.0/8"), "0.0.0.0/8, 'this network', never a host's address"),
    (IPv4("127.0.0.0/8"), "127.0.0.0/8, loopback, which never leaves a host"),
    (IPv4("169.254.0.0/16"), "169.254.0.0/16, link-local, where the instance metadata service answers"),
    (IPv4("224.0.0.0/4"), "224.0.0.0/4, multicast, no address a node can have"),
    (IPv4("240.0.0.0/4"), "240.0.0.0/4, reserved and never routed"),
)
# Docker's default bridge exists on every cloud node (the exporters run in Docker): a VPC overlapping it loses the
# routes to the peers whose addresses fall in it.
DOCKER_BRIDGE = ((IPv4("172.17.0.0/16"), "172.17.0.0/16, Docker's default bridge on every node (the exporters run "
                                         "in Docker): nodes with addresses in it would be unreachable"),)
ON_CLOUDS = NOT_UNICAST + DOCKER_BRIDGE

_AWS_TAG_VALUE = re.compile(r"^[\w\s+\-=.:/@]*$")
# Instance tags are in the instance metadata (the launch template enables it), which narrows keys further.
_AWS_TAG_KEY = re.compile(r"^[A-Za-z0-9+\-=._:@]+$")
_OSS_TAG = re.compile(r"^[A-Za-z0-9 +\-=._:/]*$")
_TENCENT_TAG = re.compile(r"^[\w +\-=.:/@]*$")

# docs/cloud-facts.md#aws-limits, docs/cloud-facts.md#aws-names
AWS = CloudLimits(
    cloud="aws",
    vpc_prefixes=(16, 28),
    subnet_prefixes=(16, 28),
    subnet_reserved=5,
    vpc_refused=ON_CLOUDS,
    tags=TagRules(max_tags=50, key_max=127, value_max=256, key_chars=_AWS_TAG_KEY, value_chars=_AWS_TAG_VALUE,
                  reserved_key_prefixes=("aws:",), reserved_value_prefixes=("aws:",), key_not=(".", "..", "_index"),
                  chars_hint="keys: letters, digits and + - = . _ : @ (no spaces or /, as instance tags in the "
                             "instance metadata need); values: letters, digits, spaces and + - = . _ : / @"),
    reservation_id=re.compile(r"^cr-[0-9a-f]{17}$"),
    reservation_example="cr-0123456789abcdef0",
)

# docs/cloud-facts.md#alibaba-limits, docs/cloud-facts.md#alibaba-names
ALICLOUD = CloudLimits(
    cloud="alicloud",
    vpc_prefixes=(8, 28),
    subnet_prefixes=(16, 29),
    subnet_reserved=4,
    vpc_refused=(*ON_CLOUDS,
                 (IPv4("100.64.0.0/10"), "100.64.0.0/10, which Alibaba Cloud keeps for its own services (the "
                                         "metadata service 100.100.100.200 is in it)")),
    group_max=2000,
    vpc_instances_max=15000,
    tags=TagRules(max_tags=20, key_max=64, value_max=128, key_chars=_OSS_TAG, value_chars=_OSS_TAG,
                  reserved_key_prefixes=("aliyun", "acs:"), reserved_value_prefixes=("acs:",),
                  forbidden_substrings=("http://", "https://"),
                  chars_hint="letters, digits, spaces and + - = . _ : / (OSS bucket tags allow no others)"),
    reservation_id=re.compile(r"^(crp|eap)-[a-z0-9]+$"),
    reservation_example="crp-bp67acfmxazb4ph6xxxx",
    subnet_word="vSwitch",
)

# docs/cloud-facts.md#tencent-limits, docs/cloud-facts.md#tencent-names
TENCENTCLOUD = CloudLimits(
    cloud="tencentcloud",
    vpc_prefixes=(12, 28),
    subnet_prefixes=(12, 28),
    # Not stated by Tencent Cloud: AWS's five, the most any of the three clouds keeps, to be safe.
    subnet_reserved=5,
    vpc_within=((IPv4("10.0.0.0/12"), 12), (IPv4("172.16.0.0/12"), 12), (IPv4("192.168.0.0/16"), 16)),
    vpc_refused=ON_CLOUDS,
    group_max=2000,
    tags=TagRules(max_tags=50, key_max=127, value_max=255, key_chars=_TENCENT_TAG, value_chars=_TENCENT_TAG,
                  reserved_key_prefixes=("qcs:", "qcloud", "tencent", "project"), value_required=True,
                  chars_hint="letters, digits, spaces and + - = . _ : / @ (COS bucket tags allow no others)"),
)

LOCAL = CloudLimits(
    cloud="local",
    vpc_prefixes=(8, 28),
    subnet_prefixes=(8, 29),
    subnet_reserved=2,  # network and broadcast address of a Linux bridge's subnet
    vpc_refused=NOT_UNICAST,
)

CLOUD_NAMES = MappingProxyType({"aws": "AWS", "alicloud": "Alibaba Cloud", "tencentcloud": "Tencent Cloud",
                                "local": "the local cloud"})
LIMITS = MappingProxyType({limits.cloud: limits for limits in (AWS, ALICLOUD, TENCENTCLOUD, LOCAL)})


def limits(cloud: str) -> CloudLimits:
    """The limits of a cloud the spec has already accepted."""
    return LIMITS[cloud]

