"""What only the AWS account can say, asked at deploy time: the Capacity Block a `capacityBlock` stack runs in when it
names no reservation (docs/cloud-facts.md#aws-capacity-block-look-up)."""

from __future__ import annotations

import pulumi_aws as aws

from plan.facts import DeployFacts, Lookups
from spec.errors import Problem, SpecError
from spec.stackfile import CLUSTER_KEY

BLOCK = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"
CAPACITY_BLOCK = "capacity-block"
# What the preview's mocks answer in place of the cloud (fleet/preview.py): a well-formed id that is nobody's block.
STAND_INS = {BLOCK: {"id": "cr-00000000000000000", "reservationType": CAPACITY_BLOCK, "state": "active"}}


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


def look_up(wanted: Lookups) -> DeployFacts:
    return DeployFacts(reservation_id=_capacity_block(wanted) if wanted.capacity_block_zone else None)
