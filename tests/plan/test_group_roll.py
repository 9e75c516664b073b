"""`fleet roll`'s decisions on a group whose configuration changed in place (plan/group_roll.py): which members go
(those launched from older settings, by the user-data tag they keep), in what order, which members are a removed
node's successors, and what their marks let the roll do next."""

from __future__ import annotations

from fleet.stacks import spec_and_plan
from plan.group_refresh import refreshed_to, refreshes_groups
from plan.group_roll import HeldGroup, Member, Size, rolls_groups, settled, stale, successor, successors, surge
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file

NEW, OLD = "f516eea413a284a3", "0c1d2e3f40516273"


def plan(stack: str):
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))[1]


def test_only_alibabas_esss_groups_are_rolled_by_fleet_roll():
    assert rolls_groups(plan("ali-spot").rollout)
    # Fixed workers (replaced by targeted ups), groups that refresh themselves, the local cluster's `fleet up` roll.
    assert not any(rolls_groups(plan(stack).rollout) for stack in ("ali-erdma", "tencent-spot", "aws-p5", "local"))


def test_only_tencents_as_groups_are_refreshed_by_fleet_roll():
    assert refreshes_groups(plan("tencent-spot").rollout)
    assert not any(refreshes_groups(plan(stack).rollout) for stack in ("tencent-hcc", "ali-spot", "aws-p5", "local"))


def test_a_group_is_refreshed_only_from_older_settings_it_runs():
    assert refreshed_to(None, None, "B") == "B", "made by this up: its members launch from the current settings"
    assert refreshed_to(None, "A", "B") == "A", "held before: its members run the settings it had"
    assert refreshed_to("A", "B", "B") == "A", "a refresh that did not succeed leaves the record where it was"


def test_a_roll_grows_the_group_by_one_and_past_its_maximum_only_at_it():
    assert (surge(HeldGroup("g", "asg", "t", 3, 5)), settled(HeldGroup("g", "asg", "t", 3, 5))) == (Size(4, 5),
                                                                                                     Size(3, 5))
    assert surge(HeldGroup("g", "asg", "t", 5, 5)) == Size(6, 6)


def test_the_members_launched_from_older_settings_go_the_longest_serving_first():
    members = [Member("i-3", "InService", "2026-12-02T10:00:00Z", OLD),
               Member("i-1", "InService", "2026-12-01T09:00:00Z", None),
               Member("i-2", "InService", "2026-12-01T09:00:00Z", OLD),
               Member("i-new", "InService", "2026-12-03T08:00:00Z", NEW),
               Member("i-joining", "Pending", "2026-11-30T08:00:00Z", OLD),
               Member("i-leaving", "Removing", "2026-11-30T08:00:00Z", OLD)]
    assert [m.instance_id for m in stale(members, NEW)] == ["i-1", "i-2", "i-3"]
    assert stale([Member("i-new", "InService", "2026-12-03T08:00:00Z", NEW)], NEW) == ()


def test_a_successor_is_a_member_the_group_added_since():
    members = [Member("i-1", "Removing", "a", OLD), Member("i-2", "InService", "b", OLD),
               Member("i-9", "Pending", "c", NEW)]
    assert successors({"i-1", "i-2"}, members) == ("i-9",)
    assert successors({"i-1", "i-2", "i-9"}, members) == ()


def test_a_successor_in_service_lets_the_next_go_and_a_failed_one_stops_the_roll():
    assert successor({}).passed is None and successor({}).failed is None
    assert successor({"i-9": None}).passed is None, "still booting"
    assert successor({"i-8": None, "i-9": "in-service"}).passed == "i-9"
    assert successor({"i-9": "failed:gpus:7/8"}).failed == ("i-9", "failed:gpus:7/8")
    assert successor({"i-9": "stopped:driver:570"}).failed == ("i-9", "stopped:driver:570")
    both = successor({"i-8": "in-service", "i-9": "failed:nccl:allreduce"})
    assert both.failed == ("i-9", "failed:nccl:allreduce") and both.passed is None, "a failed node stops the roll"
