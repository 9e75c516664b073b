"""Run the training job as a real process (one process, two ranks under torchrun, or two torchrun "nodes"; gloo)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import torch

from training.config import MODEL_SIZES
from training.model import GPT

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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def node_command(args: list[str], node_rank: int, nnodes: int, port: int) -> list[str]:
    """One torchrun agent of a multi-node job on localhost (static rendezvous: node_rank is the GROUP_RANK)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        "--nproc-per-node=1",
        "--master-addr=127.0.0.1",
        f"--master-port={port}",
        "-m",
        "training.train",
        *TINY,
        *args,
    ]


def train_nodes(args: list[str], node_dirs: list[Path]) -> list[subprocess.CompletedProcess]:
    """Run one torchrun "node" per directory, side by side on this machine, each in its directory (so the same
    relative --checkpoint-dir is a different disk per node, as on a cluster); node 0 holds rank 0."""
    port = _free_port()
    nodes = [
        subprocess.Popen(
            node_command(args, rank, len(node_dirs), port),
            cwd=node_dir,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for rank, node_dir in enumerate(node_dirs)
    ]
    try:
        outputs = [node.communicate(timeout=120) for node in nodes]
    finally:
        for node in nodes:
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGKILL)  # the agent and its workers: a hung peer must not outlive the test
    results = [subprocess.CompletedProcess(n.args, n.returncode, *out) for n, out in zip(nodes, outputs, strict=True)]
    for rank, result in enumerate(results):
        assert result.returncode == 0, f"node {rank}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return results


def tiny_twins(seq_len: int, device: str = "cpu", **options) -> tuple[GPT, GPT]:
    """The tiny model and a copy with the same weights built with ``options`` (a precision or fused-kernel choice)."""
    torch.manual_seed(0)
    plain = GPT(MODEL_SIZES["tiny"], seq_len=seq_len, bias=options.get("bias", False)).to(device)
    other = GPT(MODEL_SIZES["tiny"], seq_len=seq_len, **options).to(device)
    other.load_state_dict(plain.state_dict())
    return plain, other


def bf16_losses(models, tokens: torch.Tensor) -> list[float]:
    """One forward + backward of each model on the same tokens [batch, seq + 1] under bf16 autocast; the losses."""
    losses = []
    for model in models:
        with torch.autocast(tokens.device.type, dtype=torch.bfloat16):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        losses.append(loss.item())
    return losses
