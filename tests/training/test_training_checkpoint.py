"""Checkpoints: exact resume, signal-driven stop, and fallback past a damaged latest checkpoint."""

import signal
import time

import pytest
import torch
from train_helpers import assert_same_params, final_params, start, summary, train

from training import checkpoint


def test_stop_and_resume_equals_uninterrupted(tmp_path):
    common = ["--steps", "8", "--global-batch", "4", "--micro-batch", "2"]
    train([*common, "--run-dir", str(tmp_path / "straight")])
    resumed = ["--run-dir", str(tmp_path / "resumed")]
    assert summary(train([*common, *resumed, "--stop-after-steps", "4"]))["steps_completed"] == 4
    result = summary(train([*common, *resumed]))
    assert result["resumed_from_step"] == 4 and result["steps_completed"] == 8
    straight = torch.load(
        sorted((tmp_path / "straight/checkpoints").glob("step_*"))[-1] / "state.pt", weights_only=False
    )
    again = torch.load(sorted((tmp_path / "resumed/checkpoints").glob("step_*"))[-1] / "state.pt", weights_only=False)
    assert_same_params(straight["model"], again["model"], atol=1e-6)
    assert again["data_position"] == straight["data_position"] == 8 * 4
    assert again["scheduler"]["last_epoch"] == straight["scheduler"]["last_epoch"]
    for a, b in zip(straight["optimizer"]["state"].values(), again["optimizer"]["state"].values(), strict=True):
        torch.testing.assert_close(a["exp_avg_sq"], b["exp_avg_sq"], atol=1e-9, rtol=0)
    assert torch.equal(straight["rng"][0]["torch"], again["rng"][0]["torch"])


def test_sigterm_checkpoints_and_exits_zero(tmp_path):
    run = [
        "--steps",
        "100000",
        "--global-batch",
        "4",
        "--micro-batch",
        "2",
        "--checkpoint-every",
        "0",
        "--run-dir",
        str(tmp_path),
    ]
    process = start(run)
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.time() + 60
    while not (metrics.exists() and metrics.read_text().count("\n") >= 3) and time.time() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    stopped = summary(type("R", (), {"stdout": stdout}))
    assert stopped["stopped_by_signal"] is True
    assert stopped["checkpoints_written"] == [stopped["steps_completed"]]
    assert (tmp_path / f"checkpoints/step_{stopped['steps_completed']:08d}/manifest.json").exists()
    after = summary(train([*run[:1], str(stopped["steps_completed"] + 2), *run[2:]]))
    assert after["resumed_from_step"] == stopped["steps_completed"]
    assert after["steps_completed"] == stopped["steps_completed"] + 2


def test_truncated_latest_checkpoint_falls_back(tmp_path):
    run = ["--global-batch", "4", "--micro-batch", "2", "--checkpoint-every", "2", "--run-dir", str(tmp_path)]
    train(["--steps", "6", *run])
    state = tmp_path / "checkpoints/step_00000006/state.pt"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    result = train(["--steps", "8", *run])
    assert "warning: skipping checkpoint" in result.stderr and "truncated" in result.stderr
    assert summary(result)["resumed_from_step"] == 4


def test_missing_manifest_falls_back_and_old_checkpoints_are_pruned(tmp_path):
    run = [
        "--global-batch",
        "4",
        "--micro-batch",
        "2",
        "--checkpoint-every",
        "1",
        "--keep-checkpoints",
        "2",
        "--run-dir",
        str(tmp_path),
    ]
    train(["--steps", "5", *run])
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_00000004", "step_00000005"]
    (tmp_path / "checkpoints/step_00000005/manifest.json").unlink()
    result = train(["--steps", "6", *run])
    assert "manifest missing" in result.stderr
    assert summary(result)["resumed_from_step"] == 4
    assert final_params(tmp_path / "checkpoints")


def test_second_writer_of_a_step_keeps_the_first_complete_copy(tmp_path):
    checkpoint.save(tmp_path, 3, {"writer": "first"}, keep=3)
    checkpoint.save(tmp_path, 3, {"writer": "second"}, keep=3)
    assert checkpoint.read(checkpoint.step_path(tmp_path, 3)) == {"writer": "first"}
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000003"]


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


def test_a_checkpoint_resumes_only_with_its_bias_setting_and_is_kept(tmp_path):
    run = ["--global-batch", "4", "--micro-batch", "2", "--run-dir", str(tmp_path)]
    train(["--steps", "2", "--bias", "true", *run])
    written = sorted((tmp_path / "checkpoints").glob("step_*"))
    refused = train(["--steps", "4", *run], expect=2)
    assert "bias=True" in refused.stderr and "bias=False" in refused.stderr and "Traceback" not in refused.stderr
    assert sorted((tmp_path / "checkpoints").glob("step_*")) == written
    assert summary(train(["--steps", "4", "--bias", "true", *run]))["resumed_from_step"] == 2


def test_checkpoints_from_before_the_bias_setting_count_as_biased():
    from training.config import ConfigError, TrainConfig
    from training.train import _check_compatible

    old = {"config": {"model": "tiny", "global_batch": 4}}
    _check_compatible(TrainConfig(model="tiny", global_batch=4, micro_batch=2, bias=True), old, "old")
    with pytest.raises(ConfigError, match=r"written with model='tiny', bias=True, global_batch=4.*bias=False"):
        _check_compatible(TrainConfig(model="tiny", global_batch=4, micro_batch=2), old, "old")
