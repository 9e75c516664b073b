"""Throughput benchmark: tokens/s, MFU and step time on 1 GPU and on N GPUs, plus DDP scaling efficiency.

Each GPU count runs the real training job (``training.train``) under torchrun
in a subprocess, with the same global batch, so the N-GPU figure is measured
against a 1-GPU baseline from the same invocation. Prints one JSON object::

    python -m training.bench --model gpt2 --micro-batch 64 --steps 30 --warmup-steps 10

Scaling efficiency for N GPUs = tokens/s(N) / (N * tokens/s(1)).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

from training.config import TrainConfig


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gpt2", help="named model size (default gpt2, 124M)")
    parser.add_argument(
        "--micro-batch", type=int, default=TrainConfig.micro_batch, help="sequences per GPU per forward pass"
    )
    parser.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--global-batch", type=int, default=512, help="sequences per optimizer step, all GPUs")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per run, warm-up included")
    parser.add_argument("--warmup-steps", type=int, default=10, help="steps left out of the timing")
    parser.add_argument("--gpus", default="", help="comma-separated GPU counts (default: 1 and all visible)")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"), help="where to run")
    parser.add_argument("--extra", default="", help="further training flags, e.g. '--compile off'")
    return parser.parse_args(argv)


def run_one(args: argparse.Namespace, nproc: int, run_dir: str) -> dict:
    """One torchrun invocation of the training job; returns its summary (its last stdout line)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE=os.environ.get("NCCL_NVLS_ENABLE", "0"))
    if args.device != "cpu" and torch.cuda.is_available():
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(nproc))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "training.train",
        "--model",
        args.model,
        "--micro-batch",
        str(args.micro_batch),
        "--seq-len",
        str(args.seq_len),
        "--global-batch",
        str(args.global_batch),
        "--steps",
        str(args.steps),
        "--timing-warmup-steps",
        str(args.warmup_steps),
        "--log-every",
        str(args.steps),
        "--checkpoint-every",
        "0",
        "--checkpoint-at-end",
        "false",
        "--resume",
        "false",
        "--progress",
        "false",
        "--device",
        args.device,
        "--run-dir",
        run_dir,
        *args.extra.split(),
    ]
    result = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        return {"gpus": nproc, "error": f"exit code {result.returncode}", "command": " ".join(command)}
    summary = json.loads(lines[-1])
    keys = (
        "tokens_per_s",
        "mfu",
        "step_time_s",
        "seconds_to_first_step",
        "final_loss",
        "accum_steps",
        "world_size",
        "device",
        "peak_tflops",
        "n_params",
    )
    return {"gpus": nproc, **{key: summary.get(key) for key in keys}}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    visible = torch.cuda.device_count() if args.device != "cpu" else 0
    counts = [int(n) for n in args.gpus.split(",") if n] or sorted({1, max(visible, 1)})
    runs = []
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as tmp:
        for n in counts:
            runs.append(run_one(args, n, os.path.join(tmp, f"gpus{n}")))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    base = next((r for r in runs if r["gpus"] == 1 and "error" not in r), None)
    scaling = {
        str(r["gpus"]): r["tokens_per_s"] / (r["gpus"] * base["tokens_per_s"])
        for r in runs
        if base and r["gpus"] > 1 and "error" not in r
    }
    print(
        json.dumps(
            {
                "model": args.model,
                "seq_len": args.seq_len,
                "micro_batch": args.micro_batch,
                "global_batch": args.global_batch,
                "steps": args.steps,
                "warmup_steps": args.warmup_steps,
                "extra": args.extra,
                "runs": runs,
                "scaling_efficiency_vs_1gpu": scaling,
            }
        )
    )
    return 0 if all("error" not in r for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
