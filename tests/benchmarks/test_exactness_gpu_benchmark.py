"""The GPU benchmark of the job says that it needs a GPU, without a traceback, where there is none."""

from __future__ import annotations

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
