"""Invariants of every plan, over stacks drawn across every cloud and catalog row (as pulumi-awsx's
subnetDistributorNew.test.ts checks its subnet layout with fast-check): addresses, ranks, firewall, placement,
worker groups. Each stack passed the real rules and was planned by the real planner."""

from __future__ import annotations

import ipaddress
import os

from hypothesis import given, settings
from stack_strategies import planned, stacks

from clouds import profile
from plan.firewall import INTERNET_OPT_IN
from plan.lifecycle import DRAIN, HEAD_REPLACED, HEALTH_GRACE, REBALANCE
from plan.model import INSTANCES, MIXED, ON_DEMAND, ROLES, SCALING_GROUP, SPOT, WORKER
from plan.prices import list_price
from spec.cidrs import exposing, parse_cidr
from training.config import parse_args

# Derandomized, so a CI run and a mutation run see the same stacks; each property stays within a few seconds. The
# mutation pass (mutmut, which sets MUTANT_UNDER_TEST) runs every property once per mutant: the first 25 stacks.
PROPERTY = settings(max_examples=25 if os.environ.get("MUTANT_UNDER_TEST") else 100, deadline=None,
                    derandomize=True, database=None)
# Ports of a node's services reached from outside the cluster: HTTPS/HTTP (object storage, packages), DNS, NTP.
SERVICE_PORTS = {("tcp", 443), ("tcp", 80), ("udp", 53), ("udp", 123)}
# Interfaces that take an address in the nodes' subnet (EFA's efa-only cards take none).
ADDRESSED = ("efa", "interface", "erdma")


@PROPERTY
@given(stacks())
def test_subnets_and_node_addresses_fit_the_vpc(drawn):
    """Both subnets inside the VPC and apart; the head's fixed address a usable host of the nodes' subnet, which
    holds every node's interfaces besides the addresses the cloud reserves; where the plan gives every node its
    address (no DHCP), those addresses, at every count up to the most nodes, distinct usable hosts too."""
    found = planned(drawn)
    net, scaling = found.plan.network, found.plan.scaling
    limits = profile(found.plan.cloud).limits
    vpc = ipaddress.IPv4Network(net.vpc_cidr)
    private, public = ipaddress.IPv4Network(net.private.cidr), ipaddress.IPv4Network(net.public.cidr)
    assert private.subnet_of(vpc) and public.subnet_of(vpc) and not private.overlaps(public)
    hosts = range(int(private.network_address) + 1, int(private.broadcast_address))
    assert int(ipaddress.IPv4Address(net.head_address)) in hosts
    per_node = sum(1 for interface in found.plan.fabric.interfaces if interface.kind in ADDRESSED)
    assert private.num_addresses - limits.subnet_reserved >= scaling.nodes_max * per_node
    for count in range(1, scaling.nodes_max + 1 if limits.addresses_from_head else 1):
        addresses = net.node_addresses(count)
        assert addresses[0] == net.head_address and len(set(addresses)) == count
        assert all(int(ipaddress.IPv4Address(a)) in hosts for a in addresses), (count, private)


@PROPERTY
@given(stacks())
def test_every_rank_gets_a_sequence_at_every_node_count(drawn):
    """The command every node runs: its elastic bounds are the cluster's, and at each node count between them the
    job's global batch gives every rank at least one sequence."""
    found = planned(drawn)
    scaling = found.plan.scaling
    for role in (found.plan.head, found.plan.worker):
        command = role.command
        flags = dict(arg.split("=", 1) for arg in command[:command.index("-m")] if "=" in arg)
        assert flags["--nnodes"] == f"{scaling.nodes_min}:{scaling.nodes_max}"
        ranks = int(flags["--nproc-per-node"])
        job = parse_args(list(command[command.index("health.run_job") + 1:command.index("--checkpoint-dir")]))
        for nodes in range(scaling.nodes_min, scaling.nodes_max + 1):
            assert nodes * ranks <= job.global_batch, (nodes, ranks, job.global_batch)


@PROPERTY
@given(stacks(open_to=False))
def test_nothing_is_open_by_default(drawn):
    """Without sshCidrs every inbound rule admits cluster members only, and outbound traffic leaves the cluster only
    for the named service ports, never as all traffic or a range of ports."""
    plan = planned(drawn).plan
    assert all(rule.peer == "self" for rule in plan.firewall if rule.direction == "ingress")
    for rule in plan.firewall:
        if rule.direction == "egress" and rule.peer != "self":
            assert rule.from_port == rule.to_port and (rule.protocol, rule.from_port) in SERVICE_PORTS, rule


@PROPERTY
@given(stacks(open_to=True))
def test_only_ssh_from_the_named_ranges_and_the_internet_only_when_asked(drawn):
    """The outside reaches port 22 from the stack's sshCidrs and nothing else; a rule is marked as opted in to the
    internet (the mark policy.internet lets through) only when the stack set allowInternet and the rule's range is
    one that exposes the cluster."""
    found = planned(drawn)
    network = found.spec.network
    outside = [rule for rule in found.plan.firewall if rule.direction == "ingress" and rule.peer != "self"]
    assert sorted(rule.peer for rule in outside) == sorted(network.ssh_cidrs)
    assert all((rule.protocol, rule.from_port, rule.to_port) == ("tcp", 22, 22) for rule in outside)
    exposed = {str(n) for n in exposing([parse_cidr(c) for c in network.ssh_cidrs])}
    for rule in outside:
        assert (INTERNET_OPT_IN in rule.description) == (network.allow_internet and rule.peer in exposed), rule


@PROPERTY
@given(stacks())
def test_members_reach_each_other_where_the_job_needs_them(drawn):
    """Inside the cluster: an RDMA-style fabric has every protocol open both ways; on TCP, the rendezvous port, the
    metrics ports and the whole NCCL range (or everything) are open between members."""
    found = planned(drawn)
    rules = [rule for rule in found.plan.firewall if rule.peer == "self"]

    def open_to_self(direction: str, port: int, protocol: str = "tcp") -> bool:
        return any(rule.direction == direction and rule.protocol in ("all", protocol)
                   and rule.from_port <= port <= rule.to_port for rule in rules)

    if found.plan.fabric.kind != "tcp":
        for direction in ("ingress", "egress"):
            assert any(r.direction == direction and r.protocol == "all" and (r.from_port, r.to_port) == (0, 65535)
                       for r in rules)
    network = found.spec.network
    ports = [network.rendezvous_port, 9100, 9400, *(range(network.port_range[0], network.port_range[1] + 1)
                                                     if network.port_range else ())]
    assert all(open_to_self("ingress", port) and open_to_self("egress", port) for port in ports)


@PROPERTY
@given(stacks())
def test_placement_is_within_what_the_fabric_allows(drawn):
    """Each placement group holds known roles; a stack that asks for anti-affinity gets every node spread; an
    RDMA-style fabric's nodes share one group (its one network domain) unless a Capacity Block places them; a
    fabric group's workers are launched as fixed instances on clouds whose scaling groups cannot join it."""
    found = planned(drawn)
    plan, spec = found.plan, found.spec
    kinds = [p.kind for p in plan.placements]
    assert len(kinds) == len(set(kinds))
    assert all(p.roles and set(p.roles) <= set(ROLES) for p in plan.placements)
    if spec.network.anti_affinity:
        assert any(p.kind == "spread" and set(p.roles) == set(ROLES) for p in plan.placements)
    if plan.fabric.kind != "tcp" and not plan.market.capacity_block:
        assert any(set(p.roles) == set(ROLES) for p in plan.placements), plan.placements
    if plan.market.capacity_block:
        assert not plan.placements
    if plan.cloud != "aws" and any(p.kind != "spread" and WORKER in p.roles for p in plan.placements):
        assert all(group.form == INSTANCES for group in plan.workers)
        assert plan.scaling.nodes_min == plan.scaling.nodes_max


@PROPERTY
@given(stacks())
def test_worker_groups_split_the_workers_by_market(drawn):
    """The groups' bounds add up to the workers' (fixed instances: the desired count), each group min <= desired <=
    max; on-demand keeps the base (the head is one of it) and spot holds at most the stack's share above it."""
    found = planned(drawn)
    plan, m = found.plan, found.spec.market
    scaling, groups = plan.scaling, plan.workers
    assert scaling.nodes_min <= scaling.nodes_desired <= scaling.nodes_max
    assert all(0 <= g.min_size <= g.desired <= g.max_size and g.max_size > 0 for g in groups)
    assert all(g.min_size == g.desired == g.max_size for g in groups if g.form == INSTANCES)
    assert sum(g.desired for g in groups) == scaling.workers_desired
    if groups and all(g.form == SCALING_GROUP for g in groups):
        assert sum(g.min_size for g in groups) == scaling.workers_min
        assert sum(g.max_size for g in groups) == scaling.workers_max
    assert not plan.head.spot and plan.worker.spot == (m.spot_percent > 0)
    assert all(g.market in (ON_DEMAND, MIXED, SPOT) for g in groups)
    assert all(g.market == ON_DEMAND for g in groups) or m.spot_percent > 0
    split = [g for g in groups if g.market != MIXED]
    if split:
        workers = scaling.workers_desired
        spot = sum(g.desired for g in split if g.market == SPOT)
        base_workers = min(max(m.on_demand_base - 1, 0), workers)  # the head is one of the on-demand base
        assert workers - spot >= base_workers
        assert spot * 100 <= m.spot_percent * (workers - base_workers) < (spot + 1) * 100
    assert plan.lifecycle.standby <= scaling.nodes_max - scaling.nodes_min


@PROPERTY
@given(stacks())
def test_lifecycle_is_what_the_clouds_groups_offer(drawn):
    """Workers a scaling group takes away drain through its termination hook wherever the cloud's groups have one,
    for the time a checkpoint takes; the preview says how the head is replaced wherever the cloud replaces it; warm
    standby nodes are stopped ones, and there are none unless the stack asks."""
    found = planned(drawn)
    plan, offered = found.plan, profile(found.plan.cloud).lifecycle
    lifecycle = plan.lifecycle
    assert (lifecycle.drain is not None) == (DRAIN in offered)
    if lifecycle.drain:
        assert lifecycle.drain.hook and lifecycle.drain.timeout_s > 0
    assert bool(lifecycle.head_replacement) == (HEAD_REPLACED in offered)
    assert (lifecycle.health_grace_s is not None) == (HEALTH_GRACE in offered)
    assert lifecycle.capacity_rebalance == (REBALANCE in offered and plan.market.uses_spot)
    assert lifecycle.standby == found.spec.autoscaling.standby
    assert (lifecycle.standby_state == "stopped") == (lifecycle.standby > 0)
    assert lifecycle.standby_state in ("stopped", None)


@PROPERTY
@given(stacks())
def test_every_node_gets_a_whole_software_matrix(drawn):
    """A plain image installs an exact driver of a branch the wheel's CUDA runs on, an image with drivers is checked
    against that branch; the wheel, its CUDA and NCCL are named; the fabric's stack exactly where there is a fabric,
    fabric manager exactly on NVSwitch hosts, and NCCL's network the one the fabric's environment sets."""
    plan = planned(drawn).plan
    software, image = plan.software, plan.image
    assert software.mode == ("check" if image.has_drivers else "install")
    if image.has_drivers:
        assert software.driver == ""
    else:
        assert int(software.driver.split(".")[0]) >= software.driver_min_branch > 0
    assert all(isinstance(v, str) and v for v in (software.cuda, software.torch, software.torch_index, software.nccl))
    assert software.torch.startswith("torch==")
    assert bool(software.fabric_stack) == (plan.fabric.kind != "tcp")
    assert bool(software.fabricmanager) == plan.instance.nvswitch
    assert software.nccl_net == plan.fabric.nccl_net


@PROPERTY
@given(stacks())
def test_cost_prices_the_desired_nodes(drawn):
    """On-demand cost is the list price of every desired node; the expected cost (spot mix or reservation) is never
    more than that, nor less than all of them at the cloud's deepest discount, and it is that price without spot or
    a reservation."""
    plan = planned(drawn).plan
    listed, cost = list_price(plan.instance), plan.cost
    price = listed.hourly
    assert cost.currency == listed.currency
    if price is None:
        assert cost.on_demand_hourly is None and cost.expected_hourly is None
        return
    assert abs(cost.on_demand_hourly - price * plan.scaling.nodes_desired) < 1e-3
    assert cost.expected_hourly <= cost.on_demand_hourly + 1e-9
    if not plan.market.uses_spot and plan.market.reservation_id is None:
        assert cost.expected_hourly == cost.on_demand_hourly
    cloud = profile(plan.cloud)
    # Never cheaper than every desired node at the deepest discount: no more spot nodes than there are workers.
    floor = cost.on_demand_hourly * (1 - max(cloud.spot_discount, cloud.reserved_discount))
    assert cost.expected_hourly >= floor - 1e-3
