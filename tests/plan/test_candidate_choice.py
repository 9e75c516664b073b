"""The spec a candidate gives (plan/candidates.py): the stack's own place first, each written candidate filled from
the stack, and a chosen candidate's zone, type and market in the spec the plan is made from, with nothing left to
choose."""

from __future__ import annotations

import pytest
from spec_cases import shipped_spec

from plan.candidates import Availability, Candidate, applied, candidates, choose
from spec.errors import SpecError
from spec.stackfile import CLUSTER_KEY

# A spot stack with a spot price ceiling, and two more places: another type in another zone on demand, and another
# type with the stack's market.
WRITTEN = [{"zone": "us-west-2a", "instanceType": "g5.24xlarge", "market": "on-demand"},
           {"instanceType": "g5.12xlarge"}]


def spec():
    return shipped_spec("aws-g5-spot", candidates=WRITTEN)


def test_the_stacks_own_place_comes_first_and_each_candidate_is_filled_from_the_stack():
    assert candidates(spec()) == (Candidate("us-west-2b", "g5.48xlarge", on_demand=False),
                                  Candidate("us-west-2a", "g5.24xlarge", on_demand=True),
                                  Candidate("us-west-2b", "g5.12xlarge", on_demand=False))


def test_an_on_demand_candidate_runs_every_node_on_demand_in_its_zone_and_type():
    stack = spec()
    on_demand = applied(stack, candidates(stack)[1])
    assert (on_demand.zone, on_demand.instance_type) == ("us-west-2a", "g5.24xlarge")
    assert on_demand.market.spot_percent == 0 and on_demand.market.max_spot_price is None
    assert on_demand.market.on_demand_base == stack.market.on_demand_base
    assert on_demand.candidates == [], "the plan is made on one place: nothing is left to choose"


def test_a_candidate_on_the_stacks_market_keeps_its_spot_share_and_ceiling():
    stack = spec()
    same_market = applied(stack, candidates(stack)[2])
    assert (same_market.zone, same_market.instance_type) == ("us-west-2b", "g5.12xlarge")
    assert same_market.market == stack.market and stack.market.max_spot_price == 10.0
    assert same_market.candidates == []


def test_a_running_place_is_kept_and_a_new_cluster_takes_the_first_available():
    stack = spec()
    own, on_demand, same_market = candidates(stack)
    new = (Availability(own, False, "sold out"), Availability(on_demand, True), Availability(same_market, True))
    assert choose(stack, new)[1].candidate == on_demand
    running = (*new[:2], Availability(same_market, False, "sold out", running=True))
    assert choose(stack, running)[0].instance_type == "g5.12xlarge", "a running cluster stays where it runs"


def test_no_place_with_capacity_is_refused_naming_each_and_why():
    stack = spec()
    capacity = tuple(Availability(c, False, why) for c, why in zip(candidates(stack), ("sold out", "not offered",
                                                                                         "sold out"), strict=True))
    with pytest.raises(SpecError) as refused:
        choose(stack, capacity)
    (problem,) = refused.value.problems
    assert problem.path == f"{CLUSTER_KEY}.candidates"
    assert problem.message == ("no candidate has capacity now, so nothing was created (tried g5.48xlarge in "
                               "us-west-2b: sold out; g5.24xlarge in us-west-2a on demand: not offered; g5.12xlarge in "
                               "us-west-2b: sold out).")
    assert problem.fix == "add candidates in other zones, types or markets, or try again later."


def test_a_candidate_the_cloud_cannot_build_is_refused_as_the_stack_itself_would_be_with_the_same_fix():
    with pytest.raises(SpecError) as as_stack:
        shipped_spec("aws-g5-spot", instanceType="no-such-type")
    with pytest.raises(SpecError) as as_candidate:
        shipped_spec("aws-g5-spot", candidates=[{"instanceType": "no-such-type"}])
    (stack_problem,) = [p for p in as_stack.value.problems if p.path.endswith(".instanceType")]
    (candidate_problem,) = as_candidate.value.problems
    assert candidate_problem.path == "gpufleet:cluster.candidates[0]"
    assert candidate_problem.message.endswith(f"{stack_problem.path} {stack_problem.message}")
    assert candidate_problem.fix == stack_problem.fix and candidate_problem.fix


@pytest.mark.parametrize("market", [{"capacityBlock": False, "reservationId": "cr-0123456789abcdef0"},
                                    {"capacityBlock": True, "reservationId": "cr-0123456789abcdef0"}],
                         ids=["capacity reservation", "named Capacity Block"])
def test_a_reservation_stays_with_the_stacks_own_type_and_zone(market):
    """A reservation holds one type in one zone (docs/cloud-facts.md#aws-capacity): a candidate of another type or
    zone launches without it, or every launch there fails; the stack's own place on demand keeps it."""
    stack = shipped_spec("aws-p4d-capacity-block", market=market,
                         candidates=[{"instanceType": "p5.48xlarge"}, {"zone": "us-east-1a"}])
    own, other_type, other_zone = candidates(stack)
    for elsewhere in (other_type, other_zone):
        moved = applied(stack, elsewhere)
        assert moved.market.reservation_id is None and not moved.market.capacity_block, elsewhere.label
    assert applied(stack, own).market == stack.market
