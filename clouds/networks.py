"""Rules on the networks a stack names: the VPC against the cloud's limits and the plan's layout, the nodes' count
against the cloud's groups, and the SSH sources as ranges a client can be in."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from plan import catalog
from plan.fabric import resolve_fabric
from plan.limits import NOT_UNICAST, CloudLimits
from plan.network import HEAD_HOST, node_subnets
from plan.profile import CloudProfile
from spec.cidrs import Network
from spec.cluster import ClusterSpec
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY

# The cluster network is IPv4 only on every cloud (docs/cloud-facts.md#limits-on-every-cloud).
IPV6_SSH_REASON = ("the cluster's network is IPv4 only (its VPC gets no IPv6 block and no node an IPv6 address), so "
                   "no IPv6 client can ever reach a node")


def _at(path: str) -> str:
    return f"{CLUSTER_KEY}.{path}"


def addresses_per_node(spec: ClusterSpec, row: catalog.InstanceType) -> int:
    """Subnet addresses one node takes: its primary interface, plus one per eRDMA ERI (each an ENI in the vSwitch).
    EFA's efa-only cards and Tencent's RDMA NICs take none."""
    fabric = resolve_fabric(spec.network.fabric, row)
    return 1 + (row.fabric_devices if fabric == "erdma" and row.fabric == "erdma" else 0)


def addresses_needed(nodes: int, per_node: int, lim: CloudLimits) -> int:
    """Addresses `nodes` nodes take in their subnet besides the reserved ones: every node's interfaces, and the plan's
    fixed addresses, which start at the head's host number (plan/network.py) and, where no DHCP hands
    addresses out, go on from there one per node."""
    return max(nodes * per_node, HEAD_HOST + (nodes if lim.addresses_from_head else 1))


def _node_path(spec: ClusterSpec) -> str:
    return _at("nodes" if isinstance(spec.nodes, int) else "nodes.max")


def _widest_vpc(vpc: ipaddress.IPv4Network, lim: CloudLimits) -> int:
    """The shortest prefix a VPC around this one may have: the cloud's widest VPC, within the block it must stay in,
    and no wider than twice the cloud's widest subnet (the nodes get half of it)."""
    inside = [prefix for block, prefix in lim.vpc_within if vpc.subnet_of(block)]
    return max([lim.vpc_prefixes[0], lim.subnet_prefixes[0] - 1, *inside])


def _vpc_range(vpc: ipaddress.IPv4Network, lim: CloudLimits, title: str) -> str | None:
    """Why the cloud refuses this VPC range, or None."""
    for refused, reason in lim.vpc_refused:
        if vpc.overlaps(refused):
            return f"{vpc} overlaps {reason}"
    if lim.vpc_within and not any(vpc.subnet_of(block) for block, _ in lim.vpc_within):
        blocks = ", ".join(str(block) for block, _ in lim.vpc_within)
        return f"{vpc} is outside the ranges {title} allows a VPC in ({blocks})"
    widest = max([lim.vpc_prefixes[0], *(prefix for block, prefix in lim.vpc_within if vpc.subnet_of(block))])
    if vpc.prefixlen < widest:
        return f"{vpc} is wider than /{widest}, the widest VPC {title} allows there"
    if vpc.prefixlen > lim.vpc_prefixes[1]:
        return f"{vpc} is narrower than /{lim.vpc_prefixes[1]}, the narrowest VPC {title} allows"
    return None


def _too_few(network: ipaddress.IPv4Network, lim: CloudLimits, needed: int, per_node: int) -> str:
    """The fix for a VPC too small for the nodes: the narrowest VPC around it that fits, else the most nodes."""
    widest = _widest_vpc(network, lim)
    for prefix in range(network.prefixlen - 1, widest - 1, -1):
        if 2 ** (31 - prefix) - lim.subnet_reserved >= needed:
            return f"use a larger range such as {network.supernet(new_prefix=prefix)}."
    most = _most_in(2 ** (31 - widest) - lim.subnet_reserved, per_node, lim)
    return (f"lower nodes.max to at most {most}: a /{widest}, the widest VPC gpufleet can use there, leaves room for "
            "no more.")


def vpc(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """The VPC is a range the cloud accepts, and the subnets the plan cuts from it fit the cloud and the nodes."""
    lim = cloud.limits
    network = ipaddress.IPv4Network(spec.network.vpc_cidr)
    path = _at("network.vpcCidr")
    if reason := _vpc_range(network, lim, cloud.title):
        yield Problem(path, f"{reason}.", "use a private range the cloud accepts, such as 10.0.0.0/16.")
        return
    row = catalog.lookup(spec.cloud, spec.instance_type)
    private, public = node_subnets(network)
    per_node = addresses_per_node(spec, row) if row else 1
    needed = addresses_needed(spec.counts.max, per_node, lim)
    available = private.num_addresses - lim.subnet_reserved
    if available < needed:
        each = f" at {per_node} addresses each (one per ERI besides the primary)" if per_node > 1 else ""
        if spec.counts.max <= most_nodes(spec, lim):  # else node_bounds says the nodes are too many anywhere
            yield Problem(path, f"{network} leaves {max(available, 0)} addresses in the nodes' {lim.subnet_word} "
                          f"({private}), too few for {spec.counts.max} nodes{each}.",
                          _too_few(network, lim, needed, per_node))
        return
    widest, narrowest = lim.subnet_prefixes
    if private.prefixlen < widest:
        yield Problem(path, f"gpufleet gives the nodes the first half of the VPC, {private}, wider than /{widest}, the "
                      f"widest {lim.subnet_word} {cloud.title} allows.",
                      f"use a /{widest - 1} or narrower VPC, such as {network.network_address}/{widest - 1}.")
    elif public.prefixlen > narrowest:
        yield Problem(path, f"gpufleet cuts the NAT gateway's {lim.subnet_word} {public} from the VPC, narrower than "
                      f"/{narrowest}, the narrowest {lim.subnet_word} {cloud.title} allows.",
                      f"use a /{narrowest - 1} or wider VPC, such as {network.supernet(new_prefix=narrowest - 1)}.")


def most_nodes(spec: ClusterSpec, lim: CloudLimits) -> int:
    """The most nodes the cloud's widest VPC holds once gpufleet gives the nodes the first half of it."""
    row = catalog.lookup(spec.cloud, spec.instance_type)
    widest = max(lim.vpc_prefixes[0], lim.subnet_prefixes[0] - 1)
    return _most_in(2 ** (31 - widest) - lim.subnet_reserved, addresses_per_node(spec, row) if row else 1, lim)


def _most_in(room: int, per_node: int, lim: CloudLimits) -> int:
    """The most nodes whose addresses fit in `room` addresses (addresses_needed)."""
    return min(room // per_node, room - HEAD_HOST if lim.addresses_from_head else room)


def node_bounds(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """No more nodes than the cloud's scaling groups, its VPCs and the widest VPC's addresses hold."""
    lim = cloud.limits
    most = spec.counts.max
    bounds = [(most_nodes(spec, lim), "the widest VPC gpufleet can build there has addresses for")]
    if lim.group_max is not None:
        bounds.append((lim.group_max + 1, f"a head and the {lim.group_max} workers a scaling group holds make"))
    if lim.vpc_instances_max is not None:
        bounds.append((lim.vpc_instances_max, "one VPC holds"))
    bound, why = min(bounds)
    if most > bound:
        yield Problem(_node_path(spec), f"{most} nodes are more than the {bound} {why} on {cloud.title}.",
                      f"lower it to at most {bound}.")


def ssh_sources(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """Each SSH source is an IPv4 range a client can be in, listed once."""
    seen: dict[Network, int] = {}
    for index, text in enumerate(spec.network.ssh_cidrs):
        network = ipaddress.ip_network(text)
        path = _at(f"network.sshCidrs.{index}")
        if network.version == 6:
            yield Problem(path, f"{network} is an IPv6 range, but {IPV6_SSH_REASON}.",
                          "use the IPv4 range of the network you connect from, such as 203.0.113.0/24.")
        elif reason := next((why for block, why in NOT_UNICAST if network.subnet_of(block)), None):
            yield Problem(path, f"{network} is no range a client connects from: {reason}.",
                          "use the range of the network you connect from, such as 203.0.113.0/24.")
        if network in seen:
            yield Problem(path, f"{network} is listed twice (also at sshCidrs.{seen[network]}); the cloud refuses a "
                          "duplicate rule.", "remove one of them.")
        seen.setdefault(network, index)
