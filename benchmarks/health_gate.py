"""The node health gate's per-GPU checks on this machine's GPUs: every figure, its threshold and verdict, and how
long each check family takes, light and deep; then a GPU made slow by another process's matmuls (a concurrent load
that takes part of its time) against the same GPU idle, measured in the same run: the slowed one must fail the
matmul check and the idle one pass. CUDA only. Prints one JSON line per figure and a table per part.

    python3 benchmarks/health_gate.py [--levels light,deep] [--slow-gpu N] [--record DIR]

The thresholds are those the plan decides for the catalog row of this GPU model (the first row whose gpuModel is in
the device's name, with its GPU count set to this machine's; plan/health.py). --record DIR keeps the
tools' raw output (nvidia-smi idle and under load, the remapped-rows query, NVRM kernel lines, dcgmi diag -r 1 -j,
NCCL's INFO log of a one-node all-reduce) as samples.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cloud-init"))

from health import clocks, config, errors, gate, matmul, nccl, pcie, tools

from benchmarks import cuda_timing
from clouds import CLOUDS
from plan.catalog import catalog
from plan.fabric import plan_fabric
from plan.health import plan_health

ROOT = Path(__file__).resolve().parents[1]
LOAD = """
import sys, torch
torch.cuda.set_device(int(sys.argv[1]))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(20):
    a @ a
torch.cuda.synchronize()
print("ready", flush=True)
while True:
    for _ in range(50):
        a @ a
    torch.cuda.synchronize()
"""
"""Another process's bf16 matmuls on one GPU: the driver time-slices the GPU between the two processes."""


def node_config() -> tuple[str, config.HealthConfig]:
    """(catalog row name, what the gate reads of the node.json the plan writes for that row with this machine's GPU
    count: the node's GPUs and fabric, and the plan's health section)."""
    name = torch.cuda.get_device_name(0)
    for cloud in CLOUDS:
        for row in catalog(cloud).types.values():
            if row.gpu_model and row.gpu_model in name:
                row = row.model_copy(update={"gpus": torch.cuda.device_count()})
                fabric = plan_fabric("auto", row)
                node = {"gpus": row.gpus, "nvswitch": row.nvswitch, "fabric": fabric.kind,
                        "fabric_devices": fabric.devices, "nccl_env": [list(pair) for pair in fabric.nccl_env],
                        "health": asdict(plan_health(row, fabric, "light"))}
                return row.name, config.parse(Path("node.json"), node)
    raise SystemExit(f"error: no catalog row has a GPU model in {name!r}")


def print_report(console: Console, title: str, report) -> None:
    table = Table(title=title)
    for column in ("check", "subject", "figure", "threshold", "verdict", "detail"):
        table.add_column(column)
    for c in report.checks:
        print(json.dumps({"part": title, "check": c.check, "subject": c.subject, "figure": c.figure, "unit": c.unit,
                          "threshold": c.threshold, "ok": c.ok}))
        figure = "-" if c.figure is None else f"{c.figure:.4g} {c.unit}"
        threshold = "-" if c.threshold is None else f"{c.rule} {c.threshold:.4g}"
        table.add_row(c.check, c.subject, figure, threshold, "ok" if c.ok else "FAILED", c.detail[:70])
    console.print(table)
    durations = ", ".join(f"{family} {seconds:.1f} s" for family, seconds in report.timings.items())
    print(json.dumps({"part": title, "duration_s": report.duration_s, "timings": report.timings, "ok": report.ok}))
    console.print(f"{title}: {report.duration_s:.1f} s ({durations}); {'passed' if report.ok else 'FAILED'}")


def slow_gpu(console: Console, node: config.HealthConfig, slowed: int, n: int, seconds: float) -> bool:
    """The matmul check with every GPU idle, then with another process loading GPU ``slowed``; True when the idle
    run passes and the loaded GPU (only it) fails."""
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    threshold = node.limits.matmul_tflops
    idle = matmul.checks(matmul.measure(devices, n, seconds), threshold, n)
    load = subprocess.Popen([sys.executable, "-c", LOAD, str(slowed)], stdout=subprocess.PIPE, text=True)
    try:
        assert load.stdout.readline().strip() == "ready"
        loaded = matmul.checks(matmul.measure(devices, n, seconds), threshold, n)
    finally:
        load.kill()
        load.wait()
    table = Table(title=f"matmul check, GPU {slowed} shared with another process's matmuls")
    for column in ("GPU", "idle TFLOP/s", "loaded TFLOP/s", "loaded / idle", "threshold", "idle", "loaded"):
        table.add_column(column)
    for before, after in zip(idle, loaded, strict=True):
        ratio = after.figure / before.figure
        print(json.dumps({"part": "slow-gpu", "subject": before.subject, "idle_tflops": before.figure,
                          "loaded_tflops": after.figure, "ratio": ratio, "threshold_idle": before.threshold,
                          "threshold_loaded": after.threshold, "idle_ok": before.ok, "loaded_ok": after.ok}))
        table.add_row(before.subject, f"{before.figure:.1f}", f"{after.figure:.1f}", f"{ratio:.3f}",
                      f"{after.threshold:.1f}", "ok" if before.ok else "FAILED", "ok" if after.ok else "FAILED")
    console.print(table)
    expected = all(c.ok for c in idle) and [c.subject for c in loaded if not c.ok] == [f"gpu{slowed}"]
    console.print(f"slowed GPU fails and the idle run passes: {'yes' if expected else 'NO'}")
    return expected


def record(directory: Path) -> None:
    """The tools' raw output on this machine, for the tests' samples."""
    directory.mkdir(parents=True, exist_ok=True)
    fields = tuple(dict.fromkeys(pcie.FIELDS + clocks.FIELDS))
    query = [f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    (directory / "nvidia-smi-idle.csv").write_text(tools.run("nvidia-smi", *query))
    under_load = []
    matmul.measure([torch.device("cuda", i) for i in range(torch.cuda.device_count())], 8192, 2.0,
                   during=lambda: under_load.append(tools.run("nvidia-smi", *query)))
    (directory / "nvidia-smi-under-load.csv").write_text(under_load[0])
    (directory / "nvidia-smi-errors.csv").write_text(
        tools.run("nvidia-smi", f"--query-gpu={','.join(errors.FIELDS)}", "--format=csv,noheader,nounits"))
    remaps = subprocess.run(["nvidia-smi", f"--query-remapped-rows={','.join(errors.REMAP_FIELDS)}",
                             "--format=csv,noheader,nounits"], capture_output=True, text=True, check=False)
    (directory / "nvidia-smi-remapped-rows.csv").write_text(remaps.stdout + remaps.stderr)
    dmesg = subprocess.run(["dmesg"], capture_output=True, text=True, check=False)
    (directory / "dmesg-nvrm.txt").write_text("".join(line + "\n" for line in dmesg.stdout.splitlines()
                                                      if "NVRM" in line or "nvidia" in line.lower()))
    if tools.available("dcgmi"):
        diag = subprocess.run(["dcgmi", "diag", "-r", "1", "-j"], capture_output=True, text=True, check=False)
        (directory / "dcgmi-diag-r1.json").write_text(diag.stdout + diag.stderr)
    env = {**os.environ, **nccl.DEBUG_ENV, "NCCL_DEBUG_FILE": f"{directory}/nccl.%h.%p.log"}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc-per-node={torch.cuda.device_count()}", str(ROOT / "cloud-init/health_allreduce.py"),
                    "--sizes-mib", "64", "--iters", "5"], env=env, capture_output=True, check=False)
    print(f"recorded {', '.join(sorted(p.name for p in directory.iterdir()))} in {directory}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", default="light,deep", help="gate levels to run, in order (default light,deep)")
    p.add_argument("--slow-gpu", type=int, default=None, help="the GPU to load (default: the last one)")
    p.add_argument("--slow-seconds", type=float, default=3.0, help="matmul timing per run of the slow-GPU part")
    p.add_argument("--record", type=Path, help="keep the tools' raw output here")
    args = p.parse_args(argv)
    if cuda_timing.cuda_missing("benchmarks/health_gate.py"):
        return 2
    console = Console()
    row, node = node_config()
    console.print(f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}; thresholds the plan decides for "
                  f"catalog row {row} with gpus={node.gpus}: {node.limits}")
    devices = tuple(torch.device("cuda", i) for i in range(torch.cuda.device_count()))
    for level in args.levels.split(","):
        start = time.perf_counter()
        report = gate.run(gate.GateConfig(node=node, level=level, devices=devices))
        print_report(console, f"gate {level}", report)
        console.print(f"(wall {time.perf_counter() - start:.1f} s)")
    slowed = devices[-1].index if args.slow_gpu is None else args.slow_gpu
    expected = slow_gpu(console, node, slowed, 8192, args.slow_seconds)
    if args.record:
        record(args.record)
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())
