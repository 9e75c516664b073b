"""The automatic micro-batch: the largest that fills at most FILL of the budget by the measured line."""

import pytest

from training.memory import AUTO_TOKENS, FILL, GIB, Footprint, auto_micro_batch

LINE = Footprint(fixed=2 * GIB, per_row=GIB // 2, optimizer=GIB)  # 3 GiB plus half a GiB per sequence


@pytest.mark.parametrize(
    ("budget_gib", "share", "expected"),
    [
        (100, 171, 64),  # capped at AUTO_TOKENS of 1024-token sequences
        (100, 40, 40),  # the whole share, when it fits
        (20, 171, 16),  # 3 + 16 / 2 = 11 <= 18 but 32 rows need 19 GiB
        (20, 31, 16),  # not the share (31 rows need 18.5 GiB > 0.9 x 20), the power of two below it
        (3.5, 171, 0),  # not one sequence fits
    ],
)
def test_the_pick_is_the_largest_that_fits(budget_gib, share, expected):
    budget = int(budget_gib * GIB)
    rows = auto_micro_batch(LINE, budget, share, seq_len=1024)
    assert rows == expected
    if rows:
        assert LINE.peak(rows) <= FILL * budget and rows <= min(share, AUTO_TOKENS // 1024)


def test_without_a_measurement_the_pick_is_the_share_up_to_the_token_cap():
    assert auto_micro_batch(None, None, 171, seq_len=32) == 171
    assert auto_micro_batch(None, None, 10_000, seq_len=32) == AUTO_TOKENS // 32
