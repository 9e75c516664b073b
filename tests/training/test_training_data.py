"""Data: token files (uint16 or uint32, one file or shards, llm.c's header), the held-out set, and micro-batches cut
from the global order."""

import numpy as np
import pytest
from train_helpers import summary, train

from training.batching import StepSplit
from training.config import ConfigError, TrainConfig
from training.data import LLMC_HEADER_INT32S, ShardedBatches, SyntheticTokens, TokenFiles, open_source


def _token_file(path, count=4000, vocab=256, dtype=np.uint16):
    (np.arange(count) % vocab).astype(dtype).tofile(path)
    return path


def _llmc_shard(path, tokens, magic, version, dtype):
    header = np.zeros(LLMC_HEADER_INT32S, dtype=np.int32)
    header[:3] = magic, version, len(tokens)
    with open(path, "wb") as handle:
        handle.write(header.tobytes())
        handle.write(np.asarray(tokens, dtype=dtype).tobytes())


def _all_sequences(source) -> set[tuple]:
    return {tuple(row) for row in source.sequences(np.arange(source.count)).tolist()}


def test_micro_batches_follow_the_global_order_at_an_uneven_split():
    source = SyntheticTokens(vocab=256, seq_len=8, seed=0)
    split = StepSplit(global_batch=7, world_size=3, micro_batch=2)
    expected = source.sequences(np.arange(7, 14))  # step 1 of the global order
    for rank in range(3):
        micro = ShardedBatches(source, split, rank, position=7).next_step()
        rows = np.concatenate([np.concatenate([m.inputs, m.targets[:, -1:]], axis=1) for m in micro])
        assert np.array_equal(rows, expected[rank::3])
        assert [m.last for m in micro] == [False] * (len(micro) - 1) + [True]
        assert sum(m.weight for m in micro) == pytest.approx(len(rows) * 3 / 7)


def test_synthetic_sequences_are_deterministic_and_the_held_out_ones_are_others():
    source = SyntheticTokens(vocab=100, seq_len=16, seed=3, held_out=4)
    a = source.sequences(np.array([5, 9]))
    assert np.array_equal(a, SyntheticTokens(vocab=100, seq_len=16, seed=3).sequences(np.array([9, 5]))[::-1])
    held = source.held_out_sequences(np.arange(4))
    assert not {tuple(r) for r in held.tolist()} & {tuple(r) for r in source.sequences(np.arange(4)).tolist()}


def test_uint32_files_shards_and_llmc_headers_read_the_same_tokens(tmp_path):
    tokens = (np.arange(3000) * 7919) % 70000
    tokens.astype(np.uint32).tofile(tmp_path / "flat.bin")
    (tmp_path / "shards").mkdir()
    tokens[:1500].astype(np.uint32).tofile(tmp_path / "shards/a.bin")
    _llmc_shard(tmp_path / "shards/b.bin", tokens[1500:], 20240801, 7, np.uint32)
    flat = TokenFiles(str(tmp_path / "flat.bin"), "uint32", 70000, seq_len=10, seed=1, held_out=0)
    sharded = TokenFiles(str(tmp_path / "shards"), "uint32", 70000, seq_len=10, seed=1, held_out=0)
    globbed = TokenFiles(str(tmp_path / "shards/*.bin"), "uint32", 70000, seq_len=10, seed=1, held_out=0)
    assert flat.count == 299 and sharded.count == globbed.count == 149 + 149  # no sequence spans two shards
    assert _all_sequences(sharded) == _all_sequences(globbed) <= _all_sequences(flat)
    assert max(max(row) for row in _all_sequences(sharded)) > 65535, "read as uint32, not cut to 16 bits"


def test_an_llmc_gpt2_shard_is_read_after_its_header(tmp_path):
    _llmc_shard(tmp_path / "train.bin", np.arange(1, 101), 20240520, 1, np.uint16)
    source = TokenFiles(str(tmp_path / "train.bin"), "uint32", 256, seq_len=9, seed=0, held_out=0)
    assert sorted(row[0] for row in _all_sequences(source)) == list(range(1, 100, 9))


def test_held_out_sequences_are_never_trained_on(tmp_path):
    _token_file(tmp_path / "tokens.bin", count=1001, vocab=60000)
    source = TokenFiles(str(tmp_path / "tokens.bin"), "uint16", 60000, seq_len=10, seed=0, held_out=7)
    held = {tuple(row) for row in source.held_out_sequences(np.arange(7)).tolist()}
    trained = {tuple(row) for row in source.sequences(np.arange(3 * source.count)).tolist()}  # three epochs
    assert source.count == 93 and len(held) == 7 and not held & trained


@pytest.mark.parametrize(
    ("data", "dtype", "fragment"),
    [("/nonexistent/tokens.bin", "uint16", "names no token file"), ("odd.bin", "uint32", "whole number of uint32")],
)
def test_unreadable_token_files_name_the_setting(tmp_path, data, dtype, fragment):
    (tmp_path / "odd.bin").write_bytes(b"\0" * 4002)
    cfg = TrainConfig(model="tiny", data=str(tmp_path / data) if data == "odd.bin" else data, data_dtype=dtype)
    with pytest.raises(ConfigError, match=fragment):
        open_source(cfg)


def test_training_on_a_token_file_on_two_ranks(tmp_path):
    tokens = _token_file(tmp_path / "tokens.bin")
    args = ["--steps", "3", "--global-batch", "5", "--micro-batch", "2", "--data", str(tokens),
            "--eval-every", "3", "--eval-sequences", "3", "--run-dir", str(tmp_path / "run")]
    result = summary(train(args, nproc=2))
    assert result["steps_completed"] == 3 and result["data_position"] == 15 and result["val_loss"] > 0


def test_a_token_outside_the_vocabulary_stops_the_job_with_the_settings_to_change(tmp_path):
    tokens = tmp_path / "tokens.bin"
    np.full(4000, 300, dtype=np.uint16).tofile(tokens)
    result = train(["--steps", "3", "--data", str(tokens), "--run-dir", str(tmp_path / "run")], expect=2)
    assert "token id 300, outside model vocabulary of 256; use a 'model'" in result.stderr
    assert "setting 'data'" in result.stderr and "Traceback" not in result.stderr


def test_prefetching_hands_out_the_same_batches_and_positions():
    source = SyntheticTokens(vocab=256, seq_len=8, seed=0)
    split = StepSplit(global_batch=9, world_size=2, micro_batch=2)
    plain = ShardedBatches(source, split, 1)
    ahead = ShardedBatches(source, split, 1, prefetch=True)
    for step in range(4):
        if step == 2:  # a position set from outside (as a resume would) discards the prefetched step
            plain.position = ahead.position = 45
        for mine, theirs in zip(ahead.next_step(), plain.next_step(), strict=True):
            assert mine.inputs.equal(theirs.inputs) and mine.targets.equal(theirs.targets)
        assert ahead.position == plain.position
    ahead.close()


def test_synthetic_stream_is_learnable(tmp_path):
    result = summary(train(["--steps", "60", "--global-batch", "8", "--log-every", "10", "--checkpoint-at-end",
                            "false", "--run-dir", str(tmp_path)]))
    assert result["final_loss"] < 4.0 and result["val_loss"] < 4.0  # from ln(256) = 5.55 at the start
    assert result["micro_batch"] == 8 and result["micro_steps"] == 1, "0 (automatic) takes the whole share on a CPU"
    assert result["fp8_output_layer"] is False  # on by default, ignored on the CPU
    assert (tmp_path / "summary.json").exists() and (tmp_path / "metrics.jsonl").exists()
