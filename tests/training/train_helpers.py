"""Run the training job as a real process (one process, or two ranks under torchrun on gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "--model",
    "tiny",
    "--seq-len",
    "32",
    "--device",
    "cpu",
    "--warmup-steps",
    "2",
    "--lr",
    "3e-3",
    "--log-every",
    "1",
    "--progress",
    "false",
]


def _env() -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def command(args: list[str], nproc: int = 1) -> list[str]:
    if nproc == 1:
        return [sys.executable, "-m", "training.train", *TINY, *args]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "training.train",
        *TINY,
        *args,
    ]


def train(args: list[str], nproc: int = 1, expect: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run(command(args, nproc), cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == expect, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        command(args), cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def summary(result) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])


def final_params(checkpoint_dir: Path) -> dict[str, torch.Tensor]:
    newest = sorted(checkpoint_dir.glob("step_*"))[-1]
    return torch.load(newest / "state.pt", map_location="cpu", weights_only=False)["model"]


def assert_same_params(a: dict, b: dict, atol: float) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=atol, rtol=0, msg=lambda m, n=name: f"{n}: {m}")
