"""The exact-at-any-world-size job on one GPU: throughput, the memory estimate against the measured peak, compiled
graphs and time to first step from cold compile caches, and the checkpoint save time, each from a fresh run of the
real job.

    python benchmarks/exactness_gpu.py            # about 4 minutes on one H200

Runs, in order (each ``python -m training.bench --gpus 1`` unless said otherwise):

1. default, cold: the automatic micro-batch (world 1 always divides the batch), with empty Inductor and Triton
   caches (fresh ``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR``): its time to first step includes every
   compile the job does;
2. default, warm: the same with the caches run 1 filled, the same-call baseline for that time (cold - warm = the
   time spent compiling);
3. plain PyTorch path, cold: the fused kernels off, with empty caches of its own;
4. uneven: micro-batch 48, so 512 sequences make 11 micro-steps of 46 or 47 rows (two shapes for one compiled
   graph), with run 1's caches;
5. checkpoints: ``python -m training.train`` with a checkpoint every 8 steps, the blocking part and the background
   write of each save, with run 1's caches.

Prints one JSON line per run, a summary table, and each target: one compiled graph and no graph break per run, the
memory estimate within 3% of the peak. Ratios are against run 1 or 2 of the same call.
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
MEMORY_TOLERANCE = 0.03
"""How far the memory estimate may be from the measured peak (issue 17: within 3% on the default path)."""


def _caches(root: str, name: str) -> dict:
    """The environment of a run whose compile caches are ``root/name`` (empty the first time)."""
    return dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{root}/{name}/inductor", TRITON_CACHE_DIR=f"{root}/{name}/triton")


def _bench(steps: int, warmup: int, micro_batch: int, extra: str, env: dict) -> dict:
    command = [sys.executable, "-m", "training.bench", "--gpus", "1", "--steps", str(steps), "--warmup-steps",
               str(warmup), "--micro-batch", str(micro_batch), "--extra", extra]
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    if result.returncode != 0:
        return {"error": f"exit code {result.returncode}", "command": " ".join(command)}
    return json.loads(result.stdout.strip().splitlines()[-1])["runs"][0]


def _checkpoints(steps: int, every: int, env: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpufleet-save-") as run_dir:
        command = [sys.executable, "-m", "training.train", "--steps", str(steps), "--checkpoint-every", str(every),
                   "--log-every", str(every), "--eval-every", "0", "--resume", "false", "--progress", "false",
                   "--run-dir", run_dir]
        result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
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
            "graph_breaks": summary["graph_breaks"],
        }


def _memory(run: dict) -> str:
    estimate, peak = run.get("memory_estimate_bytes"), run.get("memory_peak_bytes")
    if not estimate or not peak:
        return "-"
    return f"{estimate / GIB:.2f} / {peak / GIB:.2f} GiB ({100 * (estimate - peak) / peak:+.2f}%)"


def missed_targets(runs: dict[str, dict]) -> list[str]:
    """Each target a run missed: one compiled graph, no graph break, the memory estimate within MEMORY_TOLERANCE of
    the measured peak (where the run has both)."""
    missed = []
    for name, run in runs.items():
        if "error" in run:
            continue
        if run.get("compiled_graphs") != 1:
            missed.append(f"{name}: {run.get('compiled_graphs')} compiled graphs, not 1")
        if run.get("graph_breaks"):
            missed.append(f"{name}: {run['graph_breaks']} graph breaks, not 0")
        estimate, peak = run.get("memory_estimate_bytes"), run.get("memory_peak_bytes")
        if estimate and peak and abs(estimate - peak) > MEMORY_TOLERANCE * peak:
            missed.append(f"{name}: memory estimate {_memory(run)}, not within {MEMORY_TOLERANCE:.0%}")
    return missed


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
    with tempfile.TemporaryDirectory(prefix="gpufleet-caches-") as caches:
        default, plain = _caches(caches, "default"), _caches(caches, "plain")
        bench = [args.steps, args.warmup_steps]
        runs = {
            "default, cold caches": _bench(*bench, 0, "", default),
            "default, warm caches": _bench(*bench, 0, "", default),
            "plain PyTorch (kernels off), cold caches": _bench(*bench, 0, KERNELS_OFF, plain),
            "uneven: micro-batch 48": _bench(*bench, 48, "", default),
        }
        for name, run in runs.items():
            print(json.dumps({"run": name, **run}), flush=True)
        saves = _checkpoints(steps=24, every=8, env=default)
    print(json.dumps({"run": "checkpoints (gpt2)", **saves}), flush=True)

    base = runs["default, cold caches"].get("tokens_per_s")
    print("\n| run | micro-batch x micro-steps | tokens/s | vs default | compiled graphs | graph breaks | "
          "estimate / peak | s to first step |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, run in runs.items():
        if "error" in run:
            print(f"| {name} | {run['error']} | - | - | - | - | - | - |")
            continue
        ratio = f"{run['tokens_per_s'] / base:.3f}" if base else "-"
        print(f"| {name} | {run['micro_batch']} x {run['micro_steps']} | {run['tokens_per_s']:,.0f} | {ratio} | "
              f"{run['compiled_graphs']} | {run['graph_breaks']} | {_memory(run)} | "
              f"{run['seconds_to_first_step']:.1f} |")
    cold, warm = (runs[f"default, {state} caches"].get("seconds_to_first_step") for state in ("cold", "warm"))
    if cold and warm:
        print(f"\ntime to first step, default: {cold:.1f} s cold, {warm:.1f} s warm: {cold - warm:.1f} s compiling "
              f"({cold / warm:.2f}x warm)")
    if "error" not in saves:
        print(f"checkpoint of gpt2 ({saves['state_gib']:.2f} GiB): {saves['blocking_s_per_save']:.2f} s blocking, "
              f"{saves['total_s_per_save']:.2f} s written, per save ({saves['saves']} saves)")
    else:
        print(f"checkpoints: {saves['error']}: {saves['command']}")
    missed = missed_targets({**runs, "checkpoints (gpt2)": saves})
    print("\ntargets: " + ("all met (one compiled graph and no graph break per run, memory estimate within "
                            f"{MEMORY_TOLERANCE:.0%})" if not missed else "MISSED: " + "; ".join(missed)))
    return 0 if all("error" not in run for run in (*runs.values(), saves)) else 1


if __name__ == "__main__":
    sys.exit(main())
