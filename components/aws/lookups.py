"""What only the AWS account can say, asked at deploy time: whether each candidate's type is offered in its zone
(docs/cloud-facts.md#capacity-look-ups), and for a `capacityBlock` stack naming no reservation, the account's active
Capacity Block there or, where it has none, the block on offer (docs/cloud-facts.md#aws-capacity-block-look-up), for
one naming its block, that block's state and end (docs/cloud-facts.md#aws-capacity-block-end); and
on which candidates the cluster's instances run now (docs/cloud-facts.md#where-a-cluster-runs)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pulumi_aws as aws

from components.realizers.stock import block_ends, runs_on, sold_out
from plan.candidates import Availability, Candidate, running_on
from plan.facts import DeployFacts, Lookups
from plan.identity import CLUSTER_TAG

BLOCK = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"
OFFERING = "aws:ec2/getCapacityBlockOffering:getCapacityBlockOffering"
OFFERINGS = "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"
INSTANCES = "aws:ec2/getInstances:getInstances"
CAPACITY_BLOCK = "capacity-block"
ZONE = "availability-zone"
# The block asked for where the account has none: the shortest, a day (docs/cloud-facts.md#aws-capacity-block-look-up).
BLOCK_HOURS = 24
# Both block data sources fail the invoke on no match, with the provider's empty-result error (its words).
EMPTY = "empty result"
STAND_IN_BLOCK = "cr-00000000000000000"  # the stand-in block's id: well-formed, nobody's
# The states of an instance that holds its place: all but shutting-down and terminated
# (docs/cloud-facts.md#where-a-cluster-runs).
HOLDING = ["pending", "running", "stopping", "stopped"]


def _offerings_stand_in(asked: dict) -> dict:
    """Every asked type offered in every asked zone, but for those the sold-out switch names."""
    filters = {f["name"]: f["values"] for f in asked.get("filters", [])}
    offered = [(kind, zone) for kind in filters.get("instance-type", []) for zone in filters.get("location", [])
               if not sold_out(zone, kind)]
    return {"id": "standin", "instanceTypes": [kind for kind, _ in offered],
            "locations": [zone for _, zone in offered], "locationTypes": [ZONE] * len(offered)}


def _block_stand_in(asked: dict) -> dict | tuple[dict, list]:
    """Asked by id, that block, `expired` where the block-ends switch puts its end in the past; asked by filters, an
    active block of the asked type in the asked zone, none where the sold-out switch names them or where its end is
    past (the block is `expired`, which the `active` filter drops). Each ends when the block-ends switch says."""
    now = datetime.now(UTC)
    if block_id := asked.get("id"):
        ends = block_ends(now, block_id)
        return {"id": block_id, "reservationType": CAPACITY_BLOCK, "state": "active" if ends > now else "expired",
                "endDate": ends.isoformat(timespec="seconds")}
    filters = {f["name"]: f["values"][0] for f in asked.get("filters", [])}
    zone, kind = filters.get(ZONE, ""), filters.get("instance-type", "")
    ends = block_ends(now, f"{zone}/{kind}", kind)
    if sold_out(zone, kind) or ends <= now:
        return {}, [("filter", EMPTY)]
    return {"id": STAND_IN_BLOCK, "reservationType": CAPACITY_BLOCK, "state": "active",
            "availabilityZone": zone, "endDate": ends.isoformat(timespec="seconds")}


def _offering_stand_in(asked: dict) -> dict | tuple[dict, list]:
    """A block on offer of the asked type, size and length (an id that is nobody's, no fee: the preview buys nothing),
    in the shipped block stack's zone; none where the sold-out switch names the type."""
    if sold_out("", asked.get("instanceType", "")):
        return {}, [("instanceType", EMPTY)]
    return {"id": "cb-00000000000000000", "capacityBlockOfferingId": "cb-00000000000000000",
            "availabilityZone": "us-east-1b", "instanceType": asked.get("instanceType"),
            "instanceCount": asked.get("instanceCount"), "capacityDurationHours": asked.get("capacityDurationHours"),
            "startDateRange": "2026-12-04T11:30:00Z", "endDateRange": "2026-12-05T11:30:00Z", "upfrontFee": "0.00",
            "currencyCode": "USD", "tenancy": "default"}


def _instances_stand_in(asked: dict) -> dict:
    """An instance id per place the runs-on switch names that the asked type and zone match."""
    filters = {f["name"]: f["values"] for f in asked.get("filters", [])}
    found = [f"i-{index:017x}" for index, (zone, kind) in enumerate(runs_on())
             if kind in filters.get("instance-type", []) and zone in filters.get(ZONE, [])]
    return {"id": "standin", "ids": found, "privateIps": [], "publicIps": [], "ipv6Addresses": []}


# What the preview's mocks answer in place of the cloud (fleet/preview.py).
STAND_INS = {BLOCK: _block_stand_in, OFFERING: _offering_stand_in, OFFERINGS: _offerings_stand_in,
             INSTANCES: _instances_stand_in}


def _on_offer(candidate: Candidate, nodes: int) -> str:
    """The block of `nodes` of the type EC2 offers for BLOCK_HOURS, as the data source answers (one offering; it
    fails on none and on several)."""
    try:
        offer = aws.ec2.get_capacity_block_offering(instance_type=candidate.instance_type, instance_count=nodes,
                                                    capacity_duration_hours=BLOCK_HOURS)
    # The runtime raises a plain Exception for a failed invoke ("invoke of <token> failed: <why>").
    except Exception as error:
        return f"no single Capacity Block of {nodes} on offer for {BLOCK_HOURS} h ({error})"
    return (f"on offer: {offer.capacity_block_offering_id}, {offer.instance_count} for {BLOCK_HOURS} h in "
            f"{offer.availability_zone} from {offer.start_date_range}, {offer.upfront_fee} {offer.currency_code} "
            "upfront")


def _block_availability(candidate: Candidate, nodes: int) -> Availability:
    """The account's one active Capacity Block of the type in the zone, which the cluster runs in; where there is
    none (or several, or a reservation of another kind: the data source fails on no match and on several), the block
    EC2 offers, and how to name one."""
    kind, zone = candidate.instance_type, candidate.zone
    try:
        found = aws.ec2.get_capacity_block_reservation(filters=[
            {"name": "instance-type", "values": [kind]},
            {"name": ZONE, "values": [zone]},
            {"name": "state", "values": ["active"]},
        ])
        if found.reservation_type == CAPACITY_BLOCK:
            return Availability(candidate, True, reservation_id=found.id, ends=_end(found))
        why = f"{found.id} is a {found.reservation_type} reservation, not a Capacity Block"
    # The runtime raises a plain Exception for a failed invoke ("invoke of <token> failed: <why>").
    except Exception as error:
        why = str(error)
    return Availability(candidate, False, (
        f"no active Capacity Block of the account to use ({why}); {_on_offer(candidate, nodes)}; buy a block, or set "
        f"market.reservationId to its cr-... id (`aws ec2 describe-capacity-reservations --filters "
        f"Name=instance-type,Values={kind} Name=availability-zone,Values={zone} Name=state,Values=active`)"))


def _end(found) -> datetime | None:
    """The block's end, from the data source's RFC 3339 `end_date`."""
    return datetime.fromisoformat(found.end_date) if found.end_date else None


def _in_named_block(answer: Availability, block_id: str) -> Availability:
    """The stack's own place with the block it names (market.reservationId): its end, and no capacity where the
    block is not `active` (scheduled, expired, cancelled, ...) or is not found
    (docs/cloud-facts.md#aws-capacity-block-end)."""
    try:
        found = aws.ec2.get_capacity_block_reservation(id=block_id)
    # The runtime raises a plain Exception for a failed invoke ("invoke of <token> failed: <why>").
    except Exception as error:
        return replace(answer, available=False, reason=f"Capacity Block {block_id} (market.reservationId) was not "
                       f"found ({error})")
    named = replace(answer, reservation_id=block_id, ends=_end(found))
    if found.state != "active":
        return replace(named, available=False, reason=f"Capacity Block {block_id} (market.reservationId) is "
                       f"{found.state}, not active: nothing launches into it")
    return named


def _availability(candidate: Candidate) -> Availability:
    """Whether EC2 offers the type in the zone: the only capacity answer EC2 gives before a launch (offered is not
    in stock; docs/cloud-facts.md#capacity-look-ups)."""
    found = aws.ec2.get_instance_type_offerings(location_type=ZONE, filters=[
        {"name": "instance-type", "values": [candidate.instance_type]},
        {"name": "location", "values": [candidate.zone]},
    ])
    if candidate.instance_type in found.instance_types:
        return Availability(candidate, True)
    return Availability(candidate, False, f"EC2 does not offer {candidate.instance_type} in {candidate.zone}")


def _runs_on(candidate: Candidate, cluster: str) -> bool:
    """Whether the cluster has an instance of the candidate's type in its zone that holds its place: the instances
    EC2 lists by the cluster's tag (the head and every worker its groups launched carry it)."""
    found = aws.ec2.get_instances(instance_tags={CLUSTER_TAG: cluster}, instance_state_names=HOLDING, filters=[
        {"name": "instance-type", "values": [candidate.instance_type]},
        {"name": ZONE, "values": [candidate.zone]},
    ])
    return bool(found.ids)


def look_up(wanted: Lookups) -> DeployFacts:
    nodes = wanted.capacity_block_nodes
    capacity = tuple(_block_availability(candidate, nodes) if nodes else _availability(candidate)
                     for candidate in wanted.candidates)
    if wanted.named_block and capacity:
        capacity = (_in_named_block(capacity[0], wanted.named_block), *capacity[1:])
    places = {(c.zone, c.instance_type) for c in wanted.candidates if wanted.cluster and _runs_on(c, wanted.cluster)}
    return DeployFacts(capacity=running_on(capacity, places))
