"""What the preview says a launch that finds the planned type sold out does (plan/fallback.py `launch_fallback`), for
each kind of worker set: a group with fallbacks, a group held to one type, instances in no group; and the head."""

from __future__ import annotations

from spec_cases import shipped_spec

from plan.candidates import Availability, candidates
from plan.fallback import launch_fallback, launch_types

HEAD = "head: none (one instance: the candidate chosen at deploy time is the fallback it has)"


def test_a_group_with_later_types_launches_them_in_order():
    assert launch_fallback(True, ("p5.48xlarge", "p5e.48xlarge")) == (
        "workers: their scaling groups launch p5.48xlarge, then p5e.48xlarge, in that order", HEAD)


def test_a_group_held_to_one_type_has_none_and_is_told_why():
    assert launch_fallback(True, ("p5.48xlarge",)) == (
        "workers: none (their scaling groups launch p5.48xlarge only: no later available candidate of the same zone, "
        "market and node shape, or a warm pool or reservation holds them to one type)", HEAD)


def test_instances_in_no_group_have_none_but_the_candidate_chosen_at_deploy_time():
    assert launch_fallback(False, ("ecs.ebmgn7ex.32xlarge",)) == (
        "workers: none (instances in no scaling group: a launch that finds ecs.ebmgn7ex.32xlarge sold out fails; the "
        "candidate chosen at deploy time is the fallback they have)", HEAD)


def _types(**market):
    """The workers' launch types of the on-demand g4dn stack with two later candidates of its node shape, every
    place available."""
    spec = shipped_spec("aws-g4dn-dev", autoscaling=None, market={"onDemandBase": 1, "spotPercent": 0, **market},
                        candidates=[{"instanceType": "g4dn.2xlarge"}, {"instanceType": "g4dn.4xlarge"}])
    return launch_types(spec, tuple(Availability(c, True) for c in candidates(spec)))


def test_later_candidates_of_the_shape_are_launch_types_and_a_reservation_holds_one_type():
    planned = "g4dn.xlarge"  # stacks/Pulumi.aws-g4dn-dev.yaml
    assert _types() == (planned, "g4dn.2xlarge", "g4dn.4xlarge")
    assert _types(reservationId="cr-0a1b2c3d4e5f60718") == (planned,), "an On-Demand Capacity Reservation: one type"
