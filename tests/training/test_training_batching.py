"""The split of a step's global batch over ranks and micro-steps, for every small setting, dividing or not."""

import itertools

import pytest

from training.batching import StepSplit
from training.config import ConfigError

SETTINGS = [(g, w, m) for g, w, m in itertools.product(range(1, 40), range(1, 9), range(1, 9)) if w <= g]


@pytest.mark.parametrize(("global_batch", "world", "micro"), SETTINGS[::7])
def test_every_step_takes_exactly_the_global_batch_once(global_batch, world, micro):
    split = StepSplit(global_batch, world, micro)
    taken = [index for rank in range(world) for index in split.indices(40 * global_batch, rank).tolist()]
    assert sorted(taken) == list(range(40 * global_batch, 41 * global_batch))
    shares = [split.share(rank) for rank in range(world)]
    assert max(shares) - min(shares) <= 1


def test_micro_steps_agree_fit_and_weigh_to_the_global_mean():
    for global_batch, world, micro in SETTINGS:
        split = StepSplit(global_batch, world, micro)
        chunks = [split.chunks(rank) for rank in range(world)]
        assert {len(c) for c in chunks} == {split.micro_steps}, "every rank runs as many all-reduces"
        for rank, rows in enumerate(chunks):
            assert sum(rows) == split.share(rank)
            assert max(rows) <= micro and rows[-1] >= 1, "fits, and the syncing micro-step has rows"
            assert rows == sorted(rows), "an empty micro-step can only come first"
            assert micro == 1 or min(rows) >= 1
        assert split.micro_steps == -(-split.share(0) // micro), "no more micro-steps than the largest share needs"
        # DDP averages over ranks: the weights must then sum to one over the whole step.
        assert sum(split.weight(r) for rows in chunks for r in rows) / world == pytest.approx(1.0, abs=1e-12)


def test_a_dividing_setting_keeps_equal_micro_batches():
    split = StepSplit(512, 8, 16)
    assert split.micro_steps == 4 and all(split.chunks(rank) == [16] * 4 for rank in range(8))


def test_more_ranks_than_sequences_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"9 ranks but global_batch=8.*at least 9"):
        StepSplit(8, 9, 1)
