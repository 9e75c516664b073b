"""Run the real training job: its ``main`` in forked ranks (fast: no interpreter start and torch import per rank),
as a process of its own (signals, the command line), or as two torchrun "nodes" with a directory each; gloo."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import torch
import torch._dynamo  # imported once here rather than in every forked rank: it takes seconds

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


def command(args: list[str]) -> list[str]:
    """The job as a node starts it: its own interpreter (for what only a real process shows: signals, the CLI)."""
    return [sys.executable, "-m", "training.train", *TINY, *args]


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        command(args), cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run_process(args: list[str], expect: int = 0) -> subprocess.CompletedProcess:
    """The job in a process of its own, to the end (on a GPU: a process forked after CUDA was touched cannot use
    it, so train() is for the CPU)."""
    result = subprocess.run(command(args), cwd=REPO, env=_env(), capture_output=True, text=True, timeout=900)
    assert result.returncode == expect, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def train(args: list[str], nproc: int = 1, expect: int = 0, logs: Path | None = None) -> subprocess.CompletedProcess:
    """Run the job's ``main`` on ``nproc`` forked ranks (see start_ranks); every rank must exit with ``expect``.
    Rank 0's exit code and output."""
    logs = logs or Path(tempfile.mkdtemp(prefix="gpufleet-ranks-"))
    ranks = start_ranks(args, nproc, logs)
    codes = wait_ranks(ranks)
    assert codes == [expect] * nproc, "\n".join(
        f"rank {n}: exit {c}\n{r.stdout}\n{r.stderr}" for n, (c, r) in enumerate(zip(codes, ranks, strict=True))
    )
    return subprocess.CompletedProcess(["training.train", *args], codes[0], ranks[0].stdout, ranks[0].stderr)


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


def train_nodes(args: list[str], node_dirs: list[Path]) -> list[subprocess.CompletedProcess]:
    """One rank per "node", each working in its own directory (so the same relative --checkpoint-dir is a different
    disk per node, as on a cluster); node 0 holds rank 0. Every node must exit 0; each node's output."""
    ranks = start_ranks(args, len(node_dirs), node_dirs[0] / ".logs", node_dirs=node_dirs)
    codes = wait_ranks(ranks)
    assert codes == [0] * len(ranks), "\n".join(f"node {n}: exit {c}\n{r.stderr}" for n, (c, r) in
                                                 enumerate(zip(codes, ranks, strict=True)))
    return [subprocess.CompletedProcess(args, 0, rank.stdout, rank.stderr) for rank in ranks]


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


def zero_fills(run) -> list[str]:
    """The tensors of zeros (or other fills) that ``run()`` allocates, by the ATen operators it dispatches."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    with Recorder() as recorder:
        run()
    return [name for name in recorder.names if any(word in name for word in ("zero", "full", "fill"))]


@dataclass
class Rank:
    """One rank of a job started by ``start_ranks``: its process and what it printed."""

    process: multiprocessing.Process
    out: Path
    err: Path

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    @property
    def stderr(self) -> str:
        return self.err.read_text()


def _rank_main(argv: list[str], env: dict, cwd: Path, out: Path, err: Path, prepare) -> None:
    os.chdir(cwd)
    os.environ.update(env)
    for stream, path in ((1, out), (2, err)):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, stream)
        os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 (the process ends with os._exit)
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    code = 1
    try:
        from training import train

        if prepare is not None:
            prepare()
        code = train.main(argv)
    except SystemExit as exit_:  # argparse's errors and --help, as the interpreter would report them
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def start_ranks(args: list[str], world: int, logs: Path, prepare=None,
                node_dirs: list[Path] | None = None) -> list[Rank]:
    """The real job's ``main`` in ``world`` processes forked from this one, wired up as torchrun wires its workers
    (gloo): a multi-rank run without a fresh interpreter and torch import per rank, which on a small CI machine is
    most of a test's time. One node in the repository, or with ``node_dirs`` one rank per node, each in its
    directory. ``prepare()`` runs in each rank first (to slow a part down, say)."""
    logs.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    context = multiprocessing.get_context("fork")
    ranks = []
    # The suite's earlier modules leave gRPC's objects (Pulumi's engine client) in this process; a forked rank whose
    # garbage collector walked them crashed (SIGSEGV while collecting). Frozen, they stay out of every collection.
    gc.freeze()
    for rank in range(world):
        node, local, per_node = (rank, 0, 1) if node_dirs else (0, rank, world)
        env = {"RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world),
               "LOCAL_WORLD_SIZE": str(per_node), "GROUP_RANK": str(node), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port)}
        out, err = logs / f"rank{rank}.out", logs / f"rank{rank}.err"
        cwd = node_dirs[rank] if node_dirs else REPO
        process = context.Process(target=_rank_main, args=([*TINY, *args], env, cwd, out, err, prepare),
                                  daemon=True)
        process.start()
        ranks.append(Rank(process, out, err))
    gc.unfreeze()
    return ranks


def wait_ranks(ranks: list[Rank], timeout: float = 120) -> list[int]:
    """Every rank's exit code (a rank still running at the deadline is killed and reported as None)."""
    deadline = time.monotonic() + timeout
    for rank in ranks:
        rank.process.join(max(0.0, deadline - time.monotonic()))
        if rank.process.is_alive():
            rank.process.kill()
            rank.process.join()
            return [None] * len(ranks)
    return [rank.process.exitcode for rank in ranks]


