"""A Capacity Block stack that names no reservation runs in the account's active block for its type and zone, found
at deploy time (docs/cloud-facts.md#aws-capacity-block-look-up); when none can be used, the stack fails naming
market.reservationId and how to find the id. Checked through the real program under mocks."""

from __future__ import annotations

import pytest
from stack_preview import preview_stack

from components.aws.lookups import BLOCK, STAND_INS
from fleet import preview
from fleet.cli import main
from plan.paths import PROJECT_ROOT

STACK = PROJECT_ROOT / "stacks" / "Pulumi.aws-p4d-capacity-block.yaml"


def test_the_shipped_block_stack_names_no_reservation_and_runs_in_the_looked_up_block():
    spec, plan, recorded = preview_stack(STACK)
    assert spec.market.capacity_block and spec.market.reservation_id is None
    (call,) = [c for c in recorded.invokes if c["token"] == BLOCK]
    assert call["args"]["filters"] == [{"name": "instance-type", "values": [spec.instance_type]},
                                       {"name": "availability-zone", "values": [spec.zone]},
                                       {"name": "state", "values": ["active"]}]
    assert plan.market.reservation_id == STAND_INS[BLOCK]["id"]


def test_a_named_reservation_is_not_looked_up(write_stack):
    path = write_stack({"cloud": "aws", "zone": "us-east-1b", "instanceType": "p4d.24xlarge", "nodes": 2,
                        "market": {"onDemandBase": 2, "capacityBlock": True, "reservationId": "cr-0a1b2c3d4e5f60718"}})
    spec, plan, recorded = preview_stack(path)
    assert not [c for c in recorded.invokes if c["token"] == BLOCK]
    assert plan.market.reservation_id == "cr-0a1b2c3d4e5f60718"


@pytest.mark.parametrize(("answers", "why"), [
    # The data source fails the invoke on no match and on several; the engine answers with the failure.
    ({BLOCK: ({}, [("filter", "no matching EC2 Capacity Reservation found")])},
     "no matching EC2 Capacity Reservation found"),
    ({BLOCK: {**STAND_INS[BLOCK], "reservationType": "default"}}, "is a default reservation, not a Capacity Block"),
])
def test_no_usable_block_exits_2_naming_the_field_and_the_fix(monkeypatch, capsys, answers, why):
    monkeypatch.setattr(preview, "stand_ins", lambda: {**STAND_INS, **answers})
    assert main(["plan", "--stack-file", str(STACK)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "gpufleet:cluster.market.reservationId" in err and why in err and "Traceback" not in err
    assert ("aws ec2 describe-capacity-reservations --filters Name=instance-type,Values=p4d.24xlarge "
            "Name=availability-zone,Values=us-east-1b Name=state,Values=active") in err
