"""The kernel benchmarks say that they need a GPU, without a traceback, where there is none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the benchmark would run")
@pytest.mark.parametrize("name", ["fused_loss", "fused_mlp", "matmul_shapes"])
def test_without_a_gpu_the_benchmark_exits_2_saying_why(name):
    result = subprocess.run(
        [sys.executable, f"benchmarks/{name}.py"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr == f"error: benchmarks/{name}.py measures CUDA kernels; no CUDA device is visible\n"
