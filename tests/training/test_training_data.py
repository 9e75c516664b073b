"""Data: the memory-mapped token file path, disjoint shards, and re-sharding by global position."""

import numpy as np
from train_helpers import summary, train

from training.data import MemmapTokens, ShardedBatches, SyntheticTokens


def _token_file(path, count=4000, vocab=256):
    (np.arange(count) % vocab).astype(np.uint16).tofile(path)
    return path


def test_shards_are_disjoint_and_cover_the_global_batch():
    source = SyntheticTokens(vocab=256, seq_len=8, seed=0)
    ranks = [ShardedBatches(source, rank, 4, micro_batch=2, accum=3) for rank in range(4)]
    taken = [set(r.rank_indices(0).tolist()) for r in ranks]
    assert sum(len(t) for t in taken) == 24
    assert set().union(*taken) == set(range(24))


def test_resharding_after_world_size_change_skips_and_repeats_nothing():
    source = SyntheticTokens(vocab=256, seq_len=8, seed=0)
    seen = []
    two = [ShardedBatches(source, rank, 2, micro_batch=2, accum=2) for rank in range(2)]
    for _ in range(3):
        for shard in two:
            seen.extend(shard.rank_indices(shard.position).tolist())
            shard.position += shard.global_batch
    one = ShardedBatches(source, 0, 1, micro_batch=2, accum=4, position=two[0].position)
    seen.extend(one.rank_indices(one.position).tolist())
    assert sorted(seen) == list(range(32))


def test_synthetic_sequences_are_deterministic():
    a = SyntheticTokens(vocab=100, seq_len=16, seed=3).sequences(np.array([5, 9]))
    b = SyntheticTokens(vocab=100, seq_len=16, seed=3).sequences(np.array([9, 5]))
    assert np.array_equal(a, b[::-1]) and a.max() < 100


def test_memmap_shards_are_disjoint(tmp_path):
    tokens = _token_file(tmp_path / "tokens.bin", vocab=65536)
    source = MemmapTokens(str(tokens), vocab=65536, seq_len=32, seed=0)
    shards = [ShardedBatches(source, rank, 2, micro_batch=2, accum=2) for rank in range(2)]
    batches = [np.concatenate([x.numpy() for x, _ in shard.next_step()]) for shard in shards]
    starts = [set(b[:, 0].tolist()) for b in batches]
    rows = [{tuple(row) for row in b.tolist()} for b in batches]
    assert not rows[0] & rows[1] and len(rows[0]) == len(rows[1]) == 4 and all(len(s) == 4 for s in starts)
    x, y = shards[0].next_step()[0]
    assert np.array_equal(x[:, 1:].numpy(), y[:, :-1].numpy())


def test_training_on_a_token_file(tmp_path):
    tokens = _token_file(tmp_path / "tokens.bin")
    result = summary(
        train(
            [
                "--steps",
                "3",
                "--global-batch",
                "4",
                "--micro-batch",
                "2",
                "--data",
                str(tokens),
                "--run-dir",
                str(tmp_path / "run"),
            ],
            nproc=2,
        )
    )
    assert result["steps_completed"] == 3 and result["data_position"] == 12


def test_a_token_outside_the_vocabulary_stops_the_job_with_the_settings_to_change(tmp_path):
    tokens = tmp_path / "tokens.bin"
    np.full(4000, 300, dtype=np.uint16).tofile(tokens)
    result = train(["--steps", "3", "--data", str(tokens), "--run-dir", str(tmp_path / "run")], expect=2)
    assert "token id 300, outside model vocabulary of 256; use a 'model'" in result.stderr
    assert "setting 'data'" in result.stderr and "Traceback" not in result.stderr


def test_prefetching_hands_out_the_same_batches_and_positions():
    source = SyntheticTokens(vocab=256, seq_len=8, seed=0)
    plain = ShardedBatches(source, 1, 2, micro_batch=2, accum=2)
    ahead = ShardedBatches(source, 1, 2, micro_batch=2, accum=2, prefetch=True)
    for step in range(4):
        if step == 2:  # a position set from outside (as a resume would) discards the prefetched step
            plain.position = ahead.position = 40
        for mine, theirs in zip(ahead.next_step(), plain.next_step(), strict=True):
            assert all(a.equal(b) for a, b in zip(mine, theirs, strict=True))
        assert ahead.position == plain.position
