"""A Capacity Block counts as gone from 30 minutes before its end, when EC2 starts terminating its instances, and the
preview warns within a day of the end (plan/blocks.py, docs/cloud-facts.md#aws-capacity-block-end): the boundaries,
on the real functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from plan.blocks import ending_warning, in_force
from plan.candidates import Availability, Candidate, chosen

END = datetime(2026, 12, 4, 11, 30, tzinfo=UTC)
BLOCK = Candidate("us-east-1b", "p4d.24xlarge", on_demand=True)
NEXT = Candidate("us-east-1b", "p5.48xlarge", on_demand=True)
SECOND = timedelta(seconds=1)


def _capacity(running: bool = True) -> tuple[Availability, ...]:
    return (Availability(BLOCK, True, reservation_id="cr-0a1b2c3d4e5f60718", running=running, ends=END),
            Availability(NEXT, True, reservation_id="cr-0f0e0d0c0b0a09080", ends=END + timedelta(days=7)))


@pytest.mark.parametrize("now", [END - timedelta(minutes=30), END - timedelta(minutes=1), END + timedelta(hours=1)])
def test_from_30_minutes_before_its_end_a_running_clusters_block_is_gone(now):
    first, second = in_force(_capacity(), now)
    assert first.available is False and first.running is False
    assert "cr-0a1b2c3d4e5f60718 ends at 2026-12-04 11:30 UTC" in first.reason
    assert "terminates its instances from 2026-12-04 11:00 UTC" in first.reason
    assert chosen((first, second)) is second, "the plan takes the next candidate"


def test_a_second_earlier_the_cluster_keeps_its_place():
    kept = in_force(_capacity(), END - timedelta(minutes=30) - SECOND)
    assert kept == _capacity() and chosen(kept).candidate == BLOCK


def test_answers_without_an_end_are_left_alone():
    plain = (Availability(BLOCK, False, "sold out", running=True),)
    assert in_force(plain, END) == plain


@pytest.mark.parametrize(("before", "hours"), [(timedelta(hours=24), "24.0"), (timedelta(hours=5), "5.0"),
                                               (timedelta(minutes=31), "0.5")])
def test_the_preview_warns_within_a_day_of_the_chosen_blocks_end(before, hours):
    warning = ending_warning(_capacity(), END - before)
    assert warning and f"(in {hours} h)" in warning
    assert warning == (f"Capacity Block cr-0a1b2c3d4e5f60718 of p4d.24xlarge in us-east-1b on demand ends at "
                       f"2026-12-04 11:30 UTC (in {hours} h); EC2 terminates the cluster's instances from 2026-12-04 "
                       "11:00 UTC, and from then on the plan takes the next candidate. Checkpoint before then; to go "
                       "on, extend the block, or buy another and list its place in `candidates`.")


def test_no_warning_a_day_and_a_second_before_nor_for_a_block_not_chosen():
    assert ending_warning(_capacity(), END - timedelta(hours=24) - SECOND) is None
    moved = in_force(_capacity(), END)  # the first is gone: the chosen block ends a week later
    assert ending_warning(moved, END) is None


def test_where_capacity_is_blocks_a_candidate_without_one_holds_no_place():
    stale = (Availability(BLOCK, False, "no active Capacity Block", running=True),
             Availability(NEXT, True, reservation_id="cr-0f0e0d0c0b0a09080", ends=END))
    first, second = in_force(stale, END - timedelta(days=1), blocks=True)
    assert first.running is False and chosen((first, second)) is second
    assert in_force(stale, END - timedelta(days=1)) == stale, "elsewhere a running place is kept without capacity"


def test_a_block_the_look_up_already_found_unusable_keeps_its_reason_and_loses_its_place():
    expired = (Availability(BLOCK, False, "is expired, not active", reservation_id="cr-0a1b2c3d4e5f60718",
                            running=True, ends=END),)
    (gone,) = in_force(expired, END + timedelta(hours=1))
    assert gone.reason == "is expired, not active" and not gone.running
