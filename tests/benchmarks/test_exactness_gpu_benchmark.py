"""The GPU benchmark of the job says that it needs a GPU, without a traceback, where there is none."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the benchmark would run")
def test_without_a_gpu_the_benchmark_exits_2_saying_why():
    result = subprocess.run([sys.executable, "benchmarks/exactness_gpu.py"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == "error: benchmarks/exactness_gpu.py measures the job on a GPU; no CUDA device is visible\n"


def _benchmark():
    spec = importlib.util.spec_from_file_location("exactness_gpu", ROOT / "benchmarks" / "exactness_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(graphs: int = 1, breaks: int = 0, estimate: float = 29.7, peak: float = 29.76) -> dict:
    return {"compiled_graphs": graphs, "graph_breaks": breaks, "memory_estimate_bytes": estimate * 2**30,
            "memory_peak_bytes": peak * 2**30}


def test_the_targets_name_each_run_that_compiles_twice_breaks_its_graph_or_misjudges_its_memory():
    missed = _benchmark().missed_targets({
        "met": _run(),
        "recompiled": _run(graphs=2),
        "broken": _run(breaks=1),
        "before the fix": _run(estimate=27.84),  # the H200's default run before the fix: -6.5%
        "failed": {"error": "exit code 1"},
        "checkpoints": {"compiled_graphs": 1, "graph_breaks": 0},
    })
    assert missed == [
        "recompiled: 2 compiled graphs, not 1",
        "broken: 1 graph breaks, not 0",
        "before the fix: memory estimate 27.84 / 29.76 GiB (-6.45%), not within 3%",
    ]
