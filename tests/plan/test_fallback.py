"""What the preview says a launch that finds the planned type sold out does (plan/fallback.py `launch_fallback`), for
each kind of worker set: a group with fallbacks, a group held to one type, instances in no group; and the head."""

from __future__ import annotations

from plan.fallback import launch_fallback

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
