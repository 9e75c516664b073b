"""Data parallelism must not change the maths: at any world size, dividing the batch or not, and across a stop and
a resume at another world size, the job computes what one process computes (float64, so equal means equal)."""

import json
import os
import shutil
import signal
import socket
import time

import pytest
from train_helpers import assert_same_params, final_params, start_ranks, summary, train, wait_ranks

from training import checkpoint, distributed, preflight

EXACT = ["--dtype", "fp64", "--global-batch", "7", "--checkpoint-every", "0", "--eval-sequences", "4"]


def _losses(run_dir) -> list[tuple[int, float]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(row["step"], row["loss"]) for row in rows if "loss" in row]


def summary_of(run_dir) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """Four steps in one process, the whole batch in one forward pass: the reference."""
    run_dir = tmp_path_factory.mktemp("one")
    train([*EXACT, "--steps", "4", "--micro-batch", "7", "--run-dir", str(run_dir)])
    return run_dir


@pytest.mark.parametrize(
    ("world", "micro"),
    [(1, 2), (2, 2), (3, 2), (4, 1)],  # shares 7 / 4+3 / 3+2+2 / 2+2+2+1 (rank 3 skips an empty micro-step)
)
def test_world_sizes_that_do_not_divide_the_batch_match_one_process(one_process, tmp_path, world, micro):
    result = summary(train([*EXACT, "--steps", "4", "--micro-batch", str(micro), "--run-dir", str(tmp_path)],
                           nproc=world))
    assert result["world_size"] == world and result["global_batch"] == 7
    assert_same_params(final_params(one_process / "checkpoints"), final_params(tmp_path / "checkpoints"), atol=1e-12)
    for (step, ours), (_, theirs) in zip(_losses(tmp_path), _losses(one_process), strict=True):
        assert ours == pytest.approx(theirs, abs=1e-12), f"logged loss at step {step}"
    assert result["val_loss"] == pytest.approx(summary_of(one_process)["val_loss"], abs=1e-12)


def _sequence_ids(log_dir) -> list[int]:
    return [i for path in log_dir.glob("rank-*.jsonl") for line in path.read_text().splitlines()
            for i in json.loads(line)["ids"]]


def test_stop_on_four_ranks_resume_on_three_and_on_five(one_process, tmp_path):
    """The elastic case: a stop with 4 ranks, then the job re-formed with one node fewer or one more."""
    stopped = tmp_path / "stopped"
    run = [*EXACT, "--steps", "4", "--micro-batch", "2"]
    first = summary(train([*run, "--stop-after-steps", "2", "--run-dir", str(stopped),
                           "--sequence-log", str(stopped / "ids")], nproc=4))
    assert first["steps_completed"] == 2 and first["checkpoints_written"] == [2]
    for world in (3, 5):
        resumed = tmp_path / f"on{world}"
        shutil.copytree(stopped, resumed)
        result = summary(train([*run, "--run-dir", str(resumed), "--sequence-log", str(resumed / "ids")],
                               nproc=world))
        assert result["resumed_from_step"] == 2 and result["steps_completed"] == 4 and result["world_size"] == world
        assert_same_params(final_params(one_process / "checkpoints"), final_params(resumed / "checkpoints"),
                           atol=1e-12)
        assert sorted(_sequence_ids(resumed / "ids")) == list(range(4 * 7)), "every sequence exactly once"


def _wait_for_steps(run_dir, count: int, deadline_s: float = 60) -> None:
    metrics = run_dir / "metrics.jsonl"
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if metrics.exists() and metrics.read_text().count('"loss"') >= count:
            return
        time.sleep(0.05)
    raise AssertionError("the job logged too few steps")


def test_sigusr1_on_one_rank_checkpoints_and_every_rank_exits_with_its_code(tmp_path):
    """The spot watcher signals one node's workers; here one rank of three: it exits 0, the others 75 (their
    agents restart them), and the checkpoint holds the step every rank stopped at."""
    run = ["--steps", "100000", "--global-batch", "7", "--micro-batch", "2", "--checkpoint-every", "0",
           "--run-dir", str(tmp_path)]
    ranks = start_ranks(run, 3, tmp_path / "logs")
    _wait_for_steps(tmp_path, 3)
    os.kill(ranks[1].process.pid, signal.SIGUSR1)
    codes = wait_ranks(ranks, timeout=60)
    assert codes == [75, 0, 75], [r.stderr for r in ranks]
    stopped = json.loads(ranks[0].stdout.strip().splitlines()[-1])
    assert stopped["stopped_by_signal"] and stopped["signal"] is None  # rank 0 was not the one signalled
    assert stopped["checkpoints_written"] == [stopped["steps_completed"]]
    assert checkpoint.verify(checkpoint.step_path(tmp_path / "checkpoints", stopped["steps_completed"])) is None


def test_a_rank_0_that_left_after_the_round_formed_fails_the_others_by_address_within_the_bound(monkeypatch):
    """The job's store is rank 0's: a rank 0 whose node the acceptance named (its agent stopped) or that was lost
    leaves the others a refused port, which they report within the preflight's bound, not torch's 300 s."""
    with socket.socket() as bound:  # bound, not listening: nothing will ever answer there
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        monkeypatch.setattr(preflight, "JOIN_WAIT_S", 1.0)
        for key, value in {"RANK": "1", "GROUP_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1",
                           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
        started = time.monotonic()
        with pytest.raises(preflight.MissingPeers, match=f"rank 0's store at 127.0.0.1:{port} did not answer"):
            distributed.setup("cpu")
    assert time.monotonic() - started < 15
