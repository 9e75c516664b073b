"""The health gate's all-reduce benchmark, run for real with gloo on CPU: its JSON, the bus-bandwidth formula and the
exit status the gate relies on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "cloud-init" / "health_allreduce.py"
pytest.importorskip("torch")


def allreduce(procs: int, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={procs}",
        str(SCRIPT),
        "--backend",
        "gloo",
        "--dtype",
        "float32",
        "--sizes-mib",
        "1,2",
        "--iters",
        "2",
        "--warmup",
        "1",
        *args,
    ]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180)


def test_reports_algbw_and_busbw_per_size():
    result = allreduce(3)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["world_size"] == 3 and report["ok"] is True
    assert [r["size_bytes"] for r in report["results"]] == [1 << 20, 2 << 20]
    for r in report["results"]:
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 4 / 3, abs=0.02)
        assert r["algbw_gbps"] == pytest.approx(r["size_bytes"] / (r["time_ms"] / 1e3) / 1e9, rel=0.05, abs=0.01)
    assert report["busbw_gbps"] == report["results"][-1]["busbw_gbps"]


def test_fails_below_the_minimum_bus_bandwidth():
    result = allreduce(2, "--min-busbw", "100000")
    assert result.returncode != 0
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"] is False and report["min_busbw_gbps"] == 100000
