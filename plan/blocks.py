"""What the end of a Capacity Block means for the cluster in it (docs/cloud-facts.md#aws-capacity-block-end).

EC2 terminates the instances in a Capacity Block from 30 minutes before its end, and after the end the block is
`expired`: nothing launches into it. Keeping the cluster's place there would plan nodes EC2 is taking away, so:

- from 30 minutes before its end, a block is gone: its candidate has no capacity and the cluster does not keep its
  place there whatever still runs, so the plan takes the next candidate with capacity, or refuses the stack before
  anything is created; either way the candidate's reason names the block and its end;
- within a day of its end, the preview warns about the chosen candidate's block, while there is time to buy an
  extension or another block and list its place as a candidate.

A block past its end no longer answers the look-up for active blocks, and its instances are terminated: in a stack
whose capacity is Capacity Blocks, a candidate with no block holds no place either, whatever instance the look-up
still lists there (one not yet terminated), since nothing can be planned there without a block.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from plan.candidates import Availability, chosen

TERMINATION_LEAD = timedelta(minutes=30)  # EC2 starts terminating a block's instances this long before its end
WARNING_WINDOW = timedelta(hours=24)  # the preview warns this long before a block's end


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def in_force(capacity: tuple[Availability, ...], now: datetime, blocks: bool = False) -> tuple[Availability, ...]:
    """The answers as of `now`: one whose block is within TERMINATION_LEAD of its end (or past it) is not
    available and no longer holds the cluster's place, with why; where the capacity is Capacity Blocks (`blocks`),
    one without a block holds no place."""
    return tuple(_gone(answer) if answer.ends and now >= answer.ends - TERMINATION_LEAD
                 else replace(answer, running=False) if blocks and answer.reservation_id is None
                 else answer for answer in capacity)


def _gone(answer: Availability) -> Availability:
    """No capacity and no place; the reason the look-up gave where it already had one (an expired block's state)."""
    ends = answer.ends
    reason = answer.reason if not answer.available and answer.reason else (
        f"Capacity Block {answer.reservation_id} ends at {_when(ends)} and EC2 terminates its instances from "
        f"{_when(ends - TERMINATION_LEAD)}: taken as gone")
    return replace(answer, available=False, running=False, reason=reason)


def ending_warning(capacity: tuple[Availability, ...], now: datetime) -> str | None:
    """The preview's warning where the chosen candidate's block ends within WARNING_WINDOW of `now`; None else."""
    answer = chosen(capacity)
    if answer is None or answer.ends is None or answer.ends - now > WARNING_WINDOW:
        return None
    hours = (answer.ends - now) / timedelta(hours=1)
    return (f"Capacity Block {answer.reservation_id} of {answer.candidate.label} ends at {_when(answer.ends)} "
            f"(in {hours:.1f} h); EC2 terminates the cluster's instances from "
            f"{_when(answer.ends - TERMINATION_LEAD)}, and from then on the plan takes the next candidate. Checkpoint "
            "before then; to go on, extend the block, or buy another and list its place in `candidates`.")
