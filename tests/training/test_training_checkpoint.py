"""Checkpoints: exact resume, what a resume may change, stops by signal, a diverging run, and damaged, foreign or
unsafe checkpoint files."""

import io
import json
import math
import os
import re
import signal
import time

import pytest
import torch
from train_helpers import assert_same_params, final_params, start, start_ranks, summary, train, wait_ranks

from training import checkpoint
from training.config import ConfigError, TrainConfig
from training.resume import check_compatible

SMALL = ["--global-batch", "4", "--micro-batch", "2"]


def _rows(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _newest_intact(root):
    return next(path for _, path in checkpoint.checkpoint_dirs(root) if checkpoint.verify(path) is None)


def _state(run_dir) -> dict:
    return torch.load(sorted((run_dir / "checkpoints").glob("step_*"))[-1] / "state.pt", weights_only=True)


def test_stop_and_resume_equals_uninterrupted_with_dropout(tmp_path):
    """Dropout draws from each rank's random stream: equal parameters need the streams restored on resume."""
    common = [*SMALL, "--steps", "6", "--dtype", "fp64", "--dropout", "0.2"]
    train([*common, "--run-dir", str(tmp_path / "straight")])
    resumed = ["--run-dir", str(tmp_path / "resumed")]
    assert summary(train([*common, *resumed, "--stop-after-steps", "3"]))["steps_completed"] == 3
    result = summary(train([*common, *resumed]))
    assert result["resumed_from_step"] == 3 and result["steps_completed"] == 6
    straight, again = _state(tmp_path / "straight"), _state(tmp_path / "resumed")
    assert_same_params(straight["model"], again["model"], atol=1e-12)
    assert again["data_position"] == straight["data_position"] == 6 * 4
    for a, b in zip(straight["optimizer"]["state"].values(), again["optimizer"]["state"].values(), strict=True):
        torch.testing.assert_close(a["exp_avg_sq"], b["exp_avg_sq"], atol=1e-15, rtol=0)


def _lr(step: int, lr=3e-3, warmup=2, steps=6, floor=0.1) -> float:
    """The schedule the README describes, for 0-based step ``step``: linear warm-up, cosine to floor x lr."""
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * (floor + (1 - floor) * (1 + math.cos(math.pi * (step - warmup) / (steps - warmup))) / 2)


def test_the_logged_learning_rate_is_the_one_each_step_used(tmp_path):
    train([*SMALL, "--steps", "6", "--run-dir", str(tmp_path)])
    logged = [(row["step"], row["lr"]) for row in _rows(tmp_path) if "lr" in row]
    assert logged == [(k + 1, pytest.approx(_lr(k), rel=1e-12)) for k in range(6)]


def test_a_resume_applies_changed_optimizer_settings_and_says_so(tmp_path):
    run = [*SMALL, "--steps", "6", "--run-dir", str(tmp_path)]
    train([*run, "--stop-after-steps", "3"])
    result = train([*run, "--lr", "1e-3", "--weight-decay", "0.05", "--beta2", "0.99"])
    assert ("applying changed settings from step 3 on: lr 0.003 -> 0.001; weight_decay 0.1 -> 0.05; beta2 0.95 -> "
            "0.99") in result.stderr
    logged = {row["step"]: row["lr"] for row in _rows(tmp_path) if "lr" in row}
    assert [logged[k + 1] for k in range(6)] == pytest.approx([_lr(k) for k in range(3)]
                                                              + [_lr(k, lr=1e-3) for k in range(3, 6)], rel=1e-12)
    state = _state(tmp_path)
    assert state["config"]["lr"] == 1e-3
    groups = state["optimizer"]["param_groups"]
    assert [g["lr"] for g in groups] == pytest.approx([_lr(5, lr=1e-3)] * 2, rel=1e-12)
    assert [(g["weight_decay"], g["betas"]) for g in groups] == [(0.05, (0.9, 0.99)), (0.0, (0.9, 0.99))]


def test_every_changed_optimizer_setting_is_named():
    config = {"config": TrainConfig(model="tiny", micro_batch=2).to_dict()}
    changed = TrainConfig(model="tiny", micro_batch=2, weight_decay=0.0, beta2=0.99, steps=2000)
    assert check_compatible(changed, config, "old") == ["steps 1000 -> 2000", "weight_decay 0.1 -> 0.0",
                                                         "beta2 0.95 -> 0.99"]


@pytest.mark.parametrize(
    ("first", "then", "named"),
    [
        (["--bias", "true"], [], ["bias=True", "bias=False"]),
        ([], ["--seq-len", "16"], ["seq_len=32", "seq_len=16"]),
        ([], ["--seed", "7"], ["seed=1337", "seed=7"]),
        ([], ["--global-batch", "6"], ["global_batch=4", "global_batch=6"]),
    ],
)
def test_a_resume_refuses_what_the_weights_and_data_order_depend_on_and_keeps_the_checkpoints(
    tmp_path, first, then, named
):
    run = [*SMALL, "--run-dir", str(tmp_path)]
    train(["--steps", "2", *run, *first])
    written = sorted((tmp_path / "checkpoints").glob("step_*"))
    refused = train(["--steps", "4", *run, *then], expect=2)
    assert "Traceback" not in refused.stderr and all(name in refused.stderr for name in named), refused.stderr
    assert sorted((tmp_path / "checkpoints").glob("step_*")) == written


def test_checkpoints_from_before_a_setting_existed_count_as_written_with_its_old_value():
    old = {"config": {"model": "tiny", "global_batch": 4, "seq_len": 1024, "data": "synthetic", "seed": 1337}}
    check_compatible(TrainConfig(model="tiny", global_batch=4, bias=True), old, "old")
    with pytest.raises(ConfigError, match=r"written with bias=True, but this run has bias=False"):
        check_compatible(TrainConfig(model="tiny", global_batch=4), old, "old")


@pytest.mark.parametrize("log_every", ["1", "100"])  # caught when the loss is read back, or before the save
def test_a_diverging_run_stops_with_exit_2_and_keeps_the_last_good_checkpoint(tmp_path, log_every):
    run = [*SMALL, "--checkpoint-every", "1", "--run-dir", str(tmp_path), "--log-every", log_every]
    train([*run, "--steps", "2"])
    result = train([*run, "--steps", "8", "--lr", "1e30", "--grad-clip", "0"], expect=2)
    assert "Traceback" not in result.stderr
    diverged = int(re.search(r"stopped being finite by step (\d+)", result.stderr).group(1))
    newest = _newest_intact(tmp_path / "checkpoints")
    assert 2 <= checkpoint.step_of(newest) < diverged <= 8
    assert all(torch.isfinite(t).all() for t in final_params(tmp_path / "checkpoints").values())


def test_sigterm_checkpoints_and_exits_zero(tmp_path):
    run = [*SMALL, "--checkpoint-every", "0", "--run-dir", str(tmp_path)]
    process = start([*run, "--steps", "100000"])
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.time() + 60
    while not (metrics.exists() and metrics.read_text().count("\n") >= 3) and time.time() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    stopped = json.loads(stdout.strip().splitlines()[-1])
    assert stopped["stopped_by_signal"] is True
    assert stopped["checkpoints_written"] == [stopped["steps_completed"]]
    assert (tmp_path / f"checkpoints/step_{stopped['steps_completed']:08d}/manifest.json").exists()
    after = summary(train([*run, "--steps", str(stopped["steps_completed"] + 2)]))
    assert after["resumed_from_step"] == stopped["steps_completed"]
    assert after["steps_completed"] == stopped["steps_completed"] + 2


def test_signals_after_the_summary_leave_a_clean_exit(tmp_path):
    process = start([*SMALL, "--steps", "2", "--run-dir", str(tmp_path)])
    first = process.stdout.readline()
    while first and not first.startswith("{"):
        first = process.stdout.readline()
    while process.poll() is None:  # the interpreter is shutting down: keep asking it to stop
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            process.send_signal(sig)
        time.sleep(0.002)
    assert json.loads(first)["steps_completed"] == 2
    assert process.wait() == 0


def _slow_writes() -> None:
    """In a forked rank: each checkpoint write takes a second longer, so a signal can land while one is under way."""
    original = checkpoint.save

    def slow(*args, **kwargs):
        time.sleep(1.0)
        return original(*args, **kwargs)

    checkpoint.save = slow


def test_a_signal_during_a_periodic_save_makes_it_the_stop_checkpoint(tmp_path):
    run = [*SMALL, "--steps", "100000", "--checkpoint-every", "3", "--run-dir", str(tmp_path)]
    ranks = start_ranks(run, 1, tmp_path / "logs", prepare=_slow_writes)
    deadline = time.monotonic() + 60
    while not (tmp_path / "metrics.jsonl").exists() or '"step": 3,' not in (tmp_path / "metrics.jsonl").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(ranks[0].process.pid, signal.SIGTERM)
    assert wait_ranks(ranks) == [0], ranks[0].stderr
    stopped = json.loads(ranks[0].stdout.strip().splitlines()[-1])
    assert stopped["checkpoints_written"] == [3] and stopped["stop_covered_by_earlier_save"], stopped
    assert _newest_intact(tmp_path / "checkpoints") == checkpoint.step_path(tmp_path / "checkpoints", 3)


def _foreign_checkpoint(root, step, marker):
    """A newer checkpoint that another program wrote: a pickled callable in its state, with a matching manifest."""

    class Payload:
        def __reduce__(self):
            return (marker.mkdir, ())

    buffer = io.BytesIO()
    torch.save({"model": Payload()}, buffer)
    checkpoint.save_bytes(root, step, buffer.getvalue(), keep=3)


def test_a_checkpoint_this_node_did_not_write_is_passed_over_unread(tmp_path):
    run = [*SMALL, "--run-dir", str(tmp_path)]
    train(["--steps", "2", *run])
    _foreign_checkpoint(tmp_path / "checkpoints", 3, tmp_path / "code-ran")
    result = train(["--steps", "4", *run])
    assert "checkpoint not trusted, step 3: 0 of the nodes' ledgers vouch" in result.stderr
    assert summary(result)["resumed_from_step"] == 2 and not (tmp_path / "code-ran").exists()


def test_without_a_ledger_an_unsafe_state_file_is_refused_unread(tmp_path):
    """A cluster started afresh from the bucket has no ledger to check against: the load itself refuses code."""
    run = [*SMALL, "--run-dir", str(tmp_path)]
    train(["--steps", "2", *run])
    checkpoint.ledger_path(tmp_path / "checkpoints").unlink()
    _foreign_checkpoint(tmp_path / "checkpoints", 3, tmp_path / "code-ran")
    refused = train(["--steps", "4", *run], expect=2)
    assert "holds more than tensors and plain values" in refused.stderr and "step_00000003" in refused.stderr
    assert not (tmp_path / "code-ran").exists()


def test_truncated_latest_checkpoint_falls_back(tmp_path):
    run = [*SMALL, "--checkpoint-every", "2", "--run-dir", str(tmp_path)]
    train(["--steps", "6", *run])
    state = tmp_path / "checkpoints/step_00000006/state.pt"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    result = train(["--steps", "8", *run])
    assert "warning: skipping checkpoint" in result.stderr and "truncated" in result.stderr
    assert summary(result)["resumed_from_step"] == 4


def test_missing_manifest_falls_back_and_old_checkpoints_are_pruned(tmp_path):
    run = [*SMALL, "--checkpoint-every", "1", "--keep-checkpoints", "2", "--run-dir", str(tmp_path)]
    train(["--steps", "5", *run])
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_00000004", "step_00000005"]
    (tmp_path / "checkpoints/step_00000005/manifest.json").unlink()
    result = train(["--steps", "6", *run])
    assert "manifest missing" in result.stderr
    assert summary(result)["resumed_from_step"] == 4


def test_second_writer_of_a_step_keeps_the_first_complete_copy_of_the_same_bytes(tmp_path):
    first = checkpoint.save(tmp_path, 3, {"step": 3}, keep=3)
    written = (first / checkpoint.MANIFEST).read_text()
    checkpoint.save(tmp_path, 3, {"step": 3}, keep=3)
    assert (first / checkpoint.MANIFEST).read_text() == written, "the first copy stayed"
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000003"]


def test_a_copy_of_other_bytes_is_replaced_by_the_writers_own(tmp_path):
    checkpoint.save_bytes(tmp_path, 3, b"not this job's state", keep=3)
    checkpoint.save(tmp_path, 3, {"writer": "the job"}, keep=3)
    assert checkpoint.read(checkpoint.step_path(tmp_path, 3)) == {"writer": "the job"}


def test_damaged_copy_of_a_step_is_replaced(tmp_path):
    state = checkpoint.save(tmp_path, 3, {"writer": "first"}, keep=3) / checkpoint.STATE
    state.write_bytes(state.read_bytes()[:10])
    checkpoint.save(tmp_path, 3, {"writer": "second"}, keep=3)
    assert checkpoint.verify(checkpoint.step_path(tmp_path, 3)) is None
    assert checkpoint.read(checkpoint.step_path(tmp_path, 3)) == {"writer": "second"}


def test_pruning_spares_another_writers_save_of_the_same_step(tmp_path):
    crashed = tmp_path / ".tmp_step_00000002_deadbeef"
    in_progress = tmp_path / ".tmp_step_00000004_otherwriter"
    crashed.mkdir()
    in_progress.mkdir()
    checkpoint.save(tmp_path, 4, {}, keep=3)
    assert not crashed.exists() and in_progress.exists()


def test_the_snapshot_is_a_copy_that_keeps_tied_weights_tied():
    weight = torch.ones(3, 2)
    state = {"model": {"wte.weight": weight.detach(), "head.weight": weight.detach()}, "step": 4}
    copy = checkpoint.snapshot(state)
    weight.add_(1)
    assert copy["model"]["wte.weight"] is copy["model"]["head.weight"] and copy["model"]["wte.weight"].eq(1).all()
