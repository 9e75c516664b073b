"""The profiling benchmark runs end to end on the CPU (a smoke run: tiny model, no compile, two micro-steps per
optimizer step) and names bad variants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "profile_training.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), "--model", "tiny", "--micro-batch", "2", "--global-batch", "4", "--steps",
               "1", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_each_variant_reports_its_time_and_kernel_families():
    result = _run("--variants", "base,fp32-residual")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [row["variant"] for row in rows] == ["base", "fp32-residual"]
    for row in rows:
        assert row["micro_step_ms"] > 0 and row["tokens_per_s_micro"] > 0
        assert sum(row["families_ms"].values()) > 0 and row["top_kernels_ms"]
    assert "fp32-residual" in result.stdout.splitlines()[-1]


def test_an_unknown_variant_is_named():
    result = _run("--variants", "base,fastest")
    assert result.returncode == 2 and "unknown variant 'fastest'" in result.stderr
