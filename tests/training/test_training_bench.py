"""The throughput benchmark: its scaling arithmetic on given runs, and a real run of the tiny model on the CPU
(gloo, one and two ranks) whose JSON carries both runs and the scaling they give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from training.bench import parse_args, scaling

ROOT = Path(__file__).resolve().parents[2]


def _run(gpus: int, first_gpu: int, tokens_per_s: float) -> dict:
    return {"gpus": gpus, "first_gpu": first_gpu, "tokens_per_s": tokens_per_s}


def test_scaling_is_against_the_first_card_and_against_each_card_alone():
    runs = [_run(1, 0, 100.0), _run(1, 1, 96.0), _run(2, 0, 190.0)]

    versus_first, versus_each = scaling(runs)

    assert versus_first == {"2": pytest.approx(190.0 / 200.0)}
    assert versus_each == {"2": pytest.approx(190.0 / 196.0)}


def test_scaling_against_each_card_needs_every_card_it_ran_on():
    runs = [_run(1, 0, 100.0), _run(1, 1, 96.0), _run(4, 0, 380.0)]

    versus_first, versus_each = scaling(runs)

    assert versus_first == {"4": pytest.approx(0.95)}
    assert versus_each == {}


def test_failed_runs_and_a_missing_baseline_give_no_figure():
    assert scaling([_run(1, 0, 100.0), {"gpus": 2, "first_gpu": 0, "error": "exit code 1"}]) == ({}, {})
    assert scaling([{"gpus": 1, "first_gpu": 0, "error": "exit code 1"}, _run(2, 0, 190.0)]) == ({}, {})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--gpus", "one,2"], "argument --gpus: 'one,2' is not a comma-separated list of GPU counts, e.g. 1,2"),
        (["--gpus", "1,0"], "argument --gpus: '1,0': each GPU count must be 1 or more"),
        (["--device", "cpu", "--each-gpu"], "--each-gpu compares this machine's GPUs with each other: it needs 2"),
    ],
)
def test_bad_options_exit_2_naming_the_option(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        parse_args(argv)

    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_the_benchmark_runs_one_and_two_ranks_on_the_cpu():
    command = [sys.executable, "-m", "training.bench", "--device", "cpu", "--model", "tiny", "--seq-len", "32"]
    command += ["--micro-batch", "2", "--global-batch", "7", "--steps", "3", "--warmup-steps", "1", "--gpus", "1,2"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)

    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    one, two = report["runs"]
    assert (one["gpus"], one["world_size"], one["micro_steps"]) == (1, 1, 4)
    assert (two["gpus"], two["world_size"], two["micro_steps"]) == (2, 2, 2)  # shares of 4 and 3 sequences
    assert one["device"] == "cpu" and one["fp8_output_layer"] is False
    assert report["scaling_efficiency_vs_1gpu"]["2"] == pytest.approx(two["tokens_per_s"] / (2 * one["tokens_per_s"]))
    assert "scaling_efficiency_vs_each_gpu_alone" not in report
