"""Throughput benchmark: tokens/s, MFU and step time on 1 GPU and on N GPUs, plus DDP scaling efficiency.

Each GPU count runs the real training job (``training.train``) under torchrun
in a subprocess, with the same global batch, so the N-GPU figure is measured
against a 1-GPU baseline from the same invocation. Prints one JSON object::

    python -m training.bench --model gpt2 --micro-batch 64 --steps 30 --warmup-steps 10

Scaling efficiency for N GPUs = tokens/s(N) / (N * tokens/s(1)), the 1-GPU run on the first GPU. With
``--each-gpu`` the 1-GPU run is repeated on every other GPU too, and scaling is also reported against the sum of
the cards' own single-GPU figures: a synchronous job runs at its slowest card's pace, so on a machine whose cards
differ by a few percent (power-capped H200s do) this separates the slower card from the cost of communication.
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


def gpu_counts(text: str) -> list[int]:
    """``--gpus``: comma-separated counts, each 1 or more."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of GPU counts, e.g. 1,2") from None
    if any(count < 1 for count in counts):
        raise argparse.ArgumentTypeError(f"'{text}': each GPU count must be 1 or more")
    return counts


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options, with ``visible`` (GPUs the runs may use; 0 on the CPU) and ``counts`` (GPU counts to run)."""
    parser = argparse.ArgumentParser(prog="python -m training.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gpt2", help="named model size (default gpt2, 124M)")
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=TrainConfig.micro_batch,
        help="the most sequences per GPU per forward pass (0, the default: the job picks it to fit the GPU)",
    )
    parser.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--global-batch", type=int, default=512, help="sequences per optimizer step, all GPUs")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per run, warm-up included")
    parser.add_argument("--warmup-steps", type=int, default=10, help="steps left out of the timing")
    parser.add_argument(
        "--gpus", type=gpu_counts, default=[], help="comma-separated GPU counts (default: 1 and all visible)"
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"), help="where to run")
    parser.add_argument("--extra", default="", help="further training flags, e.g. '--compile off'")
    parser.add_argument(
        "--each-gpu",
        action="store_true",
        help="also run the 1-GPU job on every other GPU, and report scaling against the cards' summed throughput",
    )
    args = parser.parse_args(argv)
    args.visible = torch.cuda.device_count() if args.device != "cpu" else 0
    args.counts = args.gpus or sorted({1, max(args.visible, 1)})
    if args.visible and max(args.counts) > args.visible:
        parser.error(f"--gpus asks for {max(args.counts)} GPUs but {args.visible} are visible; ask for fewer")
    if args.each_gpu and args.visible < 2:
        parser.error("--each-gpu compares this machine's GPUs with each other: it needs 2 or more visible GPUs")
    return args


def run_one(args: argparse.Namespace, nproc: int, run_dir: str, first_gpu: int = 0) -> dict:
    """One torchrun invocation of the training job on GPUs first_gpu.. first_gpu + nproc - 1; returns its summary
    (its last stdout line)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE=os.environ.get("NCCL_NVLS_ENABLE", "0"))
    if args.device != "cpu" and torch.cuda.is_available():
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(first_gpu, first_gpu + nproc))
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
        "--eval-every",
        "0",
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
        return {
            "gpus": nproc,
            "first_gpu": first_gpu,
            "error": f"exit code {result.returncode}",
            "command": " ".join(command),
        }
    summary = json.loads(lines[-1])
    keys = (
        "tokens_per_s",
        "mfu",
        "step_time_s",
        "seconds_to_first_step",
        "final_loss",
        "micro_batch",
        "micro_steps",
        "memory_estimate_bytes",
        "memory_peak_bytes",
        "compiled_graphs",
        "world_size",
        "device",
        "fp8_output_layer",
        "peak_tflops",
        "n_params",
    )
    return {"gpus": nproc, "first_gpu": first_gpu, **{key: summary.get(key) for key in keys}}


def scaling(runs: list[dict]) -> tuple[dict[str, float], dict[str, float]]:
    """Per multi-GPU run (keyed by its GPU count): tokens/s over N x the first GPU's single-GPU tokens/s, and over
    the sum of single-GPU tokens/s of the N cards it ran on (only where each of them has a figure)."""
    alone = {r["first_gpu"]: r["tokens_per_s"] for r in runs if r["gpus"] == 1 and "error" not in r}
    versus_first, versus_each = {}, {}
    for r in runs:
        if r["gpus"] < 2 or "error" in r or 0 not in alone:
            continue
        versus_first[str(r["gpus"])] = r["tokens_per_s"] / (r["gpus"] * alone[0])
        cards = range(r["first_gpu"], r["first_gpu"] + r["gpus"])
        if all(card in alone for card in cards):
            versus_each[str(r["gpus"])] = r["tokens_per_s"] / sum(alone[card] for card in cards)
    return versus_first, versus_each


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = []
    jobs = [(n, 0) for n in args.counts]
    if args.each_gpu:
        jobs[1:1] = [(1, gpu) for gpu in range(1, args.visible)]
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as tmp:
        for n, first_gpu in jobs:
            runs.append(run_one(args, n, os.path.join(tmp, f"gpus{n}-from{first_gpu}"), first_gpu))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    versus_first, versus_each = scaling(runs)
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
                "scaling_efficiency_vs_1gpu": versus_first,
                **({"scaling_efficiency_vs_each_gpu_alone": versus_each} if args.each_gpu else {}),
            }
        )
    )
    return 0 if all("error" not in r for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
