"""The exact-at-any-world-size job on one GPU: throughput, the memory estimate against the measured peak, recompiles
under torch.compile with uneven micro-batches, and the checkpoint save time, each from a fresh run of the real job.

    python benchmarks/exactness_gpu.py            # about 6 minutes on one H200

Runs, in order (each ``python -m training.bench --gpus 1`` unless said otherwise):

1. default: the automatic micro-batch (world 1 always divides the batch);
2. plain PyTorch path: the same with the fused kernels off;
3. uneven: micro-batch 48, so 512 sequences make 11 micro-steps of 46 or 47 rows (two shapes for one compiled graph);
4. checkpoints: ``python -m training.train`` with a checkpoint every 8 steps, the blocking part and the background
   write of each save.

Prints one JSON line per run, then a summary table; ratios are against run 1 of the same call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30
KERNELS_OFF = "--kernels off"


def _bench(steps: int, warmup: int, micro_batch: int, extra: str) -> dict:
    command = [sys.executable, "-m", "training.bench", "--gpus", "1", "--steps", str(steps), "--warmup-steps",
               str(warmup), "--micro-batch", str(micro_batch), "--extra", extra]
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        return {"error": f"exit code {result.returncode}", "command": " ".join(command)}
    return json.loads(result.stdout.strip().splitlines()[-1])["runs"][0]


def _checkpoints(steps: int, every: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpufleet-save-") as run_dir:
        command = [sys.executable, "-m", "training.train", "--steps", str(steps), "--checkpoint-every", str(every),
                   "--log-every", str(every), "--eval-every", "0", "--resume", "false", "--progress", "false",
                   "--run-dir", run_dir]
        result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        if result.returncode != 0:
            return {"error": f"exit code {result.returncode}", "command": " ".join(command)}
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        saves = len(summary["checkpoints_written"])
        state = Path(run_dir) / "checkpoints" / f"step_{summary['steps_completed']:08d}" / "state.pt"
        return {
            "saves": saves,
            "state_gib": state.stat().st_size / GIB,
            "blocking_s_per_save": summary["checkpoint_seconds"] / saves,
            "total_s_per_save": summary["checkpoint_write_seconds"] / saves,
            "tokens_per_s": summary["tokens_per_s"],
            "compiled_graphs": summary["compiled_graphs"],
        }


def _memory(run: dict) -> str:
    estimate, peak = run.get("memory_estimate_bytes"), run.get("memory_peak_bytes")
    if not estimate or not peak:
        return "-"
    return f"{estimate / GIB:.2f} / {peak / GIB:.2f} GiB ({100 * (estimate - peak) / peak:+.1f}%)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=15, help="optimizer steps per throughput run")
    parser.add_argument("--warmup-steps", type=int, default=5, help="steps left out of the timing")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("error: benchmarks/exactness_gpu.py measures the job on a GPU; no CUDA device is visible",
              file=sys.stderr)
        return 2
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    runs = {
        "default": _bench(args.steps, args.warmup_steps, 0, ""),
        "plain PyTorch (kernels off)": _bench(args.steps, args.warmup_steps, 0, KERNELS_OFF),
        "uneven: micro-batch 48": _bench(args.steps, args.warmup_steps, 48, ""),
    }
    for name, run in runs.items():
        print(json.dumps({"run": name, **run}), flush=True)
    saves = _checkpoints(steps=24, every=8)
    print(json.dumps({"run": "checkpoints (gpt2)", **saves}), flush=True)

    base = runs["default"].get("tokens_per_s")
    print("\n| run | micro-batch x micro-steps | tokens/s | vs default | compiled graphs | estimate / peak |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, run in runs.items():
        if "error" in run:
            print(f"| {name} | {run['error']} | - | - | - | - |")
            continue
        ratio = f"{run['tokens_per_s'] / base:.3f}" if base else "-"
        print(f"| {name} | {run['micro_batch']} x {run['micro_steps']} | {run['tokens_per_s']:,.0f} | {ratio} | "
              f"{run['compiled_graphs']} | {_memory(run)} |")
    if "error" not in saves:
        print(f"\ncheckpoint of gpt2 ({saves['state_gib']:.2f} GiB): {saves['blocking_s_per_save']:.2f} s blocking, "
              f"{saves['total_s_per_save']:.2f} s written, per save ({saves['saves']} saves)")
    else:
        print(f"\ncheckpoints: {saves['error']}: {saves['command']}")
    return 0 if all("error" not in run for run in (*runs.values(), saves)) else 1


if __name__ == "__main__":
    sys.exit(main())
