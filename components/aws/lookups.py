"""What only the AWS account can say, asked at deploy time: the Capacity Block a `capacityBlock` stack runs in when it
names no reservation (docs/cloud-facts.md#aws-capacity-block-look-up), and whether each candidate's type is offered in
its zone (docs/cloud-facts.md#capacity-look-ups)."""

from __future__ import annotations

import pulumi_aws as aws

from components.realizers.stock import sold_out
from plan.candidates import Availability, Candidate
from plan.facts import DeployFacts, Lookups
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

BLOCK = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"
OFFERINGS = "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"
CAPACITY_BLOCK = "capacity-block"
ZONE = "availability-zone"


def _offerings_stand_in(asked: dict) -> dict:
    """Every asked type offered in every asked zone, but for those the sold-out switch names."""
    filters = {f["name"]: f["values"] for f in asked.get("filters", [])}
    offered = [(kind, zone) for kind in filters.get("instance-type", []) for zone in filters.get("location", [])
               if not sold_out(zone, kind)]
    return {"id": "standin", "instanceTypes": [kind for kind, _ in offered],
            "locations": [zone for _, zone in offered], "locationTypes": [ZONE] * len(offered)}


# What the preview's mocks answer in place of the cloud (fleet/preview.py): a well-formed id that is nobody's block.
STAND_INS = {BLOCK: {"id": "cr-00000000000000000", "reservationType": CAPACITY_BLOCK, "state": "active"},
             OFFERINGS: _offerings_stand_in}


def _not_found(wanted: Lookups, why: str) -> SpecError:
    zone, kind = wanted.capacity_block_zone, wanted.instance_type
    return SpecError([Problem(
        f"{CLUSTER_KEY}.market.reservationId", f"is not set, and the look-up of the account's active Capacity Block "
        f"for {kind} in {zone} found none to use: {why}",
        f"set market.reservationId to the block's cr-... id (`aws ec2 describe-capacity-reservations --filters "
        f"Name=instance-type,Values={kind} Name=availability-zone,Values={zone} Name=state,Values=active`), or "
        "run once the block is active.")])


def _capacity_block(wanted: Lookups) -> str:
    """The one active Capacity Block of the type in the zone; none, several, or an ODCR in its place is the stack's
    problem, named with its fix (the data source errors on no match and on several)."""
    try:
        found = aws.ec2.get_capacity_block_reservation(filters=[
            {"name": "instance-type", "values": [wanted.instance_type]},
            {"name": "availability-zone", "values": [wanted.capacity_block_zone]},
            {"name": "state", "values": ["active"]},
        ])
    # The runtime raises a plain Exception for a failed invoke ("invoke of <token> failed: <why>").
    except Exception as error:
        raise _not_found(wanted, str(error)) from None
    if found.reservation_type != CAPACITY_BLOCK:
        raise _not_found(wanted, f"{found.id} is a {found.reservation_type} reservation, not a Capacity Block.")
    return found.id


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


def look_up(wanted: Lookups) -> DeployFacts:
    return DeployFacts(reservation_id=_capacity_block(wanted) if wanted.capacity_block_zone else None,
                       capacity=tuple(_availability(candidate) for candidate in wanted.candidates))
