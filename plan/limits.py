"""The shape of what a cloud accepts for the names, networks and sizes a stack sets, and the limits every cloud shares.

Data only: each cloud's own limits are on its profile (clouds/<cloud>.py, `CloudProfile.limits`, with
their sources in docs/cloud-facts.md#aws-limits, #aws-names, #alibaba-limits, ...); the rules that read them live in
clouds.names and clouds.networks. The shared ranges are in docs/cloud-facts.md#limits-on-every-cloud.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

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
    """One cloud's limits: VPC and subnet sizes, the ranges it refuses, group sizes, tags, bucket names and id
    formats."""

    vpc_prefixes: tuple[int, int]  # widest, narrowest VPC prefix length
    subnet_prefixes: tuple[int, int]  # widest, narrowest subnet prefix length
    subnet_reserved: int  # addresses the cloud keeps in every subnet
    # No DHCP hands nodes their addresses: the plan gives each one, from the head's on (NetworkPlan.node_addresses).
    addresses_from_head: bool = False
    vpc_within: tuple[tuple[IPv4, int], ...] = ()  # (allowed block, widest prefix inside it); empty: any
    vpc_refused: tuple[tuple[IPv4, str], ...] = ()  # ranges the cloud refuses for a VPC, with the reason
    group_max: int | None = None  # most instances in one scaling group
    vpc_instances_max: int | None = None  # most instances in one VPC
    tags: TagRules | None = None
    reservation_id: re.Pattern[str] | None = None
    reservation_example: str = ""
    reservation_hint: str = ""  # where a user finds the id
    subnet_word: str = "subnet"
    # Bucket names: lowercase letters, digits and dashes, 3-63 of them; where dots are allowed, also no two in a row,
    # no IP address and none of the reserved prefixes and suffixes; where a domain bounds the name instead, its
    # format ({bucket}, {region}) and most characters.
    bucket_dots: bool = False
    bucket_reserved_prefixes: tuple[str, ...] = ()
    bucket_reserved_suffixes: tuple[str, ...] = ()
    bucket_domain: str = ""
    bucket_domain_max: int = 0
    # Tag keys (lowercase) gpufleet sets per resource on this cloud besides its own gpufleet:* and managed-by.
    own_tag_keys: tuple[str, ...] = ()
    # Rules one security group takes: in each direction, or in and out together (group_rules_together).
    group_rules_max: int | None = None
    group_rules_together: bool = False
    root_volume_max_gb: int | None = None  # the largest system disk the cloud makes


# Tag keys gpufleet writes itself: discovery, IAM conditions and `fleet` commands rely on their values.
OWN_TAG_PREFIX = "gpufleet:"
OWN_TAG_KEYS = ("managed-by",)
# Tags an object in the bucket takes, on S3 and COS alike (docs/cloud-facts.md#object-tags): objects carry only
# gpufleet's own (ClusterPlan.object_tag_map).
OBJECT_TAGS_MAX = 10


def own_tag(key: str) -> bool:
    """One of gpufleet's own tag keys (gpufleet:*, managed-by), compared as the clouds do, case-insensitively."""
    lowered = key.lower()
    return lowered.startswith(OWN_TAG_PREFIX) or lowered in OWN_TAG_KEYS
# Tags gpufleet puts on a resource besides the stack's, at most: gpufleet:cluster, gpufleet:stack, managed-by, the
# role tag, and AWS's Name or, on an Alibaba ESS worker, gpufleet:health (a failed node's) and gpufleet:user-data
# (plan/rollout.py USER_DATA_TAG).
OWN_TAG_COUNT = 6

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
