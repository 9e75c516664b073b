"""benchmarks/health_gate.py (run on a GPU by hand) says that it needs one, without a traceback, where there is none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the benchmark would run")
def test_without_a_gpu_the_health_benchmark_exits_2_saying_why():
    result = subprocess.run([sys.executable, "benchmarks/health_gate.py", "--levels", "light"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == "error: benchmarks/health_gate.py measures CUDA kernels; no CUDA device is visible\n"
