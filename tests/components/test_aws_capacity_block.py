"""A Capacity Block stack that names no reservation runs in the account's active block for its type and zone, found
at deploy time as that candidate's capacity (docs/cloud-facts.md#aws-capacity-block-look-up); where there is none,
the preview shows the block EC2 has on offer, takes the next candidate with a block, and with none refuses the stack
before any resource, naming market.reservationId and how to find the id. Checked through the real program under
mocks and the stand-ins."""

from __future__ import annotations

import json

import pytest
import yaml
from stack_preview import preview_stack

from components.aws.lookups import BLOCK, BLOCK_HOURS, OFFERING, OFFERINGS, STAND_IN_BLOCK, STAND_INS
from components.realizers.stock import BLOCK_ENDS_IN, RUNS_ON, SOLD_OUT
from fleet import preview
from fleet.cli import main
from fleet.plan_command import capacity_of
from fleet.stacks import spec_and_plan
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file

STACK = PROJECT_ROOT / "stacks" / "Pulumi.aws-p4d-capacity-block.yaml"
SECOND = "p5.48xlarge"  # a candidate of another type: it runs in its own block


def _with_candidate(write_stack):
    config = yaml.safe_load(STACK.read_text())["config"]
    cluster = config.pop("gpufleet:cluster")
    cluster["candidates"] = [{"instanceType": SECOND}]
    return load_stack_file(write_stack(cluster, region=None, extra=config)), cluster


def test_the_shipped_block_stack_names_no_reservation_and_runs_in_the_looked_up_block(monkeypatch):
    monkeypatch.delenv(SOLD_OUT, raising=False)
    spec, plan, recorded = preview_stack(STACK)
    assert spec.market.capacity_block and spec.market.reservation_id is None
    (call,) = [c for c in recorded.invokes if c["token"] == BLOCK]
    assert call["args"]["filters"] == [{"name": "instance-type", "values": [spec.instance_type]},
                                       {"name": "availability-zone", "values": [spec.zone]},
                                       {"name": "state", "values": ["active"]}]
    assert plan.market.reservation_id == STAND_IN_BLOCK
    assert not [c for c in recorded.invokes if c["token"] in (OFFERING, OFFERINGS)], "a block held: nothing to buy"
    (shown,) = capacity_of(plan)
    assert shown["chosen"]


NAMED = "cr-0a1b2c3d4e5f60718"


def _named_block_stack(write_stack):
    return write_stack({"cloud": "aws", "zone": "us-east-1b", "instanceType": "p4d.24xlarge", "nodes": 2,
                        "market": {"onDemandBase": 2, "capacityBlock": True, "reservationId": NAMED}})


def test_a_named_block_is_looked_up_by_its_id_and_used(write_stack, monkeypatch):
    monkeypatch.delenv(BLOCK_ENDS_IN, raising=False)
    spec, plan, recorded = preview_stack(_named_block_stack(write_stack))
    assert [c["args"] for c in recorded.invokes if c["token"] == BLOCK] == [{"id": NAMED}]
    assert not [c for c in recorded.invokes if c["token"] == OFFERING], "a named block: nothing to buy"
    assert plan.market.reservation_id == NAMED


def test_a_named_block_that_expired_refuses_the_stack_naming_its_state(write_stack, monkeypatch, capsys):
    monkeypatch.setenv(BLOCK_ENDS_IN, f"{NAMED}=-2")
    monkeypatch.setenv(RUNS_ON, "us-east-1b/p4d.24xlarge")  # a stale listing: the block's instances are terminated
    assert main(["plan", "--stack-file", str(_named_block_stack(write_stack))]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"Capacity Block {NAMED} (market.reservationId) is expired, not active" in err
    assert "nothing was created" in err and "Traceback" not in err


def test_a_named_block_warns_before_its_end_like_a_looked_up_one(write_stack, monkeypatch, capsys):
    monkeypatch.setenv(BLOCK_ENDS_IN, f"{NAMED}=3")
    assert main(["plan", "--stack-file", str(_named_block_stack(write_stack)), "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(f"Capacity Block {NAMED} of p4d.24xlarge in us-east-1b on demand ends at" in w for w in warnings)


def test_no_block_for_the_first_candidate_the_next_ones_block_is_used_and_the_offer_shown(write_stack, monkeypatch):
    stack_file, cluster = _with_candidate(write_stack)
    monkeypatch.setenv(SOLD_OUT, cluster["instanceType"])
    spec, plan = spec_and_plan(stack_file)
    assert spec.instance_type == SECOND and plan.market.reservation_id == STAND_IN_BLOCK
    first, second = capacity_of(plan)
    assert not first["available"] and second["chosen"]
    assert "no active Capacity Block" in first["reason"] and "market.reservationId" in first["reason"]
    assert "no single Capacity Block" in first["reason"], "the sold-out switch: none on offer either"


def test_the_offering_is_asked_for_the_clusters_size_and_shown(monkeypatch, capsys):
    offer = {"capacityBlockOfferingId": "cb-0123456789abcdef0", "availabilityZone": "us-east-1b",
             "instanceCount": 4, "startDateRange": "2026-12-10T11:30:00Z", "upfrontFee": "1234.56",
             "currencyCode": "USD"}
    asked = []
    answers = {**STAND_INS, BLOCK: ({}, [("filter", "empty result")]),
               OFFERING: lambda args: asked.append(args) or offer}
    monkeypatch.setattr(preview, "stand_ins", lambda: answers)
    assert main(["plan", "--stack-file", str(STACK)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert asked and {k: asked[0][k] for k in ("instanceType", "instanceCount", "capacityDurationHours")} == {
        "instanceType": "p4d.24xlarge", "instanceCount": 4, "capacityDurationHours": BLOCK_HOURS}
    assert ("on offer: cb-0123456789abcdef0, 4 for 24 h in us-east-1b from 2026-12-10T11:30:00Z, 1234.56 USD "
            "upfront") in err


@pytest.mark.parametrize(("answer", "why"), [
    # The data source fails the invoke on no match and on several; the engine answers with the failure.
    (({}, [("filter", "empty result")]), "empty result"),
    ({"id": STAND_IN_BLOCK, "reservationType": "default"}, "is a default reservation, not a Capacity Block"),
])
def test_no_usable_block_exits_2_naming_the_field_and_the_fix(monkeypatch, capsys, answer, why):
    monkeypatch.setattr(preview, "stand_ins", lambda: {**STAND_INS, BLOCK: answer})
    assert main(["plan", "--stack-file", str(STACK)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "gpufleet:cluster.instanceType" in err and "nothing was created" in err
    assert why in err and "market.reservationId" in err and "Traceback" not in err
    assert ("aws ec2 describe-capacity-reservations --filters Name=instance-type,Values=p4d.24xlarge "
            "Name=availability-zone,Values=us-east-1b Name=state,Values=active") in err


def _runs_in_the_block(monkeypatch, ends_in_hours: float) -> None:
    """The cluster runs in the stack's own block, which ends in this many hours."""
    monkeypatch.delenv(SOLD_OUT, raising=False)
    monkeypatch.setenv(RUNS_ON, "us-east-1b/p4d.24xlarge")
    monkeypatch.setenv(BLOCK_ENDS_IN, f"us-east-1b/p4d.24xlarge={ends_in_hours}")


def test_a_block_in_its_last_half_hour_is_left_for_the_next_candidate_naming_why(write_stack, monkeypatch):
    stack_file, _ = _with_candidate(write_stack)
    _runs_in_the_block(monkeypatch, 0.25)
    spec, plan = spec_and_plan(stack_file)
    assert spec.instance_type == SECOND and plan.market.reservation_id == STAND_IN_BLOCK
    first, second = capacity_of(plan)
    assert not first["running"] and not first["available"] and second["chosen"]
    assert f"Capacity Block {STAND_IN_BLOCK} ends at" in first["reason"] and "taken as gone" in first["reason"]


def test_a_block_in_its_last_half_hour_with_no_next_candidate_refuses_before_anything(monkeypatch, capsys):
    _runs_in_the_block(monkeypatch, 0.25)
    assert main(["plan", "--stack-file", str(STACK)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "nothing was created" in err and "taken as gone" in err and "Traceback" not in err


def test_an_expired_block_is_not_found_and_the_next_candidate_is_taken(write_stack, monkeypatch):
    stack_file, _ = _with_candidate(write_stack)
    monkeypatch.delenv(SOLD_OUT, raising=False)
    monkeypatch.setenv(RUNS_ON, "us-east-1b/p4d.24xlarge")  # stopped in the block: it holds the place no more
    monkeypatch.setenv(BLOCK_ENDS_IN, "p4d.24xlarge=-1")  # past its end: `expired`, which the `active` filter drops
    spec, plan = spec_and_plan(stack_file)
    first, second = capacity_of(plan)
    assert not first["available"] and "no active Capacity Block" in first["reason"]
    assert second["chosen"] and spec.instance_type == SECOND


@pytest.mark.parametrize(("ends_in", "warned"), [(5, True), (23.9, True), (24.5, False), (48, False)])
def test_the_preview_warns_within_a_day_of_the_blocks_end_and_keeps_the_cluster(monkeypatch, capsys, ends_in,
                                                                                 warned):
    _runs_in_the_block(monkeypatch, ends_in)
    assert main(["plan", "--stack-file", str(STACK), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (shown,) = document["capacity"]
    assert shown["chosen"] and shown["running"]
    ending = [w for w in document["warnings"] if "Capacity Block" in w]
    assert bool(ending) is warned
    if warned:
        assert f"Capacity Block {STAND_IN_BLOCK} of p4d.24xlarge in us-east-1b" in ending[0]
        assert "EC2 terminates the cluster's instances from" in ending[0]
